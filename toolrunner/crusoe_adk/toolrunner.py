"""The tool runner: serves one call of one of the agent's own tool functions, in the agent's image.

Started by sandboxd in a one-use pod as `python3 -m crusoe_adk.toolrunner` (docs/internal-contracts.md):
  GET  /healthz  -> 200 {"status": "ok"}
  POST /call     {"module", "function", "args"} -> 200 {"result": ...} or 200 {"error": "<Type>: <text>"}
                 when the tool raised; 400 for a bad body or an unknown module/function; 409 after
                 the first call.
Every request but GET /healthz must carry `Authorization: Bearer <the pod's secret>` (401 otherwise).
Environment: SANDBOXD_POD_TOKEN_SHA256 (required: the verifier of the pod's secret, set by sandboxd; removed from the
environment at start), TOOLRUNNER_PORT (default 8080), TOOLRUNNER_PRELOAD (a module imported before
serving: sandboxd sets the default module "agent" on warm tool pods), SANDBOXD_EGRESS_CA (the egress proxy's CA
certificate, on pods of a profile with credentials: trusted beside the default roots, egress_ca.py).
"""
import asyncio
import importlib
import inspect
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

from . import egress_ca, podguard

MAX_REQUEST_BYTES = 16 * 1024 * 1024


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class NotSerialisable(Exception):
    pass


