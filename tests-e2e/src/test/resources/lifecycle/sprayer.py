"""Sprays every destination on every protocol from inside a sandbox, for as long as any of its processes lives
(LifecycleMatrix). The test prepends TARGETS = [[address, protocol, port], ...] (protocol tcp, udp or icmp),
SECONDS (how long to spray), RUN_SECONDS (how long the run itself lasts) and WAYS, a list of:
  thread    a thread of this interpreter: in a session it outlives the run, as the interpreter does
  leftover  a double-forked process in a session of its own, stdio closed: it outlives the run of a snippet or a tool
  inline    this process itself, for RUN_SECONDS only (a control pod)
Every ROUND seconds one packet to each target: a UDP datagram, a TCP connection attempt (non-blocking: its SYN and
retries), an ICMP echo through a ping socket (a sandbox may not open one: then none is sent). Prints the sandbox's
own address first ("sandbox ipv4: A"), then sleeps RUN_SECONDS unless it sprays inline. ROUNDS[0] counts the rounds
of this interpreter's spraying thread: a session's next run prints it to show the thread sprayed meanwhile.
"""
import os
import socket
import threading
import time

ROUND = 0.1


ROUNDS = [0]  # rounds sprayed by this interpreter's thread: a session's next run reads it (the thread lives)


def spray(until):
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ping = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    except OSError:
        ping = None
    pending = []
    while time.time() < until:
        for address, protocol, port in TARGETS:  # noqa: F821 (prepended)
            try:
                if protocol == "udp":
                    udp.sendto(b"lifecycle", (address, port))
                elif protocol == "tcp":
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    s.connect_ex((address, port))
                    pending.append(s)
                elif ping is not None:
                    ping.sendto(b"\x08\x00\x00\x00\x00\x01\x00\x01lifecycle", (address, 0))
            except OSError:
                pass
        while len(pending) > 4 * len(TARGETS):  # noqa: F821
            pending.pop(0).close()
        ROUNDS[0] += 1
        time.sleep(ROUND)


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


probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
probe.connect(("10.96.0.10", 53))
print("sandbox ipv4: " + probe.getsockname()[0], flush=True)
end = time.time() + SECONDS  # noqa: F821
if "leftover" in WAYS:  # noqa: F821
    leftover(end)
if "thread" in WAYS:  # noqa: F821
    threading.Thread(target=spray, args=(end,), daemon=True).start()
if "inline" in WAYS:  # noqa: F821
    spray(time.time() + RUN_SECONDS)  # noqa: F821
else:
    time.sleep(RUN_SECONDS)  # noqa: F821
