#!/usr/bin/env bash
# Creates the cluster CA and every certificate the control plane and admin use (openssl); node.sh adds each
# kubelet's. usage: make-pki.sh DIR API_IP KUBERNETES_SVC_IP
set -euo pipefail
dir=$1 node_ip=$2 svc_ip=$3
mkdir -p "$dir"; cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=sandboxd-local-ca" 2>/dev/null
# cert NAME CN O [SAN]
cert() {
  local name=$1 cn=$2 o=$3 san=${4:-}
  local subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o/CN=$cn"
  openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"; else echo "extendedKeyUsage=clientAuth"; fi
  } > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 3650 -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}
cert apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$node_ip,IP:$svc_ip"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
cert admin sandboxd-admin system:masters
cert controller-manager system:kube-controller-manager ""
cert scheduler system:kube-scheduler ""
cert kube-proxy system:kube-proxy ""
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 600 ./*.key
