"""A local stand-in for sandboxd's POST /v1/call, for the relocation tests (tests/ and tests_adk/).

It speaks the contract (docs/internal-contracts.md, the API reference): the project token's `image`
claim must match the request's image (else 403), and each call runs in a fresh "pod": a new
`python3 -m crusoe_adk.toolrunner` process started next to the sample agent's agent.py, with an
environment of its own (none of the agent's variables), given the pod secret, asked once, stopped.
Scripted replies (`fail_next`) stand in for sandboxd's own 4xx/5xx answers.
"""
import base64
import hashlib
import http.client
import itertools
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TOOLRUNNER_DIR = Path(__file__).resolve().parents[1]
SAMPLE_AGENT_DIR = TOOLRUNNER_DIR / "sample_agent"
IMAGE = "registry.example/agents/analyst@sha256:" + "ab" * 32


def make_token(claims):
    """A JWT-shaped token (unsigned here: only sandboxd verifies signatures)."""
    def segment(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return f"{segment({'alg': 'ES256', 'kid': 'test'})}.{segment(claims)}.c2lnbmF0dXJl"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class FakeSandboxd:
    def __init__(self, python=sys.executable, pod_env=None):
        self.python = python
        self.pod_env = pod_env or {}
        self.calls = []          # (headers, body) of every /v1/call
        self.scripted = []       # (status, body, headers) answered instead of running a pod
        self.pod_numbers = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.calls.append((dict(self.headers), body))
                status, reply, headers = fake.answer(self.headers.get("Authorization", ""), body)
                payload = json.dumps(reply).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def fail_next(self, status, error, headers=None):
        self.scripted.append((status, {"error": error}, headers or {}))

    def answer(self, authorization, body):
        if self.scripted:
            return self.scripted.pop(0)
        claims = token_claims(authorization.removeprefix("Bearer "))
        if claims is None:
            return 401, {"error": "missing or malformed token"}, {}
        if not body.get("image") or not body.get("function"):
            return 400, {"error": "image and function are required"}, {}
        if body["image"] != claims.get("image"):
            return 403, {"error": f"this project's token allows tool calls only in its own agent image "
                                  f"\"{claims.get('image')}\", not \"{body['image']}\""}, {}
        started = time.monotonic()
        sandbox_id = f"tool-fake{next(self.pod_numbers)}"
        status, reply = self.run_in_pod(sandbox_id, body.get("module") or "agent", body["function"],
                                        body.get("args") or {})
        if status != 200:
            return 502, {"error": f"tool execution failed: sandbox returned HTTP {status}: "
                                  f"{reply.get('error')}"}, {}
        out = {"sandbox_id": sandbox_id, "duration_ms": int((time.monotonic() - started) * 1000)}
        if reply.get("result") is not None:
            out["result"] = reply["result"]
        if reply.get("error"):
            out["error"] = reply["error"]
        return 200, out, {}

    def run_in_pod(self, sandbox_id, module, function, args):
        """One fresh tool-runner process, as one pod per call: started, asked once, stopped."""
        port, pod_token = free_port(), secrets.token_urlsafe(32)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp",
               "PYTHONPATH": str(TOOLRUNNER_DIR), "PYTHONDONTWRITEBYTECODE": "1",
               "TOOLRUNNER_PORT": str(port), "SANDBOXD_POD_TOKEN_SHA256": verifier(pod_token), **self.pod_env}
        process = subprocess.Popen([self.python, "-m", "crusoe_adk.toolrunner"], cwd=SAMPLE_AGENT_DIR,
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 15
            while True:
                try:
                    return request(port, pod_token, {"module": module, "function": function, "args": args})
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
        finally:
            process.terminate()
            process.wait(5)


def request(port, pod_token, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/call", body=json.dumps(body).encode(),
                           headers={"Authorization": f"Bearer {pod_token}"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def token_claims(token):
    try:
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None


def verifier(secret):
    """What sandboxd writes into a pod for its secret: SHA-256, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(secret.encode()).digest()).rstrip(b"=").decode()
