"""run_python: the tool that runs model-written Python in a fresh sandbox, through sandboxd.

Environment (set by the platform on the agent):
  SANDBOX_URL                   sandboxd's address (required)
  CODE_INTERPRETER_TIMEOUT_S    the run's deadline in seconds, 1-120, default 20; refused when above
                                SANDBOX_MAX_TIMEOUT_S, the server's maximum (default 60)
  CODE_INTERPRETER_SESSION      "true": runs of one conversation share one interpreter (variables
                                and files persist); needs CODE_INTERPRETER_SESSION_ID, the
                                conversation's id, which is sent as the run's `session_id`
  SANDBOX_TOKEN / SANDBOX_TOKEN_FILE   the project's internal token (see crusoe_core.adapter)
"""
import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from crusoe_core.adapter import internal_caller_headers

DEFAULT_TIMEOUT_S = 20
GUIDE_TIMEOUT_RANGE_S = (1, 120)
DEFAULT_SERVER_MAX_TIMEOUT_S = 60
# On top of the run itself sandboxd may wait up to 30 s for a warm pod, then claim and start it.
HTTP_MARGIN_S = 45
MAX_ERROR_BODY_BYTES = 65536


def run_python(code: str) -> str:
    """Run Python 3.12 code in a fresh, isolated sandbox and return its stdout, stderr and exit code.

    Print what you want to see. The sandbox has no network and, unless the platform chose its minimal
    image, numpy, pandas and matplotlib; the run is killed after CODE_INTERPRETER_TIMEOUT_S seconds
    (default 20).
    """
    body: dict[str, Any] = {"language": "python", "code": code, "timeout_s": interpreter_timeout_s()}
    session_id = conversation_session_id()
    if session_id:
        body["session_id"] = session_id
    base_url = os.environ.get("SANDBOX_URL", "").rstrip("/")
    if not base_url:
        raise RuntimeError("SANDBOX_URL is not set; the platform injects it into every agent, "
                           "so redeploy the agent")
    reply, error = post_execute(base_url, body, internal_caller_headers())
    if error:
        return error
    assert reply is not None  # post_execute gives one of the two
    return format_run(reply)


def post_execute(base_url: str, body: Mapping[str, Any],
                 headers: Mapping[str, str]) -> tuple[dict[str, Any], None] | tuple[None, str]:
    """POST `body` to {base_url}/v1/execute: (reply, None), or (None, "sandbox error: ...") for an
    HTTP error (sandboxd's message word for word, see describe_http_error), an unreachable service
    or an answer that is not a JSON object. Never raises for the sandbox's failures."""
    request = urllib.request.Request(
        f"{base_url}/v1/execute", data=json.dumps(body).encode("utf-8"), method="POST",
        headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=body["timeout_s"] + HTTP_MARGIN_S) as response:
            reply = json.loads(response.read())
    except urllib.error.HTTPError as error:
        return None, describe_http_error(error)
    except urllib.error.URLError as error:
        return None, f"sandbox error: could not reach the sandbox service at {base_url}: {error.reason}"
    except OSError as error:  # e.g. the read timed out
        return None, f"sandbox error: could not reach the sandbox service at {base_url}: {error}"
    except ValueError:
        return None, "sandbox error: invalid response from the sandbox service"
    if not isinstance(reply, dict):
        return None, "sandbox error: invalid response from the sandbox service"
    return reply, None


def seconds_from_env(name: str, default: int, low: int, high: int) -> int:
    """The whole number of seconds in environment variable NAME (DEFAULT when unset), within LOW-HIGH."""
    raw = os.environ.get(name) or str(default)
    try:
        seconds: int | None = int(raw)
    except ValueError:
        seconds = None
    if seconds is None or not low <= seconds <= high:
        raise ValueError(f"{name} must be a whole number of seconds from {low} to {high}, got {raw!r}")
    return seconds


def interpreter_timeout_s() -> int:
    """CODE_INTERPRETER_TIMEOUT_S, checked against the guide's range and the server's maximum (D5)."""
    timeout_s = seconds_from_env("CODE_INTERPRETER_TIMEOUT_S", DEFAULT_TIMEOUT_S, *GUIDE_TIMEOUT_RANGE_S)
    server_max = server_max_timeout_s()
    if timeout_s > server_max:
        # Refused here, once and clearly, rather than every run failing with a 400 from sandboxd.
        raise ValueError(f"CODE_INTERPRETER_TIMEOUT_S is {timeout_s} s, above the sandbox's maximum "
                         f"of {server_max} s (SANDBOX_MAX_TIMEOUT_S); set it to {server_max} or less")
    return timeout_s


def server_max_timeout_s() -> int:
    """SANDBOX_MAX_TIMEOUT_S, the longest run sandboxd accepts (default 60)."""
    raw_max = os.environ.get("SANDBOX_MAX_TIMEOUT_S") or str(DEFAULT_SERVER_MAX_TIMEOUT_S)
    try:
        return int(raw_max)
    except ValueError:
        raise ValueError(f"SANDBOX_MAX_TIMEOUT_S must be a whole number of seconds, got {raw_max!r}") from None


def conversation_session_id() -> str | None:
    if os.environ.get("CODE_INTERPRETER_SESSION", "").lower() != "true":
        return None
    session_id = os.environ.get("CODE_INTERPRETER_SESSION_ID", "")
    if not session_id:
        raise ValueError("CODE_INTERPRETER_SESSION=true needs CODE_INTERPRETER_SESSION_ID, the id "
                         "of the conversation whose runs share one interpreter")
    return session_id


def format_run(reply: Mapping[str, Any]) -> str:
    """The text an agent reads of a run; sandboxd's MCP tools write the same (both are tested against
    tests/run_text_cases.json)."""
    def block(text: str | None) -> str:
        return text.rstrip("\n") if text else "(empty)"
    lines = [f"stdout:\n{block(reply.get('stdout'))}",
             f"stderr:\n{block(reply.get('stderr'))}",
             f"exit_code: {reply.get('exit_code')}"]
    files = [entry.get("path") for entry in reply.get("files") or [] if isinstance(entry, dict)]
    if files:
        lines.append("files: " + ", ".join(str(path) for path in files))
    return "\n".join(lines)


def describe_http_error(error: urllib.error.HTTPError) -> str:
    raw = error.read(MAX_ERROR_BODY_BYTES)
    try:
        detail = json.loads(raw)["error"]
    except (ValueError, KeyError, TypeError):
        detail = raw.decode("utf-8", errors="replace").strip() or error.reason
    message = f"sandbox error: HTTP {error.code}: {detail}"
    if error.code == 401:
        message += (" (the agent's internal token was refused: redeploy the agent so the control "
                    "plane mints it a current one)")
    return message
