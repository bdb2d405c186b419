"""Every way out of a tool pod, tried as its tool would (run by the sample agent's run_code inside a real tool pod):
EgressProfileIT prepends CASES (every case at once, each on its own thread), a list of [name, kind, args...], and reads one JSON object {name: result} from stdout.
A result is {"answered": bool, "detail": str}: answered means the far end sent something back (a target's HTTP
answer, a DNS reply, an accepted TCP connection); a refusal, a reset, a timeout or a closed tunnel is not.

Kinds:
  https HOST PORT          urllib through HTTPS_PROXY (CONNECT; SNI = HOST), the certificate not verified
  http HOST PORT           urllib through HTTP_PROXY (absolute URI)
  tunnel HOST PORT         CONNECT HOST:PORT by hand: answered when the proxy opens the tunnel (200)
  connect HOST PORT SNI    CONNECT HOST:PORT by hand to the proxy, then TLS with SNI (a different one: fronting)
  pipelined HOST PORT SNI  CONNECT and the TLS ClientHello in one write, before the proxy has answered
  tcp IP PORT              a direct TCP connection, around the proxy
  dns-udp SERVER NAME      an A query to SERVER:53 over UDP; dns-tcp the same over TCP
  resolve NAME             the pod's own resolver (getaddrinfo)
"""
import concurrent.futures
import json
import os
import socket
import ssl
import struct
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT_S = 4


def unverified():
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def url_get(scheme, host, port):
    handler = urllib.request.HTTPSHandler(context=unverified())
    opener = urllib.request.build_opener(handler)  # ProxyHandler from the environment, as every stdlib client
    with opener.open(f"{scheme}://{host}:{port}/", timeout=TIMEOUT_S) as reply:
        return reply.read().decode(errors="replace")


def proxy_address():
    parsed = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    return parsed.hostname, parsed.port


def connect_request(host, port):
    return f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


def read_head(sock):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head.split(b"\r\n", 1)[0].decode(errors="replace")


def tls_over(sock, sni):
    with unverified().wrap_socket(sock, server_hostname=sni) as tls:
        return tls.recv(4096).decode(errors="replace")


def tunnel(host, port):
    sock = socket.create_connection(proxy_address(), timeout=TIMEOUT_S)
    sock.sendall(connect_request(host, port))
    status = read_head(sock)
    if " 200" not in status:
        sock.close()
        raise OSError(f"proxy answered {status!r}")
    return sock


def connect(host, port, sni):
    return tls_over(tunnel(host, port), sni)


def tunnel_opened(host, port):
    tunnel(host, port).close()
    return "tunnel opened"


def pipelined(host, port, sni):
    """The ClientHello made in memory, sent with the CONNECT in one write: the proxy must check it all the same."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = unverified().wrap_bio(incoming, outgoing, server_hostname=sni)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    sock = socket.create_connection(proxy_address(), timeout=TIMEOUT_S)
    sock.sendall(connect_request(host, port) + outgoing.read())
    status = read_head(sock)
    if " 200" not in status:
        raise OSError(f"proxy answered {status!r}")
    while True:
        data = sock.recv(16384)
        if not data:
            raise OSError("the tunnel closed")
        incoming.write(data)
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            sock.sendall(outgoing.read())
    sock.sendall(outgoing.read())
    while True:
        try:
            return tls.read(4096).decode(errors="replace")
        except ssl.SSLWantReadError:
            data = sock.recv(16384)
            if not data:
                raise OSError("the tunnel closed")
            incoming.write(data)


def tcp(ip, port):
    with socket.create_connection((ip, int(port)), timeout=TIMEOUT_S):
        return "connected"


def dns_query(name):
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    return struct.pack(">HHHHHH", 0x5bd, 0x0100, 1, 0, 0, 0) + question


def dns_udp(server, name):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.sendto(dns_query(name), (server, 53))
        return f"{len(sock.recvfrom(512)[0])} bytes"


def dns_tcp(server, name):
    with socket.create_connection((server, 53), timeout=TIMEOUT_S) as sock:
        query = dns_query(name)
        sock.sendall(struct.pack(">H", len(query)) + query)
        reply = sock.recv(2)
        if len(reply) < 2:
            raise OSError("closed without a reply")
        return "a reply"


def resolve(name):
    return str(sorted({a[4][0] for a in socket.getaddrinfo(name, 443, proto=socket.IPPROTO_TCP)}))


KINDS = {
    "https": lambda host, port: url_get("https", host, port),
    "http": lambda host, port: url_get("http", host, port),
    "tunnel": tunnel_opened,
    "connect": connect,
    "pipelined": pipelined,
    "tcp": tcp,
    "dns-udp": dns_udp,
    "dns-tcp": dns_tcp,
    "resolve": resolve,
}


def run(case):
    name, kind, args = case[0], case[1], case[2:]
    try:
        return name, {"answered": True, "detail": KINDS[kind](*args)}
    except urllib.error.HTTPError as error:  # the proxy's answer: its body says why
        body = error.read().decode(errors="replace").strip()[:300]
        return name, {"answered": False, "detail": f"HTTPError: {error}: {body}"}
    except Exception as error:  # every failure is the answer we record
        return name, {"answered": False, "detail": f"{type(error).__name__}: {error}"}


with concurrent.futures.ThreadPoolExecutor(max_workers=len(CASES)) as pool:  # noqa: F821 (CASES: from the test)
    print(json.dumps(dict(pool.map(run, CASES))))  # noqa: F821
