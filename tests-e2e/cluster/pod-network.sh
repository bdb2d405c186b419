#!/usr/bin/env bash
# The pod network's channels below IP policy, closed in two independent layers (defence in depth):
#   1. CNI: on an IPv4-only cluster the `tuning` plugin disables IPv6 inside every new pod's network namespace, so
#      a pod has no fe80:: address to send from (runc; gVisor's own network stack ignores it).
#   2. Node: an nftables bridge table on every frame from a pod's port (veth*, the CNI bridge plugin's host-side
#      names), forwarded to another pod or delivered to the node. With ENFORCER=calico the pods have no bridge:
#      the calico plugin routes each over a veth of its own (cali*), so the same rules sit in an inet table on
#      every packet from a cali* interface (any other ethertype ends at the node, which routes only IP). IPv4-only: anything but IPv4 and ARP is dropped
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
table="bridge sandboxd_pod_l2" ports='veth*'
[ "$POD_LINKS" != routed ] || table="inet sandboxd_pod_veth" ports='cali*'
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
  local tuning="" ranges routes first
  ranges='[{"subnet": "'"$(cat "$NODE_DIR/cni/pod-cidr")"'"}]' routes='{"dst": "0.0.0.0/0"}'
  if [ "$IP_FAMILIES" = dual ]; then
    ranges+=', [{"subnet": "'"$(cat "$NODE_DIR/cni/pod-cidr6")"'"}]' routes+=', {"dst": "::/0"}'
  elif [ "$1" = true ]; then
    tuning='{"type": "tuning", "sysctl": {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1", "net.ipv6.conf.eth0.disable_ipv6": "1"}},'
  fi
  if [ "$POD_LINKS" = routed ]; then
    # The calico plugin with host-local IPAM (the node's ranges, as the bridge has them) and the Kubernetes API
    # as datastore; it routes the pod's addresses to its veth and gives the pod a default route of its own.
    # Its files are the node's own (node 2 shares this machine's disk): the name calico-node's startup would write,
    # and the directory where felix reports each pod's endpoint programmed.
    first='{"type": "calico", "datastore_type": "kubernetes", "nodename": "'"$NODE_NAME"'", "mtu": 1500,
     "nodename_file": "'"$NODE_DIR/calico/nodename"'", "endpoint_status_dir": "'"$NODE_DIR/calico/endpoint-status"'",
     "log_level": "warning", "log_file_path": "'"$NODE_DIR/cni/calico.log"'",
     "ipam": {"type": "host-local", "ranges": ['"$ranges"'], "dataDir": "'"$NODE_DIR/cni/ipam"'"},
     "policy": {"type": "k8s"}, "kubernetes": {"kubeconfig": "'"$KUBECONFIG_ADMIN"'"}},'
  else
    first='{"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": ['"$ranges"'], "routes": ['"$routes"'],
              "dataDir": "'"$NODE_DIR/cni/ipam"'"}},'
  fi
  mkdir -p "$(dirname "$conflist")"
  cat > "$conflist.tmp" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "sandboxd-pods",
  "plugins": [
    $first
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
    # The bridge table sees frames (ether type); calico's inet table sees only IP, since the node routes nothing else.
    ether="ether type ip6 " ip4="ether type { ip, arp } accept" closed="IPv4 and ARP"
    [ "$POD_LINKS" != routed ] || ether="" ip4="meta nfproto ipv4 accept" closed="IPv4"
    ip6_rules=""
    if [ "$IP_FAMILIES" = dual ]; then
      ip6_rules="${ether}ip6 saddr $POD_CIDR6 ip6 daddr != { fe80::/10, ff00::/8 } accept
    ${ether}ip6 hoplimit 255 icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept"
      closed+=", and IPv6 unicast from the pod range or neighbour discovery"
    fi
    # Pods may speak $closed only: anything else is dropped, whether it goes to another pod or to the node itself.
    rules="iifname != \"$ports\" accept
    $ip4
    $ip6_rules
    counter drop comment \"sandboxd: pods speak $closed only\""
    on nft -f - <<NFT
table $table
delete table $table
table $table {
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
    on nft delete table $table 2>/dev/null || true
    ;;
  status)
    # IPv4-only: both layers; dual-stack: the bridge table alone (pods keep IPv6 there).
    layers=0 want=2
    [ "$IP_FAMILIES" != dual ] || want=1
    [ "$IP_FAMILIES" = dual ] || ! grep -q '"tuning"' "$conflist" 2>/dev/null || layers=$((layers + 1))
    on nft list table $table >/dev/null 2>&1 && layers=$((layers + 1))
    if [ $layers = "$want" ]; then echo closed; elif [ $layers = 0 ]; then echo open; else echo partial; fi
    ;;
  *) echo "usage: $0 close|open|status [N]" >&2; exit 2 ;;
esac
