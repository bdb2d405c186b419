#!/usr/bin/env python3
"""Tries to escape from inside a sandbox pod (standard library only).

Prints one JSON line per check, {"check", "blocked", "detail"}, and exits 1 if any escape succeeded
or any positive control (--tcp-allowed, --open, --proxy-open, --dns-allowed) was blocked, which would
make the other results meaningless. Used by the e2e suite and the chart's `helm test`.

With --runtime-class or --expect-kernel it first prints the pod's runtime, one line
{"check": "runtime", "runtimeClassName", "kernel", "gvisor", "expectKernel", "ok"}: the RuntimeClass the
pod was given, the kernel's own line (/proc/version), and whether that is gVisor's ("gvisor" in it, any
case, as recent gVisor releases print "Linux version 4.19.0-gvisor ..."; or gVisor's fixed build string
"#1 SMP Sun Jan 10 15:06:54 PST 2016", which older ones print after "Linux version 4.4.0"). It is a
report, not an escape check: "ok" is false, and the exit code 1, only when --expect-kernel is given and
/proc/version does not contain it.

  --tcp HOST:PORT          connecting must get no answer    (repeatable; a refusal is an answer)
  --tcp-allowed HOST:PORT  connecting must work             (repeatable; positive control)
  --closed CHANNEL:TARGET  no answer at all on that channel (repeatable; channels.py: tcp, udp-dns,
                           tcp-dns, icmp; e.g. udp-dns:10.96.0.10:53, icmp:10.244.0.1)
  --open CHANNEL:TARGET    must answer                      (repeatable; positive control)
  --closed-unless-self CHANNEL:TARGET
                           as --closed, skipped when TARGET is this pod's own address (another sandbox
                           picked from a list that may hold this one)
  --proxy-open HOST:PORT   a raw CONNECT HOST:PORT through the proxy of $HTTPS_PROXY must get status
                           200 (repeatable; positive control: the egress profile allows HOST:PORT)
  --proxy-closed HOST:PORT that CONNECT must not get 200: another status (the proxy refused), or no
                           answer (repeatable)
  --ipv6-sweep PORTS       the attacker's IPv6 sweep: ARP for every address of this pod's /24 and of
                           the gateway's /24 (and the IPv4 --sweep-also), turn each MAC found into its
                           EUI-64 fe80:: address, then TCP to each of PORTS (comma-separated) and a DNS
                           query over UDP to each, and a DNS query to ff02::1 (all nodes): each must
                           get no answer
  --sweep-unicast          the sweep also tries, on a pod with a unicast IPv6 address (dual-stack), the
                           first 64 addresses of its /64 (the gateway, and its node's pods as host-local
                           IPAM numbers them) and every IPv6 --sweep-also the same way
  --sweep-also IP          one more address for the sweep (repeatable)
  --dns NAME               resolving must fail              (repeatable)
  --dns-allowed NAME       resolving must work              (repeatable; positive control)
  --no-sa-token            no service-account token mounted
  --unshare                unshare(CLONE_NEWUSER) and unshare(CLONE_NEWNS) refused
  --seccomp                /proc/self/status: Seccomp 2 (filter) and NoNewPrivs 1
  --readonly-root          writing /etc/x fails and its file system is mounted read-only
  --as-sandbox             first what sandboxd's in-pod servers do before untrusted code runs, so the
                           checks see what a sandbox can do: no ICMP socket (D17; sandbox_executor's
                           podguard, on PYTHONPATH in the snippet image)
  --runtime-class CLASS    report the runtime (above); CLASS is the RuntimeClass the pod was given, "" for
                           the cluster default
  --expect-kernel TEXT     fail unless /proc/version contains TEXT (case-insensitive), e.g. gvisor
  --timeout S              per network check, default 3
"""
import argparse
import ctypes
import errno
import json
import os
import socket
import sys
import threading
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import channels

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
PROC_VERSION = "/proc/version"
# The build string every gVisor release prints in /proc/version and uname -v (its LinuxVersion).
GVISOR_BUILD = "#1 SMP Sun Jan 10 15:06:54 PST 2016"
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000


def check_tcp(target, timeout_s):
    """(blocked, detail) for a TCP connection to HOST:PORT ([v6]:PORT for IPv6): blocked only when
    nothing answered (a refusal proves packets reach the target)."""
    return check_channel("tcp:" + target, timeout_s)


