#!/usr/bin/env bash
# For a running local cluster: import the images `make images` rebuilt into containerd and start
# sandboxd and its warm pool afresh from them (the e2e suite's next `helm upgrade` keeps them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cluster/cluster.env"
export PATH=$CLUSTER_BIN:$PATH
for n in $(cat "$CLUSTER_STATE/run/nodes" 2>/dev/null || echo 1); do
  node_env "$n"
  stamp=$CLUSTER_STATE/run/images$NODE_PID_SUFFIX.imported
  for img in "$SANDBOXD_CACHE"/images/*.tar; do
    if [ "$img" -nt "$stamp" ] || [ ! -f "$stamp" ]; then
      echo "[reload] importing $(basename "$img") into $NODE_NAME"
      ctr --address "$NODE_DIR/containerd/containerd.sock" -n k8s.io images import "$img" >/dev/null
    fi
  done
  touch "$stamp"
done
K() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
if K -n cai-system get deploy sandboxd >/dev/null 2>&1; then
  K -n cai-system rollout restart deploy/sandboxd
  K -n cai-system rollout status deploy/sandboxd --timeout=180s
  K -n cai-sandbox delete pods -l app.kubernetes.io/managed-by=sandboxd --grace-period=0 --wait=false
fi
echo "[reload] done"
