"""POST /v1/call from the agent: one of its own tool functions, in a one-use pod of its own image.

Used by every relocated tool (relocation.py). The image is the `image` claim of the agent's own
token (crusoe_core.adapter.agent_image), so a call can only ever name the image sandboxd accepts.

Environment (set by the platform on the agent):
  SANDBOX_URL               sandboxd's address (required)
  SANDBOX_TOKEN / SANDBOX_TOKEN_FILE   the project's internal token (see crusoe_core.adapter)
  TOOL_SANDBOX_TIMEOUT_S    a tool call's deadline in seconds, 1-120, default 30 (sandboxd's default
                            and maximum for /v1/call); the pod's start-up is not counted in it
"""
import contextvars
import email.utils
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from crusoe_core.adapter import agent_image, internal_caller_headers

from . import errors
from .tools import seconds_from_env

DEFAULT_TIMEOUT_S = 30
TIMEOUT_RANGE_S = (1, 120)
# Before the call's own deadline starts, sandboxd waits up to 110 s for the tool pod to be ready.
POD_READY_WAIT_S = 110
HTTP_MARGIN_S = 30
# sandboxd caps the runner's reply at 8 MiB; its own reply adds the sandbox id and duration.
MAX_REPLY_BYTES = 9 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 65536
# 429 (D9): the call is retried after Retry-After while that wait is this short, at most this often.
MAX_RATE_LIMIT_WAIT_S = 30
MAX_ATTEMPTS = 3

LOG = logging.getLogger("crusoe_adk.tool_call")

# The sandbox of the latest relocated call made in this context, for logs and tests:
# {"tool", "sandbox_id", "duration_ms"}.
last_call: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "crusoe_adk_last_tool_call", default=None)


def call_timeout_s() -> int:
    """TOOL_SANDBOX_TIMEOUT_S, checked against /v1/call's range (1-120)."""
    return seconds_from_env("TOOL_SANDBOX_TIMEOUT_S", DEFAULT_TIMEOUT_S, *TIMEOUT_RANGE_S)


def sandbox_url() -> str:
    base_url = os.environ.get("SANDBOX_URL", "").rstrip("/")
    if not base_url:
        raise RuntimeError("SANDBOX_URL is not set; the platform injects it into every agent, "
                           "so redeploy the agent")
    return base_url


def call_tool(tool: str, module: str, function: str, args: Mapping[str, Any]) -> Any:
    """Runs `module.function(**args)` in a sandbox of the agent's image and returns its result.

    Raises errors.ToolError when the tool raised there, and an errors.ToolSandboxError subclass
    when sandboxd refused or failed the call (see errors.BY_STATUS). `args` must be plain JSON.
    """
    timeout_s = call_timeout_s()
    body = json.dumps({"image": agent_image(), "module": module, "function": function,
                       "args": args, "timeout_s": timeout_s}, allow_nan=False).encode("utf-8")
    base_url = sandbox_url()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        request = urllib.request.Request(
            f"{base_url}/v1/call", data=body, method="POST",
            headers={"Content-Type": "application/json", **internal_caller_headers()})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s + POD_READY_WAIT_S + HTTP_MARGIN_S) \
                    as response:
                raw = response.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as error:
            detail = error_detail(error)
            if error.code == 429:
                retry_after = parse_retry_after(error.headers.get("Retry-After"))
                if attempt < MAX_ATTEMPTS and retry_after is not None \
                        and retry_after <= MAX_RATE_LIMIT_WAIT_S:
                    wait(retry_after)
                    continue
                raise errors.ToolCallRateLimited(tool, 429, detail, retry_after) from None
            raise errors.BY_STATUS.get(error.code, errors.ToolSandboxError)(
                tool, error.code, detail) from None
        except urllib.error.URLError as error:
            raise errors.SandboxUnreachable(tool, None, f"{base_url}: {error.reason}") from None
        except OSError as error:  # e.g. the read timed out
            raise errors.SandboxUnreachable(tool, None, f"{base_url}: {error}") from None
        return result_of(tool, raw)
    raise AssertionError("unreachable")


def wait(seconds: float) -> None:
    time.sleep(seconds)


def result_of(tool: str, raw: bytes) -> Any:
    if len(raw) > MAX_REPLY_BYTES:
        raise errors.InvalidSandboxReply(tool, 200, f"reply larger than {MAX_REPLY_BYTES} bytes")
    try:
        reply = json.loads(raw)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("error", ""), str):
        raise errors.InvalidSandboxReply(tool, 200, "not a JSON object with sandbox_id, result, error")
    sandbox_id = reply.get("sandbox_id")
    record = {"tool": tool, "sandbox_id": sandbox_id, "duration_ms": reply.get("duration_ms")}
    last_call.set(record)
    LOG.info("tool %r ran in sandbox %s (%s ms)%s", tool, sandbox_id, record["duration_ms"],
             ", and raised" if reply.get("error") else "", extra={"sandbox": record})
    if reply.get("error"):
        raise errors.ToolError(tool, reply["error"], sandbox_id)
    return reply.get("result")  # omitted when the tool returned None


def error_detail(error: urllib.error.HTTPError) -> str:
    raw = error.read(MAX_ERROR_BODY_BYTES)
    try:
        detail = json.loads(raw)["error"]
        if isinstance(detail, str):
            return detail
    except (ValueError, KeyError, TypeError):
        pass
    return raw.decode("utf-8", errors="replace").strip() or str(error.reason)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delay-seconds or an HTTP date); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
