# Run by a tool call (run_code): one HTTPS request to NAME as a standard client makes it (through HTTPS_PROXY when
# the pod has one), timed from before the request to its last byte; then, if DIRECT is an address, a TCP connection
# to it on 443 around any proxy. The caller prepends NAME and DIRECT. Prints one JSON object:
# {"proxy": HTTPS_PROXY or "", "body": what NAME answered or "failed: ...", "ms": the request's time,
#  "direct": "connected" or "failed: ..." (only with DIRECT)}.
import json
import os
import socket
import ssl
import time
import urllib.request

context = ssl.create_default_context()
context.check_hostname = False  # the simulated target's certificate is self-signed
context.verify_mode = ssl.CERT_NONE
out = {"proxy": os.environ.get("HTTPS_PROXY", "")}
opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
start = time.perf_counter()
try:
    out["body"] = opener.open("https://%s/" % NAME, timeout=10).read().decode(errors="replace")  # noqa: F821
except Exception as e:
    out["body"] = "failed: %r" % e
out["ms"] = (time.perf_counter() - start) * 1000
if DIRECT:  # noqa: F821
    try:
        socket.create_connection((DIRECT, 443), timeout=3).close()  # noqa: F821
        out["direct"] = "connected"
    except OSError as e:
        out["direct"] = "failed: %r" % e
print(json.dumps(out))
