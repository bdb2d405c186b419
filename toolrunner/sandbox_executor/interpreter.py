"""The executor's side of the pre-started interpreter (see zygote.py for the protocol)."""
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from . import processes

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
HEADER = struct.Struct(">Q")
# After a session run the interpreter has released its pipes and every process the run started is
# dead; only a copy of a pipe the interpreter kept (os.dup) could still hold one open.
SESSION_OUTPUT_GRACE_S = 0.5
# Once every process is dead the pipes reach end-of-file at once; this only bounds a surprise.
DRAIN_AFTER_KILL_S = 2.0


class CappedOutput:
    """Drains a pipe in a thread, keeping the first `cap` bytes and counting the rest."""

    def __init__(self, fd, cap):
        self._fd = fd
        self._cap = cap
        self._kept = bytearray()
        self._omitted = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self):
        try:
            while True:
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    return
                with self._lock:
                    room = self._cap - len(self._kept)
                    self._kept += chunk[:room]
                    self._omitted += max(0, len(chunk) - room)
        finally:
            os.close(self._fd)

    def collect(self, wait_s):
        """(text, truncated): what was read within `wait_s` more seconds, decoded as UTF-8."""
        self._thread.join(wait_s)
        with self._lock:
            text = self._kept.decode("utf-8", errors="replace")
            if self._omitted:
                text += f"\n[output truncated: {self._omitted} bytes omitted]"
            return text, bool(self._omitted)


@dataclass
class RunResult:
    exit_code: int            # -1 when timed out
    stdout: str
    stdout_truncated: bool
    stderr: str
    stderr_truncated: bool
    duration_ms: int
    timed_out: bool
    interpreter_lost: bool    # session mode: the interpreter is gone and was replaced


class Interpreter:
    """One pre-started zygote: `once` runs a single snippet, `session` runs many in one namespace."""

    def __init__(self, workdir, env, session):
        self._workdir = workdir
        self._env = env
        self._session = session
        self.ready = threading.Event()
        self._start()

    @property
    def pid(self):
        return self._process.pid

    def _start(self):
        self.ready.clear()
        self._control, child_end = socket.socketpair()
        # -I: no PYTHON* variables, no user site, the zygote's folder not on sys.path. Unlike -S,
        # it keeps `site`, so exit() and quit() work as in any python3; start-up is paid now anyway.
        with child_end:
            self._process = subprocess.Popen(
                [sys.executable, "-I", ZYGOTE, str(child_end.fileno()),
                 "session" if self._session else "once"],
                pass_fds=[child_end.fileno()], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, cwd=self._workdir, env=self._env,
                start_new_session=True)  # its own process group: one killpg ends all of it
        self._pending = b""
        threading.Thread(target=self._await_ready, daemon=True).start()

    def _await_ready(self):
        if self._read_line(None) == b"ready":
            self.ready.set()

    def run(self, source, timeout_s, max_output_bytes):
        """Run `source`; the caller serialises runs and waits for `ready` first."""
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        stdout = CappedOutput(stdout_read, max_output_bytes)
        stderr = CappedOutput(stderr_read, max_output_bytes)
        payload = source.encode("utf-8")
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            socket.send_fds(self._control, [HEADER.pack(len(payload))], [stdout_write, stderr_write])
            self._control.sendall(payload)
        except OSError:
            pass  # the interpreter died before the run; its exit status tells the rest
        finally:
            os.close(stdout_write)
            os.close(stderr_write)

        exit_code = self._await_session_run(deadline) if self._session else None
        timed_out = False
        if exit_code is None:  # the interpreter is ending (once mode) or has gone (session mode)
            try:
                self._process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                processes.kill_process_group(self._process.pid)
                self._process.wait()
        duration_ms = int((time.monotonic() - started) * 1000)

        interpreter_lost = False
        if exit_code is None:
            processes.kill_leftovers()
            wait_s = DRAIN_AFTER_KILL_S
            exit_code = -1 if timed_out else shell_exit_code(self._process.returncode)
            if self._session:
                self._control.close()
                self._start()
                interpreter_lost = True
        else:
            # The session run ended in time: the interpreter stays, with its variables; every process
            # the run started ends with it, as in a single-use run (so none outlives its deadline).
            processes.kill_leftovers(keep=self._process.pid)
            wait_s = SESSION_OUTPUT_GRACE_S

        stdout_text, stdout_truncated = stdout.collect(wait_s)
        stderr_text, stderr_truncated = stderr.collect(wait_s)
        return RunResult(exit_code, stdout_text, stdout_truncated, stderr_text, stderr_truncated,
                         duration_ms, timed_out, interpreter_lost)

    def _await_session_run(self, deadline):
        """The exit code the zygote reports for a session run; None if it went away or time ran out."""
        while True:
            line = self._read_line(deadline)
            if line is None:
                return None
            word, _, number = line.partition(b" ")
            if word == b"exit" and number.lstrip(b"-").isdigit():
                return int(number)

    def _read_line(self, deadline):
        """The next line from the zygote; None at end-of-file or past the deadline (None: no deadline)."""
        while b"\n" not in self._pending:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                return None
            self._control.settimeout(timeout)
            try:
                chunk = self._control.recv(4096)
            except OSError:  # includes socket.timeout
                return None
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line


def shell_exit_code(returncode):
    """Popen gives -N for death by signal N; report it as a shell does (128+N), keeping -1 for timeouts."""
    return 128 - returncode if returncode < 0 else returncode
