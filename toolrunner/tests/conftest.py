"""Starts the in-pod programs as real subprocesses on free localhost ports."""
import base64
import hashlib
import http.client
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOOLRUNNER_DIR = Path(__file__).resolve().parents[1]
# The probe scripts run as scripts in pods (their own folder first on sys.path) and import each other so.
sys.path.insert(0, str(TOOLRUNNER_DIR / "probe"))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


POD_TOKEN_ENV = "SANDBOXD_POD_TOKEN_SHA256"


def verifier(secret):
    """What sandboxd writes into a pod for its secret: SHA-256, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(secret.encode()).digest()).rstrip(b"=").decode()


class Server:
    def __init__(self, process, port, log_path, token=None):
        self.process = process
        self.port = port
        self.log_path = log_path
        self.token = token  # the pod secret it was started with (sandboxd presents it on every request)

    def request(self, method, path, body=None, raw=None, headers=None, auth=True):
        """(status, parsed JSON body, response headers). Sends the pod secret as sandboxd does,
        unless `auth` is false or `headers` sets its own Authorization."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        all_headers = {"Authorization": f"Bearer {self.token}"} if auth and self.token else {}
        all_headers.update(headers or {})
        connection.request(method, path, body=payload, headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        assert response.getheader("Content-Length") == str(len(data))
        # Every reply closes its connection explicitly (sandboxd's HTTP client must never reuse one).
        assert response.getheader("Connection") == "close"
        return response.status, json.loads(data), response.headers

    def post(self, path, body):
        status, reply, _headers = self.request("POST", path, body)
        return status, reply

    def log(self):
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def start_server(tmp_path):
    """start_server(module, env, cwd) -> Server, ready on /healthz; stopped after the test.

    Every server gets a fresh pod secret (its verifier in SANDBOXD_POD_TOKEN_SHA256), as sandboxd gives every pod;
    `argv` replaces `-m module` (e.g. to start it with a defence switched off, for a positive control).
    """
    started = []

    def start(module, env, cwd=TOOLRUNNER_DIR, port_variable="SANDBOX_PORT", command_prefix=(),
              python=sys.executable, argv=None):
        port = free_port()
        log_path = tmp_path / f"{module}-{port}.log"
        token = secrets.token_urlsafe(32)
        full_env = {**os.environ, "PYTHONPATH": str(TOOLRUNNER_DIR), port_variable: str(port),
                    POD_TOKEN_ENV: verifier(token), **env}
        # Appending, like the pipe of a container log: a line written from elsewhere (the log-forging
        # tests) must not overwrite another.
        with open(log_path, "ab") as log:
            process = subprocess.Popen([*command_prefix, python, *(argv or ["-m", module])], cwd=cwd,
                                       env=full_env, stdout=log, stderr=subprocess.STDOUT)
        server = Server(process, port, log_path, token)
        started.append(server)
        deadline = time.monotonic() + 10
        while True:
            assert process.poll() is None, f"{module} exited early:\n{server.log()}"
            try:
                if server.request("GET", "/healthz")[0] == 200:
                    return server
            except OSError:
                pass
            assert time.monotonic() < deadline, f"{module} not ready:\n{server.log()}"
            time.sleep(0.02)

    yield start
    for server in started:
        server.process.terminate()
        try:
            server.process.wait(5)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@pytest.fixture
def executor_workdir(tmp_path):
    workdir = tmp_path / "workspace"
    workdir.mkdir()
    return workdir


@pytest.fixture
def start_executor(start_server, executor_workdir):
    def start(**env):
        return start_server("sandbox_executor", {"SANDBOX_WORKDIR": str(executor_workdir), **env})
    return start


@pytest.fixture
def silent_tcp_target():
    """HOST:PORT whose SYNs go unanswered, like a dropping filter: a listener whose accept queue is
    full (Linux then drops new SYNs silently)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        target = listener.getsockname()
        fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(target)
            fillers.append(filler)
        time.sleep(0.2)
        try:
            yield f"{target[0]}:{target[1]}"
        finally:
            for filler in fillers:
                filler.close()


@pytest.fixture
def silent_udp_target():
    """HOST:PORT of a UDP socket that reads nothing and answers nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        host, port = silent.getsockname()
        yield f"{host}:{port}"
