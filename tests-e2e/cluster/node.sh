#!/usr/bin/env bash
# One node of the local cluster: its containerd (runc and gVisor), kubelet, kube-proxy and NetworkPolicy enforcer
# (kube-router, or Calico's felix: cluster.env's ENFORCER), and its pod network. Node 1 lives in the machine's own
# network namespace (the control plane's); node 2 in a network namespace of its own with its own node IP, joined to
# node 1 by a veth link over which pod traffic between the nodes is routed, so a packet from a pod on one node to a
# pod on the other leaves one node and enters the other. Every process is recorded by PID in $CLUSTER_STATE/run.
#
#   node.sh up N      start node N (needs the control plane: cluster-up.sh); returns when it is Ready
#   node.sh kill N    the node lost: its link cut first (node 2 only), then its daemons, shims and every process of
#                     its pods killed at once. Its Node object stays, as a dead machine's does.
#   node.sh down N    kill N, then remove its mounts, state and network (cluster-down.sh does this)
#   node.sh freeze N  its kubelet stopped (SIGSTOP) while containerd, its pods and the enforcer run on: a kubelet
#                     that died on a live machine; `node.sh thaw N` lets it go on (SIGCONT)
#   node.sh restart-enforcer N [clean]
#                     the enforcer killed and started again (an upgrade, a crash); with "clean" its iptables rules
#                     and ipsets are removed in between (an enforcer that starts from nothing: the lifecycle
#                     matrix's mutation); returns when it answers its health check
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
. "$here/cluster.env"
export PATH=$CLUSTER_BIN:$PATH
usage="usage: node.sh up|kill|down|freeze|thaw|restart-enforcer N"
action=${1:?$usage} n=${2:?$usage}
node_env "$n"
pki=$CLUSTER_STATE/pki run=$CLUSTER_STATE/run logs=$CLUSTER_STATE/logs
sfx=$NODE_PID_SUFFIX
t0=$(date +%s.%N)
log() { echo "[$NODE_NAME +$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")s] $*"; }
# on CMD...: run CMD in the node's network namespace (nsenter --net only: the node shares the machine's mounts,
# as the kubelet and containerd must share theirs; `ip netns exec` would also remount /sys and hide the cgroups).
on() { if [ -n "$NODE_NETNS" ]; then nsenter --net="/run/netns/$NODE_NETNS" "$@"; else "$@"; fi; }
start() { # NAME CMD...: a daemon of this node, in its network namespace, logged to $logs/NAME.log
  local name=$1; shift
  # A simple command, so $! is the daemon itself (nsenter and setsid exec it), the leader of its process group.
  if [ -n "$NODE_NETNS" ]; then
    nsenter --net="/run/netns/$NODE_NETNS" setsid "$@" >"$logs/$name.log" 2>&1 < /dev/null &
  else
    setsid "$@" >"$logs/$name.log" 2>&1 < /dev/null &
  fi
  echo $! > "$run/$name.pid"
}
stop() { # NAME: the recorded process group, SIGKILL (a node lost does not shut down cleanly)
  local pidfile=$run/$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}
K() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ctr_sock=$NODE_DIR/containerd/containerd.sock
calico_dir=$SANDBOXD_CACHE/calico/$CALICO_VERSION
# The enforcer's daemon (its PID file's name) and its health path; both listen for health on port 20244.
if [ "$ENFORCER" = calico ]; then enforcer=felix enforcer_health=/readiness; else enforcer=kube-router enforcer_health=/healthz; fi

node_ip() { # the node's IPv4 address, and its IPv6 one after a comma on a dual-stack cluster
  if [ -n "$NODE_NETNS" ]; then both "$NODE_LINK_NODE" "$NODE_LINK_NODE6"; else both "$API_IP" "$NODE1_IP6"; fi
}

