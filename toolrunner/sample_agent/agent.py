"""Tools of the test agent image (sandboxd.local/agent-tools:dev), called through POST /v1/call.

`TOOLS` is the agent as the e2e agent pod serves it (`python3 -m crusoe_adk.serve agent:TOOLS`): every
tool relocated into a sandbox of this image at start-up, run_python left as it is.
`UNRELOCATABLE_TOOLS` is an agent that must refuse to start under TOOL_SANDBOX=true (D7).
The ADK agent built from these tools is adk_agent.py (it needs google-adk, which this image lacks).
"""
import os
import socket
import subprocess
import sys
import urllib.request

from crusoe_adk.tools import run_python

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def add(a, b):
    return a + b


def get_weather(city: str) -> dict:
    """Returns the current weather in a city.

    Args:
        city: The city's name, e.g. "Reykjavik".
    """
    return {"city": city, "temp_c": 4}  # deterministic, so tests can compare the whole result


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


def inspect_environment(secret_variable: str = "AGENT_SECRET") -> dict:
    """What a tool can see where it runs: the host (a pod's name), an environment variable of the
    agent (a credential), and the service-account token the agent's pod mounts."""
    try:
        with open(SERVICE_ACCOUNT_TOKEN, encoding="utf-8") as file:
            service_account_token = file.read()
    except OSError:
        service_account_token = None
    return {"hostname": socket.gethostname(), "secret": os.environ.get(secret_variable),
            "service_account_token": service_account_token, "uid": os.getuid()}


async def convert_temperature(celsius: float, unit: str = "F") -> dict:
    """Converts a temperature in degrees Celsius to Fahrenheit ("F") or kelvin ("K"). An async tool,
    as ADK agents often have: relocated, it stays async."""
    value = celsius * 9 / 5 + 32 if unit == "F" else celsius + 273.15
    return {"value": round(value, 2), "unit": unit}


def remember(note: str, tool_context=None) -> dict:
    """Notes something. ADK injects `tool_context` in the agent; it is never sent to the sandbox."""
    return {"note": note, "had_context": tool_context is not None}


TOOLS = [run_python, add, get_weather, fail, http_get, inspect_environment, convert_temperature, remember]


class Counter:
    def __init__(self):
        self.total = 0

    def count(self, n: int) -> int:
        """A method: its object lives in the agent, so it cannot be relocated."""
        self.total += n
        return self.total


UNRELOCATABLE_TOOLS = [get_weather, Counter().count]
