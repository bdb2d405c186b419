#!/usr/bin/env bash
# The virtualenv the ADK-based tests run in (toolrunner/tests_adk, and ToolRelocationIT's ADK client on
# the node): Google's ADK from PyPI plus this package, installed as an agent installs it. It is a test
# environment on the node, never part of an agent image. Created once (about 150 MB, about 30 s
# from PyPI), reused while google-adk's version is unchanged; the local package is reinstalled on
# every run (a second), so the tests always see the working tree. Prints the venv's python.
#   ADK_VENV    where (default $SANDBOXD_CACHE/adk-venv, i.e. /var/cache/sandboxd/adk-venv)
#   ADK_PYTHON  the interpreter that creates it (default python3; 3.11+)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
adk_version=2.13.0
venv=${ADK_VENV:-${SANDBOXD_CACHE:-/var/cache/sandboxd}/adk-venv}
python=${ADK_PYTHON:-python3}
stamp=$venv/.sandboxd-google-adk-$adk_version

log() { echo "[adk-venv] $*" >&2; }

if [ ! -f "$stamp" ] || [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import google.adk" 2>/dev/null; then
  log "creating $venv with google-adk==$adk_version"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "google-adk==$adk_version" pytest "setuptools>=61" wheel >&2
  touch "$stamp"
fi

# The local package, built from a copy so no build/ or *.egg-info lands in the working tree; without
# build isolation (setuptools is in the venv), so this step needs no network.
src=$(mktemp -d /tmp/crusoe-adk-src.XXXX)
trap 'rm -rf "$src"' EXIT
cp -r "$here/pyproject.toml" "$here/README.md" "$here/crusoe_adk" "$here/crusoe_core" "$src/"
find "$src" -name __pycache__ -prune -exec rm -rf {} +
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
  --force-reinstall "$src" >&2
echo "$venv/bin/python"
