#!/usr/bin/env bash
# Removes what Calico's felix programmed in this network namespace (node.sh runs it in the node's): its iptables
# chains (cali-*) in both families and the jumps to them, and its ipsets. What `restart-enforcer N clean` and
# cluster-down.sh need; felix has no clean-up command of its own for its iptables dataplane.
set -uo pipefail
for ipt in iptables ip6tables; do
  for t in raw mangle nat filter; do
    $ipt -w -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*(-j cali-|cali:)' | sed 's/^-A/-D/' | while read -r r; do eval $ipt -w -t "$t" "$r"; done
    for ch in $($ipt -w -t "$t" -S 2>/dev/null | awk '/^-N cali-/{print $2}'); do $ipt -w -t "$t" -F "$ch"; done
    for ch in $($ipt -w -t "$t" -S 2>/dev/null | awk '/^-N cali-/{print $2}'); do $ipt -w -t "$t" -X "$ch"; done
  done
done
for s in $(ipset list -n 2>/dev/null | grep -E '^cali[46]'); do ipset destroy "$s" 2>/dev/null; done
exit 0
