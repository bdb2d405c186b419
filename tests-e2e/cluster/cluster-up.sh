#!/usr/bin/env bash
# Brings up a real Kubernetes cluster of CLUSTER_NODES nodes (1 or 2) on this machine, offline: etcd, kube-apiserver,
# controller-manager, scheduler, and on each node (node.sh) containerd, kubelet, kube-proxy and kube-router
# (NetworkPolicy); then CoreDNS. Returns when every node is Ready and cluster DNS answers. Every process it starts is
# recorded by PID in $CLUSTER_STATE/run so cluster-down.sh stops exactly those.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
. "$here/cluster.env"
export PATH=$CLUSTER_BIN:$PATH
NODE_IP=$API_IP
pki=$CLUSTER_STATE/pki run=$CLUSTER_STATE/run logs=$CLUSTER_STATE/logs
t0=$(date +%s.%N)
since() { awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $1}"; }
log() { echo "[cluster +$(since "$t0")s] $*"; }

if [ -f "$run/cluster.up" ]; then
  if "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" get --raw /readyz >/dev/null 2>&1; then
    log "cluster already up (KUBECONFIG=$KUBECONFIG_ADMIN)"; exit 0
  fi
  log "stale state found; cleaning it first"; "$here/cluster-down.sh"
fi
if [ "$IP_FAMILIES" = dual ] && [ "$ENFORCER" = kube-router ]; then
  echo "IP_FAMILIES=dual needs an enforcer of IPv6 too: ENFORCER=calico or kube-router-k3s (versions.env says why)" >&2
  exit 1
fi
# The enforcers make test does not run are built when first asked for (at once when built).
[ "$ENFORCER" != calico ] || bash "$here/build-calico.sh" >/dev/null
[ "$ENFORCER" != kube-router-k3s ] || bash "$here/build-k8s.sh" kube-router-k3s
mkdir -p "$pki" "$run" "$logs"

# start NAME CMD...: run a daemon in the background, log to $logs/NAME.log, record its PID.
start() {
  local name=$1; shift
  setsid "$@" >"$logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$run/$name.pid"
}

# --- 1. guard: no pod traffic may leave this machine (installed before any pod exists) -------------
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 2>/dev/null || \
  { modprobe br_netfilter 2>/dev/null || true; sysctl -qw net.ipv4.ip_forward=1; }
# The guard sits in the mangle table's FORWARD chain, which runs before the filter table's and which
# neither kube-proxy nor kube-router writes: their ACCEPT rules in filter/FORWARD cannot bypass it.
for ipt in iptables ip6tables; do
  $ipt -t mangle -N SBX-GUARD 2>/dev/null || $ipt -t mangle -F SBX-GUARD
  $ipt -t mangle -C FORWARD -j SBX-GUARD 2>/dev/null || $ipt -t mangle -I FORWARD 1 -j SBX-GUARD
  $ipt -t mangle -N SBX-UPLINK-COUNT 2>/dev/null || $ipt -t mangle -F SBX-UPLINK-COUNT
  $ipt -t mangle -C POSTROUTING -j SBX-UPLINK-COUNT 2>/dev/null || $ipt -t mangle -I POSTROUTING 1 -j SBX-UPLINK-COUNT
  # What only the nodes themselves may reach on this machine (node.sh fills it).
  $ipt -t mangle -N SBX-GUARD-IN 2>/dev/null || $ipt -t mangle -F SBX-GUARD-IN
  $ipt -t mangle -C INPUT -j SBX-GUARD-IN 2>/dev/null || $ipt -t mangle -I INPUT 1 -j SBX-GUARD-IN
done
iptables -t mangle -A SBX-GUARD -s "$POD_CIDR" -o "$UPLINK" -m comment --comment "sandboxd guard: pod traffic never leaves" -j DROP
for ipt in iptables ip6tables; do
  $ipt -t mangle -A SBX-GUARD -i cni0 -o "$UPLINK" -m comment --comment "sandboxd guard: bridge traffic never leaves" -j DROP
  $ipt -t mangle -A SBX-GUARD -i cali+ -o "$UPLINK" -m comment --comment "sandboxd guard: pod veths never leave" -j DROP
