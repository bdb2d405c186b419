"""The in-pod servers answer only sandboxd (the per-pod secret), and untrusted code of the pod's uid
can neither read that secret nor write into the pod's container log (issue 8, point 8)."""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from conftest import POD_TOKEN_ENV, TOOLRUNNER_DIR, verifier

UNAUTHORIZED = {"error": "unauthorized: this endpoint answers only sandboxd"}
CAN_IMITATE_THE_POD = os.getuid() != 0 or (shutil.which("unshare") and shutil.which("setpriv"))
# The pod's situation: PID 1 of its own PID namespace, uid 65532 without capabilities, like the
# untrusted code it starts. As root (CAP_SYS_PTRACE) no defence could hold, so the tests drop to
# 65532; a non-root test run already is that situation (minus PID 1).
POD_PREFIX = (["unshare", "--pid", "--fork", "--mount-proc",
               "setpriv", "--reuid", "65532", "--regid", "65532", "--clear-groups"]
              if os.getuid() == 0 else [])
POD_PYTHON = "/usr/bin/python3" if os.getuid() == 0 else sys.executable  # readable by uid 65532

WITHOUT_DUMPABLE_DEFENCE = ("import {package}.podguard as guard\n"
                            "guard.make_undumpable = lambda program: None  # the positive control\n"
                            "from {module} import main\n"
                            "main()\n")


def wrong_authorizations(token):
    # The verifier the pod object shows (what any reader of pods sees) opens nothing either.
    return [None, "", "Bearer", "Bearer ", f"Bearer {'x' * len(token)}", f"Bearer {token[:-1]}",
            f"Bearer {token}x", f"Basic {token}", token, f"Bearer {token[:-1]}\u00e9",
            f"Bearer {verifier(token)}"]


def authorization_headers(value):
    return {} if value is None else {"Authorization": value}


@pytest.fixture
def pod_dir():
    """A directory uid 65532 can use (pytest's tmp_path is root's alone when running as root)."""
    path = tempfile.mkdtemp(prefix="sandbox-pod-guard-")
    os.chmod(path, 0o755)
    if os.getuid() == 0:
        os.chown(path, 65532, 65532)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def start_like_in_the_pod(start_server):
    """start_like_in_the_pod(module, env, **start_server_options) -> Server, as PID 1 and uid 65532.

    Its log file belongs to the pod's uid, as a runtime may hand the container its stdio: then only
    the process's dumpable flag stands between untrusted code and /proc/1/fd/1.
    """
    namespace_inits = []

    def start(module, env, **options):
        server = start_server(module, env, command_prefix=POD_PREFIX, python=POD_PYTHON, **options)
        if POD_PREFIX:
            unshare = server.process.pid
            [child] = open(f"/proc/{unshare}/task/{unshare}/children").read().split()
            namespace_inits.append(int(child))
            os.chown(server.log_path, 65532, 65532)
        return server

    yield start
    # setpriv's change of uid clears unshare's --kill-child (PR_SET_PDEATHSIG): end each PID
    # namespace by killing its PID 1, or it would outlive the test.
    for pid in namespace_inits:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_executor_like_in_the_pod(start_like_in_the_pod, workdir, dumpable_defence=True):
    argv = None if dumpable_defence else [
        "-c", WITHOUT_DUMPABLE_DEFENCE.format(package="sandbox_executor", module="sandbox_executor.server")]
    return start_like_in_the_pod("sandbox_executor", {"SANDBOX_WORKDIR": str(workdir)}, argv=argv)


# ---- one guard, two packages ----

def test_the_executors_guard_is_the_tool_runners_file():
    """One source: sandbox_executor/podguard.py is a link to crusoe_adk/podguard.py, which the snippet image's build
    copies as a file (cp -L), so each image still has its package alone."""
    executor = TOOLRUNNER_DIR / "sandbox_executor" / "podguard.py"
    assert executor.is_symlink()
    assert executor.resolve() == (TOOLRUNNER_DIR / "crusoe_adk" / "podguard.py").resolve()


# ---- the per-pod secret ----

def test_executor_runs_code_only_for_the_pod_secret(start_executor):
    server = start_executor()
    for authorization in wrong_authorizations(server.token):
        status, reply, headers = server.request("POST", "/run", {"code": "print('ran')", "timeout_s": 5},
                                                headers=authorization_headers(authorization), auth=False)
        assert (status, reply) == (401, UNAUTHORIZED), authorization
        assert headers["WWW-Authenticate"] == "Bearer"
    # Only the readiness path is open, and it tells nothing.
    assert server.request("GET", "/healthz", auth=False)[:2] == (200, {"status": "ok"})
    assert server.request("GET", "/run", auth=False)[:2] == (401, UNAUTHORIZED)
    assert server.request("GET", "/nope", auth=False)[:2] == (401, UNAUTHORIZED)
    # Refused requests did not spend the pod's single run.
    status, reply = server.post("/run", {"code": "print('ran')", "timeout_s": 5})
    assert (status, reply["stdout"]) == (200, "ran\n")
    assert server.token not in server.log(), "the secret is never logged"