link_up() { # node 2: its network namespace and the link to node 1 (the machine)
  [ -n "$NODE_NETNS" ] || return 0
  ip netns add "$NODE_NETNS" 2>/dev/null || true
  if ! ip link show "$NODE_LINK_IF" >/dev/null 2>&1; then
    ip link add "$NODE_LINK_IF" type veth peer name eth0 netns "$NODE_NETNS"
  fi
  ip addr replace "$NODE_LINK_HOST/30" dev "$NODE_LINK_IF"; ip link set "$NODE_LINK_IF" up
  on sh -ec "ip link set lo up; ip addr replace $NODE_LINK_NODE/30 dev eth0; ip link set eth0 up
    ip route replace default via $NODE_LINK_HOST
    sysctl -qw net.ipv4.ip_forward=1
    sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1"
  if [ "$IP_FAMILIES" = dual ]; then
    ip addr replace "$NODE_LINK_HOST6/64" dev "$NODE_LINK_IF" nodad
    on sh -ec "ip addr replace $NODE_LINK_NODE6/64 dev eth0 nodad; ip -6 route replace default via $NODE_LINK_HOST6
      sysctl -qw net.ipv6.conf.all.forwarding=1"
  fi
  # The guard of cluster-up.sh holds for this node's pods (their addresses are in POD_CIDR); this adds its own
  # traffic (kube-proxy may masquerade a pod's packet to the node's address): nothing from the link leaves.
  for ipt in iptables ip6tables; do
    local leaves=(-i "$NODE_LINK_IF" -o "$UPLINK" -m comment --comment "sandboxd guard: node $n never leaves" -j DROP)
    $ipt -t mangle -C SBX-GUARD "${leaves[@]}" 2>/dev/null || $ipt -t mangle -A SBX-GUARD "${leaves[@]}"
  done
  # Its containerd pulls from the local registry through a read-only second listener on node 1's end of the
  # link (the registry itself listens on loopback only); nothing but the node itself may reach it.
  local only_node=(-d "$NODE_LINK_HOST" -p tcp --dport 5000 ! -s "$NODE_LINK_NODE" -m comment --comment "sandboxd: only node $n reaches the registry" -j DROP)
  iptables -t mangle -C SBX-GUARD-IN "${only_node[@]}" 2>/dev/null || iptables -t mangle -A SBX-GUARD-IN "${only_node[@]}"
  cat > "$NODE_DIR/registry.yaml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: "$REGISTRY_DATA"}
  maintenance: {readonly: {enabled: true}}
http: {addr: "$NODE_LINK_HOST:5000"}
EOF
  setsid registry serve "$NODE_DIR/registry.yaml" >"$logs/registry$sfx.log" 2>&1 < /dev/null &
  echo $! > "$run/registry$sfx.pid"
  wait_for "registry for the node" 30 on curl -sf "http://$NODE_LINK_HOST:5000/v2/"
}

cgroup_up() { # node 2: a cgroup root of its own in every hierarchy, so its kubelet never touches node 1's pods
  [ "$NODE_CGROUP_ROOT" != / ] || return 0
  local h
  for h in /sys/fs/cgroup/*/; do
    case $h in */unified/) continue ;; esac
    mkdir -p "$h$NODE_CGROUP_ROOT"
  done
  cat /sys/fs/cgroup/cpuset/cpuset.cpus > "/sys/fs/cgroup/cpuset$NODE_CGROUP_ROOT/cpuset.cpus"
  cat /sys/fs/cgroup/cpuset/cpuset.mems > "/sys/fs/cgroup/cpuset$NODE_CGROUP_ROOT/cpuset.mems"
}

node_certs() { # the kubelet's client certificate (system:node:NAME) and serving certificate, signed by the CA
  [ -f "$pki/kubelet-$NODE_NAME.crt" ] && return 0
  local ip=$1
  ( cd "$pki"
    for kind in client serving; do
      local name=kubelet-$NODE_NAME subj="/O=system:nodes/CN=system:node:$NODE_NAME" ext="extendedKeyUsage=clientAuth"
      if [ $kind = serving ]; then name=kubelet-serving-$NODE_NAME subj="/CN=$NODE_NAME"
        ext=$'extendedKeyUsage=serverAuth\nsubjectAltName=DNS:'"$NODE_NAME,IP:${ip//,/,IP:}"; fi
      openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
      printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n%s\n' "$ext" > "$name.ext"
      openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 3650 -extfile "$name.ext" 2>/dev/null
      rm -f "$name.csr" "$name.ext"; chmod 600 "$name.key"
    done )
}

