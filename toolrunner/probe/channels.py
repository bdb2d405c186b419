"""Attempts on every network channel a sandbox could use to get out (standard library only).

Shared by the isolation gate (which holds a sandbox back until every channel is closed), the escape
probe (the e2e suite's and `helm test`'s attacks) and nothing else. Each attempt returns an Attempt:
`answered` is True when anything came back from the target itself -- a connection, a TCP reset, a
DNS reply, an echo reply -- because any of those proves that packets reach it. Silence until the
timeout, a local refusal to send at all (no route, no address of that family, no permission for the
socket), or an ICMP error from the path (a policy enforcer that REJECTs, as kube-router does, rather
than drops) counts as closed, and the detail says which. The gate used to treat every connect error
as closed, and so passed on a TCP reset, which proves packets flow.

Channels:
  tcp        TCP connect to HOST:PORT (IPv4, or IPv6 with a %scope for link-local)
  udp-dns    a DNS query over UDP to SERVER:PORT; any datagram or ICMP error back is an answer
  tcp-dns    the same query over TCP
  icmp       an ICMP echo through an unprivileged ping socket (IPv4 or IPv6)
Discovery, as an attacker does it:
  gateway_ipv4()          the default route's gateway from /proc/net/route
  arp_sweep(addresses)    an empty UDP datagram to each (ARP is layer 2 and never filtered), then
                          the completed entries of /proc/net/arp: {ip: mac}
  eui64_link_local(mac)   the fe80:: address an interface with that MAC derives (RFC 4291, EUI-64)
"""
import errno
import ipaddress
import os
import random
import select
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

# Errors raised by this host's own stack before anything is sent, or after nothing answered:
# the channel is closed as far as this pod can tell.
_SILENT_ERRORS = {
    errno.ENETUNREACH,      # no route of that family (e.g. IPv6 disabled in the pod)
    errno.EADDRNOTAVAIL,    # no source address of that family / scope
    errno.EAFNOSUPPORT,     # no such family at all
    errno.EACCES,           # not allowed to open that socket (ping sockets off for this group)
    errno.EPERM,            # a local filter or missing capability refused the send
    errno.ETIMEDOUT,
    errno.EHOSTUNREACH,     # see _host_unreachable_is_silent
    errno.ENODEV,           # link-local scope names no interface
    errno.EINVAL,
}
# EHOSTUNREACH comes either from a failed neighbour resolution (nothing answered: silent) or from
# an ICMP host-unreachable sent back by a router or filter. A socket cannot tell the two apart, so
# the UDP channels read the ICMP error itself (IP_RECVERR) where they can; for TCP it counts as
# silent, as a filter that rejects instead of dropping has still stopped the packet.


@dataclass(frozen=True)
class Attempt:
    channel: str
    target: str
    answered: bool
    detail: str

    def as_dict(self):
        return {"channel": self.channel, "target": self.target, "answered": self.answered, "detail": self.detail}


def split_host_port(target):
    """'1.2.3.4:80' or '[fe80::1%eth0]:80' -> (host, port)."""
    host, _, port = target.rpartition(":")
    return host.strip("[]"), int(port)


def _address(host, port):
    """(family, sockaddr) for a literal IPv4 or IPv6 address, IPv6 possibly with %scope."""
    if ":" in host:
        address, _, scope = host.partition("%")
        scope_id = socket.if_nametoindex(scope) if scope and not scope.isdigit() else int(scope or 0)
        return socket.AF_INET6, (address, port, 0, scope_id)
    return socket.AF_INET, (host, port)


def _describe(error):
    return f"{type(error).__name__}: {error}"


def _silent(error):
    return isinstance(error, (TimeoutError, socket.timeout)) or getattr(error, "errno", None) in _SILENT_ERRORS


def _recverr(s, family):
    """Queue ICMP errors on the socket, so they can be told apart from the target's own answers."""
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, 25, 1)  # IPV6_RECVERR
    else:
        s.setsockopt(socket.IPPROTO_IP, 11, 1)    # IP_RECVERR


def tcp(target, timeout_s):
    """A connection or a TCP reset come from the target's own stack: answers. A refusal carried by
    an ICMP error (a policy enforcer that REJECTs, as kube-router does, or a router) never comes from
    a TCP stack for a closed port: the packet was stopped on the way, so it counts as closed, and
    the detail names the ICMP error."""
    host, port = split_host_port(target)
    try:
        family, sockaddr = _address(host, port)
    except (OSError, ValueError) as error:
        return Attempt("tcp", target, False, "cannot attempt: " + _describe(error))
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            _recverr(s, family)
            s.settimeout(timeout_s)
            s.connect(sockaddr)
            return Attempt("tcp", target, True, f"connected from {s.getsockname()[0]}")
        except OSError as error:
            icmp = _icmp_error(s, family)
            if icmp is not None:
                return Attempt("tcp", target, False, f"stopped on the way: {icmp}")
            if _silent(error):
                return Attempt("tcp", target, False, _describe(error))
            return Attempt("tcp", target, True, "reset by the target, so packets reach it: " + _describe(error))


