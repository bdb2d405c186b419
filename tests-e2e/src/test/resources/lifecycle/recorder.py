"""Records the IPv4 packets delivered to the network namespace it runs in, by source address (LifecycleMatrix).

Usage: recorder.py SOURCE_CIDR
Raw sockets of TCP, UDP and ICMP get a copy of every packet the kernel delivers locally, after netfilter's INPUT
hook: so only what the firewall let through is recorded, whatever listens on the port (a SYN to a closed port and a
datagram nobody reads count as well). A classic BPF filter keeps only sources in SOURCE_CIDR (the pod network), so
the node's own traffic costs nothing. Every 100 ms one JSON line per (source, destination, protocol, port) seen in
that tenth of a second: {"t": epoch ms, "src": ..., "dst": ..., "proto": "tcp"|"udp"|"icmp", "port": n, "n": count}
(port: the destination port, the ICMP type). A line {"ready": true} first, once the sockets are open.
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


def source_filter(network):
    """ld [12] (source address); and mask; jeq prefix ? accept : drop."""
    code = [(0x20, 0, 0, 12), (0x54, 0, 0, int(network.netmask)), (0x15, 0, 1, int(network.network_address)),
            (0x06, 0, 0, 0xFFFF), (0x06, 0, 0, 0)]
    program = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in code))
    return program, struct.pack("HL", len(code), ctypes.addressof(program))


def main():
    network = ipaddress.ip_network(sys.argv[1])
    program, fprog = source_filter(network)
    sockets = []
    for proto in PROTOCOLS:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)
        s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setblocking(False)
        sockets.append(s)
    print(json.dumps({"ready": True}), flush=True)
    counts = {}
    flushed = time.time()
    while True:
        readable, _, _ = select.select(sockets, [], [], 0.1)
        for s in readable:
            while True:
                try:
                    packet = s.recv(128)
                except BlockingIOError:
                    break
                header = (packet[0] & 0x0F) * 4
                proto = PROTOCOLS.get(packet[9])
                if proto is None or len(packet) < header + 4:
                    continue
                port = packet[header] if proto == "icmp" else struct.unpack("!H", packet[header + 2:header + 4])[0]
                key = (socket.inet_ntoa(packet[12:16]), socket.inet_ntoa(packet[16:20]), proto, port)
                counts[key] = counts.get(key, 0) + 1
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
