#!/usr/bin/env bash
# Shows which of the cluster's processes run (by recorded PID), the node and the system pods.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.env"
for f in "$CLUSTER_STATE"/run/*.pid; do
  [ -e "$f" ] || { echo "cluster: not started"; exit 1; }
  name=$(basename "$f" .pid); pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    printf '  %-24s running  pid %-7s rss %s MB\n' "$name" "$pid" "$(( $(ps -o rss= -p "$pid" 2>/dev/null || echo 0) / 1024 ))"
  else
    printf '  %-24s STOPPED  (see %s/logs/%s.log)\n' "$name" "$CLUSTER_STATE" "$name"
  fi
done
export KUBECONFIG=$KUBECONFIG_ADMIN
"$CLUSTER_BIN/kubectl" get nodes -o wide && "$CLUSTER_BIN/kubectl" get pods -A -o wide
echo "KUBECONFIG=$KUBECONFIG_ADMIN"