done
# The machine's own traffic to a cluster address (a Service's ClusterIP that kube-proxy did not translate, a pod
# address) would follow the default route out of the machine: dropped at the last hook, after kube-proxy's DNAT,
# and counted; the e2e suite asserts it stays 0.
# Each stop is logged first (kernel log, prefix "sbx-guard:"), so a failing count names the sender and the address.
stop_at_uplink() { # IPTABLES CIDR WHAT
  $1 -t mangle -A SBX-UPLINK-COUNT -d "$2" -o "$UPLINK" -m limit --limit 20/min -m comment --comment "sandboxd guard: log $3" \
    -j LOG --log-prefix "sbx-guard: ${3%% *}: "
  $1 -t mangle -A SBX-UPLINK-COUNT -d "$2" -o "$UPLINK" -m comment --comment "sandboxd guard: $3 never leave" -j DROP
}
echo "sbx-guard: cluster up" > /dev/kmsg 2>/dev/null || true  # where this cluster's lines begin
stop_at_uplink iptables "$SERVICE_CIDR" "Service addresses"
stop_at_uplink iptables "$POD_CIDR" "pod addresses"
# Counts pod-sourced packets that really leave through the uplink; the e2e suite asserts it stays 0.
iptables -t mangle -A SBX-UPLINK-COUNT -s "$POD_CIDR" -o "$UPLINK" -m comment --comment "sandboxd: pod packets out of uplink" -j RETURN
# The same for IPv6 (a dual-stack cluster's pods; and the machine's own IPv6 default route leads out of it too).
ip6tables -t mangle -A SBX-GUARD -s "$POD_CIDR6" -o "$UPLINK" -m comment --comment "sandboxd guard: pod traffic never leaves" -j DROP
stop_at_uplink ip6tables "$SERVICE_CIDR6" "Service addresses"
stop_at_uplink ip6tables "$POD_CIDR6" "pod addresses"
ip6tables -t mangle -A SBX-UPLINK-COUNT -s "$POD_CIDR6" -o "$UPLINK" -m comment --comment "sandboxd: pod packets out of uplink" -j RETURN
if [ "$IP_FAMILIES" = dual ]; then
  sysctl -qw net.ipv6.conf.all.forwarding=1
  # Node 1's IPv6 node address, on a link of its own (node 2's is on its link to node 1): one end of a veth pair
  # that leads nowhere (the kernel here has no dummy links).
  ip link show sbx-node1 >/dev/null 2>&1 || ip link add sbx-node1 type veth peer name sbx-node1-end
  ip addr replace "$NODE1_IP6/128" dev sbx-node1 nodad; ip link set sbx-node1-end up; ip link set sbx-node1 up
fi
log "guard installed on uplink $UPLINK ($NODE_IP)"

# --- 2. simulated targets: public, metadata and private addresses, each with a listener ------------
ip netns add "$TARGET_NETNS" 2>/dev/null || true
if ! ip link show sbx-tgt-host >/dev/null 2>&1; then
  ip link add sbx-tgt-host type veth peer name sbx-tgt-ns
  ip link set sbx-tgt-ns netns "$TARGET_NETNS"
fi
ip addr replace "$TARGET_LINK_HOST/30" dev sbx-tgt-host; ip link set sbx-tgt-host up
ip netns exec "$TARGET_NETNS" sh -ec "
  ip link set lo up; ip addr replace $TARGET_LINK_NS/30 dev sbx-tgt-ns; ip link set sbx-tgt-ns up
  for a in $TARGET_ALL; do
    ip addr replace \$a/32 dev lo
  done
  ip route replace default via $TARGET_LINK_HOST"
for a in $TARGET_ALL; do
  ip route replace "$a/32" via "$TARGET_LINK_NS" dev sbx-tgt-host
done
if [ "$IP_FAMILIES" = dual ]; then
  ip addr replace "$TARGET_LINK_HOST6/126" dev sbx-tgt-host nodad
  ip netns exec "$TARGET_NETNS" sh -ec "
    ip addr replace $TARGET_LINK_NS6/126 dev sbx-tgt-ns nodad
    for a in $TARGET_ALL6; do
      ip addr replace \$a/128 dev lo
    done
    ip -6 route replace default via $TARGET_LINK_HOST6"
  for a in $TARGET_ALL6; do
    ip -6 route replace "$a/128" via "$TARGET_LINK_NS6" dev sbx-tgt-host
  done
