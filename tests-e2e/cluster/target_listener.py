"""Listeners for the simulated targets (public, metadata, private and reserved ranges) inside the
targets netns, so a test's positive control can prove a target really answers when nothing blocks it.

  target_listener.py HTTP_PORT [DNS_PORT [TLS_PORT]]

HTTP_PORT: every TCP connection gets one HTTP response naming the address that was reached.
DNS_PORT:  a resolver on UDP and TCP that answers every A query with the address that was reached
           (a public resolver a tool pod must not be able to use instead of cluster DNS).
TLS_PORT:  the same HTTP response over TLS (a self-signed certificate for *.sbx.test, made at start
           by openssl), naming the SNI the client sent too: what an egress proxy's tunnel delivered.
"""
import os
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import tempfile
import threading


class NameTheTarget(socketserver.BaseRequestHandler):
    def handle(self):
        local = self.request.getsockname()[0]
        # The request first: an answer sent before it can reach a proxy before the proxy has sent it, and Go's HTTP
        # client drops such an unsolicited answer with its connection (smokescreen's 500). A client that sends
        # nothing (a bare connect) gets the answer after the short wait.
        read_request_head(self.request)
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
                read_request_head(tls)  # a close with the request unread would reset the connection
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


def tls_contexts():
    """A self-signed certificate for *.sbx.test, and a context per connection recording the client's SNI."""
    directory = tempfile.mkdtemp(prefix="sbx-target-tls-")
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "30", "-subj", "/CN=sbx-target", "-addext",
                    "subjectAltName=DNS:*.sbx.test,DNS:*.rebind.sbx.test", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)

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