class ToolCall:
    """Resolves and runs the pod's single tool call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._has_run = False

    def claim(self) -> None:
        # Claimed before the import: importing the agent's module already runs its code.
        with self._lock:
            if self._has_run:
                raise HttpError(409, "this tool sandbox has already run a call")
            self._has_run = True

    def run(self, module_name: str, function_name: str, args: dict[str, Any]) -> dict[str, Any]:
        function = resolve_function(module_name, function_name)
        try:
            result = function(**args)
            if inspect.isawaitable(result):  # async tools are common in ADK agents
                result = asyncio.run(await_result(result))
        except BaseException as error:  # noqa: BLE001 - SystemExit too: the tool's failure, not the runner's
            traceback.print_exc()
            return {"error": f"{type(error).__name__}: {error}"}
        try:
            check_serialisable(result)
            return {"result": result}
        except NotSerialisable as error:
            return {"error": f"result is not JSON-serialisable: {error}"}


async def await_result(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def check_serialisable(value: object) -> None:
    """NotSerialisable(<offending type>) unless `value` is plain JSON."""
    def refuse(unknown: object) -> NoReturn:
        raise NotSerialisable(type(unknown).__name__)
    try:
        json.dumps(value, default=refuse, allow_nan=False)
    except ValueError:  # NaN or infinity: not JSON
        raise NotSerialisable("float") from None


def resolve_function(module_name: str, function_name: str) -> Callable[..., Any]:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name == module_name or module_name.startswith(f"{error.name}."):
            raise HttpError(400, f"no module named '{module_name}'") from None
        raise HttpError(400, f"could not import module '{module_name}': {type(error).__name__}: {error}") from None
    except BaseException as error:  # noqa: BLE001 - the agent's own code: whatever its import raises
        traceback.print_exc()
        raise HttpError(400, f"could not import module '{module_name}': {type(error).__name__}: {error}") from None
    function: object = getattr(module, function_name, None) if function_name.isidentifier() else None
    if not callable(function):
        raise HttpError(400, f"no function '{function_name}' in module '{module_name}'")
    return function


def parse_call(body: object) -> tuple[str, str, dict[str, Any]]:
    if not isinstance(body, dict):
        raise HttpError(400, "invalid JSON body")
    module, function, args = body.get("module"), body.get("function"), body.get("args")
    if args is None:
        args = {}
    if not isinstance(module, str) or not module or not isinstance(function, str) or not function \
            or not isinstance(args, dict):
        raise HttpError(400, "invalid JSON body")
    return module, function, args


class ToolRunnerServer(ThreadingHTTPServer):
    """The HTTP server, holding what its handlers use."""

    tool_call: ToolCall
    pod_token: podguard.PodToken


class ToolRunnerHandler(BaseHTTPRequestHandler):
    # The same small JSON plumbing lives in sandbox_executor/server.py: each package ships alone in
    # its own image, so neither may import the other.
    timeout = 60  # a client that stops sending mid-body must not hold a thread for ever
    server: ToolRunnerServer

    def dispatch(self) -> None:
        routes: dict[str, dict[str, Callable[[], tuple[int, dict[str, Any]]]]] = {
            "/healthz": {"GET": self.healthz}, "/call": {"POST": self.call}}
        methods = routes.get(self.path.split("?", 1)[0])
        try:
            # Before anything else, the body included: a refused caller must not spend the pod's call.
            if podguard.needs_token(self.path) and \
                    not self.server.pod_token.accepts(self.headers.get("Authorization")):
                self.close_connection = True  # the unread body must not be parsed as a next request
                raise HttpError(401, podguard.UNAUTHORIZED)
            if methods is None:
                raise HttpError(404, "not found")
            if self.command not in methods:
                raise HttpError(405, "method not allowed")
            status, body = methods[self.command]()
        except HttpError as error:
            status, body = error.status, {"error": str(error)}
        except Exception as error:  # noqa: BLE001 - a bug here is a 500, the server goes on
            traceback.print_exc()
            status, body = 500, {"error": f"internal error: {type(error).__name__}: {error}"}
        self.send_json(status, body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = dispatch

    def healthz(self) -> tuple[int, dict[str, Any]]:
        return 200, {"status": "ok"}

    def call(self) -> tuple[int, dict[str, Any]]:
        module, function, args = parse_call(self.read_json_body())
        self.server.tool_call.claim()
        return 200, self.server.tool_call.run(module, function, args)

    def read_json_body(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise HttpError(400, "invalid JSON body") from None
        if length > MAX_REQUEST_BYTES:
            self.close_connection = True  # the unread body must not be parsed as a next request
            raise HttpError(413, "request body too large")
        try:
            return json.loads(self.rfile.read(max(length, 0)))
        except ValueError:
            raise HttpError(400, "invalid JSON body") from None

    def send_json(self, status: int, body: Any) -> None:
        payload = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        # Said outright: an HTTP/1.0 reply alone does not stop Java's HttpClient from pooling the
        # connection, and a request sent on it after this server closed it gets no bytes back.
        self.send_header("Connection", "close")
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.path.startswith("/healthz"):  # the readiness probe would drown the log
            super().log_message(format, *args)


def preload(module_name: str) -> None:
    """Imports the module a call will most likely name before the pod reports ready (sandboxd asks for it
    on warm tool pods, which wait for a call anyway): the call then finds it imported. A module that fails
    to import is reported here and left for the call, which imports it again and answers with the error."""
    if not module_name:
        return
    try:
        importlib.import_module(module_name)
    except BaseException:  # noqa: BLE001 - the agent's own code: whatever it raises must not stop the runner
        print(f"crusoe_adk.toolrunner: could not preload {module_name!r}; the call will import it again:",
              file=sys.stderr, flush=True)
        traceback.print_exc()


def main() -> None:
    # Before the agent's module is imported (its code runs from then on, in this process): the
    # secret leaves the environment (tool code and the programs it starts find none; a tool can
    # still reach this process's memory, but the secret only opens this one-call pod, whose call
    # it already is), and this process, PID 1 holding the pod log, becomes non-dumpable.
    pod_token = podguard.take_token("crusoe_adk.toolrunner")
    podguard.make_undumpable("crusoe_adk.toolrunner")
    podguard.forbid_icmp("crusoe_adk.toolrunner")  # no ICMP socket on any runtime (D17)
    port = int(os.environ.get("TOOLRUNNER_PORT") or 8080)
    # `python3 -m` puts the working directory first on sys.path; keep it there when started otherwise,
    # so the agent's own agent.py is importable.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    # Before any of the tool's code runs (the preload is its first): its TLS clients trust the egress proxy's CA
    # beside the roots they trusted before.
    egress_ca.install_or_warn("crusoe_adk.toolrunner")
    preload(os.environ.get("TOOLRUNNER_PRELOAD", ""))
    server = ToolRunnerServer(("0.0.0.0", port), ToolRunnerHandler)
    server.tool_call = ToolCall()
    server.pod_token = pod_token
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # PID 1 ignores SIGTERM unless handled
    print(f"crusoe_adk.toolrunner: listening on :{port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
