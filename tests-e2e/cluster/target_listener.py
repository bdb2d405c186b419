"""Listeners for the simulated targets (public, metadata, private and reserved ranges) inside the
targets netns, so a test's positive control can prove a target really answers when nothing blocks it.

  target_listener.py HTTP_PORT [DNS_PORT [TLS_PORT]]

HTTP_PORT: every TCP connection gets one HTTP response naming the address that was reached.
DNS_PORT:  a resolver on UDP and TCP that answers every A query with the address that was reached
           (a public resolver a tool pod must not be able to use instead of cluster DNS).
TLS_PORT:  the same HTTP response over TLS (the self-signed certificate for *.sbx.test that cluster-up.sh makes:
           TARGET_TLS_CERT and TARGET_TLS_KEY), naming the SNI the client sent too: what an egress proxy's tunnel
           delivered.
           A connection for TARGET_NAME_KEYED (by SNI, or by the first request's Host) is the keyed API instead
           (issue 48): HTTP/1.1 with keep-alive, each request answered 200 only with `Authorization: Bearer <the
           content of TARGET_KEYED_KEY>` and 401 without; /redirect?to=URL answers 302 to URL, /echo sends the
           request's head back (an upstream that echoes the key).
Every request head on every port that carries the key is written to TARGET_KEY_SIGHTINGS, one JSON line each
(address and port reached, SNI, Host, request line): the witness of where the key went.
"""
import json
import os
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse


class NameTheTarget(socketserver.BaseRequestHandler):
    def handle(self):
        local = self.request.getsockname()[0]
        # The request first: an answer sent before it can reach a proxy before the proxy has sent it, and Go's HTTP
        # client drops such an unsolicited answer with its connection (smokescreen's 500). A client that sends
        # nothing (a bare connect) gets the answer after the short wait.
        head = read_request_head(self.request)
        KEY.witness(head, self.request, None)
        body = f"sbx-target {local}\n".encode()
        self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
        linger_close(self.request)


def linger_close(sock, timeout_s=2.0):
    """Ends the answer, then reads what the client sent until it closes: a close with a request unread resets the
    connection, and a proxy relaying the answer may see that reset before the answer (smokescreen's 500)."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(timeout_s)
        while sock.recv(4096):
            pass
    except OSError:
        pass


class NameTheTargetOverTls(socketserver.BaseRequestHandler):
    def handle(self):
        local = self.request.getsockname()[0]
        seen = {}
        context = self.server.tls_context(seen)
        try:
            with context.wrap_socket(self.request, server_side=True) as tls:
                head = read_request_head(tls)  # a close with the request unread would reset the connection
                if KEY.name in (seen.get('sni'), host_of(head)):
                    KEY.serve(tls, head, seen.get('sni'))
                    return
                KEY.witness(head, tls, seen.get('sni'))
                body = f"sbx-target {local} sni={seen.get('sni')}\n".encode()
                tls.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                            + str(len(body)).encode() + b"\r\n\r\n" + body)
        except (ssl.SSLError, OSError):
            pass


def read_request_head(sock, timeout_s=2.0):
    """Reads what the client sent first, up to the end of a request head (or a short wait: some send nothing)."""
    sock.settimeout(timeout_s)
    data = b""
    try:
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ssl.SSLError, OSError):
        pass
    return data


def headers_of(head):
    """A request head's headers, names lower case (the last of each name)."""
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip()
    return headers


def host_of(head):
    """The Host header of a request head, lower case, without a port ("" without one)."""
    host = headers_of(head).get("host", b"").decode("latin-1").lower()
    name, _, port = host.rpartition(":")
    return name if port.isdigit() and not name.endswith(":") else host