def dns_query_packet(name, query_id=None):
    query_id = random.randint(0, 0xFFFF) if query_id is None else query_id
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    return struct.pack(">HHHHHH", query_id, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)


def _icmp_error(s, family):
    """The ICMP error queued on a socket with IP_RECVERR, as text, or None. Read without waiting: an
    error that stopped a packet is queued by the time the call it failed returns (a socket with a
    timeout would otherwise wait all of it for a queue that stays empty, as after a TCP reset)."""
    try:
        s.settimeout(0)
        _data, ancillary, _flags, _addr = s.recvmsg(512, 512, socket.MSG_ERRQUEUE)
    except OSError:
        return None
    for _level, _type, payload in ancillary:
        if len(payload) >= 16:
            ee_errno, origin, icmp_type, icmp_code = struct.unpack("=IBBB", payload[:7])
            return f"ICMP type {icmp_type} code {icmp_code} ({os.strerror(ee_errno)}), origin {origin}"
    return None


def udp_dns(target, timeout_s, name="kubernetes.default.svc.cluster.local"):
    """A DNS query over UDP to SERVER:PORT (a multicast SERVER such as ff02::1%eth0 asks every node
    on the link). Only a reply datagram is an answer: that is the channel. An ICMP error cannot be
    told apart from a REJECTing enforcer's for UDP, so it is reported in the detail, not counted;
    the TCP attempts of the same sweep tell a host's reset from a filter's ICMP."""
    host, port = split_host_port(target)
    try:
        family, sockaddr = _address(host, port)
    except (OSError, ValueError) as error:
        return Attempt("udp-dns", target, False, "cannot attempt: " + _describe(error))
    icmp = None
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            _recverr(s, family)
            s.sendto(dns_query_packet(name), sockaddr)
            deadline = time.monotonic() + timeout_s
            while (left := deadline - time.monotonic()) > 0:
                readable, _, errors = select.select([s], [], [s], left)
                if not readable and not errors:
                    break
                try:
                    data, sender = s.recvfrom(4096)
                    return Attempt("udp-dns", target, True, f"{len(data)}-byte reply from {sender[0]}")
                except OSError:
                    icmp = _icmp_error(s, family) or icmp
        except OSError as error:
            return Attempt("udp-dns", target, not _silent(error), _describe(error))
    if icmp:
        return Attempt("udp-dns", target, False, f"no reply; {icmp} came back")
    return Attempt("udp-dns", target, False, f"no answer within {timeout_s}s")


def tcp_dns(target, timeout_s, name="kubernetes.default.svc.cluster.local"):
    """A DNS query over TCP; connecting at all is already an answer."""
    attempt = tcp(target, timeout_s)
    return Attempt("tcp-dns", target, attempt.answered, attempt.detail)


def icmp(host, timeout_s):
    """An ICMP echo through an unprivileged ping socket. A pod whose group is outside
    net.ipv4.ping_group_range (the default) cannot even open one: that is closed too, and the
    detail says "could not send", so a test can tell it from "sent, no reply"."""
    try:
        family, sockaddr = _address(host, 0)
    except (OSError, ValueError) as error:
        return Attempt("icmp", host, False, "cannot attempt: " + _describe(error))
    proto = socket.IPPROTO_ICMPV6 if family == socket.AF_INET6 else socket.IPPROTO_ICMP
    echo_type = 128 if family == socket.AF_INET6 else 8
    try:
        s = socket.socket(family, socket.SOCK_DGRAM, proto)
    except OSError as error:
        return Attempt("icmp", host, False, "could not send: no ping socket for this pod: " + _describe(error))
    with s:
        try:
            s.settimeout(timeout_s)
            s.sendto(struct.pack(">BBHHH", echo_type, 0, 0, 0, 1) + b"sandboxd-probe", sockaddr)
            data, sender = s.recvfrom(1024)
            return Attempt("icmp", host, True, f"echo reply ({len(data)} bytes) from {sender[0]}")
        except TimeoutError:
            return Attempt("icmp", host, False, f"sent, no reply within {timeout_s}s")
        except OSError as error:
            return Attempt("icmp", host, not _silent(error), "sent: " + _describe(error))


