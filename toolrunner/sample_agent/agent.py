"""Tools of the test agent image (sandboxd.local/agent-tools:dev), called through POST /v1/call."""
import os
import subprocess
import sys
import urllib.request

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def add(a, b):
    return a + b


def get_weather(city):
    """Deterministic, so tests can compare the whole result."""
    return {"city": city, "temp_c": 4}


def fail(message):
    raise ValueError(message)


def http_get(url, timeout_s=3):
    """Egress tests: reachable targets answer, blocked ones raise (timeout, refused, unreachable)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return {"status": response.status,
                "body": response.read(800).decode("utf-8", errors="replace")[:200]}


def whoami():
    return {"uid": os.getuid(), "gid": os.getgid(),
            "service_account_token_present": os.path.exists(SERVICE_ACCOUNT_TOKEN),
            "env": sorted(os.environ)}


def big(n):
    """A result of n bytes, to test the 8 MiB reply cap."""
    return "x" * n


def run_code(code, timeout_s=60):
    """Runs arbitrary Python in this tool pod, as a hostile tool would: the e2e suite attacks from
    inside tool pods with it. Returns the child's stdout, stderr and exit code."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    return {"stdout": done.stdout, "stderr": done.stderr, "exit_code": done.returncode}
