#!/usr/bin/env bash
# The pod network's channels below IP policy, closed in two independent layers (defence in depth):
#   1. CNI: on an IPv4-only cluster the `tuning` plugin disables IPv6 inside every new pod's network namespace, so
#      a pod has no fe80:: address to send from (runc; gVisor's own network stack ignores it).
#   2. Node: an nftables bridge table on every frame from a pod's port (veth*, the CNI bridge plugin's host-side
#      names), forwarded to another pod or delivered to the node. IPv4-only: anything but IPv4 and ARP is dropped
#      (IPv6, and any other ethertype). Dual-stack (IP_FAMILIES=dual): IPv6 passes only from the pod range to a
#      unicast address outside link-local, where the enforcer's IPv6 rules judge it like IPv4, plus neighbour
#      discovery (solicitations and advertisements, hop limit 255); link-local and multicast IPv6 (which no
#      NetworkPolicy enforcer judges: their addresses are in no pod's rules), router advertisements and any other
#      ethertype are dropped. It holds under gVisor too, which sends its own frames through the veth.
# The isolation gate in every sandbox checks the result (gateway by EUI-64, ff02::1) and fails
# closed, so a sandbox never starts while either path answers.
#
#   pod-network.sh close [N]   write both layers (node.sh does this before any pod exists on the node)
#   pod-network.sh open [N]    remove both: only for the e2e tests that show the gate, `helm test` and the
#                              isolation tests fail on such a node (new pods then get IPv6 link-local addresses)
#   pod-network.sh status [N]  prints "closed", "open" or "partial"
# N is a node (1 or 2, see cluster.env); without it, every node of the cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.env"
table=sandboxd_pod_l2
action=${1:-}
if [ -z "${2:-}" ]; then
  nodes=$(cat "$CLUSTER_STATE/run/nodes" 2>/dev/null || echo 1)
  if [ "$action" = status ]; then
    seen=$(for n in $nodes; do bash "$0" status "$n"; done | sort -u)
    [ "$(echo "$seen" | wc -l)" = 1 ] && echo "$seen" || echo partial
  else
    for n in $nodes; do bash "$0" "$action" "$n"; done
  fi
  exit 0
fi
node_env "$2"
conflist=$NODE_DIR/cni/net.d/10-sandboxd.conflist
on() { if [ -n "$NODE_NETNS" ]; then nsenter --net="/run/netns/$NODE_NETNS" "$@"; else "$@"; fi; }

write_conflist() { # CLOSED(true|false)
  local tuning="" ranges routes
  ranges='[{"subnet": "'"$(cat "$NODE_DIR/cni/pod-cidr")"'"}]' routes='{"dst": "0.0.0.0/0"}'
  if [ "$IP_FAMILIES" = dual ]; then
    ranges+=', [{"subnet": "'"$(cat "$NODE_DIR/cni/pod-cidr6")"'"}]' routes+=', {"dst": "::/0"}'
  elif [ "$1" = true ]; then
    tuning='{"type": "tuning", "sysctl": {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1", "net.ipv6.conf.eth0.disable_ipv6": "1"}},'
  fi
  mkdir -p "$(dirname "$conflist")"
  cat > "$conflist.tmp" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "sandboxd-pods",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [$ranges], "routes": [$routes],
              "dataDir": "$NODE_DIR/cni/ipam"}},
    $tuning
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON
  mv "$conflist.tmp" "$conflist"  # containerd watches the directory and reloads on the rename
}

case "$action" in
  close)
    write_conflist true
    if [ "$IP_FAMILIES" = dual ]; then
      ip6_rules="ether type ip6 ip6 saddr $POD_CIDR6 ip6 daddr != { fe80::/10, ff00::/8 } accept
    ether type ip6 ip6 hoplimit 255 icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept"
      closed="IPv4, ARP, and IPv6 unicast from the pod range or neighbour discovery"
    else
      ip6_rules="" closed="IPv4 and ARP"
    fi
    # Pods on cni0 may speak $closed only: anything else is dropped, whether bridged to another pod or delivered
    # to the node itself.
    rules="iifname != \"veth*\" accept
    ether type { ip, arp } accept
    $ip6_rules
    counter drop comment \"sandboxd: pods speak $closed only\""
    on nft -f - <<NFT
table bridge $table
delete table bridge $table
table bridge $table {
  chain forward {
    type filter hook forward priority -200; policy accept;
    $rules
  }
  chain input {
    type filter hook input priority -200; policy accept;
    $rules
  }
}
NFT
    ;;
  open)
    write_conflist false
    on nft delete table bridge "$table" 2>/dev/null || true
    ;;
  status)
    # IPv4-only: both layers; dual-stack: the bridge table alone (pods keep IPv6 there).
    layers=0 want=2
    [ "$IP_FAMILIES" != dual ] || want=1
    [ "$IP_FAMILIES" = dual ] || ! grep -q '"tuning"' "$conflist" 2>/dev/null || layers=$((layers + 1))
    on nft list table bridge "$table" >/dev/null 2>&1 && layers=$((layers + 1))
    if [ $layers = "$want" ]; then echo closed; elif [ $layers = 0 ]; then echo open; else echo partial; fi
    ;;
  *) echo "usage: $0 close|open|status [N]" >&2; exit 2 ;;
esac
