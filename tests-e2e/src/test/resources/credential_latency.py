"""EgressCredentialBenchmark's program, run by the sample agent's run_code in a tool pod of the e2e install's keyed
profile, of the credential's own project: the same request to the same server (the harness's keyed API, by its Host),
injected (CONNECT keyed.sbx.test: the proxy terminates TLS and adds the key) against tunnelled (CONNECT public.sbx.test,
another name of the same address: the proxy copies bytes), interleaved, on new connections and on kept-alive ones.
Prints {"new": {"injected": [ms...], "tunnelled": [...]}, "kept": {...}}. ROUNDS: from the benchmark.
"""
import http.client
import json
import os
import ssl
import time
import urllib.parse

PROXY = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
CONNECT = {"injected": "keyed.sbx.test", "tunnelled": "public.sbx.test"}
CONTEXT = ssl.create_default_context()
CONTEXT.check_hostname = False  # the same for both: the tunnelled one reaches the target's self-signed certificate
CONTEXT.verify_mode = ssl.CERT_NONE


def connection(kind):
    c = http.client.HTTPSConnection(PROXY.hostname, PROXY.port, context=CONTEXT, timeout=10)
    c.set_tunnel(CONNECT[kind], 443)
    return c


def one(c):
    c.request("GET", "/", headers={"Host": "keyed.sbx.test"})
    reply = c.getresponse()
    reply.read()
    return reply.status


def timed(action):
    start = time.perf_counter()
    status = action()
    return (time.perf_counter() - start) * 1000, status


def fresh(kind):
    c = connection(kind)
    try:
        return one(c)
    finally:
        c.close()


figures = {"new": {"injected": [], "tunnelled": []}, "kept": {"injected": [], "tunnelled": []}}
statuses = {"injected": set(), "tunnelled": set()}
kept = {kind: connection(kind) for kind in CONNECT}
for kind, c in kept.items():
    one(c)  # the connection and its TLS made before timing
for _ in range(ROUNDS):  # noqa: F821 (ROUNDS: from the benchmark)
    for kind in CONNECT:
        ms, status = timed(lambda kind=kind: fresh(kind))
        figures["new"][kind].append(ms)
        statuses[kind].add(status)
        ms, status = timed(lambda kind=kind: one(kept[kind]))
        figures["kept"][kind].append(ms)
        statuses[kind].add(status)
figures["statuses"] = {kind: sorted(s) for kind, s in statuses.items()}
print(json.dumps(figures))
