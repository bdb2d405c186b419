"""Starts the in-pod programs as real subprocesses on free localhost ports."""
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOOLRUNNER_DIR = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, process, port, log_path):
        self.process = process
        self.port = port
        self.log_path = log_path

    def request(self, method, path, body=None, raw=None, headers=None):
        """(status, parsed JSON body, response headers)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        connection.request(method, path, body=payload, headers=headers or {})
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
    """start_server(module, env, cwd) -> Server, ready on /healthz; stopped after the test."""
    started = []

    def start(module, env, cwd=TOOLRUNNER_DIR, port_variable="SANDBOX_PORT", command_prefix=(),
              python=sys.executable):
        port = free_port()
        log_path = tmp_path / f"{module}-{port}.log"
        full_env = {**os.environ, "PYTHONPATH": str(TOOLRUNNER_DIR), port_variable: str(port), **env}
        with open(log_path, "wb") as log:
            process = subprocess.Popen([*command_prefix, python, "-m", module], cwd=cwd, env=full_env,
                                       stdout=log, stderr=subprocess.STDOUT)
        server = Server(process, port, log_path)
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
