"""The isolation gate opens only once its blocked target is unreachable."""
import socket
import subprocess
import sys
import time
from pathlib import Path

GATE = Path(__file__).resolve().parents[1] / "probe" / "isolation_gate.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_opens_at_once_when_the_target_is_unreachable():
    started = time.monotonic()
    result = subprocess.run([sys.executable, str(GATE), "--blocked", f"127.0.0.1:{free_port()}", "--within", "5"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "in force" in result.stdout
    assert time.monotonic() - started < 5


def test_stays_shut_while_the_target_answers():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        result = subprocess.run([sys.executable, str(GATE), "--blocked", f"127.0.0.1:{port}", "--within", "1"],
                                capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "still reachable" in result.stdout


def test_waits_for_dns_too():
    result = subprocess.run([sys.executable, str(GATE), "--blocked", f"127.0.0.1:{free_port()}",
                             "--dns", "no-such-name.invalid", "--within", "1"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1


def test_best_effort_proceeds_after_the_wait():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        result = subprocess.run([sys.executable, str(GATE), "--blocked", f"127.0.0.1:{port}", "--within", "1",
                                 "--best-effort"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "still reachable" in result.stdout
