"""The isolation gate fails closed: it opens only after a round in which nothing answered at all."""
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import free_port

GATE = Path(__file__).resolve().parents[1] / "probe" / "isolation_gate.py"


def gate(*args, timeout=30):
    return subprocess.run([sys.executable, str(GATE), "--no-api-server", "--timeout", "0.3", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_opens_once_every_channel_is_silent(silent_tcp_target, silent_udp_target):
    started = time.monotonic()
    result = gate("--blocked", silent_tcp_target, "--closed", f"udp-dns:{silent_udp_target}",
                  "--closed", f"tcp-dns:{silent_tcp_target}", "--within", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "closed after" in result.stdout and "1 round(s) of 3 attempts" in result.stdout
    # One round costs one timeout, not one per channel.
    assert time.monotonic() - started < 3


def test_a_refusal_keeps_it_shut():
    """The old gate took 'connection refused' for a policy in force; it proves packets flow."""
    result = gate("--blocked", f"127.0.0.1:{free_port()}", "--within", "1")
    assert result.returncode == 1
    assert "still open" in result.stdout and "reset by the target" in result.stdout


def test_a_dns_reply_keeps_it_shut():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))

        def reply_forever():
            while True:
                data, sender = server.recvfrom(512)
                server.sendto(data[:2] + b"\x81\x80" + data[4:], sender)
        threading.Thread(target=reply_forever, daemon=True).start()
        result = gate("--closed", f"udp-dns:127.0.0.1:{server.getsockname()[1]}", "--within", "1")
    assert result.returncode == 1 and "reply from 127.0.0.1" in result.stdout


def test_stays_shut_while_the_target_answers():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]

        def accept_forever():  # a server that answers every connection, as the API server would
            while True:
                listener.accept()[0].close()
        threading.Thread(target=accept_forever, daemon=True).start()
        result = gate("--blocked", f"127.0.0.1:{port}", "--within", "1")
    assert result.returncode == 1
    assert "connected" in result.stdout


def test_waits_for_dns_too(silent_tcp_target):
    result = gate("--blocked", silent_tcp_target, "--dns", "no-such-name.invalid", "--within", "1")
    assert result.returncode == 1 and "does not resolve" in result.stdout


def test_best_effort_proceeds_after_the_wait():
    result = gate("--blocked", f"127.0.0.1:{free_port()}", "--within", "1", "--best-effort")
    assert result.returncode == 0
    assert "still open" in result.stdout


def test_a_round_ends_at_its_first_answer(silent_tcp_target):
    """A round with an answer has failed: it does not wait out the silent attempts' timeout."""
    sys.path.insert(0, str(GATE.parent))
    import isolation_gate
    started = time.monotonic()
    closed, answered, _ = isolation_gate.one_round([f"tcp:{silent_tcp_target}", f"tcp:127.0.0.1:{free_port()}"],
                                                   None, 3.0)
    assert not closed and len(answered) == 1 and answered[0].target.startswith("127.0.0.1:")
    assert time.monotonic() - started < 1.5
    started = time.monotonic()
    closed, answered, _ = isolation_gate.one_round([f"tcp:{silent_tcp_target}"], None, 0.5)
    assert closed and not answered and time.monotonic() - started >= 0.5, "silence is waited out in full"


def test_runs_the_command_after_dashes_once_closed(silent_tcp_target):
    """A snippet pod's one container: the gate, then the executor in the same process (execvp)."""
    result = gate("--blocked", silent_tcp_target, "--within", "5", "--",
                  sys.executable, "-c", "import sys; print('after the gate', sys.argv[1:])", "x", "--y")
    assert result.returncode == 0, result.stdout + result.stderr
    gate_line, command_line = result.stdout.splitlines()
    assert gate_line.startswith("isolation gate: closed after")
    assert command_line == "after the gate ['x', '--y']"


def test_never_runs_the_command_while_open():
    result = gate("--blocked", f"127.0.0.1:{free_port()}", "--within", "1", "--",
                  sys.executable, "-c", "print('ran')")
    assert result.returncode == 1
    assert "ran" not in result.stdout


def test_best_effort_runs_the_command_after_the_wait():
    """The helm-test probe's snippet pod: the probe must run and report the escapes itself."""
    result = gate("--blocked", f"127.0.0.1:{free_port()}", "--within", "1", "--best-effort", "--",
                  sys.executable, "-c", "print('probe ran')")
    assert result.returncode == 0
    assert "still open" in result.stdout and result.stdout.splitlines()[-1] == "probe ran"
