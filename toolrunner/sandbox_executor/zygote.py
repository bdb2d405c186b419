"""The pre-started interpreter that runs snippets.

Started by the executor as `python3 -I zygote.py <control-fd> <once|session>` before any request
arrives, so a run does not pay interpreter start-up. It talks to the executor over a Unix socket
(the control fd):

  zygote -> executor   b"ready\n" once it is waiting for code
  executor -> zygote   8-byte big-endian length + the snippet's UTF-8 source; the write ends of
                       two fresh pipes travel with the length (SCM_RIGHTS) and become fd 1 and 2
  zygote -> executor   b"exit <n>\n" after a run (session mode only; in once mode the process
                       simply exits with the snippet's exit code)

Until its first run the zygote is non-dumpable: it inherited the executor's stderr (the pod log),
and in session mode it may be a replacement started while processes of an earlier run of the same
uid could still be about; they must not open /proc/<zygote>/fd/2. Right before the snippet runs,
fds 1 and 2 are the run's pipes and the flag is set back, so the snippet sees an ordinary process.

Only the standard library, and nothing of sandbox_executor: with -I the package is not on sys.path.
"""
import atexit
import builtins
import ctypes
import linecache
import os
import resource
import socket
import struct
import sys
import traceback
import types

HEADER = struct.Struct(">Q")
PR_SET_DUMPABLE = 4
# Most tasks (processes and threads) the sandbox's uid may have while a snippet runs (RLIMIT_NPROC). Under runc the
# pod's pids cgroup (the kubelet's podPidsLimit, 256 on the local cluster) bounds a fork bomb as well; under gVisor it
# counts gVisor's own host tasks instead (measured: some 70, plus about two per sandbox process), and a sandbox that
# reaches it stops answering (at 90-odd processes on the local cluster). This limit, which gVisor's kernel enforces
# per uid like Linux, stops the snippet well before. Each sandbox pod has a uid of its own: it is the pod's budget.
MAX_TASKS = 64


def set_dumpable(dumpable):
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1 if dumpable else 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # best effort: the executor, which holds the pod log for good, is non-dumpable itself


def limit_tasks():
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_TASKS, MAX_TASKS))
    except (ValueError, OSError):
        pass  # a lower limit set by the platform stays


def main():
    set_dumpable(False)
    limit_tasks()
    control = socket.socket(fileno=int(sys.argv[1]))
    session = sys.argv[2] == "session"
    # Like `python3 -c`: the working directory comes first, so uploaded modules can be imported.
    sys.path.insert(0, "")
    sys.argv = ["<snippet>"]
    namespace = new_main_module()
    control.sendall(b"ready\n")
    run_number = 0
    while True:
        request = receive_run(control)
        if request is None:
            return
        source, stdout_fd, stderr_fd = request
        run_number += 1
        attach_output(stdout_fd, stderr_fd)
        set_dumpable(True)  # holds nothing of the executor's any more: fds 1 and 2 are the run's pipes
        filename = "<snippet>" if run_number == 1 else f"<snippet {run_number}>"
        exit_code = run_snippet(source, filename, namespace)
        save_open_figures()
        if not session:
            exit_at_once(exit_code)
        detach_output()
        control.sendall(b"exit %d\n" % exit_code)


def save_open_figures():
    """Figures the run left open come back as files (figures.py, in the data image as `sandboxd_figures`): only
    when the snippet used pyplot, so a run without charts pays nothing and the minimal image needs no matplotlib."""
    if "matplotlib.pyplot" not in sys.modules:
        return
    try:
        import sandboxd_figures  # type: ignore[import-not-found]  # the data image's site-packages

        sandboxd_figures.save_open_figures()
    except Exception as error:  # noqa: BLE001 - the snippet's figures, state and backend: reported, never fatal
        print(f"sandboxd: the open figures could not be saved: {type(error).__name__}: {error}", file=sys.stderr)


def new_main_module():
    """A fresh `__main__` for the snippet, so pickle, dataclasses and `if __name__ == "__main__"` work."""
    module = types.ModuleType("__main__")
    module.__builtins__ = builtins  # type: ignore[attr-defined]  # what a module run as a script has
    sys.modules["__main__"] = module
    return module.__dict__


def receive_run(control):
    """Read one run request; None when the executor has gone away."""
    header, fds, _flags, _addr = socket.recv_fds(control, HEADER.size, 2)
    if not header:
        return None
    header += receive_exactly(control, HEADER.size - len(header))
    (length,) = HEADER.unpack(header)
    source = receive_exactly(control, length).decode("utf-8")
    return source, fds[0], fds[1]


def receive_exactly(control, count):
    chunks = []
    while count:
        chunk = control.recv(min(count, 1 << 20))
        if not chunk:
            raise EOFError("executor closed the control socket mid-request")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def attach_output(stdout_fd, stderr_fd):
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.close(stdout_fd)
    os.close(stderr_fd)
    # New stream objects: fd 1 and 2 are now pipes. Line buffering keeps what was printed before a
    # timeout kill; UTF-8 whatever the pod's locale.
    # sys.__stdout__ and __stderr__ too (typeshed calls them Final): the snippet's view of the original streams.
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", errors="backslashreplace",  # type: ignore[misc]
                                       buffering=1, closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace",  # type: ignore[misc]
                                       buffering=1, closefd=False)


def detach_output():
    """Release the run's pipes, so the executor sees end-of-output unless a child still holds them."""
    for stream in {sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__}:
        try:
            stream.flush()  # type: ignore[union-attr]  # None too (the snippet's doing): caught below
        except Exception:  # noqa: BLE001 - the snippet may have replaced or broken the stream
            pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        # The snippet holds every descriptor it may have (a session keeps them): closing 1 and 2 releases the
        # pipes just as well, and the next run's attach_output fills them again.
        for fd in (1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        return
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def exit_at_once(exit_code):
    """End a single-use run as `python3 script.py` ends, minus the interpreter's teardown.

    What a snippet can observe of a normal exit still happens: its non-daemon threads are waited
    for, its atexit functions run and its output is flushed. Tearing down every module (a few
    milliseconds, on every run) is skipped: the process is gone right after anyway.
    """
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # what Py_FinalizeEx does first: join the non-daemon threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()  # type: ignore[union-attr]  # None too (the snippet's doing): caught below
        except Exception:  # noqa: BLE001 - the snippet may have replaced or broken the stream
            pass
    os._exit(exit_code)


def run_snippet(source, filename, namespace):
    # Registering the source lets tracebacks show the offending lines (mtime None: never evicted).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as error:
        report_exception(error.with_traceback(None))
        return 1
    try:
        exec(code, namespace)
    except SystemExit as exit_request:
        return exit_code_of(exit_request)
    except BaseException as error:  # noqa: BLE001 - the snippet's own, reported as python3 would
        # Drop this frame so the traceback starts at the snippet, as for a script (a caught exception has one).
        report_exception(error.with_traceback(error.__traceback__.tb_next))  # type: ignore[union-attr]
        return 1
    return 0


def report_exception(error):
    if sys.excepthook is sys.__excepthook__:
        # The built-in hook reads source lines from files only; this one finds them in linecache.
        traceback.print_exception(error)
    else:
        sys.excepthook(type(error), error, error.__traceback__)


def exit_code_of(exit_request):
    """The exit status the interpreter would give for this SystemExit."""
    code = exit_request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
