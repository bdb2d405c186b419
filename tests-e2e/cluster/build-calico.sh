#!/usr/bin/env bash
# Builds Calico (issue 45: a second NetworkPolicy enforcer, policy only) from the Go module proxy, offline, into
# $SANDBOXD_CACHE/calico/<CALICO_VERSION>/: calico-node (felix inside: `calico-node -felix`), the `calico` CNI plugin
# with `calico-ipam` as a symlink to it (upstream's cni-plugin/Makefile does the same: the binary picks its role by
# its name), and upstream's manifests/crds.yaml (the CRDs felix reads with the Kubernetes datastore).
# A second run rebuilds nothing. Usage: nice -n 19 tests-e2e/cluster/build-calico.sh
# Built without cgo, felix has only libbpf stubs that panic: run it with FELIX_DebugSkipCTLBCleanup=true (the exact
# spelling), or its iptables/nftables dataplane mounts bpffs at /sys/fs/bpf to clean up BPF mode's connect-time load
# balancer and dies in libbpf.OpenObject (felix/bpf/nat/connecttime.go); and keep bpftool off its PATH (without it
# felix skips XDP, which would mount bpffs and a cgroup2 at /run/calico/cgroup).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
cache=${SANDBOXD_CACHE:-/var/cache/sandboxd}
out=$cache/calico/$CALICO_VERSION
files=(calico-node calico calico-ipam crds.yaml)

complete() { local f; for f in "${files[@]}"; do [ -s "$out/$f" ] || return 1; done; }
if complete; then echo "calico $CALICO_VERSION already built in $out"; exit 0; fi

start=$SECONDS
export GOTOOLCHAIN=local GOFLAGS="-mod=mod -trimpath -buildvcs=false"
work=$(mktemp -d "${TMPDIR:-/tmp}/calico-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "downloading github.com/projectcalico/calico@$CALICO_MODULE_VERSION ($CALICO_VERSION)"
# Calico has no go-installable release: its go.mod replaces three nested modules by local directories, which the
# module's zip leaves out. So: its source in a writable copy, those replaces rewritten, then a build inside it.
read -r dir commit date < <(cd / && go mod download -json "github.com/projectcalico/calico@$CALICO_MODULE_VERSION" |
  python3 -c 'import json, sys; d = json.load(sys.stdin)
print(d["Dir"], d.get("Origin", {}).get("Hash", "unknown"), json.load(open(d["Info"]))["Time"])')
[ -d "$dir" ] || { echo "github.com/projectcalico/calico@$CALICO_MODULE_VERSION: not downloaded" >&2; exit 1; }
src=$work/calico
cp -r "$dir" "$src"; chmod -R u+w "$src"
cd "$src"
# ./api: the API types, published as their own module; ./lib/std: a nested module of this same commit, which the
# proxy serves under its own path; ./lib/httpmachinery: not served, and not imported by the two commands built here.
go mod edit \
  -replace "github.com/projectcalico/api=github.com/projectcalico/api@$CALICO_API_VERSION" \
  -replace "github.com/projectcalico/calico/lib/std=github.com/projectcalico/calico/lib/std@$CALICO_MODULE_VERSION" \
  -dropreplace github.com/projectcalico/calico/lib/httpmachinery \
  -droprequire github.com/projectcalico/calico/lib/httpmachinery
go mod download github.com/projectcalico/api github.com/projectcalico/calico/lib/std

# Upstream's lib.Makefile's LDFLAGS (version data into pkg/buildinfo), without cgo: upstream links libbpf for felix's
# BPF dataplane on amd64/arm64 and builds without cgo elsewhere (felix's libbpf_stub.go); the iptables/nftables
# dataplane that policy-only mode uses needs none of it.
bi=github.com/projectcalico/calico/pkg/buildinfo
ldflags="-s -w -X $bi.Version=$CALICO_VERSION -X $bi.GitRevision=$commit -X $bi.BuildDate=$date"
mkdir -p "$work/out"
for pkg in ./node/cmd/calico-node ./cni-plugin/cmd/calico; do
  echo "building $pkg"
  CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$work/out/" "$pkg"
done
ln -s calico "$work/out/calico-ipam"
cp manifests/crds.yaml "$work/out/crds.yaml"

mkdir -p "$cache/calico"
rm -rf "$out" "$out.tmp"; cp -a "$work/out" "$out.tmp"; mv "$out.tmp" "$out"
complete || { echo "calico build incomplete in $out" >&2; exit 1; }
echo "calico $CALICO_VERSION built in $out in $((SECONDS - start)) s"
ls -l "$out"
