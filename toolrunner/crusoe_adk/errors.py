"""Exceptions a relocated tool raises in the agent (see relocation.py).

A tool's own failure is a ToolError carrying the tool's text. Everything sandboxd refuses or fails is
a ToolSandboxError subclass, one per kind, carrying sandboxd's contract message (`detail`) and its
HTTP status, so an agent (or ADK's on_tool_error_callback) can tell "my tool raised" from "the
sandbox could not run it" and act on each (retry later, redeploy, fix the tool).
"""
from collections.abc import Iterable


class ToolError(Exception):
    """The tool ran in its sandbox and raised: str(error) is the tool's own text,
    "<ExceptionType>: <message>", as the tool runner reported it."""

    def __init__(self, tool: str, text: str, sandbox_id: str | None = None) -> None:
        super().__init__(text)
        self.tool = tool
        self.text = text
        self.sandbox_id = sandbox_id


class ToolRefused(RuntimeError):
    """D7: a tool that cannot be relocated into a sandbox; the agent must not start (TOOL_SANDBOX=true).
    `problems` lists (tool name, reason) for every tool that failed the check."""

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {name}: {reason}" for name, reason in self.problems)
        super().__init__(
            f"refusing to start: TOOL_SANDBOX=true runs every tool in a sandbox, never unisolated, and "
            f"these tools cannot be relocated into one:\n{lines}\n"
            f"Fix the tool(s), or have the platform set TOOL_SANDBOX=false to run tools in-process "
            f"and accept the risk knowingly.")


class ToolSandboxError(RuntimeError):
    """sandboxd could not run the tool call. `status` is sandboxd's HTTP status (None when it could
    not be reached), `detail` its `{"error"}` text, word for word."""

    explanation = "sandboxd could not run the tool call"

    def __init__(self, tool: str, status: int | None, detail: str, hint: str | None = None) -> None:
        self.tool = tool
        self.status = status
        self.detail = detail
        where = f"HTTP {status}" if status is not None else "no answer"
        message = f"tool {tool!r}: {self.explanation} ({where}: {detail})"
        if hint:
            message += f"; {hint}"
        super().__init__(message)


class SandboxAuthError(ToolSandboxError):
    """401: the agent's internal token was refused (missing, expired, forged, another audience)."""
    explanation = "sandboxd refused the agent's internal token"

    def __init__(self, tool: str, status: int | None, detail: str) -> None:
        super().__init__(tool, status, detail,
                         "redeploy the agent so the control plane mints it a current token")


class ToolImageRefused(ToolSandboxError):
    """403: the image is not the one the project's token names, or sandboxd requires it by digest."""
    explanation = "sandboxd refused the agent's image"

    def __init__(self, tool: str, status: int | None, detail: str) -> None:
        super().__init__(tool, status, detail,
                         "tool calls run only in the image the project's token names (by digest where "
                         "sandboxd requires one); redeploy the agent so its token names its current image")


class ToolArgumentsTooLarge(ToolSandboxError):
    """413: the call's body (its arguments) is over sandboxd's limit (1 MiB by default)."""
    explanation = "the tool's arguments are too large for a sandboxed call"

    def __init__(self, tool: str, status: int | None, detail: str) -> None:
        super().__init__(tool, status, detail, "pass a reference (a URL, an id) instead of the data")


class ToolCallRateLimited(ToolSandboxError):
    """429: a per-project limit was reached. `retry_after` is sandboxd's Retry-After in seconds (None
    when it gave none); the call was retried while the wait was short, and this is raised after."""
    explanation = "a per-project limit of sandboxd was reached"

    def __init__(self, tool: str, status: int | None, detail: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        hint = f"retry after {retry_after:g} s" if retry_after is not None else "retry later"
        super().__init__(tool, status, detail, hint)


class ToolSandboxUnavailable(ToolSandboxError):
    """503: the tool's sandbox did not start (pod not created, image without the runner, not ready)."""
    explanation = "the tool's sandbox did not start"


class ToolExecutionFailed(ToolSandboxError):
    """502: the call reached the sandbox but failed there (unknown function, runner error, bad reply)."""
    explanation = "tool execution failed in the sandbox"


class SandboxUnreachable(ToolSandboxError):
    """sandboxd did not answer (connection refused, timed out)."""
    explanation = "sandboxd could not be reached"


class InvalidSandboxReply(ToolSandboxError):
    """sandboxd answered 200 with something that is not a /v1/call reply."""
    explanation = "sandboxd's reply was not a tool-call result"


BY_STATUS: dict[int, type[ToolSandboxError]] = {
    401: SandboxAuthError, 403: ToolImageRefused, 413: ToolArgumentsTooLarge,
    429: ToolCallRateLimited, 502: ToolExecutionFailed, 503: ToolSandboxUnavailable}
