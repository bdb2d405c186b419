#!/usr/bin/env bash
# `make up`: installs the chart on the local cluster as an admin would, mints a project token with
# the operator command, and prints one sample call through a port-forward (the seed's operator path).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../cluster/cluster.env"
export KUBECONFIG=${KUBECONFIG:-$KUBECONFIG_ADMIN}
export PATH=$CLUSTER_BIN:$PATH
keys=$CLUSTER_STATE/dev-keys
mkdir -p "$keys"
if [ ! -f "$keys/dev.key" ]; then
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$keys/dev.key" 2>/dev/null
  openssl pkey -in "$keys/dev.key" -pubout -out "$keys/dev.pem"
fi
# Sandboxes run under gVisor on the local cluster (the RuntimeClass cluster-up.sh creates); SANDBOXD_RUNTIME_CLASS=""
# runs them on the cluster default (runc). The chart's own default stays the cluster default.
runtime_class=${SANDBOXD_RUNTIME_CLASS-gvisor}
echo "[up] installing the chart (release sandboxd, namespace cai-system, sandboxes on ${runtime_class:-the cluster default runtime})"
helm upgrade --install sandboxd "$repo/charts/sandboxd" --namespace cai-system --create-namespace \
  -f <(bash "$here/local-values.sh") --set-file tokens.publicKeys.dev="$keys/dev.pem" \
  --set-string runtimeClassName="$runtime_class" --wait --timeout 5m >/dev/null
token=$("$repo/service/bin/mint-token" --private-key "$keys/dev.key" --kid dev --project demo \
  --agent demo-agent --image sandboxd.local/agent-tools:dev --ttl-seconds 86400)
echo "$token" > "$keys/demo.token"

port=${SANDBOXD_LOCAL_PORT:-18080}
kubectl -n cai-system port-forward svc/sandboxd "$port:8080" >/dev/null 2>&1 &
pf=$!
trap 'kill $pf 2>/dev/null' EXIT
for _ in $(seq 150); do
  warm=$(curl -sf "http://127.0.0.1:$port/v1/pool" | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["warm"] >= p["target"])' 2>/dev/null || true)
  [ "$warm" = True ] && break; sleep 0.2
done
echo "[up] GET /v1/pool"
curl -s "http://127.0.0.1:$port/v1/pool"; echo
echo "[up] POST /v1/execute {\"code\":\"print(open('/proc/version').read())\"}  (the sandbox's kernel)"
curl -s -X POST "http://127.0.0.1:$port/v1/execute" -H "Authorization: Bearer $token" \
  -H "Content-Type: application/json" -d '{"code":"print(open(\"/proc/version\").read())","timeout_s":10}'; echo
cat <<TXT

sandboxd is running. To call it yourself:
  export KUBECONFIG=$KUBECONFIG
  kubectl -n cai-system port-forward svc/sandboxd 8080:8080 &
  curl -s -X POST localhost:8080/v1/execute -H "Authorization: Bearer \$(cat $keys/demo.token)" \\
       -H 'Content-Type: application/json' -d '{"code":"print(6*7)"}'
  helm test sandboxd -n cai-system      # the negative probe: attempts the escapes, fails if one works
Stop everything with: make down
TXT
