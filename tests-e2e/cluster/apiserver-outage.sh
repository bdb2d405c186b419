#!/usr/bin/env bash
# A fault for the e2e suite: stops the local cluster's kube-apiserver for SECONDS, then starts it again with the
# same command line, and waits until it is ready. Usage: apiserver-outage.sh SECONDS
# The stop is a crash (SIGKILL): a graceful stop first empties the `kubernetes` Service's endpoints and then drains
# for up to a minute, which would make the outage seen from pods a minute longer than asked.
# kube-controller-manager and kube-scheduler stop and start with it, as on a real control plane: there they hold a
# leader lease they cannot renew during the outage, so they exit (10 s renew deadline) and their static pods start
# again. This harness runs them without leader election; left running, the controller manager's node-lifecycle
# controller relisted leases ~20 s after the API server came back and, its clock of node heartbeats stale by the
# whole outage, marked a healthy node NotReady and every pod on it unready (the Service's endpoints emptied for ~25 s).
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
kcm_pid=$(cat "$run/kube-controller-manager.pid") sched_pid=$(cat "$run/kube-scheduler.pid")
mapfile -d '' kcm_cmd < "/proc/$kcm_pid/cmdline"
mapfile -d '' sched_cmd < "/proc/$sched_pid/cmdline"

start_again() { # NAME COMMAND...: start a component again with its old command line, as cluster-up.sh started it
  local name=$1; shift
  setsid "$@" >>"$logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$run/$name.pid"
}

kill -KILL "$pid" "$kcm_pid" "$sched_pid"
while kill -0 "$pid" 2>/dev/null || kill -0 "$kcm_pid" 2>/dev/null || kill -0 "$sched_pid" 2>/dev/null; do sleep 0.1; done
echo "kube-apiserver stopped at $(date +%T.%N | cut -c1-12) (with the controller manager and scheduler)"
sleep "$seconds"
start_again kube-apiserver "${cmd[@]}"
restarted=$(cat "$run/kube-apiserver.pid")
deadline=$(( $(date +%s) + 120 ))
until curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://$addr:6443/readyz" >/dev/null 2>&1; do
  if ! kill -0 "$restarted" 2>/dev/null; then echo "kube-apiserver exited on restart: $(tail -3 "$logs/kube-apiserver.log")" >&2; exit 1; fi
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "kube-apiserver did not come back" >&2; exit 1; fi
  sleep 0.2
done
echo "kube-apiserver ready again at $(date +%T.%N | cut -c1-12)"
start_again kube-controller-manager "${kcm_cmd[@]}"
start_again kube-scheduler "${sched_cmd[@]}"
echo "kube-controller-manager and kube-scheduler started again"
