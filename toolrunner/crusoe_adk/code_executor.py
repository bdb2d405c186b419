"""SandboxdCodeExecutor: Google ADK's code executor for sandboxd, so the code blocks a model writes run in a
sandbox pod, the way GkeCodeExecutor runs them in a Job.

    from google.adk.agents import LlmAgent
    from crusoe_adk import SandboxdCodeExecutor

    root_agent = LlmAgent(name="analyst", model="gemini-2.5-flash", instruction="...",
                          code_executor=SandboxdCodeExecutor())

Each code block ADK finds in the model's answer (```python ... ```) is one POST /v1/execute, with the
CodeExecutionInput's files as `files`. With `stateful=True`, ADK gives every run of one ADK session the
same execution id (the ADK session's id); with the app's name and the user's id it makes sandboxd's `session_id`
(D4, `adk-` and a hash of the three), so variables and files persist from one code block to the next, and two
users whose sessions have the same name never share an interpreter. Otherwise every block runs in a fresh
single-use pod.

This module needs google-adk (`pip install 'crusoe-adk[adk]'`); the rest of the package does not, and
`import crusoe_adk` does not import this module until `crusoe_adk.SandboxdCodeExecutor` is first used.

Environment, as for run_python (crusoe_adk.tools): SANDBOX_URL, the project token (SANDBOX_TOKEN or
SANDBOX_TOKEN_FILE), CODE_INTERPRETER_TIMEOUT_S (when neither `timeout_s` nor `timeout_seconds` is given)
and SANDBOX_MAX_TIMEOUT_S.

The files a run writes come back as ADK output files, which ADK saves as artifacts of the ADK session, under
the names `artifact_name` gives their paths (issue 43): a snippet chooses its file names, and ADK would keep
one named `user:...` in the user's scope, shared by all that user's sessions.
"""
from __future__ import annotations

import base64
import binascii
import collections
import hashlib
import logging
import mimetypes
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from google.adk.code_executors.base_code_executor import BaseCodeExecutor
from google.adk.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult, File
from pydantic import Field, PrivateAttr, model_validator

from crusoe_core.adapter import internal_caller_headers

from .tools import interpreter_timeout_s, post_execute, server_max_timeout_s

if TYPE_CHECKING:
    from google.adk.agents.invocation_context import InvocationContext

LOG = logging.getLogger("crusoe_adk.code_executor")

# ADK's artifact services (google.adk.artifacts: in-memory, file and GCS, ADK 2.13) keep an artifact whose name
# starts with "user:" in the user's scope, shared by all of that user's sessions, and the file service reads "\"
# as a path separator. The characters escaped in artifact names (artifact_name), each as "%" and its hex code.
ARTIFACT_NAME_ESCAPES = {"%": "%25", ":": "%3A", "\\": "%5C"}

# Sessions whose last files are remembered (so unchanged files are not handed to ADK again); the oldest
# are forgotten first.
MAX_REMEMBERED_SESSIONS = 256
# Module-wide rather than per instance: ADK may deep-copy an agent, and a lock cannot be copied.
_SEEN_LOCK = threading.Lock()


class SandboxError(Exception):
    """A run that could not be sent or whose answer is unusable; its text becomes the result's stderr."""


