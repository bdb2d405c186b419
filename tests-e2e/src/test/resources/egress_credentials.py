"""Attacks on an egress credential (issue 48), tried from inside a real tool pod as its tool would (run by the sample
agent's run_code): EgressCredentialsIT prepends CASES, a list of [name, kind, args...], and reads one JSON object
{name: result} from stdout. A result is {"status": the first HTTP status the far end sent or null, "detail": str}.
The program never holds the key: it cannot tell whether a request carried it, and the harness's keyed API, which
writes down every request that did, is the witness (cluster.env TARGET_KEY_SIGHTINGS).

Kinds:
  get URL VERIFY            urllib through the environment's proxy; VERIFY "bundle" (the default context: the roots
                            SSL_CERT_FILE names, the tool runner's bundle with the egress CA) or "none"
  raw HOST SNI ALPN PAYLOAD CONNECT HOST:443 by hand, TLS with that SNI and ALPN list ("" for none, verified against
                            the bundle), PAYLOAD written in one write, and everything read back until the far end
                            closes or idles
  tunnelled HOST SNI PAYLOAD  the same, the certificate not verified (a tunnel to the target, no proxy's TLS)
  hunt                      every key-like string (sbxkey-<32 hex>) and private key in this pod's environments, its
                            mounted volumes and its writable places: where each was found (by the string's sha256),
                            with a key-like string of its own planted first as the hunt's positive control
"""
import concurrent.futures
import hashlib
import json
import os
import re
import secrets
import socket
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT_S = 6
KEY_LIKE = re.compile(rb"sbxkey-[0-9a-f]{32}")
PRIVATE_KEY = b"PRIVATE" + b" KEY-----"  # in two parts: this program's own text, in its command line, has no match
STATUS = re.compile(r"HTTP/1\.[01] (\d{3})")


def context(verify):
    ctx = ssl.create_default_context()  # SSL_CERT_FILE: the bundle the tool runner made with the egress CA
    if verify == "none":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def get(url, verify):
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context(verify)))
    try:
        with opener.open(url, timeout=TIMEOUT_S) as reply:
            return reply.status, reply.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def proxy_address():
    parsed = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    return parsed.hostname, parsed.port


def raw(host, sni, alpn, payload, verify="bundle"):
    sock = socket.create_connection(proxy_address(), timeout=TIMEOUT_S)
    sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            raise OSError(f"the proxy closed after {head!r}")
        head += chunk
    if b" 200" not in head.split(b"\r\n", 1)[0]:
        raise OSError(f"the proxy answered {head.decode(errors='replace')!r}")
    ctx = context(verify)
    if alpn:
        ctx.set_alpn_protocols(alpn.split(","))
    with ctx.wrap_socket(sock, server_hostname=sni) as tls:
        protocol = tls.selected_alpn_protocol()
        tls.sendall(payload.encode())
        answer = b""
        try:
            while chunk := tls.recv(65536):
                answer += chunk
        except (TimeoutError, ssl.SSLError, OSError) as error:
            answer += f"\n[{type(error).__name__}]".encode()
    text = answer.decode(errors="replace")
    status = STATUS.search(text)
    return (int(status.group(1)) if status else None), f"alpn={protocol} " + text


def look(found, where, data):
    for match in KEY_LIKE.findall(data):
        found["key_like"].setdefault(hashlib.sha256(match).hexdigest(), where)
    if PRIVATE_KEY in data:
        found["private_keys"].append(where)


def hunt():
    control = f"sbxkey-{secrets.token_hex(16)}".encode()
    with tempfile.NamedTemporaryFile(dir="/tmp", delete=False) as planted:
        planted.write(control)
    found = {"key_like": {}, "private_keys": [], "mounts": [], "files_read": 0}
    look(found, "os.environ", "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    look(found, f"/proc/{pid}/{part}", f.read())
            except OSError:
                pass
    places = {"/etc", "/tmp", "/run", "/var", "/home", "/root"}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point, fstype = fields[4], fields[fields.index("-") + 1]
            found["mounts"].append(f"{point} {fstype}")
            if point != "/" and not point.startswith(("/proc", "/sys", "/dev")):
                places.add(point)
    for place in sorted(places):
        for directory, _dirs, files in os.walk(place):
            for name in files:
                path = os.path.join(directory, name)
                try:
                    if os.path.islink(path) or os.path.getsize(path) > 4 << 20:
                        continue
                    with open(path, "rb") as f:
                        look(found, path, f.read())
                    found["files_read"] += 1
                except OSError:
                    pass
    os.unlink(planted.name)
    found["control_found"] = hashlib.sha256(control).hexdigest() in found["key_like"]
    found["key_like"].pop(hashlib.sha256(control).hexdigest(), None)
    found["service_account_token"] = os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token")
    return None, json.dumps(found)


KINDS = {"get": get, "raw": raw, "tunnelled": lambda host, sni, payload: raw(host, sni, "", payload, "none"),
         "hunt": hunt}


def run(case):
    name, kind, args = case[0], case[1], case[2:]
    try:
        status, detail = KINDS[kind](*args)
        return name, {"status": status, "detail": detail if kind == "hunt" else detail[:3000]}
    except Exception as error:  # every failure is the answer we record
        return name, {"status": None, "detail": f"{type(error).__name__}: {error}"}


with concurrent.futures.ThreadPoolExecutor(max_workers=len(CASES)) as pool:  # noqa: F821 (CASES: from the test)
    print(json.dumps(dict(pool.map(run, CASES))))  # noqa: F821