containerd_up() {
  mkdir -p "$NODE_DIR/containerd" "$NODE_DIR/cni/net.d"
  local registry=http://$LOCAL_REGISTRY
  [ -z "$NODE_NETNS" ] || registry=http://$NODE_LINK_HOST:5000
  # containerd 2 (built by build-k8s.sh): gVisor's shim speaks only its shim protocol. Two runtime handlers:
  # runc (the default) and runsc (gVisor), which the RuntimeClass `gvisor` names.
  cat > "$NODE_DIR/containerd/config.toml" <<EOF
version = 4
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
[plugins.'io.containerd.server.v1.grpc']
  address = "$ctr_sock"
[plugins.'io.containerd.server.v1.ttrpc']
  address = "$ctr_sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$NODE_DIR/containerd/certs.d"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "sandboxd.local/pause:3.10"
[plugins.'io.containerd.cri.v1.runtime']
  # Mandatory on these VMs: without CAP_SYS_RESOURCE runc cannot raise oom_score_adj.
  restrict_oom_score_adj = true
  # An image's VOLUME would otherwise become a writable bind mount from containerd's own root:
  # outside the read-only root and outside the kubelet's ephemeral-storage accounting. A hostile
  # agent image could then write without bound. (ToolPodHardeningIT.imageDefinedVolumeIsNotWritable)
  ignore_image_defined_volumes = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = "$NODE_DIR/containerd/runsc.toml"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"$([ "$POD_LINKS" != routed ] || echo ", \"$calico_dir\"")]
    conf_dir = "$NODE_DIR/cni/net.d"
# Nothing here uses NRI, and its socket (/var/run/nri/nri.sock) would be one for every node's containerd: the
# second to start would exit at once ("address already in use").
[plugins.'io.containerd.nri.v1.nri']
  disable = true
EOF
  # gVisor's shim and runsc. Platform systrap (runsc's default: no /dev/kvm needed, works in a VM); gVisor's own
  # network stack on the pod's veth (NetworkPolicy is enforced on the host side, unchanged). oci-seccomp: runsc
  # applies the pod's seccomp profile inside its kernel only with this flag; without it the seccomp tests prove
  # nothing under gVisor (runsc's own host-side filter is always on and narrower still). runsc sizes each sandbox's
  # memory to its pod's limit by itself; the other options tried (overlay2, platform kvm) gained nothing here:
  # docs/benchmarks.md.
  cat > "$NODE_DIR/containerd/runsc.toml" <<EOF
binary_name = "$CLUSTER_BIN/runsc"
root = "$NODE_DIR/containerd/state/runsc"
[runsc_config]
  oci-seccomp = "true"
EOF
  # The local registry speaks plain HTTP; every other registry is unreachable offline anyway.
  mkdir -p "$NODE_DIR/containerd/certs.d/$LOCAL_REGISTRY"
  cat > "$NODE_DIR/containerd/certs.d/$LOCAL_REGISTRY/hosts.toml" <<EOF
server = "$registry"
[host."$registry"]
  capabilities = ["pull", "resolve"]