class SandboxdCodeExecutor(BaseCodeExecutor):
    """Runs the model's code blocks in sandboxd (POST /v1/execute): a fresh single-use pod per block or,
    with stateful=True, one interpreter per ADK session (sandboxd's session_id)."""

    base_url: str | None = None
    """sandboxd's address; default $SANDBOX_URL, read at each run."""

    timeout_s: int | None = None
    """A run's deadline in seconds (1 to SANDBOX_MAX_TIMEOUT_S, default 60). Default: ADK's
    `timeout_seconds` if set, else $CODE_INTERPRETER_TIMEOUT_S (default 20)."""

    headers: dict[str, str] | None = Field(default=None, exclude=True, repr=False)
    """The Authorization header(s) to send; default crusoe_core.adapter.internal_caller_headers(), read at
    each run so a rotated token file is picked up. Never serialised or shown in repr (it holds the token)."""

    # session id -> {path: sha256 of the content} of the files its last run returned
    _seen: Any = PrivateAttr(default_factory=collections.OrderedDict)

    @model_validator(mode="after")
    def _check_timeout(self) -> SandboxdCodeExecutor:
        for name in ("timeout_s", "timeout_seconds"):
            value = getattr(self, name)
            if value is None:
                continue
            server_max = server_max_timeout_s()
            if not 1 <= value <= server_max:
                # Refused once, here, rather than every run failing with sandboxd's 400.
                raise ValueError(f"{name} is {value} s; sandboxd accepts 1 to {server_max} s "
                                 f"(SANDBOX_MAX_TIMEOUT_S)")
            break  # timeout_s wins; a timeout_seconds it overrides is not used
        return self

    def execute_code(self, invocation_context: InvocationContext,
                     code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        """One POST /v1/execute. Never raises for the sandbox's failures: they come back as stderr, which ADK
        shows the model (and counts against error_retry_attempts)."""
        try:
            base_url = (self.base_url or os.environ.get("SANDBOX_URL", "")).rstrip("/")
            if not base_url:
                raise SandboxError("SANDBOX_URL is not set; the platform injects it into every agent, so "
                                   "redeploy the agent (or pass base_url=)")
            session_id = (_session_id(invocation_context, code_execution_input.execution_id)
                          if self.stateful and code_execution_input.execution_id else None)
            sent = {file.name: _content_bytes(file) for file in code_execution_input.input_files}
            body: dict[str, Any] = {
                "language": "python", "code": code_execution_input.code, "timeout_s": self._timeout_s(),
                "files": [{"path": path, "content_b64": base64.b64encode(content).decode("ascii")}
                          for path, content in sent.items()]}
            if session_id:
                body["session_id"] = session_id
            headers = dict(self.headers) if self.headers is not None else internal_caller_headers()
        except (SandboxError, ValueError, RuntimeError) as error:  # RuntimeError: MissingTokenError
            return CodeExecutionResult(stderr=_as_sandbox_error(error))
        reply, failure = post_execute(base_url, body, headers)
        if failure:
            return CodeExecutionResult(stderr=failure)
        assert reply is not None  # post_execute gives one of the two
        try:
            return self._result(reply, sent, session_id)
        except SandboxError as error:
            return CodeExecutionResult(stderr=_as_sandbox_error(error))

    def _timeout_s(self) -> int:
        return self.timeout_s or self.timeout_seconds or interpreter_timeout_s()

    def _result(self, reply: Mapping[str, Any], sent: Mapping[str, bytes],
                session_id: str | None) -> CodeExecutionResult:
        stdout, stderr, exit_code = reply.get("stdout"), reply.get("stderr"), reply.get("exit_code")
        if not isinstance(stdout, str) or not isinstance(stderr, str) or type(exit_code) is not int:
            raise SandboxError("invalid response from the sandbox service")
        files = _reply_files(reply.get("files"))
        LOG.info("code block ran in sandbox %s (%s ms), exit code %s%s", reply.get("sandbox_id"),
                 reply.get("duration_ms"), exit_code, f", session {session_id}" if session_id else "")
        if reply.get("files_truncated"):
            stdout = _joined(stdout, "[sandbox: some files were left out of the answer, over snippet.maxFilesBytes]\n")
        # ADK takes any stderr for a failed run and then shows the model that stderr alone. So, as a GKE Job's
        # log carries both streams: a run that succeeded keeps its warnings with its output, and a failed run's
        # stderr starts with what it printed before it failed.
        if exit_code == 0:
            return CodeExecutionResult(stdout=_joined(stdout, stderr), stderr="", exit_code=0,
                                       output_files=self._new_files(files, sent, session_id))
        if not stderr:
            # Ended without a word (sys.exit(3), os._exit): the model must still see that it failed.
            stderr = f"Code execution exited with status {exit_code}."
        return CodeExecutionResult(stdout=stdout, stderr=_joined(stdout, stderr), exit_code=exit_code,
                                   output_files=self._new_files(files, sent, session_id))

    def _new_files(self, files: list[tuple[str, bytes]], sent: Mapping[str, bytes],
                   session_id: str | None) -> list[File]:
        """The files the run made or changed. sandboxd answers with every file of the working directory, the
        input files among them and, in a session, those of earlier runs: each would become a new version of
        an ADK artifact on every run."""
        digests = {path: hashlib.sha256(content).hexdigest() for path, content in files}
        unchanged = {path: hashlib.sha256(content).hexdigest() for path, content in sent.items()}
        if session_id:
            with _SEEN_LOCK:
                unchanged.update(self._seen.pop(session_id, {}))
                self._seen[session_id] = digests
                while len(self._seen) > MAX_REMEMBERED_SESSIONS:
                    self._seen.popitem(last=False)
        return [File(name=artifact_name(path), content=content,
                     mime_type=mimetypes.guess_type(path)[0] or "application/octet-stream")
                for path, content in files if unchanged.get(path) != digests[path]]


def artifact_name(path: str) -> str:
    """The ADK artifact name of a file a run returned (its path in the working directory): the path with "%",
    ":" and "\\" escaped as "%25", "%3A" and "%5C", everything else (including "/") as it is. So no name has a
    ":" at all, and none starts with "user:" (nor any other "scope:" prefix): every file of a run stays an
    artifact of the ADK session that ran it. Deterministic and one-to-one (two paths never share an artifact),
    and undone by percent-decoding; a path without those three characters keeps its name."""
    return "".join(ARTIFACT_NAME_ESCAPES.get(character, character) for character in path)


def _content_bytes(file: File) -> bytes:
    """An ADK File's content as bytes: bytes are the content itself, a str is its base64 (as ADK's own
    get_content_as_bytes reads them)."""
    if isinstance(file.content, bytes):
        return file.content
    try:
        return base64.b64decode(file.content, validate=True)
    except (binascii.Error, ValueError):
        raise SandboxError(f"input file {file.name!r}: a str content must be base64 (pass bytes for raw "
                           f"content)") from None


def _reply_files(entries: object) -> list[tuple[str, bytes]]:
    """[(path, bytes)] from the answer's `files`."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise SandboxError("invalid response from the sandbox service")
    files: list[tuple[str, bytes]] = []
    for entry in entries:
        path = entry.get("path") if isinstance(entry, dict) else None
        content_b64 = entry.get("content_b64") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not isinstance(content_b64, str):
            raise SandboxError("invalid response from the sandbox service")
        try:
            files.append((path, base64.b64decode(content_b64, validate=True)))
        except (binascii.Error, ValueError):
            raise SandboxError("invalid response from the sandbox service") from None
    return files


def _joined(first: str, second: str) -> str:
    """Two outputs, the second on a line of its own."""
    if first and second and not first.endswith("\n"):
        return f"{first}\n{second}"
    return first + second


def _as_sandbox_error(error: BaseException) -> str:
    text = str(error)
    return text if text.startswith("sandbox error: ") else f"sandbox error: {text}"


def _session_id(invocation_context: InvocationContext, execution_id: str) -> str:
    """sandboxd's session_id for one ADK session: ADK's session ids are unique per app and user only, sandboxd keys a
    session by project and session_id, so the app and the user go into it (each part length-prefixed)."""
    digest = hashlib.sha256()
    for part in (getattr(invocation_context, "app_name", None), getattr(invocation_context, "user_id", None),
                 execution_id):
        data = str(part or "").encode("utf-8")
        digest.update(len(data).to_bytes(4, "big"))
        digest.update(data)
    return "adk-" + digest.hexdigest()[:32]
