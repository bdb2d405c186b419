#!/usr/bin/env python3
"""Holds a sandbox pod back, as its init container, until its NetworkPolicy is observably in force.

A NetworkPolicy enforcer programs a new pod's rules asynchronously (kube-router within a second or
so), so without a gate the first moments of a sandbox could be unfiltered: the e2e suite saw a fresh
tool pod reach the metadata address. The gate waits until the Kubernetes API server, which answers
whenever nothing blocks it, can no longer be reached from this pod, and, with --dns NAME, until
cluster DNS (which the policy allows) answers. It runs from the platform's own image, so an agent's
image cannot skip it. Exits 0 then; 1 if that does not happen within --within seconds.

  --blocked HOST:PORT   must become unreachable (default: $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)
  --dns NAME            must resolve
  --within S            give up after S seconds (default 300)
  --best-effort         after --within, exit 0 anyway (the chart's probe pods: they must go on to
                        report the escapes themselves rather than stop at the gate)
"""
import argparse
import os
import sys
import time

from sandbox_probe import check_dns, check_tcp

POLL_S = 0.2


def api_server():
    return f"{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"


def isolated(blocked_target, dns_name):
    blocked, _ = check_tcp(blocked_target, 0.5)
    resolves = dns_name is None or not check_dns(dns_name, 1.0)[0]
    return blocked and resolves


def main(argv=None):
    parser = argparse.ArgumentParser(description="Wait until this pod's NetworkPolicy is in force.")
    parser.add_argument("--blocked", metavar="HOST:PORT")
    parser.add_argument("--dns", metavar="NAME")
    parser.add_argument("--within", type=float, default=300.0, metavar="S")
    parser.add_argument("--best-effort", action="store_true")
    arguments = parser.parse_args(argv)
    target = arguments.blocked or api_server()
    started = time.monotonic()
    while not isolated(target, arguments.dns):
        if time.monotonic() - started > arguments.within:
            print(f"isolation gate: {target} still reachable (or {arguments.dns} not resolving) after "
                  f"{arguments.within:.0f}s: is a NetworkPolicy enforcer running?", flush=True)
            return 0 if arguments.best_effort else 1
        time.sleep(POLL_S)
    print(f"isolation gate: in force after {time.monotonic() - started:.2f}s ({target} blocked"
          + (f", {arguments.dns} resolves)" if arguments.dns else ")"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