def attempt(spec, timeout_s):
    """One attempt from 'CHANNEL:TARGET', e.g. 'tcp:10.96.0.1:443', 'udp-dns:[ff02::1%eth0]:53',
    'icmp:10.244.0.1'; the host 'gateway' stands for this pod's default gateway."""
    channel, _, target = spec.partition(":")
    if target == "gateway" or target.startswith("gateway:"):
        target = (gateway_ipv4() or "0.0.0.0") + target[len("gateway"):]
    functions = {"tcp": tcp, "udp-dns": udp_dns, "tcp-dns": tcp_dns, "icmp": icmp}
    if channel not in functions:
        raise ValueError(f"unknown channel {channel!r} in {spec!r}")
    return functions[channel](target, timeout_s)


def attempt_all(specs, timeout_s):
    """Every attempt at once, so a round costs one timeout, not one per channel."""
    if not specs:
        return []
    with ThreadPoolExecutor(max_workers=min(32, len(specs))) as pool:
        return list(pool.map(lambda spec: attempt(spec, timeout_s), specs))


# --- discovery ---------------------------------------------------------------------------------

def default_interface_and_gateway(route_path="/proc/net/route"):
    """(interface, gateway IPv4) of the default route, or (None, None)."""
    with open(route_path, encoding="ascii") as routes:
        next(routes, None)
        for line in routes:
            fields = line.split()
            if len(fields) >= 3 and fields[1] == "00000000":
                gateway = socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
                return fields[0], gateway
    return None, None


def gateway_ipv4(route_path="/proc/net/route"):
    return default_interface_and_gateway(route_path)[1]


def own_ipv4(toward="192.0.2.1"):
    """This pod's IPv4 address (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((toward, 9))
        return s.getsockname()[0]


def read_arp(arp_path="/proc/net/arp"):
    """{ip: mac} of the completed entries (flags 0x2) of the ARP table."""
    entries = {}
    with open(arp_path, encoding="ascii") as table:
        next(table, None)
        for line in table:
            fields = line.split()
            if len(fields) >= 4 and int(fields[2], 16) & 0x2 and fields[3] != "00:00:00:00:00:00":
                entries[fields[0]] = fields[3].lower()
    return entries


ARP_BATCH = 32


def arp_sweep(addresses, settle_s=1.5, arp_path="/proc/net/arp"):
    """Pokes every address with an empty UDP datagram so the kernel resolves its MAC (ARP is
    never filtered by a NetworkPolicy), then reads the ARP table. A datagram to an address not
    resolved yet waits in the kernel, charged to its socket's send buffer: one socket takes a few
    dozen before sendto() fails with EAGAIN, so each batch of addresses gets a socket of its own
    (a sweep of two /24s with a single socket missed addresses it was given)."""
    addresses = list(addresses)
    sockets = []
    try:
        for start in range(0, len(addresses), ARP_BATCH):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setblocking(False)
            sockets.append(s)
            for address in addresses[start:start + ARP_BATCH]:
                try:
                    s.sendto(b"", (str(address), 9))
                except OSError:
                    pass
        time.sleep(settle_s)
    finally:
        for s in sockets:
            s.close()
    return read_arp(arp_path)


def subnet24(ip):
    return [str(a) for a in ipaddress.ip_network(f"{ip}/24", strict=False).hosts()]


def own_ipv6_unicast(if_inet6_path="/proc/net/if_inet6"):
    """This pod's IPv6 addresses that are neither link-local nor loopback (a dual-stack pod's global or ULA one)."""
    found = []
    try:
        with open(if_inet6_path, encoding="ascii") as table:
            for line in table:
                raw = line.split()[0]
                address = ipaddress.IPv6Address(":".join(raw[i:i + 4] for i in range(0, 32, 4)))
                if not (address.is_link_local or address.is_loopback or address.is_multicast):
                    found.append(str(address))
    except FileNotFoundError:
        pass
    return found


def low_hosts64(ip, count):
    """The first `count` addresses of ip's /64 (::1 on): where host-local IPAM hands out a node's pod addresses."""
    network = ipaddress.ip_network(f"{ip}/64", strict=False)
    return [str(network.network_address + i) for i in range(1, count + 1)]


def eui64_link_local(mac):
    """fe80:: address derived from a 48-bit MAC by modified EUI-64 (RFC 4291 appendix A)."""
    octets = [int(part, 16) for part in mac.split(":")]
    octets[0] ^= 0x02
    interface_id = octets[:3] + [0xFF, 0xFE] + octets[3:]
    groups = [f"{interface_id[i] << 8 | interface_id[i + 1]:x}" for i in range(0, 8, 2)]
    return str(ipaddress.IPv6Address("fe80::" + ":".join(groups)))


def has_ipv6_link_local(interface, if_inet6_path="/proc/net/if_inet6"):
    """True if `interface` holds an fe80:: address (IPv6 alive in this pod)."""
    try:
        with open(if_inet6_path, encoding="ascii") as table:
            return any(line.split()[5] == interface and line.startswith("fe80") for line in table)
    except FileNotFoundError:
        return False
