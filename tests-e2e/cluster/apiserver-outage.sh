#!/usr/bin/env bash
# A fault for the e2e suite: stops the local cluster's kube-apiserver for SECONDS, then starts it again with the
# same command line, and waits until it is ready. Usage: apiserver-outage.sh SECONDS
# The stop is a crash (SIGKILL): a graceful stop first empties the `kubernetes` Service's endpoints and then drains
# for up to a minute, which would make the outage seen from pods a minute longer than asked.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster.env"
# kube-apiserver was started by name from the cluster's bin directory (its argv[0] has no path).
export PATH=$CLUSTER_BIN:$PATH
seconds=${1:?usage: apiserver-outage.sh SECONDS}
run=$CLUSTER_STATE/run logs=$CLUSTER_STATE/logs pki=$CLUSTER_STATE/pki
pid=$(cat "$run/kube-apiserver.pid")
[ -r "/proc/$pid/cmdline" ] || { echo "kube-apiserver (pid $pid) is not running" >&2; exit 1; }
mapfile -d '' cmd < "/proc/$pid/cmdline"
addr=$(printf '%s\n' "${cmd[@]}" | sed -n 's/^--advertise-address=//p')

kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
echo "kube-apiserver stopped at $(date +%T.%N | cut -c1-12)"
sleep "$seconds"
setsid "${cmd[@]}" >>"$logs/kube-apiserver.log" 2>&1 < /dev/null &
echo $! > "$run/kube-apiserver.pid"
restarted=$!
deadline=$(( $(date +%s) + 120 ))
until curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://$addr:6443/readyz" >/dev/null 2>&1; do
  if ! kill -0 "$restarted" 2>/dev/null; then echo "kube-apiserver exited on restart: $(tail -3 "$logs/kube-apiserver.log")" >&2; exit 1; fi
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "kube-apiserver did not come back" >&2; exit 1; fi
  sleep 0.2
done
echo "kube-apiserver ready again at $(date +%T.%N | cut -c1-12)"
