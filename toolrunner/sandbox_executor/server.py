"""HTTP front of the snippet executor: GET /healthz, POST /run (docs/internal-contracts.md)."""
import base64
import binascii
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeGuard

from . import podguard, processes
from .interpreter import Interpreter
from .workdir import PathEscapeError, collect_files, write_files

MAX_REQUEST_BYTES = 16 * 1024 * 1024
# sandboxd enforces the real maximum (60 s by default); this only keeps timers in range.
MAX_TIMEOUT_S = 24 * 3600
# The readiness probe keeps requests away until the interpreter waits; this covers a request
# that arrives anyway (or the moment a session interpreter is being replaced).
READY_WAIT_S = 30
# Between the runs of a session no process but its interpreter may live: a thread the snippet left
# behind could start one after its run ended. Swept this often.
SESSION_SWEEP_EVERY_S = 1.0
# On SIGTERM (pod deletion) a run under way is answered as cut off before the process exits; the kubelet's
# shortest grace period is 2 s (sandbox pods ask for 1 s, and are never force-deleted: D13).
STOP_ANSWER_WITHIN_S = 1.0


class HttpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def invalid_body():
    return HttpError(400, "invalid JSON body")


def env_int(name, default):
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise SystemExit(f"sandbox_executor: {name} must be an integer, got {value!r}") from None


@dataclass(frozen=True)
class Settings:
    port: int
    workdir: str
    max_output_bytes: int
    max_files_bytes: int
    max_files: int
    session: bool

    @classmethod
    def from_env(cls):
        return cls(
            port=env_int("SANDBOX_PORT", 8080),
            workdir=os.environ.get("SANDBOX_WORKDIR", "/workspace"),
            max_output_bytes=env_int("SANDBOX_MAX_OUTPUT_BYTES", 1048576),
            max_files_bytes=env_int("SANDBOX_MAX_FILES_BYTES", 8388608),
            max_files=env_int("SANDBOX_MAX_FILES", 100),
            session=os.environ.get("SANDBOX_SESSION", "").lower() == "true",
        )


@dataclass(frozen=True)
class RunRequest:
    code: str
    timeout_s: int
    files: list  # [(path, bytes)]


def parse_run_request(body):
    """A RunRequest from the decoded JSON body, or HttpError 400 for anything malformed."""
    if not isinstance(body, dict):
        raise invalid_body()
    code, timeout_s, files = body.get("code"), body.get("timeout_s"), body.get("files")
    if not is_utf8_string(code) or type(timeout_s) is not int or not 1 <= timeout_s <= MAX_TIMEOUT_S:
        raise invalid_body()
    if files is None:
        files = []
    if not isinstance(files, list):
        raise invalid_body()
    decoded = []
    for entry in files:
        if not isinstance(entry, dict):
            raise invalid_body()
        path, content_b64 = entry.get("path"), entry.get("content_b64")
        if not is_utf8_string(path) or not isinstance(content_b64, str):
            raise invalid_body()
        try:
            decoded.append((path, base64.b64decode(content_b64, validate=True)))
        except (binascii.Error, ValueError):
            raise invalid_body() from None
    return RunRequest(code, timeout_s, decoded)


def is_utf8_string(value) -> TypeGuard[str]:
    """A str that can be written out (JSON may carry lone surrogates, which cannot)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# The data image's matplotlib font list, built with the image (D16); absent from the minimal image.
MATPLOTLIB_FONT_LIST = "/opt/sandboxd/matplotlib"


def figure_environment(tmpdir, settings, font_list=MATPLOTLIB_FONT_LIST):
    """What matplotlib needs in the snippet's environment, when the image has it: the backend that returns figures
    as files (figures.py), with the run's file caps it keeps; a config and cache directory in the temp directory
    (not the working directory, whose files are results), seeded with the image's font list so no run scans fonts."""
    if not os.path.isdir(font_list):
        return {}
    config = os.path.join(tmpdir, "matplotlib")
    shutil.copytree(font_list, config)
    return {"MPLBACKEND": "module://sandboxd_figures", "MPLCONFIGDIR": config,
            "SANDBOX_MAX_FILES_BYTES": str(settings.max_files_bytes), "SANDBOX_MAX_FILES": str(settings.max_files)}