EOF
  start "containerd$sfx" containerd --config "$NODE_DIR/containerd/config.toml"
  wait_for containerd 30 ctr --address "$ctr_sock" version
  local imports=() img pid
  for img in "$SANDBOXD_CACHE"/images/*.tar; do
    ctr --address "$ctr_sock" -n k8s.io images import "$img" 2>&1 >/dev/null | { grep -v "cgroup v1 is deprecated" >&2 || true; } &
    imports+=($!)
  done
  for pid in "${imports[@]}"; do wait "$pid"; done
  touch "$run/images$sfx.imported"  # make reload imports only what was rebuilt after this
  log "containerd up; imported $(ls "$SANDBOXD_CACHE"/images/*.tar | wc -l) images"
}

kubelet_up() {
  local ip=$1
  mkdir -p "$NODE_KUBELET_ROOT" "$NODE_LOGS_DIR"
  # Seccomp profiles: the nodes share this machine's disk, so node 2 reads node 1's directory, where the chart's
  # DaemonSet (a hostPath of the kubelet's root, as every node has it) and the seccomp tests write.
  if [ "$n" = 1 ]; then mkdir -p "$NODE_KUBELET_ROOT/seccomp"; else mkdir -p /var/lib/kubelet/seccomp; ln -sfn /var/lib/kubelet/seccomp "$NODE_KUBELET_ROOT/seccomp"; fi
  cat > "$NODE_DIR/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: sandboxd-local, cluster: {server: "https://$API_IP:6443", certificate-authority: "$pki/ca.crt"}}]
users: [{name: kubelet, user: {client-certificate: "$pki/kubelet-$NODE_NAME.crt", client-key: "$pki/kubelet-$NODE_NAME.key"}}]
contexts: [{name: sandboxd-local, context: {cluster: sandboxd-local, user: kubelet}}]
current-context: sandboxd-local
EOF
  cat > "$NODE_DIR/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: "$NODE_CGROUP_ROOT"
# This machine has cgroup v1 only, which the kubelet refuses from 1.35 on unless told (KEP-5573, an upstream
# temporary override). Production nodes run cgroup v2 (docs/install.md).
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: ["$CLUSTER_DNS_IP"]
containerRuntimeEndpoint: "unix://$ctr_sock"
tlsCertFile: "$pki/kubelet-serving-$NODE_NAME.crt"
tlsPrivateKeyFile: "$pki/kubelet-serving-$NODE_NAME.key"
# Each kubelet removes the log directories of pods it does not know: the nodes must not share one.
podLogsDir: "$NODE_LOGS_DIR"
podPidsLimit: 256
maxPods: 110
serializeImagePulls: false
# The images imported into containerd at start (the agent images the suite runs tools in) are used by name, and some
# are also pulled by digest from the local registry (ImageDigestIT). From 1.35 the kubelet then counts an image as
# pulled, not preloaded, and re-verifies every later use of it under another name by pulling that name, which exists
# in no registry: ImagePullBackOff. This throwaway cluster has no pull secrets to protect, so it never re-verifies.
imagePullCredentialsVerificationPolicy: NeverVerify
resolvConf: "$CLUSTER_STATE/resolv.conf"
evictionHard: {memory.available: "200Mi", nodefs.available: "2%", imagefs.available: "2%"}
imageGCHighThresholdPercent: 100
# The kubelet measures emptyDir and ephemeral-storage use every volumeStatsAggPeriod (default 1 min,
# jittered up to 2): a sandbox may write past its limits until the next pass, so measure often.
volumeStatsAggPeriod: 10s
EOF
  start "kubelet$sfx" kubelet --config="$NODE_DIR/kubelet-config.yaml" --kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
    --hostname-override="$NODE_NAME" --node-ip="$ip" --root-dir="$NODE_KUBELET_ROOT" ${FEATURE_GATES:+--feature-gates=$FEATURE_GATES} --v=1
  wait_for "node registered" 60 K get node "$NODE_NAME"
}

pod_network_up() { # the node's pod ranges, as the controller manager allocated them: its bridge
  local cidr=""
  wait_for "pod CIDR allocated" 60 sh -c "kubectl --kubeconfig '$KUBECONFIG_ADMIN' get node '$NODE_NAME' -o jsonpath='{.spec.podCIDR}' | grep -q ."
  cidr=$(K get node "$NODE_NAME" -o jsonpath='{.spec.podCIDR}')
  echo "$cidr" > "$NODE_DIR/cni/pod-cidr"
  [ -z "$NODE_NETNS" ] || ip route replace "$cidr" via "$NODE_LINK_NODE" dev "$NODE_LINK_IF"
  # Calico routes each pod's address to its own veth: the rest of the node's range goes nowhere, as Calico's own
  # IPAM blocks do (not out of the default route, where the guard would stop it).
  [ "$POD_LINKS" != routed ] || on ip route replace blackhole "$cidr"
  if [ "$IP_FAMILIES" = dual ]; then
    local cidr6
    cidr6=$(K get node "$NODE_NAME" -o jsonpath='{.spec.podCIDRs[1]}')
    echo "$cidr6" > "$NODE_DIR/cni/pod-cidr6"
    [ -z "$NODE_NETNS" ] || ip -6 route replace "$cidr6" via "$NODE_LINK_NODE6" dev "$NODE_LINK_IF"
    [ "$POD_LINKS" != routed ] || on ip -6 route replace blackhole "$cidr6"
    cidr+=" $cidr6"
  fi
  "$here/pod-network.sh" close "$n"
  log "pod network $cidr: $("$here/pod-network.sh" status "$n") ($IP_FAMILIES)"
}

proxy_and_policy_up() {
  start "kube-proxy$sfx" kube-proxy --kubeconfig="$CLUSTER_STATE/kube-proxy.kubeconfig" --hostname-override="$NODE_NAME" \
    --cluster-cidr="$(both "$POD_CIDR" "$POD_CIDR6")" --proxy-mode=iptables --conntrack-max-per-core=0 --v=1
  enforcer_up
  wait_for "node Ready" 120 sh -c "kubectl --kubeconfig '$KUBECONFIG_ADMIN' get node '$NODE_NAME' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

kube_router() { # the kube-router build of cluster.env's ENFORCER (build-k8s.sh makes both)
  local version=$KUBE_ROUTER_VERSION
  [ "$ENFORCER" != kube-router-k3s ] || version=$KUBE_ROUTER_K3S_VERSION
  echo "$SANDBOXD_CACHE/bin/kube-router-$version/kube-router"
}

enforcer_up() { # kube-router in firewall-only mode enforces NetworkPolicy with iptables and ipsets (ip6tables too: dual)
  [ "$ENFORCER" != calico ] || { felix_up; return; }
  local v6=()
  # ENFORCER_IPV6=off leaves IPv6 unenforced on a dual-stack cluster: the mutation of the IPv6 cells
  # (ENFORCER_IPV6=off node.sh restart-enforcer N clean; restart-enforcer N clean again to restore).
  [ "$IP_FAMILIES" != dual ] || [ "${ENFORCER_IPV6:-on}" = off ] || v6=(--service-cluster-ip-range="$SERVICE_CIDR6" --enable-ipv6=true)
  start "kube-router$sfx" "$(kube_router)" --kubeconfig="$KUBECONFIG_ADMIN" --hostname-override="$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --service-cluster-ip-range="$SERVICE_CIDR" "${v6[@]}" \
    --health-port=20244 --metrics-port=0 --v=1
}

felix_up() { # Calico's felix, policy only: the Kubernetes API as datastore, no BGP, no IP pools, no BPF
  local v6=false
  [ "$IP_FAMILIES" != dual ] || [ "${ENFORCER_IPV6:-on}" = off ] || v6=true
  # Built without cgo (build-calico.sh): DebugSkipCTLBCleanup keeps it off BPF's clean-up and XDP off bpffs. Pods
  # reach their own node (the kubelet's probes come back that way), as upstream's manifests set it. Felix's health
  # listens on kube-router's port, so one check serves both enforcers.
  mkdir -p "$NODE_DIR/calico/endpoint-status"; echo "$NODE_NAME" > "$NODE_DIR/calico/nodename"
  start "felix$sfx" env DATASTORE_TYPE=kubernetes KUBECONFIG="$KUBECONFIG_ADMIN" FELIX_FELIXHOSTNAME="$NODE_NAME" \
    FELIX_ENDPOINTSTATUSPATHPREFIX="$NODE_DIR/calico" FELIX_IPV6SUPPORT=$v6 FELIX_DEFAULTENDPOINTTOHOSTACTION=ACCEPT \
    FELIX_XDPENABLED=false FELIX_DebugSkipCTLBCleanup=true FELIX_IPTABLESBACKEND=nft \
    FELIX_HEALTHENABLED=true FELIX_HEALTHHOST=127.0.0.1 FELIX_HEALTHPORT=20244 FELIX_USAGEREPORTINGENABLED=false \
    FELIX_REPORTINGINTERVALSECS=0 FELIX_LOGFILEPATH=none FELIX_LOGSEVERITYSYS=none FELIX_LOGSEVERITYSCREEN=info \
    "$calico_dir/calico-node" -felix
}

signal_kubelet() { # SIGNAL: to the node's kubelet alone (its process group holds only it)
  local pidfile=$run/kubelet$sfx.pid
  [ -f "$pidfile" ] || { echo "$NODE_NAME: no kubelet runs" >&2; exit 1; }
  kill -"$1" "$(cat "$pidfile")"
}

kill_node() {
  local p
  # The link goes first, as a machine's does when it loses power: nothing the node does while it dies (a pod's
  # process ended, a socket closed by its kernel) reaches the other node as a reset or a FIN.
  [ -z "$NODE_NETNS" ] || ip link set "$NODE_LINK_IF" down 2>/dev/null || true
  for p in kube-router felix kube-proxy kubelet containerd; do stop "$p$sfx"; done
  [ -z "$NODE_NETNS" ] || stop "registry$sfx"
  # The containers' shims outlive containerd by design; end them, gVisor's sandboxes and every pod process too.
  pkill -KILL -f "containerd-shim-run(c-v2|sc-v1) .*-address $ctr_sock" 2>/dev/null || true
  pkill -KILL -f "runsc .*--root=$NODE_DIR/containerd/state/runsc" 2>/dev/null || true
  if [ "$NODE_CGROUP_ROOT" != / ]; then
    for p in $(cat /sys/fs/cgroup/pids"$NODE_CGROUP_ROOT"/kubepods/{,*/}{,*/}{,*/}cgroup.procs 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  fi
}

