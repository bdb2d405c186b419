import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from conftest import TOOLRUNNER_DIR, free_port
from sandbox_probe import CLONE_NEWNS, check_readonly_root, check_unshare, is_gvisor_kernel, runtime_report

PROBE = TOOLRUNNER_DIR / "probe" / "sandbox_probe.py"


def probe(*flags, env=None):
    """(exit code, [result lines]); env: variables to add to the probe's environment."""
    completed = subprocess.run([sys.executable, str(PROBE), *flags], capture_output=True, text=True,
                               timeout=20, env={**os.environ, **(env or {})})
    return completed.returncode, [json.loads(line) for line in completed.stdout.splitlines()]


@pytest.fixture
def listening_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_reachable_tcp_is_an_escape_and_a_passing_control(listening_port):
    target = f"127.0.0.1:{listening_port}"
    code, lines = probe("--tcp-allowed", target)
    assert code == 0 and lines[0]["check"] == f"tcp-allowed {target}" and lines[0]["blocked"] is False
    assert lines[0]["detail"].startswith("connected")
    code, lines = probe("--tcp", target)
    assert code == 1 and lines[0]["blocked"] is False


def test_a_refusal_is_an_answer_not_a_block():
    """A reset proves packets reach the target: the old probe counted it as blocked (fail open)."""
    target = f"127.0.0.1:{free_port()}"
    code, lines = probe("--tcp", target, "--timeout", "1")
    assert code == 1 and lines[0]["blocked"] is False and "ConnectionRefusedError" in lines[0]["detail"]


def test_silence_is_blocked_and_a_failing_control(silent_tcp_target):
    code, lines = probe("--tcp", silent_tcp_target, "--timeout", "0.5")
    assert code == 0 and lines[0]["blocked"] is True, lines
    code, lines = probe("--tcp-allowed", silent_tcp_target, "--timeout", "0.5")
    assert code == 1 and lines[0]["blocked"] is True


def test_closed_and_open_channels(silent_udp_target, listening_port):
    code, lines = probe("--closed", f"udp-dns:{silent_udp_target}", "--open", f"tcp:127.0.0.1:{listening_port}",
                        "--timeout", "0.5")
    assert code == 0, lines
    code, lines = probe("--open", f"udp-dns:127.0.0.1:{free_port()}", "--timeout", "0.5")
    assert code == 1 and "ICMP" in lines[0]["detail"], lines


def test_dns():
    code, lines = probe("--dns-allowed", "localhost", "--dns", "no-such-name.invalid", "--timeout", "2")
    assert code == 0
    assert [(line["check"], line["blocked"]) for line in lines] == [
        ("dns no-such-name.invalid", True), ("dns-allowed localhost", False)]
    code, _lines = probe("--dns", "localhost")
    assert code == 1