def check_channel(spec, timeout_s):
    """(blocked, detail) for one channels.attempt: blocked when nothing answered."""
    attempt = channels.attempt(spec, timeout_s)
    return not attempt.answered, attempt.detail


def check_proxy_connect(target, timeout_s, proxy_url=None):
    """(blocked, detail) for a raw CONNECT to HOST:PORT through the HTTP proxy of $HTTPS_PROXY (or proxy_url):
    open only when the proxy's status line says 200 (it opened the tunnel); nothing is sent through it."""
    proxy_url = proxy_url or os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if not proxy_url:
        raise ValueError("no proxy: HTTPS_PROXY is not set")
    proxy = urllib.parse.urlsplit(proxy_url)
    request = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("ascii")
    reply = b""
    try:
        with socket.create_connection((proxy.hostname, proxy.port or 80), timeout=timeout_s) as connection:
            connection.sendall(request)
            while b"\r\n" not in reply and len(reply) < 4096:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except OSError as error:
        return True, f"proxy {proxy.netloc}: {describe(error)}"
    status_line = reply.split(b"\r\n", 1)[0].decode("latin-1")
    if not status_line:
        return True, f"proxy {proxy.netloc} closed the connection without a status line"
    parts = status_line.split()
    opened = len(parts) >= 2 and parts[0].startswith("HTTP/") and parts[1] == "200"
    return not opened, f"proxy {proxy.netloc} answered {status_line!r}"


def check_ipv6_sweep(ports, also, timeout_s, unicast=False):
    """(blocked, detail): every IPv6 attempt of the sweep at once; each is also printed as its own line."""
    specs, neighbours = ipv6_sweep_specs(ports, also, unicast=unicast)
    attempts = channels.attempt_all([spec for _, spec in specs], min(timeout_s, 1.0))
    for (name, _), attempt in zip(specs, attempts, strict=True):
        print(json.dumps({"check": name, "blocked": not attempt.answered, "detail": attempt.detail}), flush=True)
    answered = [a.target for a in attempts if a.answered]
    detail = {"neighbours": neighbours, "attempts": len(attempts), "answered": answered}
    return not answered, json.dumps(detail, sort_keys=True)


UNICAST_SWEEP_HOSTS = 64


def ipv6_sweep_specs(ports, also=(), settle_s=2.0, unicast=False):
    """([(check name, spec)], neighbours found): the attacker's sweep, as the issue that found it did."""
    interface, gateway = channels.default_interface_and_gateway()
    me = channels.own_ipv4()
    also_v6 = [a for a in also if ":" in a]
    also = [a for a in also if ":" not in a]
    addresses = set(channels.subnet24(me)) | set(also)
    if gateway:
        addresses |= set(channels.subnet24(gateway))
    addresses.discard(me)
    # The addresses asked for by name first, then the rest of the two /24s.
    wanted = sorted(set(also) - {me})
    neighbours = channels.arp_sweep(wanted + sorted(addresses - set(wanted)), settle_s=settle_s)
    specs = [("ipv6 all-nodes ff02::1 udp-dns", f"udp-dns:[ff02::1%{interface}]:53")]
    for ip, mac in sorted(neighbours.items()):
        link_local = f"[{channels.eui64_link_local(mac)}%{interface}]"
        for port in ports:
            specs.append((f"ipv6 {ip} {link_local}:{port} tcp", f"tcp:{link_local}:{port}"))
            specs.append((f"ipv6 {ip} {link_local}:{port} udp-dns", f"udp-dns:{link_local}:{port}"))
    mine = channels.own_ipv6_unicast() if unicast else []
    targets = set(also_v6) if unicast else set()
    for address in mine:
        targets |= set(channels.low_hosts64(address, UNICAST_SWEEP_HOSTS))
    for address in sorted(targets - set(mine)):
        for port in ports:
            specs.append((f"ipv6 [{address}]:{port} tcp", f"tcp:[{address}]:{port}"))
            specs.append((f"ipv6 [{address}]:{port} udp-dns", f"udp-dns:[{address}]:{port}"))
    return specs, neighbours


