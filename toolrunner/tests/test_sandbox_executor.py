import base64
import http.client
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest


def b64(text):
    return base64.b64encode(text.encode()).decode()


def files_by_path(reply):
    return {entry["path"]: base64.b64decode(entry["content_b64"]).decode() for entry in reply["files"]}


def process_alive(pid):
    """True while /proc/<pid> is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            stat = stat_file.read()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(b")") + 2:].split()[0] != b"Z"


def wait_until_gone(pids, within_s=3.0):
    deadline = time.monotonic() + within_s
    while any(process_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if process_alive(pid)]


def test_print_runs_in_a_fresh_working_directory_as_main(start_executor, executor_workdir):
    server = start_executor()
    status, reply = server.post("/run", {
        "code": "import os, sys\nprint(2**32)\nprint(__name__, sys.argv, os.getcwd())",
        "timeout_s": 10})
    assert status == 200
    first, second = reply["stdout"].splitlines()
    assert first == "4294967296"
    name, argv, cwd = second.split(" ", 2)
    assert (name, argv) == ("__main__", "['<snippet>']")
    assert os.path.dirname(os.path.dirname(cwd)) == str(executor_workdir)
    assert os.listdir(cwd) == []
    assert reply["stderr"] == "" and reply["exit_code"] == 0 and reply["files"] == []
    assert isinstance(reply["duration_ms"], int) and reply["duration_ms"] < 2000
    assert reply["stdout_truncated"] is reply["stderr_truncated"] is reply["files_truncated"] is False


def test_exact_contract_example(start_executor):
    status, reply = start_executor().post("/run", {"code": "print(2**32)", "timeout_s": 10})
    assert (status, reply["stdout"], reply["stderr"], reply["exit_code"]) == (200, "4294967296\n", "", 0)


def test_healthz_only_once_an_interpreter_is_waiting(start_executor):
    server = start_executor()
    status, reply, _headers = server.request("GET", "/healthz")
    assert (status, reply) == (200, {"status": "ok"})
    children = open(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read().split()
    commands = [open(f"/proc/{child}/cmdline", "rb").read().split(b"\0") for child in children]
    assert any(b"-I" in command and command[2].endswith(b"zygote.py") for command in commands), commands


def test_input_files_are_written_and_all_files_come_back(start_executor):
    status, reply = start_executor().post("/run", {
        "code": "print(open('data/input.csv').read())\n"
                "os = __import__('os'); os.makedirs('out')\n"
                "open('out/result.txt', 'w').write('done')",
        "timeout_s": 10,
        "files": [{"path": "data/input.csv", "content_b64": b64("name,qty\nwidget,2\n")}]})
    assert status == 200, reply
    assert reply["stdout"] == "name,qty\nwidget,2\n\n"
    assert files_by_path(reply) == {"data/input.csv": "name,qty\nwidget,2\n", "out/result.txt": "done"}
    assert reply["files_truncated"] is False


def test_escaping_paths_are_refused_and_do_not_use_up_the_pod(start_executor):
    server = start_executor()
    for path in ["../etc/passwd", "/etc/passwd", "a/../../x", "a/..", "", "a\0b"]:
        status, reply = server.post("/run", {
            "code": "print('ran')", "timeout_s": 5, "files": [{"path": path, "content_b64": b64("x")}]})
        assert (status, reply) == (400, {"error": f"file path escapes working directory: '{path}'"})
    status, reply = server.post("/run", {"code": "print('ran')", "timeout_s": 5})
    assert (status, reply["stdout"]) == (200, "ran\n")


def test_escape_through_a_symlink_is_refused(start_executor, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    server = start_executor(SANDBOX_SESSION="true")
    status, _reply = server.post("/run", {"code": f"import os; os.symlink({str(outside)!r}, 'link')",
                                          "timeout_s": 5})
    assert status == 200
    status, reply = server.post("/run", {"code": "pass", "timeout_s": 5,
                                         "files": [{"path": "link/x", "content_b64": b64("x")}]})
    assert (status, reply) == (400, {"error": "file path escapes working directory: 'link/x'"})
    assert list(outside.iterdir()) == []


def test_symlinks_and_fifos_are_not_returned(start_executor):
    status, reply = start_executor().post("/run", {
        "code": "import os\nos.symlink('/etc/hostname', 'link')\nos.mkfifo('pipe')\n"
                "open('real.txt', 'w').write('r')",
        "timeout_s": 5})
    assert status == 200, reply
    assert files_by_path(reply) == {"real.txt": "r"}


def test_timeout_kills_the_run(start_executor):
    started = time.monotonic()
    status, reply = start_executor().post("/run", {"code": "print('started')\nwhile True: pass",
                                                   "timeout_s": 1})
    assert status == 200
    assert reply["exit_code"] == -1
    assert reply["stderr"] == "timed out after 1s"
    assert reply["stdout"] == "started\n"
    assert 1000 <= reply["duration_ms"] < 2500
    assert time.monotonic() - started < 4


def test_timeout_kills_children_grandchildren_and_setsid_daemons(start_executor):
    code = """