fi
# The targets' TLS certificate (for *.sbx.test, self-signed) and the keyed API's key, made once per cluster state: the
# e2e install gives the certificate to the egress proxy as its upstream roots and the key to it as a credential.
mkdir -p "$TARGET_STATE"
if [ ! -s "$TARGET_TLS_CERT" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 -subj /CN=sbx-target \
    -addext "subjectAltName=DNS:*.sbx.test,DNS:*.rebind.sbx.test" \
    -keyout "$TARGET_STATE/tls.key" -out "$TARGET_TLS_CERT" 2>/dev/null
fi
[ -s "$TARGET_KEYED_KEY" ] || (umask 077 && echo "sbxkey-$(openssl rand -hex 16)" > "$TARGET_KEYED_KEY")
start targets ip netns exec "$TARGET_NETNS" env TARGET_TLS_CERT="$TARGET_TLS_CERT" TARGET_TLS_KEY="$TARGET_STATE/tls.key" \
  TARGET_NAME_KEYED="$TARGET_NAME_KEYED" TARGET_KEYED_KEY="$TARGET_KEYED_KEY" TARGET_KEY_SIGHTINGS="$TARGET_KEY_SIGHTINGS" \
  python3 "$here/target_listener.py" 80 53 443
wait_for "target listener" 10 ip netns exec "$TARGET_NETNS" python3 -c "import socket; socket.create_connection(('$TARGET_PUBLIC', 80), 1)"
wait_for "target resolver" 10 ip netns exec "$TARGET_NETNS" python3 "$here/dns_query.py" "$TARGET_PUBLIC" "$TARGET_NAME_PUBLIC"
[ "$IP_FAMILIES" != dual ] || wait_for "IPv6 target listener" 10 ip netns exec "$TARGET_NETNS" python3 -c "import socket; socket.create_connection(('$TARGET_PUBLIC6', 80), 1)"
log "simulated targets up in netns $TARGET_NETNS"

# --- 3. PKI and kubeconfigs ------------------------------------------------------------------------
if [ ! -f "$pki/ca.crt" ]; then
  "$here/make-pki.sh" "$pki" "$NODE_IP" "$KUBERNETES_SVC_IP"
fi
kubeconfig() { # NAME CERT-BASENAME
  cat > "$CLUSTER_STATE/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: sandboxd-local, cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$pki/ca.crt"}}]
users: [{name: $1, user: {client-certificate: "$pki/$2.crt", client-key: "$pki/$2.key"}}]
contexts: [{name: sandboxd-local, context: {cluster: sandboxd-local, user: $1}}]
current-context: sandboxd-local
EOF
}
for c in admin controller-manager scheduler kube-proxy; do kubeconfig "$c" "$c"; done

# --- 4. etcd and the control plane -------------------------------------------------------------------
start etcd etcd --name sandboxd --data-dir "$ETCD_DATA" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster sandboxd=http://127.0.0.1:2380 --quota-backend-bytes 2147483648
wait_for etcd 30 curl -sf http://127.0.0.1:2379/health
log "etcd ready"

# The audit log records who wrote or deleted a pod in the sandbox namespace (and every other pod write at Metadata
# level), so a test that finds a pod gone can name the account that removed it (tests-e2e: support/PodAudit).
cat > "$CLUSTER_STATE/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Request
    verbs: [delete, deletecollection, update, patch]
    resources: [{group: "", resources: [pods]}]
    namespaces: [cai-sandbox]
  - level: Metadata
    verbs: [create, delete, deletecollection, update, patch]
    resources: [{group: "", resources: [pods]}]
  - level: None
EOF
start kube-apiserver kube-apiserver \
  --audit-policy-file="$CLUSTER_STATE/audit-policy.yaml" --audit-log-path="$logs/audit.log" \
  --audit-log-maxsize=200 --audit-log-maxbackup=2 --audit-log-mode=batch --audit-log-batch-max-wait=1s \
  --etcd-servers=http://127.0.0.1:2379 --advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
  --service-cluster-ip-range="$(both "$SERVICE_CIDR" "$SERVICE_CIDR6")" --authorization-mode=Node,RBAC --allow-privileged=true \
  --enable-admission-plugins=NodeRestriction,PodSecurity,ValidatingAdmissionPolicy \
  --client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  ${FEATURE_GATES:+--feature-gates=$FEATURE_GATES} --profiling=false --v=1
wait_for kube-apiserver 60 curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://$NODE_IP:6443/readyz"
log "kube-apiserver ready"
t_api=$(date +%s.%N)

mask6=()  # the IPv6 pods' node ranges (refused on a single-stack cluster)
[ "$IP_FAMILIES" != dual ] || mask6=(--node-cidr-mask-size-ipv6="$NODE_POD_CIDR_MASK6")
start kube-controller-manager kube-controller-manager --kubeconfig="$CLUSTER_STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$CLUSTER_STATE/controller-manager.kubeconfig" --authorization-kubeconfig="$CLUSTER_STATE/controller-manager.kubeconfig" \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" --use-service-account-credentials=true \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
  --allocate-node-cidrs=true --cluster-cidr="$(both "$POD_CIDR" "$POD_CIDR6")" --service-cluster-ip-range="$(both "$SERVICE_CIDR" "$SERVICE_CIDR6")" \
  --node-cidr-mask-size-ipv4="$NODE_POD_CIDR_MASK" "${mask6[@]}" \
  --leader-elect=false --bind-address=127.0.0.1 --v=1
start kube-scheduler kube-scheduler --kubeconfig="$CLUSTER_STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig="$CLUSTER_STATE/scheduler.kubeconfig" --authorization-kubeconfig="$CLUSTER_STATE/scheduler.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --v=1

