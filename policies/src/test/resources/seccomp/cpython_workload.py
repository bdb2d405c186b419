"""What a sandbox does, plus what it must not: prints one JSON object of check -> result.

A result is "ok", or "EPERM"/"ENOSYS"/... for a refused call, or "error: ..." for a failure.
"""
import ctypes
import errno
import http.server
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

results = {}


def check(name, fn):
    try:
        fn()
        results[name] = "ok"
    except OSError as e:
        results[name] = errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:  # noqa: BLE001 - any other failure is a finding
        results[name] = "error: " + repr(e)


libc = ctypes.CDLL(None, use_errno=True)


def raw(fn, *args):
    def call():
        if fn(*args) == -1:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    return call


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"status":"ok"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/healthz" % server.server_address[1]
    assert urllib.request.urlopen(url, timeout=5).read() == b'{"status":"ok"}'
    server.shutdown()


def subprocess_run():
    out = subprocess.run([sys.executable, "-c", "print('child')"], capture_output=True, text=True, timeout=20)
    assert out.stdout.strip() == "child", out


def kill_process_group():
    code = "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7


def epoll():
    ep = select.epoll()
    r, w = os.pipe()
    ep.register(r, select.EPOLLIN)
    os.write(w, b"x")
    assert ep.poll(1)


def thread():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()


def temp_file():
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"data")
        f.flush()
        assert os.path.getsize(f.name) == 4


check("http_server", http_server)
check("subprocess", subprocess_run)
check("kill_process_group", kill_process_group)
check("fork", fork)
check("thread", thread)
check("epoll", epoll)
check("socketpair", lambda: socket.socketpair())
check("socket_inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close())
check("getaddrinfo", lambda: socket.getaddrinfo("localhost", 80))
check("temp_file", temp_file)
check("unshare_user", raw(libc.unshare, 0x10000000))
check("unshare_mount", raw(libc.unshare, 0x00020000))
check("unshare_net", raw(libc.unshare, 0x40000000))
mount_point = tempfile.mkdtemp()
check("mount", raw(libc.mount, b"none", mount_point.encode(), b"tmpfs", 0, None))
os.rmdir(mount_point)
check("ptrace", raw(libc.ptrace, 16, os.getppid(), None, None))  # PTRACE_ATTACH
check("keyctl", raw(libc.syscall, 250, 0))  # x86_64 keyctl
check("bpf", raw(libc.syscall, 321, 0, None, 0))  # x86_64 bpf
check("userfaultfd", raw(libc.syscall, 323, 0))  # x86_64 userfaultfd
check("clone_newuser", raw(libc.syscall, 56, 0x10000000 | signal.SIGCHLD, None, None, None, None))
check("socket_packet", lambda: socket.socket(17, socket.SOCK_RAW))  # AF_PACKET
check("socket_alg", lambda: socket.socket(38, socket.SOCK_SEQPACKET))  # AF_ALG
print(json.dumps(results))
