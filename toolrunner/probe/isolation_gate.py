#!/usr/bin/env python3
"""Holds a sandbox pod back, as its init container, until every channel out is observably closed.

A NetworkPolicy enforcer programs a new pod's rules asynchronously (kube-router within a second or
so), so without a gate the first moments of a sandbox could be unfiltered: the e2e suite saw a fresh
tool pod reach the metadata address. And a cluster may filter IPv4 only while its pods keep IPv6
link-local addresses on a shared bridge. The gate fails closed: it passes only after one round in
which nothing answered at all -- no connection, no reply, no reset, no ICMP error -- on every channel
it checks (channels.py says what counts as an answer). A refusal proves packets flow, so it keeps
the gate shut. Each round runs every attempt at once, so a round that passes costs one --timeout,
and one that fails ends at its first answer.

What it checks (a bounded set, the same each round):
  - the Kubernetes API server Service (TCP), unless --no-api-server;
  - every --closed CHANNEL:TARGET (sandboxd passes cluster DNS over UDP and TCP for snippets, and a
    sandboxd replica's own address);
  - with --ipv6-link-local: the gateway's IPv6 link-local address (found as an attacker finds it:
    ARP for the IPv4 gateway, then EUI-64) on the kubelet's port, and a DNS query to the all-nodes
    multicast group ff02::1 (every IPv6 resolver on the link would answer it);
  - with --dns NAME: NAME must resolve (tool pods, whose policy allows cluster DNS).

  --closed CHANNEL:TARGET  must get no answer (repeatable; e.g. udp-dns:10.96.0.10:53, tcp:10.0.0.5:8080)
  --blocked HOST:PORT      the same as --closed tcp:HOST:PORT
  --ipv6-link-local        also check the IPv6 link-local paths above
  --gateway-port P         TCP port tried on the gateway over IPv6 link-local (default 10250, the kubelet)
  --dns NAME               must resolve
  --timeout S              per attempt (default 0.5)
  --within S               give up after S seconds (default 300)
  --best-effort            after --within, exit 0 anyway (the chart's probe pods: they must go on to
                           report the escapes themselves rather than stop at the gate)
  -- COMMAND [ARG...]      once closed, replace this process with COMMAND (execvp): how a snippet pod's
                           one container runs the gate and then the executor, so nothing of the sandbox
                           runs, and nothing listens on its port, until the gate has passed
Exits 0 when closed (or runs COMMAND), 1 if that does not happen within --within seconds.
"""
import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

import channels
from sandbox_probe import check_dns

# Between rounds: short, since a failed round ends at its first answer.
PAUSE_S = 0.1


def api_server():
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    if not host:
        return None
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    return f"tcp:[{host}]:{port}" if ":" in host else f"tcp:{host}:{port}"


def ipv6_link_local_specs(gateway_port):
    """Attempts on the link's IPv6 neighbours: the gateway by EUI-64, and all nodes by multicast."""
    interface, gateway = channels.default_interface_and_gateway()
    if interface is None:
        return []
    specs = [f"udp-dns:[ff02::1%{interface}]:53"]
    mac = channels.arp_sweep([gateway], settle_s=0.1).get(gateway) if gateway else None
    if mac:
        specs.append(f"tcp:[{channels.eui64_link_local(mac)}%{interface}]:{gateway_port}")
    return specs


def one_round(specs, dns_name, timeout_s):
    """(closed?, attempts that answered, dns detail or None). Every attempt, and the DNS lookup, at
    once. The round ends as soon as one attempt answers: it has failed then, whatever the others
    see, so waiting out their silence would only delay the next round. A round passes only when
    every attempt stayed silent for the whole timeout."""
    pool = ThreadPoolExecutor(max_workers=len(specs) + 1)
    try:
        lookup = pool.submit(check_dns, dns_name, 1.0) if dns_name is not None else None
        answered = []
        for done in as_completed([pool.submit(channels.attempt, spec, timeout_s) for spec in specs]):
            if done.result().answered:
                answered.append(done.result())
                break
        if answered:
            return False, answered, None
        dns_missing = None
        if lookup is not None:
            blocked, detail = lookup.result()
            if blocked:
                dns_missing = f"{dns_name} does not resolve ({detail})"
        return dns_missing is None, answered, dns_missing
    finally:
        # Attempts still waiting out their timeout end on their own; their sockets close with them.
        pool.shutdown(wait=False, cancel_futures=True)


def parse(argv):
    parser = argparse.ArgumentParser(description="Wait until every channel out of this pod is closed.")
    parser.add_argument("--closed", action="append", default=[], metavar="CHANNEL:TARGET")
    parser.add_argument("--blocked", action="append", default=[], metavar="HOST:PORT")
    parser.add_argument("--no-api-server", action="store_true")
    parser.add_argument("--ipv6-link-local", action="store_true")
    parser.add_argument("--gateway-port", type=int, default=10250)
    parser.add_argument("--dns", metavar="NAME")
    parser.add_argument("--timeout", type=float, default=0.5, metavar="S")
    parser.add_argument("--within", type=float, default=300.0, metavar="S")
    parser.add_argument("--best-effort", action="store_true")
    return parser.parse_args(argv)


def split_command(argv):
    """(the gate's own arguments, the command after "--" to run once closed, or [])."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1:]


def main(argv=None):
    own, then = split_command(sys.argv[1:] if argv is None else list(argv))
    status = gate(parse(own))
    if status == 0 and then:
        sys.stdout.flush()
        os.execvp(then[0], then)
    return status


def gate(arguments):
    """0 once a round found every channel closed; after --within, 1 (0 with --best-effort)."""
    specs = list(arguments.closed) + [f"tcp:{target}" for target in arguments.blocked]
    if not arguments.no_api_server and api_server():
        specs.append(api_server())
    started = time.monotonic()
    rounds = 0
    reported = None
    while True:
        round_specs = specs + (ipv6_link_local_specs(arguments.gateway_port) if arguments.ipv6_link_local else [])
        rounds += 1
        closed, answered, dns_missing = one_round(round_specs, arguments.dns, arguments.timeout)
        elapsed = time.monotonic() - started
        if closed:
            print(f"isolation gate: closed after {elapsed:.2f}s ({rounds} round(s) of {len(round_specs)} "
                  f"attempts, {arguments.timeout}s each): " + ", ".join(round_specs)
                  + (f"; {arguments.dns} resolves" if arguments.dns else ""), flush=True)
            return 0
        still_open = sorted(f"{a.channel} {a.target}" for a in answered) + ([dns_missing] if dns_missing else [])
        if still_open != reported and elapsed <= arguments.within:
            # Said once per change, so an operator reading the init container's log sees what keeps it shut.
            print(f"isolation gate: waiting ({elapsed:.1f}s): " + "; ".join(
                [f"{a.channel} {a.target} answered: {a.detail}" for a in answered]
                + ([dns_missing] if dns_missing else [])),
                flush=True)
            reported = still_open
        if elapsed > arguments.within:
            print(f"isolation gate: still open after {arguments.within:.0f}s: is a NetworkPolicy enforcer running, "
                  f"and is IPv6 filtered on the pod network?", flush=True)
            for attempt in answered:
                print(f"isolation gate: {attempt.channel} {attempt.target} answered: {attempt.detail}", flush=True)
            if dns_missing:
                print(f"isolation gate: {dns_missing}", flush=True)
            return 0 if arguments.best_effort else 1
        time.sleep(PAUSE_S)


if __name__ == "__main__":
    sys.exit(main())