def test_tool_runner_calls_only_for_the_pod_secret(start_server):
    server = start_server("crusoe_adk.toolrunner", {}, cwd=TOOLRUNNER_DIR / "sample_agent",
                          port_variable="TOOLRUNNER_PORT")
    body = {"module": "agent", "function": "add", "args": {"a": 2, "b": 3}}
    for authorization in wrong_authorizations(server.token):
        status, reply, headers = server.request("POST", "/call", body,
                                                headers=authorization_headers(authorization), auth=False)
        assert (status, reply) == (401, UNAUTHORIZED), authorization
        assert headers["WWW-Authenticate"] == "Bearer"
    assert server.request("GET", "/healthz", auth=False)[:2] == (200, {"status": "ok"})
    assert server.request("GET", "/call", auth=False)[:2] == (401, UNAUTHORIZED)
    assert server.post("/call", body) == (200, {"result": 5})
    assert server.post("/call", body)[0] == 409, "still one call per pod"


@pytest.mark.parametrize("module", ["sandbox_executor", "crusoe_adk.toolrunner"])
@pytest.mark.parametrize("token", [None, "", "too-short", "x" * 44])
def test_without_the_secret_the_servers_refuse_to_start(module, token, executor_workdir):
    env = {key: value for key, value in os.environ.items() if key != POD_TOKEN_ENV}
    env.update({"PYTHONPATH": str(TOOLRUNNER_DIR), "SANDBOX_WORKDIR": str(executor_workdir),
                "SANDBOX_PORT": "0", "TOOLRUNNER_PORT": "0"})
    if token is not None:
        env[POD_TOKEN_ENV] = token
    result = subprocess.run([sys.executable, "-m", module], env=env, cwd=TOOLRUNNER_DIR,
                            capture_output=True, text=True, timeout=20)
    assert result.returncode != 0
    assert f"{POD_TOKEN_ENV} is not set" in result.stderr and "Refusing to serve" in result.stderr


SHOW_ENVIRONMENT = """
import json, os, sys
def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError as error:
        return type(error).__name__
print(json.dumps({"environ": dict(os.environ), "self": read("/proc/self/environ"),
                  "parent": read(f"/proc/{os.getppid()}/environ"), "pid1": read("/proc/1/environ"),
                  "ppid": os.getppid()}))
"""


def test_a_snippet_never_sees_the_secret(start_executor):
    server = start_executor()
    status, reply = server.post("/run", {"code": SHOW_ENVIRONMENT, "timeout_s": 10})
    assert status == 200, reply
    seen = json.loads(reply["stdout"])
    assert POD_TOKEN_ENV not in seen["environ"]
    for where in ("self", "parent", "pid1"):
        assert server.token not in seen[where] and POD_TOKEN_ENV not in seen[where], where
    # "parent" is the executor's own start-up environment block: overwritten, not just unset (root,
    # which these tests may run as, can read it; in the pod nobody can, see below).


@pytest.mark.skipif(not CAN_IMITATE_THE_POD, reason="needs unshare(1) and setpriv(1) when run as root")
def test_in_the_pod_a_snippet_cannot_read_pid_1_at_all(start_like_in_the_pod, pod_dir):
    server = start_executor_like_in_the_pod(start_like_in_the_pod, pod_dir)
    status, reply = server.post("/run", {"code": SHOW_ENVIRONMENT, "timeout_s": 10})
    assert status == 200, reply
    seen = json.loads(reply["stdout"])
    assert seen["parent"] == "PermissionError", seen
    if os.getuid() == 0:
        assert seen["ppid"] == 1 and seen["pid1"] == "PermissionError", seen
    assert POD_TOKEN_ENV not in seen["environ"] and server.token not in seen["self"]