@pytest.fixture
def egress_proxy():
    """A stand-in for the egress proxy on a free port: answers a CONNECT to allowed.example:443 with 200 (and then
    closes: nothing goes through), any other with 407, as smokescreen refuses a host or port not on the profile.
    Yields (its URL, the CONNECT lines it got)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    requests = []

    def serve():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                line = request.split(b"\r\n", 1)[0].decode()
                requests.append(line)
                allowed = line == "CONNECT allowed.example:443 HTTP/1.1"
                connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" if allowed
                                   else b"HTTP/1.1 407 Request Rejected by Proxy\r\nContent-Length: 0\r\n\r\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", requests
    listener.close()


def test_proxy_checks_connect_through_https_proxy_and_only_200_is_open(egress_proxy):
    url, requests = egress_proxy
    code, lines = probe("--proxy-open", "allowed.example:443",
                        "--proxy-closed", "sandboxd-probe-not-listed.invalid:443",
                        "--proxy-closed", "allowed.example:8443", env={"HTTPS_PROXY": url})
    assert code == 0, lines
    assert [(line["check"], line["blocked"]) for line in lines] == [
        ("proxy-open allowed.example:443", False), ("proxy-closed sandboxd-probe-not-listed.invalid:443", True),
        ("proxy-closed allowed.example:8443", True)]
    assert "200 Connection established" in lines[0]["detail"] and "407" in lines[1]["detail"], lines
    assert sorted(requests) == sorted(f"CONNECT {t} HTTP/1.1" for t in (
        "allowed.example:443", "sandboxd-probe-not-listed.invalid:443", "allowed.example:8443"))
    # A proxy that opens what must stay closed, or refuses the profile's own host: each fails the probe.
    code, lines = probe("--proxy-closed", "allowed.example:443", env={"HTTPS_PROXY": url})
    assert code == 1 and lines[0]["blocked"] is False, lines
    code, lines = probe("--proxy-open", "other.example:443", env={"https_proxy": url})
    assert code == 1 and lines[0]["blocked"] is True, lines


def test_a_proxy_that_does_not_answer_opens_nothing_and_no_proxy_proves_nothing(silent_tcp_target):
    silent = {"HTTPS_PROXY": f"http://{silent_tcp_target}"}
    code, lines = probe("--proxy-closed", "allowed.example:443", "--timeout", "0.5", env=silent)
    assert code == 0 and lines[0]["blocked"] is True, lines
    code, lines = probe("--proxy-open", "allowed.example:443", "--timeout", "0.5", env=silent)
    assert code == 1 and lines[0]["blocked"] is True, lines
    unset = {name: "" for name in ("HTTPS_PROXY", "https_proxy")}
    for flag in ("--proxy-open", "--proxy-closed"):
        code, lines = probe(flag, "allowed.example:443", env=unset)
        assert code == 1 and "HTTPS_PROXY is not set" in lines[0]["detail"], lines


def test_service_account_token_and_seccomp_reflect_this_host():
    code, lines = probe("--no-sa-token", "--seccomp")
    status = open("/proc/self/status").read()
    confined = "Seccomp:\t2" in status and "NoNewPrivs:\t1" in status
    token_absent = not os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token")
    assert [(line["check"], line["blocked"]) for line in lines] == [
        ("no-sa-token", token_absent), ("seccomp", confined)]
    assert code == (0 if token_absent and confined else 1)


def test_unshare_flag_reports_both_namespaces():
    code, lines = probe("--unshare")
    assert [line["check"] for line in lines] == ["unshare CLONE_NEWUSER", "unshare CLONE_NEWNS"]
    assert code == (0 if all(line["blocked"] for line in lines) else 1)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become an unprivileged uid")
def test_unshare_of_a_mount_namespace_is_refused_to_an_unprivileged_user():
    pid = os.fork()
    if pid == 0:  # the child becomes uid 65532, like a sandbox pod, and reports through its exit code
        try:
            os.setgroups([])
            os.setgid(65532)
            os.setuid(65532)
            os._exit(0 if check_unshare(CLONE_NEWNS) == (True, "unshare failed: EPERM") else 1)
        finally:
            os._exit(2)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_writable_root_is_reported(tmp_path):
    target = tmp_path / "x"
    blocked, detail = check_readonly_root(str(target))
    assert blocked is False and detail.startswith(f"wrote {target}")
    assert not target.exists()


def test_no_check_selected_is_a_usage_error():
    assert probe()[0] == 2


GVISOR_NOW = "Linux version 4.19.0-gvisor #1 SMP Sun Jan 10 15:06:54 PST 2016"
GVISOR_BEFORE = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"
RUNC = ("Linux version 6.1.0-31-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0) "
        "#1 SMP PREEMPT_DYNAMIC Debian 6.1.128-1 (2025-02-07)")


def test_gvisor_kernels_are_told_from_the_node_kernel():
    assert is_gvisor_kernel(GVISOR_NOW) and is_gvisor_kernel(GVISOR_BEFORE)
    assert is_gvisor_kernel("Linux version 4.19.0-GVISOR #1")
    assert not is_gvisor_kernel(RUNC)


def test_the_runtime_line_reports_the_class_and_what_the_kernel_says(tmp_path):
    version = tmp_path / "version"
    version.write_text(GVISOR_NOW + "\n")
    assert runtime_report("gvisor", version_path=str(version)) == {
        "check": "runtime", "runtimeClassName": "gvisor", "kernel": GVISOR_NOW, "gvisor": True,
        "expectKernel": "", "ok": True}
    version.write_text(RUNC + "\n")
    report = runtime_report("", version_path=str(version))
    assert (report["runtimeClassName"], report["gvisor"], report["ok"]) == ("", False, True), report


def test_an_expected_kernel_must_be_in_proc_version(tmp_path):
    version = tmp_path / "version"
    version.write_text(RUNC + "\n")
    assert runtime_report("gvisor", "gvisor", str(version))["ok"] is False, "runc under a gvisor class name"
    version.write_text(GVISOR_NOW + "\n")
    assert runtime_report("gvisor", "gVisor", str(version))["ok"] is True, "case-insensitive"
    missing = runtime_report("gvisor", "gvisor", str(tmp_path / "absent"))
    assert missing["ok"] is False and missing["gvisor"] is False and "could not read" in missing["kernel"], missing
    assert runtime_report("", "", str(tmp_path / "absent"))["ok"] is True, "without an expectation it only reports"


def test_runtime_flags_print_the_runtime_line_first_and_fail_only_on_a_missed_expectation():
    kernel = open("/proc/version").read().strip()
    code, lines = probe("--runtime-class=", "--no-sa-token")  # as the chart passes the cluster default
    assert lines[0] == {"check": "runtime", "runtimeClassName": "", "kernel": kernel,
                        "gvisor": is_gvisor_kernel(kernel), "expectKernel": "", "ok": True}
    assert [line["check"] for line in lines[1:]] == ["no-sa-token"]
    token_absent = not os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token")
    assert code == (0 if token_absent else 1)

    code, lines = probe("--runtime-class", "gvisor")
    assert code == 0 and len(lines) == 1 and "blocked" not in lines[0], "a report, not an escape check"
    code, lines = probe("--runtime-class=gvisor", "--expect-kernel=" + kernel.split()[2])
    assert code == 0 and lines[0]["ok"] is True and lines[0]["expectKernel"] == kernel.split()[2]
    code, lines = probe("--expect-kernel", "no-such-kernel-" + "x" * 8)
    assert code == 1 and lines[0]["ok"] is False and lines[0]["runtimeClassName"] == ""
