#!/usr/bin/env bash
# Builds the Kubernetes components, kube-router, Calico (build-calico.sh), CoreDNS, helm and the registry from the
# Go module proxy into a cache keyed by version ($SANDBOXD_CACHE/bin/<component>-<version>/). A second run rebuilds nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
cache=${SANDBOXD_CACHE:-/var/cache/sandboxd}
export CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"

# Where each build goes: a cache directory per component and version (the binaries are linked from bin/current).
k8s_bin=$cache/bin/kubernetes-$K8S_VERSION
kr_bin=$cache/bin/kube-router-$KUBE_ROUTER_K3S_VERSION
coredns_plugins=$(sed -n '/^    \.:53 {$/,/^    }$/s/^        \([a-z0-9_]*\).*/\1/p' "$here/coredns.yaml" | sort -u)
coredns_bin=$cache/bin/coredns-$COREDNS_VERSION-$(echo $coredns_plugins | sha256sum | cut -c1-8)
ctd_bin=$cache/bin/containerd-$CONTAINERD_VERSION
gv_bin=$cache/bin/gvisor-$GVISOR_VERSION-sandboxd$GVISOR_PATCHES

build_kubernetes() {
  [ -x "$k8s_bin/kubelet" ] && return 0
  work=$cache/src/kubernetes-$K8S_VERSION
  mkdir -p "$work" "$k8s_bin.tmp"
  minor=${K8S_VERSION#v1.}; staging=v0.$minor
  cd "$work"
  # k8s.io/kubernetes uses replace directives for its staging modules, so it cannot be
  # `go install`ed; a wrapper module requires it and pins every staging module instead.
  cat > go.mod <<MOD
module sandboxd.local/k8sbuild

go 1.23

require k8s.io/kubernetes $K8S_VERSION
MOD
  # Pin every staging module that k8s.io/kubernetes itself replaces (read from its own go.mod).
  (cd / && go mod download "k8s.io/kubernetes@$K8S_VERSION")
  kmod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
  for m in $(sed -n 's#^\s*k8s.io/\([a-z0-9-]*\) => ./staging/.*#\1#p' "$kmod"); do
    v=$staging
    # The proxy may lack one patch release of a staging module; then take that minor's newest.
    if ! (cd / && go mod download "k8s.io/$m@$v") >/dev/null 2>&1; then
      v=$( (cd / && go list -m -versions "k8s.io/$m" 2>/dev/null) | tr ' ' '\n' | grep "^v0\.${minor%%.*}\." | sort -V | tail -1 || true)
      [ -n "$v" ] || { echo "k8s.io/$m is not served at all; not needed for the binaries we build"; continue; }
      echo "k8s.io/$m $staging is not served; using $v"
    fi
    echo "replace k8s.io/$m => k8s.io/$m $v" >> go.mod
  done
  cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  go mod tidy -e >/dev/null 2>&1 || true
  go mod download k8s.io/kubernetes
  # One go build for all six: the compiles they share are scheduled together and each link overlaps other work,
  # where six builds in turn left a core idle through every link.
  components="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
  echo "building $components $K8S_VERSION"
  go build -tags tools -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" \
    -o "$k8s_bin.tmp/" $(printf 'k8s.io/kubernetes/cmd/%s ' $components)
  rm -rf "$k8s_bin"; mv "$k8s_bin.tmp" "$k8s_bin"
}

build_go_tool() { # name version module-path package
  local name=$1 version=$2 module=$3 pkg=$4 out=$cache/bin/$1-$2
  [ -x "$out/$name" ] && return 0
  mkdir -p "$out.tmp"
  echo "building $name $version"
  GOBIN="$out.tmp" go install -ldflags "-s -w" "$pkg@$version"
  mv "$out.tmp/$(basename "$pkg")" "$out.tmp/$name" 2>/dev/null || true
  rm -rf "$out"; mv "$out.tmp" "$out"
}
# kube-router: upstream's, and k3s's fork (versions.env says why both), the fork built by a wrapper module that
# requires upstream's path and replaces it. node.sh runs the one of cluster.env's ENFORCER from its own directory.
build_kube_router_k3s() {
  [ -x "$kr_bin/kube-router" ] && return 0
  echo "building kube-router $KUBE_ROUTER_K3S_VERSION (github.com/k3s-io/kube-router)"
  work=$cache/src/kube-router-$KUBE_ROUTER_K3S_VERSION
  mkdir -p "$work" "$kr_bin.tmp"
  cat > "$work/go.mod" <<MOD
module sandboxd.local/kuberouterbuild

go 1.23

require github.com/cloudnativelabs/kube-router/v2 ${KUBE_ROUTER_K3S_VERSION%%-*}

replace github.com/cloudnativelabs/kube-router/v2 => github.com/k3s-io/kube-router/v2 $KUBE_ROUTER_K3S_VERSION
MOD
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"\n' > "$work/tools.go"
  (cd "$work" && go mod tidy -e >/dev/null 2>&1 || true
   go build -tags tools -ldflags "-s -w" -o "$kr_bin.tmp/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
  rm -rf "$kr_bin"; mv "$kr_bin.tmp" "$kr_bin"
}

# CoreDNS with the plugins its Corefile (coredns.yaml) names and no others, as CoreDNS's docs build a custom one: a main
# that imports them. The full build compiles every cloud provider's SDK besides; this is the cold cache's cost.
build_coredns() {
  [ -x "$coredns_bin/coredns" ] && return 0
  echo "building coredns $COREDNS_VERSION with the plugins" $coredns_plugins
  work=$cache/src/coredns-$COREDNS_VERSION
  rm -rf "$work"; mkdir -p "$work" "$coredns_bin.tmp"
  printf 'module sandboxd.local/corednsbuild\n\ngo 1.23\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" > "$work/go.mod"
  { printf 'package main\n\nimport (\n\t"github.com/coredns/coredns/coremain"\n'
    for p in $coredns_plugins; do printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"; done
    printf ')\n\nfunc main() { coremain.Run() }\n'; } > "$work/main.go"
  (cd "$work" && go mod tidy >/dev/null && go build -ldflags "-s -w" -o "$coredns_bin.tmp/coredns" .)
  rm -rf "$coredns_bin"; mv "$coredns_bin.tmp" "$coredns_bin"
}

# containerd 2 with its runc shim and ctr, static.
build_containerd() {
  [ -x "$ctd_bin/containerd" ] && return 0
  echo "building containerd $CONTAINERD_VERSION"
  mkdir -p "$ctd_bin.tmp"
  GOBIN="$ctd_bin.tmp" go install -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    github.com/containerd/containerd/v2/cmd/{containerd,containerd-shim-runc-v2,ctr}@"$CONTAINERD_VERSION"
  rm -rf "$ctd_bin"; mv "$ctd_bin.tmp" "$ctd_bin"
}

# gVisor: runsc and its containerd shim. Both static: runsc re-executes itself inside a chroot without a dynamic
# loader, so a cgo build dies at every sandbox start ("fork/exec /proc/self/exe: no such file or directory").
# Two patches (tests-e2e/cluster/gvisor-patches.py says what and why); the cache key names their revision.
build_gvisor() {
  [ -x "$gv_bin/containerd-shim-runsc-v1" ] && return 0
  echo "building gVisor $GVISOR_VERSION with sandboxd's patches $GVISOR_PATCHES (runsc and containerd-shim-runsc-v1)"
  (cd / && go mod download gvisor.dev/gvisor@"$GVISOR_VERSION")
  src=$cache/src/gvisor-$GVISOR_VERSION
  rm -rf "$src"; mkdir -p "$cache/src"
  cp -r "$(go env GOMODCACHE)/gvisor.dev/gvisor@$GVISOR_VERSION" "$src"; chmod -R u+w "$src"
  python3 "$here/gvisor-patches.py" "$src"
  mkdir -p "$gv_bin.tmp"
  (cd "$src" && go build -ldflags "-s -w" -o "$gv_bin.tmp/runsc" ./runsc \
     && go build -ldflags "-s -w" -o "$gv_bin.tmp/containerd-shim-runsc-v1" ./shim)
  rm -rf "$gv_bin"; mv "$gv_bin.tmp" "$gv_bin"
}

# Two lanes at once: Kubernetes then gVisor, and everything else in turn. Each go build runs its compiles in
# parallel, but its links and its last large packages leave a core idle; two builds side by side keep both busy
# (docs/development.md: 12.2 minutes with empty Go caches, where one build after another took 14.1 in a cold CI run).
build_k8s_lane() {
  build_kubernetes
  build_gvisor
}
build_others() {
  build_go_tool kube-router "$KUBE_ROUTER_VERSION" github.com/cloudnativelabs/kube-router/v2 github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  bash "$here/build-calico.sh"  # the second cluster's enforcer (Makefile: TEST_SECOND_CLUSTER)
  build_coredns
  build_go_tool helm "$HELM_VERSION" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm
  build_go_tool registry "$DISTRIBUTION_VERSION" github.com/distribution/distribution/v3 github.com/distribution/distribution/v3/cmd/registry
  build_containerd
}
# `build-k8s.sh kube-router-k3s`: that one only (cluster-up.sh, for ENFORCER=kube-router-k3s; make test runs none).
if [ "${1:-}" = kube-router-k3s ]; then build_kube_router_k3s; exit 0; fi
build_k8s_lane & k8s_lane=$!
build_others & others_lane=$!
status=0
wait "$k8s_lane" || status=$?
wait "$others_lane" || status=$?
[ "$status" = 0 ] || { echo "a build failed (see above)" >&2; exit "$status"; }

mkdir -p "$cache/bin/current"
for d in "$k8s_bin" "$coredns_bin" "$cache/bin/helm-$HELM_VERSION" \
         "$cache/bin/registry-$DISTRIBUTION_VERSION" "$ctd_bin" "$gv_bin"; do
  for f in "$d"/*; do ln -sf "$f" "$cache/bin/current/$(basename "$f")"; done
done
echo "binaries in $cache/bin/current"