def test_a_tool_finds_the_secret_nowhere_in_its_environment(start_server, pod_dir):
    (pod_dir / "guard_tools.py").write_text('''
import ctypes, os, posix, subprocess, sys

def environment():
    def read(path):
        try:
            with open(path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError as error:
            return type(error).__name__
    child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.environ))"],
                           capture_output=True, text=True).stdout
    return {"environ": dict(os.environ), "environb": sorted(k.decode() for k in os.environb),
            "posix": sorted(k.decode() for k in posix.environ), "self": read("/proc/self/environ"),
            "child": child, "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)}
''')
    os.chmod(pod_dir / "guard_tools.py", stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    server = start_server("crusoe_adk.toolrunner", {}, cwd=pod_dir, port_variable="TOOLRUNNER_PORT")
    status, reply = server.post("/call", {"module": "guard_tools", "function": "environment"})
    assert status == 200, reply
    seen = reply["result"]
    assert POD_TOKEN_ENV not in seen["environ"]
    assert POD_TOKEN_ENV not in seen["environb"] and POD_TOKEN_ENV not in seen["posix"]
    assert POD_TOKEN_ENV not in seen["child"], "programs a tool starts do not inherit it"
    assert server.token not in seen["self"] and POD_TOKEN_ENV not in seen["self"], "not even its name"
    assert seen["dumpable"] == 0, "the runner (PID 1 of the tool pod) is non-dumpable"


# ---- forging lines in the container log ----

FORGE = """
import ctypes, json, os, sys
marker = sys.argv[1] if len(sys.argv) > 1 else MARKER
target = os.getppid()
libc = ctypes.CDLL(None, use_errno=True)
attempts = {}
for fd in (1, 2):
    try:
        with open(f"/proc/{target}/fd/{fd}", "a") as log:
            log.write(marker + " via /proc\\n")
        attempts[f"open {fd}"] = "written"
    except OSError as error:
        attempts[f"open {fd}"] = type(error).__name__
    # pidfd_getfd(2) copies the descriptor itself: no file permission applies, only ptrace access.
    try:
        pidfd = os.pidfd_open(target)
        copied = libc.syscall(438, pidfd, fd, 0)
        if copied < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        os.write(copied, (marker + " via pidfd_getfd\\n").encode())
        attempts[f"pidfd_getfd {fd}"] = "written"
    except OSError as error:
        attempts[f"pidfd_getfd {fd}"] = type(error).__name__
print(json.dumps({"ppid": target, "attempts": attempts}))
"""
ALL_REFUSED = {"open 1": "PermissionError", "pidfd_getfd 1": "PermissionError",
               "open 2": "PermissionError", "pidfd_getfd 2": "PermissionError"}
ALL_WRITTEN = {attempt: "written" for attempt in ALL_REFUSED}


def forge_from_snippet(server):
    marker = f"FORGED-{uuid.uuid4()}"
    status, reply = server.post("/run", {"code": f"MARKER = {marker!r}\n" + FORGE, "timeout_s": 10})
    assert status == 200, reply
    return marker, json.loads(reply["stdout"])


@pytest.mark.skipif(not CAN_IMITATE_THE_POD, reason="needs unshare(1) and setpriv(1) when run as root")
def test_a_snippet_cannot_write_into_the_container_log(start_like_in_the_pod, pod_dir):
    server = start_executor_like_in_the_pod(start_like_in_the_pod, pod_dir)
    marker, result = forge_from_snippet(server)
    assert result["attempts"] == ALL_REFUSED, result
    if os.getuid() == 0:
        assert result["ppid"] == 1, "the executor is PID 1, as in the pod"
    assert marker not in server.log()
    assert server.request("GET", "/healthz")[0] == 200, "and the executor lives on"


@pytest.mark.skipif(not CAN_IMITATE_THE_POD, reason="needs unshare(1) and setpriv(1) when run as root")
def test_positive_control_a_dumpable_executor_lets_the_snippet_forge_log_lines(start_like_in_the_pod, pod_dir):
    server = start_executor_like_in_the_pod(start_like_in_the_pod, pod_dir, dumpable_defence=False)
    marker, result = forge_from_snippet(server)
    assert result["attempts"] == ALL_WRITTEN, result
    assert f"{marker} via /proc" in server.log() and f"{marker} via pidfd_getfd" in server.log()


def start_tool_runner_like_in_the_pod(start_like_in_the_pod, pod_dir, dumpable_defence=True):
    (pod_dir / "forging_tools.py").write_text(f'''
import json, subprocess, sys
FORGE = {FORGE!r}

def forge(marker):
    """A program the tool starts, with its own output elsewhere, goes for the runner's log."""
    child = subprocess.run([sys.executable, "-c", FORGE, marker], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return json.loads(child.stdout)
''')
    os.chmod(pod_dir / "forging_tools.py", 0o644)
    argv = None if dumpable_defence else [
        "-c", WITHOUT_DUMPABLE_DEFENCE.format(package="crusoe_adk", module="crusoe_adk.toolrunner")]
    return start_like_in_the_pod("crusoe_adk.toolrunner", {}, cwd=pod_dir, port_variable="TOOLRUNNER_PORT",
                                 argv=argv)


@pytest.mark.skipif(not CAN_IMITATE_THE_POD, reason="needs unshare(1) and setpriv(1) when run as root")
@pytest.mark.parametrize("dumpable_defence", [True, False], ids=["defended", "positive-control"])
def test_programs_a_tool_starts_cannot_write_into_the_runners_log(start_like_in_the_pod, pod_dir, dumpable_defence):
    server = start_tool_runner_like_in_the_pod(start_like_in_the_pod, pod_dir, dumpable_defence)
    marker = f"FORGED-{uuid.uuid4()}"
    status, reply = server.post("/call", {"module": "forging_tools", "function": "forge",
                                          "args": {"marker": marker}})
    assert status == 200, reply
    attempts = reply["result"]["attempts"]
    if dumpable_defence:
        assert attempts == ALL_REFUSED, reply
        assert marker not in server.log()
    else:
        assert attempts == ALL_WRITTEN, reply
        assert f"{marker} via /proc" in server.log() and f"{marker} via pidfd_getfd" in server.log()


# ---- no ICMP socket (D17) ----

ICMP_ATTEMPTS = """
import socket, subprocess, sys, threading
def attempt(family, kind, protocol):
    try:
        socket.socket(family, kind, protocol).close()
        return "opened"
    except OSError as error:
        return error.errno
ICMP = [(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),
        (socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6),
        (socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK, socket.IPPROTO_ICMP),
        (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)]
OTHER = [(socket.AF_INET, socket.SOCK_DGRAM, 0), (socket.AF_INET, socket.SOCK_STREAM, 0),
         (socket.AF_INET6, socket.SOCK_DGRAM, 0), (socket.AF_UNIX, socket.SOCK_STREAM, 0)]
def attempts():
    return {"icmp": [attempt(*a) for a in ICMP], "other": [attempt(*a) for a in OTHER]}
"""


@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("unshare"), reason="needs root for a network namespace")
@pytest.mark.parametrize("defence", [True, False])
def test_after_forbid_icmp_no_icmp_socket_opens_in_the_process_its_threads_or_its_children(defence):
    """As under gVisor, which has no ping_group_range: in a network namespace whose ping_group_range admits
    everybody (and as root, so raw sockets too), every ICMP socket opens until the filter is in place (the positive
    control, and the mutation: without the filter they open after too); then none does, anywhere below the caller."""
    script = ICMP_ATTEMPTS + f"""
import json
sys.path.insert(0, {str(TOOLRUNNER_DIR)!r})
from crusoe_adk import podguard
before = attempts()
if {defence!r}:
    podguard.forbid_icmp("test")
in_thread = []
worker = threading.Thread(target=lambda: in_thread.append(attempts()))
worker.start(); worker.join()
child = subprocess.run([sys.executable, "-c", {ICMP_ATTEMPTS!r} + "import json; print(json.dumps(attempts()))"],
                       capture_output=True, text=True, check=True).stdout
print(json.dumps({{"before": before, "after": attempts(), "thread": in_thread[0], "child": json.loads(child)}}))
"""
    out = subprocess.run(["unshare", "--net", "sh", "-c",
                          "sysctl -qw net.ipv4.ping_group_range='0 2147483647' && exec \"$0\" -c \"$1\"",
                          sys.executable, script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["before"] == {"icmp": ["opened"] * 5, "other": ["opened"] * 4}, "the positive control"
    for where in ("after", "thread", "child"):
        expected = [13] * 5 if defence else ["opened"] * 5  # EACCES, as outside ping_group_range
        assert seen[where] == {"icmp": expected, "other": ["opened"] * 4}, where


def test_the_icmp_filter_is_one_program_per_architecture():
    from crusoe_adk import podguard
    for machine in podguard.SYSCALLS:
        code = podguard.icmp_filter(machine)
        assert len(code) % 8 == 0 and 0 < len(code) // 8 < 32, machine
    with pytest.raises(KeyError):
        podguard.icmp_filter("riscv64")  # an architecture it does not know: forbid_icmp fails closed


@pytest.mark.parametrize("module", ["sandbox_executor", "crusoe_adk.toolrunner"])
def test_both_servers_run_untrusted_code_under_the_icmp_filter(module, start_executor, start_server):
    """The wiring: the code a snippet or a tool runs has the filter (Seccomp: 2 in its status; the test runner
    itself has none), on whatever machine the servers start."""
    status_line = "[l for l in open('/proc/self/status') if l.startswith('Seccomp:')][0].split()[1]"
    with open("/proc/self/status") as status:
        assert "Seccomp:\t0" in status.read(), "the test runner itself is unfiltered"
    if module == "sandbox_executor":
        server = start_executor()
        status, reply = server.post("/run", {"code": f"print({status_line})", "timeout_s": 5})
        assert (status, reply["stdout"]) == (200, "2\n"), reply
    else:
        server = start_server(module, {}, cwd=TOOLRUNNER_DIR / "sample_agent", port_variable="TOOLRUNNER_PORT")
        status, reply = server.post("/call", {"module": "agent", "function": "run_code",
                                              "args": {"code": f"print({status_line})"}})
        assert (status, reply["result"]["stdout"]) == (200, "2\n"), reply
