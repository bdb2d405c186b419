"""Sends one DNS A query over UDP and exits 0 if it got an answer record (stdlib only).

usage: dns_query.py SERVER NAME
"""
import random
import socket
import struct
import sys


def query(server: str, name: str, timeout: float = 2.0) -> list[str]:
    qid = random.randint(0, 0xFFFF)
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    packet = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(packet, (server, 53))
        reply = s.recv(4096)
    rid, flags, _, ancount, _, _ = struct.unpack(">HHHHHH", reply[:12])
    if rid != qid or flags & 0xF:
        return []
    pos = 12 + len(question) + 4
    addresses = []
    for _ in range(ancount):
        while reply[pos] != 0 and reply[pos] & 0xC0 != 0xC0:
            pos += reply[pos] + 1
        pos += 2 if reply[pos] & 0xC0 == 0xC0 else 1
        rtype, _, _, rdlen = struct.unpack(">HHIH", reply[pos:pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            addresses.append(socket.inet_ntoa(reply[pos:pos + 4]))
        pos += rdlen
    return addresses


if __name__ == "__main__":
    found = query(sys.argv[1], sys.argv[2])
    print(" ".join(found))
    sys.exit(0 if found else 1)