import os, subprocess, time
print(subprocess.Popen(['sleep', '100']).pid, flush=True)
print(subprocess.Popen(['sleep', '100'], start_new_session=True).pid, flush=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print(os.getpid(), flush=True)
        time.sleep(100)
    os._exit(0)
while True:
    pass
"""
    status, reply = start_executor().post("/run", {"code": code, "timeout_s": 1})
    assert status == 200 and reply["exit_code"] == -1, reply
    pids = [int(line) for line in reply["stdout"].split()]
    assert len(pids) == 3
    assert wait_until_gone(pids) == []


def test_processes_left_running_after_a_normal_exit_are_killed(start_executor):
    code = ("import subprocess\n"
            "print(subprocess.Popen(['sleep', '100'], start_new_session=True).pid)")
    status, reply = start_executor().post("/run", {"code": code, "timeout_s": 10})
    assert status == 200 and reply["exit_code"] == 0, reply
    assert reply["duration_ms"] < 2000
    assert wait_until_gone([int(reply["stdout"])]) == []


def test_output_is_capped_and_marked(start_executor):
    server = start_executor(SANDBOX_MAX_OUTPUT_BYTES="100")
    status, reply = server.post("/run", {
        "code": "import sys\nsys.stdout.write('x' * 1000)\nsys.stderr.write('y' * 50_000_000)",
        "timeout_s": 20})
    assert status == 200, reply
    assert reply["stdout"] == "x" * 100 + "\n[output truncated: 900 bytes omitted]"
    assert reply["stderr"] == "y" * 100 + "\n[output truncated: 49999900 bytes omitted]"
    assert reply["stdout_truncated"] is reply["stderr_truncated"] is True


def test_output_is_decoded_as_utf8_with_replacement(start_executor):
    status, reply = start_executor().post("/run", {
        "code": "import sys\nsys.stdout.buffer.write(b'ok \\xff \\xc3\\xa9')", "timeout_s": 5})
    assert (status, reply["stdout"]) == (200, "ok \ufffd \u00e9")


def test_returned_files_are_capped(start_executor):
    server = start_executor(SANDBOX_MAX_FILES="2", SANDBOX_MAX_FILES_BYTES="10")
    status, reply = server.post("/run", {
        "code": "open('a.txt','w').write('a' * 20)\nopen('b.txt','w').write('b' * 5)\n"
                "open('c.txt','w').write('c' * 5)\nopen('d.txt','w').write('d' * 5)",
        "timeout_s": 5})
    assert status == 200
    assert files_by_path(reply) == {"b.txt": "b" * 5, "c.txt": "c" * 5}
    assert reply["files_truncated"] is True


def test_a_run_cut_off_by_the_pods_deletion_is_not_reported_as_the_snippets_exit(start_executor):
    """SIGTERM (the pod is being deleted) kills the run, which is answered as cut off, not as a 200 with exit 137."""
    server = start_executor()
    answers = []

    def run():
        try:
            answers.append(server.post("/run", {"code": "import time; time.sleep(30)", "timeout_s": 60}))
        except (OSError, http.client.HTTPException) as error:
                answers.append(error)

    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(1.0)  # the run is under way
    server.process.send_signal(signal.SIGTERM)
    caller.join(10)
    assert server.process.wait(5) == 0
    assert answers == [(503, {"error": "the sandbox pod was stopped mid-run"})]


def test_second_run_is_refused(start_executor):
    server = start_executor()
    assert server.post("/run", {"code": "x = 1", "timeout_s": 5})[0] == 200
    assert server.post("/run", {"code": "x = 1", "timeout_s": 5}) == (
        409, {"error": "this sandbox has already run"})


def test_exception_prints_a_traceback_and_exits_1(start_executor):
    status, reply = start_executor().post("/run", {
        "code": "def f():\n    raise ValueError('boom')\nf()", "timeout_s": 5})
    assert status == 200 and reply["exit_code"] == 1
    assert reply["stderr"] == (
        "Traceback (most recent call last):\n"
        '  File "<snippet>", line 3, in <module>\n'
        "    f()\n"
        '  File "<snippet>", line 2, in f\n'
        "    raise ValueError('boom')\n"
        "ValueError: boom\n")


def test_syntax_error_exits_1(start_executor):
    status, reply = start_executor().post("/run", {"code": "print(", "timeout_s": 5})
    assert status == 200 and reply["exit_code"] == 1
    assert reply["stderr"].startswith('  File "<snippet>", line 1') and "SyntaxError" in reply["stderr"]


@pytest.mark.parametrize("code, exit_code, stderr", [
    ("import sys; sys.exit(3)", 3, ""),
    ("raise SystemExit('bye')", 1, "bye\n"),
    ("import os; os._exit(7)", 7, ""),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 137, ""),
])
def test_exit_codes(start_executor, code, exit_code, stderr):
    status, reply = start_executor().post("/run", {"code": code, "timeout_s": 5})
    assert (status, reply["exit_code"], reply["stderr"]) == (200, exit_code, stderr)


def test_a_run_ends_as_a_script_does_threads_joined_atexit_run_output_flushed(start_executor):
    code = ("import atexit, sys, threading, time\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "def late():\n"
            "    time.sleep(0.3)\n"
            "    print('thread finished')\n"
            "threading.Thread(target=late).start()\n"
            "sys.stdout.write('no newline')\n"
            "sys.stderr.write('err without newline')\n"
            "sys.exit(4)\n")
    status, reply = start_executor().post("/run", {"code": code, "timeout_s": 5})
    assert status == 200
    assert (reply["exit_code"], reply["stdout"], reply["stderr"]) == (
        4, "no newlinethread finished\natexit ran\n", "err without newline")


def test_stdin_is_empty(start_executor):
    status, reply = start_executor().post("/run", {"code": "input()", "timeout_s": 5})
    assert status == 200 and reply["stderr"].endswith("EOFError: EOF when reading a line\n")


def test_session_keeps_variables_and_files_and_survives_sys_exit(start_executor):
    server = start_executor(SANDBOX_SESSION="true")
    assert server.post("/run", {"code": "x = 41\nopen('f.txt', 'w').write('kept')", "timeout_s": 5})[0] == 200
    status, reply = server.post("/run", {"code": "import sys\nprint(x + 1)\nsys.exit(3)", "timeout_s": 5})
    assert (status, reply["stdout"], reply["exit_code"]) == (200, "42\n", 3)
    status, reply = server.post("/run", {"code": "print(x, open('f.txt').read())", "timeout_s": 5})
    assert (status, reply["stdout"], reply["stderr"]) == (200, "41 kept\n", "")
    assert files_by_path(reply) == {"f.txt": "kept"}


def test_a_session_runs_processes_die_with_it_and_its_interpreter_lives_on(start_executor):
    """Background processes a session run starts (children, setsid daemons, a shell's `&`) are dead
    when its reply comes, so none outlives the run's deadline; the interpreter keeps its variables."""
    server = start_executor(SANDBOX_SESSION="true")
    code = """
import os, subprocess, time
x = 41
print(os.getpid(), flush=True)
print(subprocess.Popen(['sleep', '1000']).pid, flush=True)
print(subprocess.Popen(['sleep', '1000'], start_new_session=True).pid, flush=True)
print(subprocess.check_output(['sh', '-c', 'sleep 1000 >/dev/null 2>&1 & echo $!']).decode().strip(), flush=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print(os.getpid(), flush=True)
        time.sleep(1000)
    os._exit(0)
time.sleep(0.3)
"""
    status, reply = server.post("/run", {"code": code, "timeout_s": 3})
    assert (status, reply["exit_code"]) == (200, 0), reply
    interpreter, *started = [int(line) for line in reply["stdout"].split()]
    assert len(started) == 4, reply
    assert [pid for pid in started if process_alive(pid)] == [], "still running after the run"
    assert process_alive(interpreter)

    status, reply = server.post("/run", {"code": "import os\nprint(x + 1, os.getpid())", "timeout_s": 5})
    assert (status, reply["stdout"], reply["stderr"]) == (200, f"42 {interpreter}\n", ""), reply


def test_a_process_a_session_thread_starts_between_runs_is_killed(start_executor):
    server = start_executor(SANDBOX_SESSION="true")
    code = """
import subprocess, threading, time
def later():
    time.sleep(0.3)
    open('late.pid', 'w').write(str(subprocess.Popen(['sleep', '1000']).pid))
threading.Thread(target=later, daemon=True).start()
"""
    assert server.post("/run", {"code": code, "timeout_s": 5})[0] == 200
    time.sleep(2.5)  # the thread starts its process after the run; a sweep comes within a second
    status, reply = server.post("/run", {"code": "print(open('late.pid').read())", "timeout_s": 5})
    assert status == 200 and reply["stdout"].strip().isdigit(), reply
    assert not process_alive(int(reply["stdout"])), "a process started between runs was left running"


def test_a_process_hiding_behind_a_zombie_leader_dies_with_its_session_run(start_executor):
    """Issue 22: a process whose thread-group leader exited (it shows as a zombie) while a thread of
    it lives on, in a new session, double-forked, every catchable signal blocked, kept beating into
    the session's next run. The sweep must see through the zombie leader to the live thread."""
    server = start_executor(SANDBOX_SESSION="true")
    code = (Path(__file__).parent / "attacks" / "zombie_leader.py").read_text()
    status, reply = server.post("/run", {"code": code, "timeout_s": 5})
    assert (status, reply["exit_code"]) == (200, 0), reply
    status, reply = server.post("/run", {"code": "import os, time\n"
                                         "a = os.path.getsize('beats'); time.sleep(0.6)\n"
                                         "print(a, os.path.getsize('beats'), open('hidden.pid').read())",
                                         "timeout_s": 5})
    assert status == 200, reply
    before, after, pid = reply["stdout"].split()
    assert int(before) > 0, "the hidden process did beat during its own run: " + reply["stdout"]
    assert before == after, f"process {pid} still beats in the next run: {before} -> {after} beats"


def test_session_timeout_gives_a_fresh_interpreter_and_says_so(start_executor):
    server = start_executor(SANDBOX_SESSION="true")
    server.post("/run", {"code": "x = 1\nimport subprocess\n"
                                 "print(subprocess.Popen(['sleep', '100']).pid)", "timeout_s": 5})
    status, reply = server.post("/run", {"code": "while True: pass", "timeout_s": 1})
    assert (status, reply["exit_code"], reply["stderr"]) == (200, -1, "timed out after 1s")
    status, reply = server.post("/run", {"code": "print('x' in globals())", "timeout_s": 5})
    assert (status, reply["stdout"], reply["exit_code"]) == (200, "False\n", 0)
    assert "fresh interpreter" in reply["stderr"]
    status, reply = server.post("/run", {"code": "print(1)", "timeout_s": 5})
    assert reply["stderr"] == ""


def test_malformed_bodies_are_refused(start_executor):
    server = start_executor()
    for raw in [
        b"not json", b"[]", b'{"timeout_s": 5}', b'{"code": 1, "timeout_s": 5}',
        b'{"code": "x", "timeout_s": "5"}', b'{"code": "x", "timeout_s": true}',
        b'{"code": "x", "timeout_s": 0}', b'{"code": "x"}', b'{"code": "x", "timeout_s": 5, "files": {}}',
        b'{"code": "x", "timeout_s": 5, "files": [{"path": "a"}]}',
        b'{"code": "x", "timeout_s": 5, "files": [{"path": "a", "content_b64": "!!"}]}',
        b'{"code": "\\ud800", "timeout_s": 5}', b"\xff\xfe",
    ]:
        status, reply, _headers = server.request("POST", "/run", raw=raw)
        assert (status, reply) == (400, {"error": "invalid JSON body"}), raw


def test_http_errors(start_executor):
    server = start_executor()
    assert server.request("GET", "/run")[:2] == (405, {"error": "method not allowed"})
    assert server.request("POST", "/healthz")[:2] == (405, {"error": "method not allowed"})
    assert server.request("GET", "/nope")[0] == 404
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.putrequest("POST", "/run")
    connection.putheader("Authorization", f"Bearer {server.token}")
    connection.putheader("Content-Length", str(17 * 1024 * 1024))
    connection.endheaders()
    response = connection.getresponse()
    assert (response.status, response.read()) == (413, b'{"error": "request body too large"}')
    assert server.post("/run", {"code": "print(1)", "timeout_s": 5})[1]["stdout"] == "1\n"


def test_duration_reflects_the_run_not_interpreter_start_up(start_executor):
    status, reply = start_executor().post("/run", {"code": "pass", "timeout_s": 5})
    assert status == 200 and reply["duration_ms"] < 500, reply


def processes_in_pid_namespace_of(pid):
    namespace = os.readlink(f"/proc/{pid}/ns/pid")
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{name}/ns/pid") == namespace and process_alive(int(name)):
                found.append(int(name))
        except OSError:
            pass
    return found


@pytest.mark.skipif(os.getuid() != 0 or not os.path.exists("/usr/bin/unshare"),
                    reason="needs root and unshare(1) to imitate the pod")
def test_as_pid_1_and_uid_65532_like_in_the_pod_everything_else_is_killed(start_server, tmp_path):
    """The pod's situation: the executor is PID 1 of its PID namespace and runs as 65532."""
    workdir = tempfile.mkdtemp(prefix="sandbox-pod-test-")
    os.chown(workdir, 65532, 65532)
    executor_pid = None
    try:
        server = start_server(
            "sandbox_executor", {"SANDBOX_WORKDIR": workdir},
            command_prefix=["unshare", "--pid", "--fork", "--mount-proc",
                            "setpriv", "--reuid", "65532", "--regid", "65532", "--clear-groups"],
            python="/usr/bin/python3")  # readable by uid 65532, unlike a python under /root
        [child] = open(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read().split()
        executor_pid = int(child)
        code = """
import os, subprocess
subprocess.Popen(['sleep', '100'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        subprocess.run(['sleep', '100'])
    os._exit(0)
print(os.getppid(), os.getuid())
while True:
    pass
"""
        status, reply = server.post("/run", {"code": code, "timeout_s": 1})
        assert (status, reply["exit_code"], reply["stdout"]) == (200, -1, "1 65532\n"), reply
        assert processes_in_pid_namespace_of(executor_pid) == [executor_pid]
        assert server.request("GET", "/healthz")[0] == 200
        os.kill(executor_pid, signal.SIGTERM)  # PID 1 ignores SIGTERM unless it handles it
        assert server.process.wait(5) == 0
    finally:
        if executor_pid and process_alive(executor_pid):
            os.kill(executor_pid, signal.SIGKILL)  # killing a namespace's PID 1 ends all of it
        shutil.rmtree(workdir)


def test_matplotlib_gets_its_backend_caps_and_a_seeded_config_dir_only_where_the_image_has_it(tmp_path):
    from sandbox_executor.server import Settings, figure_environment

    settings = Settings(port=0, workdir=str(tmp_path), max_output_bytes=1, max_files_bytes=4096, max_files=7,
                        session=False)
    assert figure_environment(str(tmp_path / "tmp"), settings, font_list=str(tmp_path / "absent")) == {}

    font_list = tmp_path / "font-list"
    font_list.mkdir()
    (font_list / "fontlist-v390.json").write_text("{}")
    (tmp_path / "tmp").mkdir()
    env = figure_environment(str(tmp_path / "tmp"), settings, font_list=str(font_list))
    assert env == {"MPLBACKEND": "module://sandboxd_figures", "MPLCONFIGDIR": str(tmp_path / "tmp" / "matplotlib"),
                   "SANDBOX_MAX_FILES_BYTES": "4096", "SANDBOX_MAX_FILES": "7"}
    assert (tmp_path / "tmp" / "matplotlib" / "fontlist-v390.json").read_text() == "{}"