class Executor:
    """Owns the working directory and the interpreter; enforces one run per pod unless in a session."""

    def __init__(self, settings):
        self.settings = settings
        scratch = tempfile.mkdtemp(prefix="sandbox-", dir=settings.workdir)
        self.workdir = os.path.join(scratch, "work")
        # TMPDIR outside the working directory: temp files are not results, and the root fs is read-only.
        tmpdir = os.path.join(scratch, "tmp")
        os.mkdir(self.workdir)
        os.mkdir(tmpdir)
        # Built from nothing, never copied from ours: the interpreter is exec'd with exactly this
        # environment (and none of this process's memory), so the pod secret cannot reach a snippet.
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
               "HOME": self.workdir, "TMPDIR": tmpdir, "LANG": "C.UTF-8", **figure_environment(tmpdir, settings)}
        self.interpreter = Interpreter(self.workdir, env, settings.session)
        self._claim_lock = threading.Lock()
        self._session_lock = threading.Lock()
        self._has_run = False
        self._restart_notice = ""
        self.stopping = False
        self._answered = threading.Condition()
        self._requests_under_way = 0
        if settings.session:
            threading.Thread(target=self._sweep_between_runs, daemon=True).start()

    def _sweep_between_runs(self):
        """Kill any process but the interpreter while no session run is under way."""
        while True:
            time.sleep(SESSION_SWEEP_EVERY_S)
            if self._session_lock.acquire(blocking=False):
                try:
                    processes.kill_leftovers(keep=self.interpreter.pid)
                finally:
                    self._session_lock.release()

    def run(self, request):
        serialise = self._session_lock if self.settings.session else contextlib.nullcontext()
        with serialise:
            with self._claim_lock:
                if self._has_run and not self.settings.session:
                    raise HttpError(409, "this sandbox has already run")
                self._write_input_files(request.files)
                if not self.interpreter.ready.wait(READY_WAIT_S):
                    raise HttpError(503, "the sandbox interpreter is not ready")
                self._has_run = True
            return self._run(request)

    def _write_input_files(self, files):
        try:
            write_files(self.workdir, files)
        except PathEscapeError as error:
            raise HttpError(400, str(error)) from None
        except OSError as error:
            raise HttpError(400, f"could not write input files: {error.strerror}") from None

    @contextlib.contextmanager
    def answering(self):
        """Marks a request under way until its answer is sent, so that stop() can let it be answered."""
        with self._answered:
            self._requests_under_way += 1
        try:
            yield
        finally:
            with self._answered:
                self._requests_under_way -= 1
                self._answered.notify_all()

    def stop(self, answer_within_s=STOP_ANSWER_WITHIN_S):
        """The pod is being deleted: a run under way is cut off and answered as such (never as the snippet's own
        exit, 137 from the kill), before this process exits."""
        self.stopping = True
        processes.kill_process_group(self.interpreter.pid)
        processes.kill_leftovers()
        with self._answered:
            self._answered.wait_for(lambda: self._requests_under_way == 0, answer_within_s)

    def _run(self, request):
        settings = self.settings
        result = self.interpreter.run(request.code, request.timeout_s, settings.max_output_bytes)
        if self.stopping:
            raise HttpError(503, "the sandbox pod was stopped mid-run")
        notice, self._restart_notice = self._restart_notice, ""
        if result.interpreter_lost:
            how = "timed out" if result.timed_out else f"ended the interpreter (exit code {result.exit_code})"
            self._restart_notice = (f"[sandbox: the previous run {how}; this run got a fresh "
                                    f"interpreter: earlier variables are gone, files remain]\n")
        if result.timed_out:
            stderr, stderr_truncated = f"timed out after {request.timeout_s}s", False
        else:
            stderr, stderr_truncated = notice + result.stderr, result.stderr_truncated
        files, files_truncated = collect_files(self.workdir, settings.max_files, settings.max_files_bytes)
        return {
            "stdout": result.stdout,
            "stderr": stderr,
            "exit_code": result.exit_code,
            "duration_ms": result.duration_ms,
            "files": files,
            "stdout_truncated": result.stdout_truncated,
            "stderr_truncated": stderr_truncated,
            "files_truncated": files_truncated,
        }


class ExecutorServer(ThreadingHTTPServer):
    """The HTTP server, holding what its handlers use."""

    executor: Executor
    pod_token: podguard.PodToken


class ExecutorHandler(BaseHTTPRequestHandler):
    # The same small JSON plumbing lives in crusoe_adk/toolrunner.py: each package ships alone in
    # its own image, so neither may import the other.
    timeout = 60  # a client that stops sending mid-body must not hold a thread for ever
    server: ExecutorServer

    def dispatch(self):
        routes = {"/healthz": {"GET": self.healthz}, "/run": {"POST": self.run_snippet}}
        with self.server.executor.answering():
            self._dispatch(routes)

    def _dispatch(self, routes):
        methods = routes.get(self.path.split("?", 1)[0])
        try:
            # Before anything else, the body included: a refused caller must not spend the pod's run.
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

    def healthz(self):
        if self.server.executor.interpreter.ready.is_set():
            return 200, {"status": "ok"}
        return 503, {"status": "starting"}

    def run_snippet(self):
        return 200, self.server.executor.run(parse_run_request(self.read_json_body()))

    def read_json_body(self):
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise invalid_body() from None
        if length > MAX_REQUEST_BYTES:
            self.close_connection = True  # the unread body must not be parsed as a next request
            raise HttpError(413, "request body too large")
        try:
            return json.loads(self.rfile.read(max(length, 0)))
        except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
            raise invalid_body() from None

    def send_json(self, status, body):
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

    def log_message(self, format, *args):
        if not self.path.startswith("/healthz"):  # the readiness probe would drown the log
            super().log_message(format, *args)


def main():
    # First of all, before the interpreter that runs snippets exists: the secret leaves the
    # environment, and this process (PID 1, holder of the pod log and the secret) becomes
    # non-dumpable, so the snippet, same uid, can neither open /proc/1/fd/1 nor read /proc/1/environ.
    pod_token = podguard.take_token("sandbox_executor")
    podguard.make_undumpable("sandbox_executor")
    podguard.forbid_icmp("sandbox_executor")  # no ICMP socket on any runtime (D17)
    settings = Settings.from_env()
    processes.become_child_subreaper()
    executor = Executor(settings)
    server = ExecutorServer(("0.0.0.0", settings.port), ExecutorHandler)
    server.executor = executor
    server.pod_token = pod_token
    # As PID 1 of the pod, SIGTERM is ignored unless handled; exit promptly on pod deletion.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"sandbox_executor: listening on :{settings.port}, working directory {executor.workdir}",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        executor.stop()
