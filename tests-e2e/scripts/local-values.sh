#!/usr/bin/env bash
# Prints the chart values for the project's local offline cluster: the API server address (the
# node's own, which sandboxd must reach and tool pods must not), and the simulated targets the
# chart's `helm test` probe attacks, with the public one as its positive control.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cluster/cluster.env"
uplink=$(ip -4 route show default | awk '{print $5; exit}')
node_ip=$(ip -4 -o addr show dev "$uplink" | awk '{print $4}' | cut -d/ -f1 | head -1)
cat <<YAML
networkPolicy:
  apiServerCidrs: ["$node_ip/32"]
  extraBlockedCidrs: ["$node_ip/32"]
# The suite calls sandboxd from node 1 (this machine), as an agent would, and a node reaches only the pods on itself
# (another node's traffic meets sandboxd's ingress policy): sandboxd's replicas stay on node 1, sandbox pods spread.
nodeSelector:
  kubernetes.io/hostname: sandboxd-node
probe:
  metadataTarget: "$TARGET_METADATA:80"
  privateTargets: ["$TARGET_PRIVATE_10:80", "$TARGET_PRIVATE_172:80", "$TARGET_PRIVATE_192:80"]
  publicTarget: "$TARGET_PUBLIC:80"
YAML
