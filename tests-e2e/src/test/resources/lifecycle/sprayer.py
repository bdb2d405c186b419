"""Sprays every destination on every protocol from inside a sandbox, for as long as any of its processes lives
(LifecycleMatrix). The test prepends TARGETS = [[address, protocol, port], ...] (protocol tcp, udp or icmp; an address of either family),
SECONDS (how long to spray), RUN_SECONDS (how long the run itself lasts) and WAYS, a list of:
  thread    a thread of this interpreter: in a session it outlives the run, as the interpreter does
  leftover  a double-forked process in a session of its own, stdio closed: it outlives the run of a snippet or a tool
  inline    this process itself, for RUN_SECONDS only (a control pod)
Every ROUND seconds one packet to each target: a UDP datagram, a TCP connection attempt (non-blocking: its SYN and
retries), an ICMP or ICMPv6 echo through a ping socket (a sandbox may not open one: then none is sent). Prints the
sandbox's own addresses first ("sandbox ipv4: A", and "sandbox ipv6: B" when a target is IPv6), then sleeps
RUN_SECONDS unless it sprays inline. ROUNDS[0] counts the rounds
of this interpreter's spraying thread: a session's next run prints it to show the thread sprayed meanwhile.
"""
import os
import socket
import threading
import time

ROUND = 0.1


ROUNDS = [0]  # rounds sprayed by this interpreter's thread: a session's next run reads it (the thread lives)


def ping_socket(family, protocol):
    try:
        return socket.socket(family, socket.SOCK_DGRAM, protocol)
    except OSError:
        return None


ECHO = {socket.AF_INET: b"\x08", socket.AF_INET6: b"\x80"}  # the echo request's type: ICMP 8, ICMPv6 128


def family_of(address):
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def spray(until):
    families = {family_of(address) for address, _, _ in TARGETS}  # noqa: F821
    udp = {family: socket.socket(family, socket.SOCK_DGRAM) for family in families}
    ping = {family: ping_socket(family, socket.IPPROTO_ICMP if family == socket.AF_INET else socket.IPPROTO_ICMPV6)
            for family in families}
    pending = []
    while time.time() < until:
        for address, protocol, port in TARGETS:  # noqa: F821 (prepended)
            family = family_of(address)
            try:
                if protocol == "udp":
                    udp[family].sendto(b"lifecycle", (address, port))
                elif protocol == "tcp":
                    s = socket.socket(family, socket.SOCK_STREAM)
                    s.setblocking(False)
                    s.connect_ex((address, port))
                    pending.append(s)
                elif ping[family] is not None:
                    ping[family].sendto(ECHO[family] + b"\x00\x00\x00\x00\x01\x00\x01lifecycle", (address, 0))
            except OSError:
                pass
        while len(pending) > 4 * len(TARGETS):  # noqa: F821
            pending.pop(0).close()
        ROUNDS[0] += 1
        time.sleep(ROUND)


def own_address(family, towards):
    """The source address the kernel picks towards an address (a UDP connect sends nothing)."""
    probe = socket.socket(family, socket.SOCK_DGRAM)
    probe.connect((towards, 53))
    return probe.getsockname()[0]


def leftover(until):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            spray(until)
        os._exit(0)
    os.wait()


print("sandbox ipv4: " + own_address(socket.AF_INET, "10.96.0.10"), flush=True)
TARGETS6 = [address for address, _, _ in TARGETS if family_of(address) == socket.AF_INET6]  # noqa: F821
if TARGETS6:
    print("sandbox ipv6: " + own_address(socket.AF_INET6, TARGETS6[0]), flush=True)
end = time.time() + SECONDS  # noqa: F821
if "leftover" in WAYS:  # noqa: F821
    leftover(end)
if "thread" in WAYS:  # noqa: F821
    threading.Thread(target=spray, args=(end,), daemon=True).start()
if "inline" in WAYS:  # noqa: F821
    spray(time.time() + RUN_SECONDS)  # noqa: F821
else:
    time.sleep(RUN_SECONDS)  # noqa: F821
