"""Records the packets delivered to the network namespace it runs in, by source address (LifecycleMatrix).

Usage: recorder.py SOURCE_CIDR [SOURCE_CIDR6]
Raw sockets of TCP, UDP and ICMP (and, with SOURCE_CIDR6, of TCP, UDP and ICMPv6 over IPv6) get a copy of every
packet the kernel delivers locally, after netfilter's INPUT hook: so only what the firewall let through is recorded,
whatever listens on the port (a SYN to a closed port and a datagram nobody reads count as well). Only sources in
SOURCE_CIDR or SOURCE_CIDR6 (the pod network) are kept: over IPv4 a classic BPF filter drops the others, so the
node's own traffic costs nothing; over IPv6 the header is gone before a raw socket's filter runs, so the address
recvmsg gives is checked here, and ICMPv6's own link traffic (neighbour discovery, multicast listeners) is left out.
Every 100 ms one JSON line per (source, destination, protocol, port) seen in that tenth of a second:
{"t": epoch ms, "src": ..., "dst": ..., "proto": "tcp"|"udp"|"icmp", "port": n, "n": count} (port: the destination
port, the ICMP type: 8 or, over IPv6, 128 for an echo). A line {"ready": true} first, once the sockets are open.
"""
import ctypes
import ipaddress
import json
import select
import socket
import struct
import sys
import time

SO_ATTACH_FILTER = 26
PROTOCOLS = {socket.IPPROTO_TCP: "tcp", socket.IPPROTO_UDP: "udp", socket.IPPROTO_ICMP: "icmp"}
PROTOCOLS6 = {socket.IPPROTO_TCP: "tcp", socket.IPPROTO_UDP: "udp", socket.IPPROTO_ICMPV6: "icmp"}
# ICMPv6 a host sends on its own to its link: multicast listener queries and reports, router and neighbour
# discovery, redirects.
ICMP6_LINK_TYPES = {130, 131, 132, 133, 134, 135, 136, 137, 143}


def source_filter(network):
    """ld [12] (source address); and mask; jeq prefix ? accept : drop."""
    code = [(0x20, 0, 0, 12), (0x54, 0, 0, int(network.netmask)), (0x15, 0, 1, int(network.network_address)),
            (0x06, 0, 0, 0xFFFF), (0x06, 0, 0, 0)]
    program = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in code))
    return program, struct.pack("HL", len(code), ctypes.addressof(program))


def port_of(proto, transport):
    """The destination port of a TCP or UDP header, an ICMP header's type."""
    return transport[0] if proto == "icmp" else struct.unpack("!H", transport[2:4])[0]


def read4(s, counts):
    packet = s.recv(128)
    header = (packet[0] & 0x0F) * 4
    proto = PROTOCOLS.get(packet[9])
    if proto is None or len(packet) < header + 4:
        return
    key = (socket.inet_ntoa(packet[12:16]), socket.inet_ntoa(packet[16:20]), proto, port_of(proto, packet[header:]))
    counts[key] = counts.get(key, 0) + 1


def read6(s, proto, network6, counts):
    """A raw IPv6 socket reads from the transport header on; the addresses come from recvmsg and its packet info."""
    transport, ancillary, _, address = s.recvmsg(128, socket.CMSG_SPACE(20))
    if len(transport) < 4 or ipaddress.ip_address(address[0].split("%")[0]) not in network6:
        return
    if proto == "icmp" and transport[0] in ICMP6_LINK_TYPES:
        return
    destination = next((socket.inet_ntop(socket.AF_INET6, data[:16]) for level, kind, data in ancillary
                        if level == socket.IPPROTO_IPV6 and kind == socket.IPV6_PKTINFO), None)
    if destination is None:
        return
    key = (address[0].split("%")[0], destination, proto, port_of(proto, transport))
    counts[key] = counts.get(key, 0) + 1


def main():
    network = ipaddress.ip_network(sys.argv[1])
    network6 = ipaddress.ip_network(sys.argv[2]) if len(sys.argv) > 2 else None
    program, fprog = source_filter(network)
    readers = {}
    for proto in PROTOCOLS:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)
        s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setblocking(False)
        readers[s] = read4
    if network6 is not None:
        for proto, name in PROTOCOLS6.items():
            s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, proto)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.setblocking(False)
            readers[s] = lambda sock, counts, name=name: read6(sock, name, network6, counts)
    print(json.dumps({"ready": True}), flush=True)
    counts = {}
    flushed = time.time()
    while True:
        readable, _, _ = select.select(list(readers), [], [], 0.1)
        for s in readable:
            while True:
                try:
                    readers[s](s, counts)
                except BlockingIOError:
                    break
        now = time.time()
        if now - flushed >= 0.1:
            for (src, dst, proto, port), n in counts.items():
                print(json.dumps({"t": int(flushed * 1000), "src": src, "dst": dst, "proto": proto, "port": port,
                                  "n": n}))
            sys.stdout.flush()
            counts.clear()
            flushed = now


if __name__ == "__main__":
    main()