# --- 5. the local registry -------------------------------------------------------------------------
mkdir -p "$REGISTRY_DATA"
cat > "$CLUSTER_STATE/registry.yaml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: "$REGISTRY_DATA"}
  delete: {enabled: true}
http: {addr: "$LOCAL_REGISTRY_ADDR"}
EOF
start registry registry serve "$CLUSTER_STATE/registry.yaml"
wait_for "registry" 30 curl -sf "http://$LOCAL_REGISTRY_ADDR/v2/"
log "registry up at $LOCAL_REGISTRY (loopback, plain HTTP)"

K() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# --- 6. the nodes: containerd, kubelet, pod network, kube-proxy, the enforcer on each ------------------
if [ "$ENFORCER" = calico ]; then
  # Calico's CRDs, read by felix with the Kubernetes API as its datastore, and the mark calico-node's startup
  # would set (felix waits for it): policy only, no IP pools, no BGP.
  K apply --server-side -f "$SANDBOXD_CACHE/calico/$CALICO_VERSION/crds.yaml" >/dev/null
  K wait --for condition=established --timeout=60s crd/clusterinformations.crd.projectcalico.org >/dev/null
  K apply -f - >/dev/null <<EOF
apiVersion: crd.projectcalico.org/v1
kind: ClusterInformation
metadata: {name: default}
spec: {datastoreReady: true, clusterType: "k8s,kdd", calicoVersion: "$CALICO_VERSION"}
EOF
fi
# Pods get cluster DNS only; the host's resolver is never handed to them.
echo "nameserver $CLUSTER_DNS_IP" > "$CLUSTER_STATE/resolv.conf"
nodes=$(seq 1 "$CLUSTER_NODES" | tr '\n' ' ')
echo "$nodes" > "$run/nodes"
echo "$IP_FAMILIES" > "$run/ip-families"
echo "$ENFORCER" > "$run/enforcer"
pids=()
for n in $nodes; do "$here/node.sh" up "$n" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid"; done
t_ready=$(date +%s.%N)
log "$CLUSTER_NODES node(s) Ready ($(since "$t_api")s after the apiserver was ready)"

# --- 7. CoreDNS ------------------------------------------------------------------------------------
# The simulated targets' names (CoreDNS hosts): the public target by three names (the egress profiles of the e2e
# install allow one and refuse another; the third is the keyed API), and every other target as <address, dots as dashes>.rebind.sbx.test: a
# name an egress profile allows (*.rebind.sbx.test) resolving into a blocked range, as DNS rebinding does.
target_hosts="            $TARGET_PUBLIC $TARGET_NAME_PUBLIC $TARGET_NAME_OTHER $TARGET_NAME_KEYED"
for a in $TARGET_ALL; do
  [ "$a" = "$TARGET_PUBLIC" ] || target_hosts+=$'\n'"            $a ${a//./-}.$TARGET_REBIND_DOMAIN"
done
# IPv6 (dual): <address, colons as dashes>.rebind.sbx.test for each blocked one.
if [ "$IP_FAMILIES" = dual ]; then
  for a in $TARGET_ALL6; do
    [ "$a" = "$TARGET_PUBLIC6" ] || target_hosts+=$'\n'"            $a ${a//:/-}.$TARGET_REBIND_DOMAIN"
  done
fi
K apply -f - >/dev/null <<EOF
$(sed -e "s/__COREDNS_VERSION__/$COREDNS_VERSION/g" -e "s/__CLUSTER_DNS_IP__/$CLUSTER_DNS_IP/g" "$here/coredns.yaml" \
  | hosts="$target_hosts" awk '{ if ($0 == "__TARGET_HOSTS__") print ENVIRON["hosts"]; else print }')
EOF
wait_for "CoreDNS ready" 120 sh -c "kubectl --kubeconfig '$KUBECONFIG_ADMIN' -n kube-system get pods -l k8s-app=kube-dns -o jsonpath='{.items[*].status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"
# The machine asks only once node 1's kube-proxy translates the address: before that, its query would follow the
# default route to the uplink, where the guard stops and counts it (and the e2e suite fails on any such count).
wait_for "kube-proxy translating the DNS Service" 60 sh -c "iptables -w -t nat -S KUBE-SERVICES | grep -q -- '-d $CLUSTER_DNS_IP/32'"
wait_for "cluster DNS answers" 60 python3 "$here/dns_query.py" "$CLUSTER_DNS_IP" kubernetes.default.svc.cluster.local
log "cluster DNS answers at $CLUSTER_DNS_IP"

# gVisor as a RuntimeClass, owned by the platform (here: the harness), as on clusters that offer it.
K apply -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
EOF
log "RuntimeClass gvisor (handler runsc) created"

touch "$run/cluster.up"
log "cluster up: export KUBECONFIG=$KUBECONFIG_ADMIN"