case $action in
  up)
    if [ -f "$run/kubelet$sfx.pid" ] && kill -0 "$(cat "$run/kubelet$sfx.pid")" 2>/dev/null; then log "already up"; exit 0; fi
    mkdir -p "$NODE_DIR" "$run" "$logs"
    link_up; cgroup_up
    ip=$(node_ip); node_certs "$ip"
    containerd_up; kubelet_up "$ip"; pod_network_up; proxy_and_policy_up
    log "Ready at $ip"
    ;;
  kill)
    kill_node
    log "killed"
    ;;
  down)
    stop "kubelet$sfx"
    if [ -S "$ctr_sock" ]; then
      for t in $(ctr --address "$ctr_sock" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$ctr_sock" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
    fi
    kill_node
    { grep -E " ($NODE_KUBELET_ROOT|$NODE_DIR/containerd)" /proc/mounts || true; } | awk '{print $2}' | sort -r \
      | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    if [ -n "$NODE_NETNS" ]; then
      ip netns delete "$NODE_NETNS" 2>/dev/null || true; ip link delete "$NODE_LINK_IF" 2>/dev/null || true
      rm -rf "$NODE_DIR" "$NODE_KUBELET_ROOT" "$NODE_LOGS_DIR"
      find /sys/fs/cgroup/*/"${NODE_CGROUP_ROOT#/}" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
    ;;
  freeze) signal_kubelet STOP; log "kubelet stopped" ;;
  thaw) signal_kubelet CONT; log "kubelet goes on" ;;
  restart-enforcer)
    stop "$enforcer$sfx"
    if [ "${3:-}" = clean ]; then
      if [ "$ENFORCER" = calico ]; then on bash "$here/calico-cleanup.sh"; else on "$(kube_router)" --cleanup-config >/dev/null 2>&1 || true; fi
    fi
    enforcer_up
    wait_for "$enforcer healthy" 60 on curl -sf "http://127.0.0.1:20244$enforcer_health"
    log "$enforcer restarted${3:+ ($3)}"
    ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