class KeyedApi:
    """The keyed API and the witness of where its key went (TARGET_KEYED_KEY, TARGET_KEY_SIGHTINGS)."""

    def __init__(self):
        self.name = os.environ.get("TARGET_NAME_KEYED", "")
        self.key = None
        path = os.environ.get("TARGET_KEYED_KEY", "")
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                self.key = f.read().strip()
        self.sightings = os.environ.get("TARGET_KEY_SIGHTINGS", "")
        self.lock = threading.Lock()

    def witness(self, data, sock, sni):
        """Writes a line for each request head in `data` that carries the key."""
        if not self.key or self.key not in data or not self.sightings:
            return
        local = sock.getsockname()
        for head in data.split(b"\r\n\r\n"):
            if self.key in head:
                line = {"time": time.time(), "address": local[0], "port": local[1], "sni": sni,
                        "host": host_of(head), "request": head.split(b"\r\n", 1)[0].decode("latin-1")[:200]}
                with self.lock, open(self.sightings, "a") as out:
                    out.write(json.dumps(line) + "\n")

    def serve(self, tls, data, sni):
        """Answers the requests of one connection (`data`: what was read of it) until the client closes it or idles."""
        while b"\r\n\r\n" in data:
            head, _, rest = data.partition(b"\r\n\r\n")
            self.witness(head, tls, sni)
            headers = headers_of(head)
            length = int(headers.get("content-length", b"0")) if headers.get("content-length", b"").isdigit() else 0
            chunked = headers.get("transfer-encoding", b"").lower() == b"chunked"
            while (b"0\r\n\r\n" not in rest) if chunked else len(rest) < length:  # a chunked body: to its last chunk
                chunk = tls.recv(65536)
                if not chunk:
                    return
                rest += chunk
            if chunked:
                length = rest.index(b"0\r\n\r\n") + 5
            tls.sendall(self.answer(head, sni))
            data = rest[length:]
            if b"\r\n\r\n" not in data:
                data += read_request_head(tls, timeout_s=5.0)

    def answer(self, head, sni):
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        target = urllib.parse.urlsplit(request_line[1] if len(request_line) > 1 else "/")
        headers = {"Content-Type": "text/plain"}
        if target.path == "/redirect":
            status, body = "302 Found", b"redirected\n"
            headers["Location"] = urllib.parse.parse_qs(target.query).get("to", ["/"])[0]
        elif target.path == "/echo":
            status, body = "200 OK", head + b"\n"
        elif self.key and headers_of(head).get("authorization") == b"Bearer " + self.key:
            status, body = "200 OK", f"keyed-api ok host={host_of(head)} sni={sni}\n".encode()
        else:
            status, body = "401 Unauthorized", b"keyed-api: the key is missing or wrong\n"
        headers["Content-Length"] = str(len(body))
        return (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode() \
            + body


KEY = KeyedApi()


def tls_contexts():
    """The targets' certificate for *.sbx.test (TARGET_TLS_CERT and TARGET_TLS_KEY, made once by cluster-up.sh), and
    a context per connection recording the client's SNI."""
    cert, key = os.environ["TARGET_TLS_CERT"], os.environ["TARGET_TLS_KEY"]

    def context(seen):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.sni_callback = lambda _sock, name, _ctx: seen.update(sni=name)
        return ctx
    return context


def dns_answer(query, address):
    """A reply to a one-question query: the question, then one A (or, for an IPv6 `address`, AAAA) record."""
    if len(query) < 12:
        return None
    query_id, _flags, qdcount = struct.unpack(">HHH", query[:6])
    if qdcount != 1:
        return None
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    question = query[12:end + 5]
    header = struct.pack(">HHHHHH", query_id, 0x8180, 1, 1, 0, 0)
    if ":" in address:  # reached over IPv6: an AAAA record
        record = struct.pack(">HHHIH", 0xC00C, 28, 1, 60, 16) + socket.inet_pton(socket.AF_INET6, address)
    else:
        record = struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(address)
    return header + question + record


class DnsOverUdp(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        local = self.server.reply_address
        reply = dns_answer(data, local)
        if reply:
            sock.sendto(reply, self.client_address)


class DnsOverTcp(socketserver.BaseRequestHandler):
    def handle(self):
        length = self.request.recv(2)
        if len(length) < 2:
            return
        query = self.request.recv(struct.unpack(">H", length)[0])
        reply = dns_answer(query, self.request.getsockname()[0])
        if reply:
            self.request.sendall(struct.pack(">H", len(reply)) + reply)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class UdpServer(socketserver.ThreadingUDPServer):
    allow_reuse_address = True
    daemon_threads = True


class Server6(Server):
    """IPv6 only, beside the IPv4 listener on the same port."""
    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        super().server_bind()


class UdpServer6(UdpServer):
    address_family = socket.AF_INET6


def local_addresses(family):
    """This namespace's addresses of one family ("-4" or "-6"), link-local ones left out."""
    out = subprocess.run(["ip", family, "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    out += subprocess.run(["ip", family, "-o", "addr", "show", "scope", "host"], capture_output=True, text=True).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines()]


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()


if __name__ == "__main__":
    http_port = int(sys.argv[1])
    # IPv6 too where this namespace has IPv6 addresses of its own (a dual-stack cluster's targets).
    families = [("0.0.0.0", Server, UdpServer, "-4")]
    if any(a != "::1" for a in local_addresses("-6")):
        families.append(("::", Server6, UdpServer6, "-6"))
    for wildcard, tcp, udp, family in families:
        if len(sys.argv) > 2:
            dns_port = int(sys.argv[2])
            serve(tcp((wildcard, dns_port), DnsOverTcp))
            # A UDP socket bound to a wildcard cannot tell which address a query reached without
            # IP_PKTINFO; bind one per address of this namespace instead.
            for address in local_addresses(family):
                server = udp((address, dns_port), DnsOverUdp)
                server.reply_address = address
                serve(server)
        if len(sys.argv) > 3:
            tls = tcp((wildcard, int(sys.argv[3])), NameTheTargetOverTls)
            tls.tls_context = tls_contexts()
            serve(tls)
        serve(tcp((wildcard, http_port), NameTheTarget))
    threading.Event().wait()
