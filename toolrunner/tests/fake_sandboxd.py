"""A local stand-in for sandboxd's POST /v1/call, for the relocation tests (tests/ and tests_adk/), and its
POST /v1/execute, for the ADK code executor's tests (tests_adk/).

It speaks the contract (docs/internal-contracts.md, the API reference): the project token's `image`
claim must match the request's image (else 403), and each call runs in a fresh "pod": a new
`python3 -m crusoe_adk.toolrunner` process started next to the sample agent's agent.py, with an
environment of its own (none of the agent's variables), given the pod secret, asked once, stopped.
Each /v1/execute runs in a fresh real snippet executor (`python3 -m sandbox_executor`, the in-pod program),
asked once and stopped; with a `session_id`, in the one of its (project, session), kept until close() (D4).
Scripted replies (`fail_next`) stand in for sandboxd's own 4xx/5xx answers, on either route.
"""
import base64
import hashlib
import http.client
import itertools
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
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


def start_listening(command, cwd, env_for_port, deadline_s=15):
    """Starts a pod's server (`command`, whose env `env_for_port(port)` names its port) and returns (process, port)
    once the process itself says it listens there. free_port() can hand one port to two processes started close
    together (this suite's or another on the machine); the one that then loses the bind would otherwise have its
    requests answered by the other, with that one's pod secret (a 401). Such a start is made again on another port."""
    for _ in range(5):
        port = free_port()
        log = tempfile.TemporaryFile()
        process = subprocess.Popen(command, cwd=cwd, env=env_for_port(port), stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + deadline_s
        while process.poll() is None and time.monotonic() < deadline:
            log.seek(0)
            if f"listening on :{port}".encode() in log.read():
                return process, port
            time.sleep(0.02)
        process.kill()
        process.wait(5)
    raise OSError(f"{command} never listened on a port of its own")


class FakeSandboxd:
    def __init__(self, python=sys.executable, pod_env=None):
        self.python = python
        self.pod_env = pod_env or {}
        self.calls: list[tuple[dict, dict]] = []       # (headers, body) of every /v1/call
        self.executions: list[tuple[dict, dict]] = []  # (headers, body) of every /v1/execute
        self.sessions = {}       # (project, session_id) -> its SnippetPod
        self.sessions_lock = threading.Lock()
        self.scripted = []       # (status, body, headers) answered instead of running a pod
        self.pod_numbers = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/v1/execute":
                    fake.executions.append((dict(self.headers), body))
                    status, reply, headers = fake.execute(self.headers.get("Authorization", ""), body)
                else:
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
        for pod in self.sessions.values():
            pod.stop()

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

    def execute(self, authorization, body):
        """POST /v1/execute: the run's answer, as sandboxd gives it."""
        if self.scripted:
            return self.scripted.pop(0)
        claims = token_claims(authorization.removeprefix("Bearer "))
        if claims is None:
            return 401, {"error": "missing or malformed token"}, {}
        if not isinstance(body.get("code"), str):
            return 400, {"error": "code is required"}, {}
        if body.get("language", "python") != "python":
            return 400, {"error": f"unsupported language \"{body['language']}\""}, {}
        timeout_s = body.get("timeout_s") or 20
        if not 1 <= timeout_s <= 60:
            return 400, {"error": "timeout_s must be between 1 and 60"}, {}
        run = {"code": body["code"], "timeout_s": timeout_s, "files": body.get("files") or []}
        session_id = body.get("session_id")
        if session_id:
            with self.sessions_lock:
                key = (claims.get("project"), session_id)
                if key not in self.sessions:
                    self.sessions[key] = SnippetPod(self.python, f"sandbox-session{next(self.pod_numbers)}", True)
                pod = self.sessions[key]
            status, reply = pod.run(run)
        else:
            pod = SnippetPod(self.python, f"sandbox-fake{next(self.pod_numbers)}", False)
            try:
                status, reply = pod.run(run)
            finally:
                pod.stop()
        if status != 200:
            return 502, {"error": f"sandbox pod returned HTTP {status}: {reply.get('error')}"}, {}
        out = {"sandbox_id": pod.sandbox_id, **{name: reply[name] for name in
                                                ("stdout", "stderr", "exit_code", "duration_ms", "files")}}
        out.update({name: True for name in ("stdout_truncated", "stderr_truncated", "files_truncated")
                    if reply.get(name)})
        return 200, out, {}

    def run_in_pod(self, sandbox_id, module, function, args):
        """One fresh tool-runner process, as one pod per call: started, asked once, stopped."""
        pod_token = secrets.token_urlsafe(32)
        process, port = start_listening(
            [self.python, "-m", "crusoe_adk.toolrunner"], SAMPLE_AGENT_DIR,
            lambda port: {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp",
                          "PYTHONPATH": str(TOOLRUNNER_DIR), "PYTHONDONTWRITEBYTECODE": "1",
                          "TOOLRUNNER_PORT": str(port), "SANDBOXD_POD_TOKEN_SHA256": verifier(pod_token),
                          **self.pod_env})
        try:
            return request(port, pod_token, {"module": module, "function": function, "args": args})
        finally:
            process.terminate()
            process.wait(5)


class SnippetPod:
    """A real snippet executor process in a working directory of its own, as one snippet pod."""

    def __init__(self, python, sandbox_id, session):
        self.sandbox_id = sandbox_id
        self.pod_token = secrets.token_urlsafe(32)
        self.workdir = tempfile.mkdtemp(prefix="fake-snippet-pod-")
        self.process, self.port = start_listening(
            [python, "-m", "sandbox_executor"], TOOLRUNNER_DIR,
            lambda port: {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp",
                          "PYTHONPATH": str(TOOLRUNNER_DIR), "PYTHONDONTWRITEBYTECODE": "1",
                          "SANDBOX_PORT": str(port), "SANDBOX_WORKDIR": self.workdir,
                          "SANDBOX_SESSION": "true" if session else "false",
                          "SANDBOXD_POD_TOKEN_SHA256": verifier(self.pod_token)})
        self.lock = threading.Lock()  # a session runs one snippet at a time

    def run(self, body):
        with self.lock:
            return request(self.port, self.pod_token, body, path="/run")

    def stop(self):
        self.process.terminate()
        self.process.wait(5)
        shutil.rmtree(self.workdir, ignore_errors=True)


def request(port, pod_token, body, path="/call"):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=90)
    try:
        connection.request("POST", path, body=json.dumps(body).encode(),
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
