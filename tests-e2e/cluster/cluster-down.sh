#!/usr/bin/env bash
# Stops exactly what cluster-up.sh started (by recorded PID), then removes the pods' mounts,
# network interfaces, iptables chains and state, so up -> down -> up works.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.env"
run=$CLUSTER_STATE/run

stop() { # NAME: SIGTERM the recorded process group, then SIGKILL after a grace period
  local pidfile=$run/$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$pidfile"
}

# The nodes first (node.sh: kubelets, shims, pods, node 2's namespace and state), then the control plane.
for n in $(cat "$run/nodes" 2>/dev/null || echo 2 1); do bash "$here/node.sh" down "$n"; done
for c in registry kube-scheduler kube-controller-manager kube-apiserver etcd targets; do stop "$c"; done

# Mounts left by pods (volumes, overlay rootfs, netns) under the kubelet and containerd dirs.
grep -E " ($KUBELET_ROOT|$CLUSTER_STATE|/run/netns/cni-)" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null
done
for ns in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do ip netns delete "$ns" 2>/dev/null; done
ip netns delete "$TARGET_NETNS" 2>/dev/null
ip link delete sbx-tgt-host 2>/dev/null
ip link delete cni0 2>/dev/null
# A dual-stack cluster's: node 1's IPv6 address and the IPv6 forwarding it turned on.
if ip link show sbx-node1 >/dev/null 2>&1; then ip link delete sbx-node1; sysctl -qw net.ipv6.conf.all.forwarding=0; fi
for v in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^veth'); do ip link delete "$v" 2>/dev/null; done

# iptables: kube-proxy's and kube-router's chains and ipsets, then the guard.
# grep without -q: under pipefail, grep -q leaving early fails the pipeline (SIGPIPE) and the clean-up was skipped.
for ipt in iptables ip6tables; do
  $ipt-save 2>/dev/null | grep -E 'KUBE-|KUBE_ROUTER' >/dev/null && {
    for t in filter nat mangle; do
      for ch in $($ipt -t "$t" -S 2>/dev/null | awk '/^-N (KUBE|KUBE-ROUTER)/{print $2}'); do $ipt -t "$t" -F "$ch" 2>/dev/null; done
      $ipt -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE' | sed 's/^-A/-D/' | while read -r r; do eval $ipt -t "$t" "$r" 2>/dev/null; done
      for ch in $($ipt -t "$t" -S 2>/dev/null | awk '/^-N (KUBE|KUBE-ROUTER)/{print $2}'); do $ipt -t "$t" -X "$ch" 2>/dev/null; done
    done
  }
done
for s in $(ipset list -n 2>/dev/null | grep -E '^(KUBE|kube-router)'); do ipset destroy "$s" 2>/dev/null; done
bash "$here/calico-cleanup.sh"  # ENFORCER=calico's felix (node 2's went with its namespace)
for ipt in iptables ip6tables; do
  $ipt -t mangle -D FORWARD -j SBX-GUARD 2>/dev/null; $ipt -t mangle -F SBX-GUARD 2>/dev/null; $ipt -t mangle -X SBX-GUARD 2>/dev/null
  $ipt -t mangle -D POSTROUTING -j SBX-UPLINK-COUNT 2>/dev/null; $ipt -t mangle -F SBX-UPLINK-COUNT 2>/dev/null; $ipt -t mangle -X SBX-UPLINK-COUNT 2>/dev/null
  $ipt -t mangle -D INPUT -j SBX-GUARD-IN 2>/dev/null; $ipt -t mangle -F SBX-GUARD-IN 2>/dev/null; $ipt -t mangle -X SBX-GUARD-IN 2>/dev/null
done

nft delete table bridge sandboxd_pod_l2 2>/dev/null
nft delete table inet sandboxd_pod_veth 2>/dev/null
( node_env 1  # ENFORCER=calico: node 1's range routed nowhere but to its pods
  for f in pod-cidr pod-cidr6; do c=$(cat "$NODE_DIR/cni/$f" 2>/dev/null) && ip route delete blackhole "$c" 2>/dev/null; done )

rm -rf "$CLUSTER_STATE" "$KUBELET_ROOT" "$ETCD_DATA"
echo "[cluster] down"
