#!/usr/bin/env bash
# The pod network's non-IPv4 channels, closed in two independent layers (defence in depth):
#   1. CNI: the `tuning` plugin disables IPv6 inside every new pod's network namespace, so a pod
#      has no fe80:: address to send from (runc; gVisor's own network stack ignores it).
#   2. Node: an nftables bridge table drops every frame from a pod's port (veth*, the CNI bridge
#      plugin's host-side names) that is neither
#      IPv4 nor ARP (IPv6, and anything else), forwarded to another pod or delivered to the node.
#      It holds under gVisor too, which sends its own frames through the veth.
# The isolation gate in every sandbox checks the result (gateway by EUI-64, ff02::1) and fails
# closed, so a sandbox never starts while either path answers.
#
#   pod-network.sh close    write both layers (cluster-up.sh does this before any pod exists)
#   pod-network.sh open     remove both: only for the e2e test that shows the gate and `helm test`
#                           fail on such a cluster (new pods then get IPv6 link-local addresses)
#   pod-network.sh status   prints "closed", "open" or "partial"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.env"
conflist=$CLUSTER_STATE/cni/net.d/10-sandboxd.conflist
table=sandboxd_pod_l2

write_conflist() { # WITH_TUNING(true|false)
  local tuning=""
  if [ "$1" = true ]; then
    tuning='{"type": "tuning", "sysctl": {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1", "net.ipv6.conf.eth0.disable_ipv6": "1"}},'
  fi
  mkdir -p "$(dirname "$conflist")"
  cat > "$conflist.tmp" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "sandboxd-pods",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NODE_POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$CLUSTER_STATE/cni/ipam"}},
    $tuning
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON
  mv "$conflist.tmp" "$conflist"  # containerd watches the directory and reloads on the rename
}

case "${1:-}" in
  close)
    write_conflist true
    nft -f - <<NFT
table bridge $table
delete table bridge $table
table bridge $table {
  # Pods on cni0 may speak IPv4 and ARP only; IPv6 (link-local, multicast, NDP) and any other
  # ethertype is dropped, whether bridged to another pod or delivered to the node itself.
  chain forward {
    type filter hook forward priority -200; policy accept;
    iifname "veth*" ether type != { ip, arp } counter drop comment "sandboxd: pods speak IPv4 and ARP only"
  }
  chain input {
    type filter hook input priority -200; policy accept;
    iifname "veth*" ether type != { ip, arp } counter drop comment "sandboxd: pods speak IPv4 and ARP only"
  }
}
NFT
    ;;
  open)
    write_conflist false
    nft delete table bridge "$table" 2>/dev/null || true
    ;;
  status)
    layers=0
    grep -q '"tuning"' "$conflist" 2>/dev/null && layers=$((layers + 1))
    nft list table bridge "$table" >/dev/null 2>&1 && layers=$((layers + 1))
    case $layers in 2) echo closed ;; 0) echo open ;; *) echo partial ;; esac
    ;;
  *) echo "usage: $0 close|open|status" >&2; exit 2 ;;
esac