def check_dns(name, timeout_s):
    """(blocked, detail) for resolving `name`; no answer within the timeout counts as blocked."""
    outcome = {}

    def resolve():
        try:
            outcome["addresses"] = sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None)})
        except OSError as error:
            outcome["error"] = describe(error)
    # getaddrinfo has no timeout of its own, and a dropped DNS packet means retries for many seconds.
    resolver = threading.Thread(target=resolve, daemon=True)
    resolver.start()
    resolver.join(timeout_s)
    if "addresses" in outcome:
        return False, "resolved to " + ", ".join(outcome["addresses"])
    return True, outcome.get("error", f"no answer within {timeout_s}s")


def check_no_sa_token(path=SERVICE_ACCOUNT_TOKEN):
    if os.path.exists(path):
        return False, f"{path} exists"
    return True, f"{path} absent"


def check_unshare(flag):
    """unshare() in a forked child, so a success cannot change this process's namespaces (and
    CLONE_NEWUSER requires a single-threaded caller, which the child is)."""
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        result = libc.unshare(flag)
        os._exit(0 if result == 0 else (ctypes.get_errno() or 255))
    _pid, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return False, "unshare succeeded"
    return True, f"unshare failed: {errno.errorcode.get(code, code)}"


def check_seccomp(status_path="/proc/self/status"):
    with open(status_path, encoding="ascii") as status_file:
        fields = dict(line.split(":", 1) for line in status_file if ":" in line)
    seccomp = fields.get("Seccomp", "?").strip()
    no_new_privs = fields.get("NoNewPrivs", "?").strip()
    return seccomp == "2" and no_new_privs == "1", f"Seccomp={seccomp} NoNewPrivs={no_new_privs}"


def check_readonly_root(path="/etc/x"):
    read_only_mount = bool(os.statvfs(os.path.dirname(path)).f_flag & os.ST_RDONLY)
    mount = f"{os.path.dirname(path)} mounted {'read-only' if read_only_mount else 'read-write'}"
    try:
        with open(path, "x"):
            pass
    except OSError as error:
        return read_only_mount, f"writing {path}: {describe(error)}; {mount}"
    os.remove(path)
    return False, f"wrote {path}; {mount}"


def is_gvisor_kernel(version_line):
    """Whether a /proc/version line is gVisor's: "gvisor" in it (any case), or gVisor's fixed build string."""
    return "gvisor" in version_line.lower() or GVISOR_BUILD in version_line


def runtime_report(runtime_class, expect_kernel="", version_path=PROC_VERSION):
    """The runtime line: the RuntimeClass the pod was given, what the kernel says, and whether it is as expected."""
    try:
        with open(version_path, encoding="utf-8", errors="replace") as version_file:
            kernel = version_file.read().strip()
        readable = True
    except OSError as error:
        kernel, readable = f"could not read {version_path}: {describe(error)}", False
    ok = not expect_kernel or (readable and expect_kernel.lower() in kernel.lower())
    return {"check": "runtime", "runtimeClassName": runtime_class or "", "kernel": kernel,
            "gvisor": readable and is_gvisor_kernel(kernel), "expectKernel": expect_kernel or "", "ok": ok}


def describe(error):
    return f"{type(error).__name__}: {error}"


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description="Try to escape from a sandbox pod.")
    parser.add_argument("--tcp", action="append", default=[], metavar="HOST:PORT")
    parser.add_argument("--tcp-allowed", action="append", default=[], metavar="HOST:PORT")
    parser.add_argument("--dns", action="append", default=[], metavar="NAME")
    parser.add_argument("--dns-allowed", action="append", default=[], metavar="NAME")
    parser.add_argument("--closed", action="append", default=[], metavar="CHANNEL:TARGET")
    parser.add_argument("--open", action="append", default=[], metavar="CHANNEL:TARGET")
    parser.add_argument("--closed-unless-self", action="append", default=[], metavar="CHANNEL:TARGET")
    parser.add_argument("--proxy-open", action="append", default=[], metavar="HOST:PORT")
    parser.add_argument("--proxy-closed", action="append", default=[], metavar="HOST:PORT")
    parser.add_argument("--ipv6-sweep", metavar="PORTS")
    parser.add_argument("--sweep-also", action="append", default=[], metavar="IP")
    parser.add_argument("--sweep-unicast", action="store_true")
    parser.add_argument("--no-sa-token", action="store_true")
    parser.add_argument("--unshare", action="store_true")
    parser.add_argument("--seccomp", action="store_true")
    parser.add_argument("--readonly-root", action="store_true")
    parser.add_argument("--as-sandbox", action="store_true")
    parser.add_argument("--runtime-class", metavar="CLASS")
    parser.add_argument("--expect-kernel", default="", metavar="TEXT")
    parser.add_argument("--timeout", type=float, default=3.0, metavar="S")
    arguments = parser.parse_args(argv)
    checks = selected_checks(arguments)
    runtime = arguments.runtime_class is not None or bool(arguments.expect_kernel)
    if not checks and not runtime:
        parser.error("select at least one check")
    if arguments.as_sandbox:
        from sandbox_executor import podguard  # the snippet image's; imported only when asked

        podguard.forbid_icmp("sandbox_probe")
    return checks, (arguments.runtime_class, arguments.expect_kernel) if runtime else None


def selected_checks(arguments):
    """[(check name, expected blocked, function)] in the order given above."""
    timeout_s = arguments.timeout
    checks: list[tuple[str, bool, Callable[..., tuple[bool, str]]]] = []
    for target in arguments.tcp:
        checks.append((f"tcp {target}", True, lambda t=target: check_tcp(t, timeout_s)))
    for target in arguments.tcp_allowed:
        checks.append((f"tcp-allowed {target}", False, lambda t=target: check_tcp(t, timeout_s)))
    for spec in arguments.closed:
        checks.append((f"closed {spec}", True, lambda x=spec: check_channel(x, timeout_s)))
    if arguments.closed_unless_self:
        me = channels.own_ipv4()
        for spec in arguments.closed_unless_self:
            if channels.split_host_port(spec.partition(":")[2])[0] != me:
                checks.append((f"closed-unless-self {spec}", True, lambda x=spec: check_channel(x, timeout_s)))
    for spec in arguments.open:
        checks.append((f"open {spec}", False, lambda x=spec: check_channel(x, timeout_s)))
    for target in arguments.proxy_open:
        checks.append((f"proxy-open {target}", False, lambda t=target: check_proxy_connect(t, timeout_s)))
    for target in arguments.proxy_closed:
        checks.append((f"proxy-closed {target}", True, lambda t=target: check_proxy_connect(t, timeout_s)))
    if arguments.ipv6_sweep:
        ports = [int(p) for p in arguments.ipv6_sweep.split(",") if p]
        checks.append(("ipv6-sweep", True, lambda: check_ipv6_sweep(ports, arguments.sweep_also, timeout_s,
                                                                    arguments.sweep_unicast)))
    for name in arguments.dns:
        checks.append((f"dns {name}", True, lambda n=name: check_dns(n, timeout_s)))
    for name in arguments.dns_allowed:
        checks.append((f"dns-allowed {name}", False, lambda n=name: check_dns(n, timeout_s)))
    if arguments.no_sa_token:
        checks.append(("no-sa-token", True, check_no_sa_token))
    if arguments.unshare:
        checks.append(("unshare CLONE_NEWUSER", True, lambda: check_unshare(CLONE_NEWUSER)))
        checks.append(("unshare CLONE_NEWNS", True, lambda: check_unshare(CLONE_NEWNS)))
    if arguments.seccomp:
        checks.append(("seccomp", True, check_seccomp))
    if arguments.readonly_root:
        checks.append(("readonly-root", True, check_readonly_root))
    return checks


def run_check(check):
    name, expect_blocked, function = check
    try:
        blocked, detail = function()
    except Exception as error:  # noqa: BLE001 - a probe that cannot run proves nothing: report, count as failed
        blocked, detail = not expect_blocked, f"check could not run: {describe(error)}"
    return name, expect_blocked, blocked, detail


def main(argv=None):
    """The runtime first, then every check at once (a silent channel costs its whole timeout), reported in
    the order given."""
    checks, runtime = parse_arguments(argv)
    failures = 0
    if runtime is not None:
        report = runtime_report(*runtime)
        print(json.dumps(report), flush=True)
        failures += not report["ok"]
    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(run_check, checks))
    for name, expect_blocked, blocked, detail in results:
        print(json.dumps({"check": name, "blocked": blocked, "detail": detail}), flush=True)
        failures += blocked != expect_blocked
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
