"""run_python and internal_caller_headers against a tiny fake sandboxd."""
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crusoe_adk.tools import format_run, run_python
from crusoe_core.adapter import MissingTokenError, internal_caller_headers


class FakeSandboxd:
    def __init__(self):
        self.requests: list[tuple[str, dict, dict]] = []
        self.reply = (200, {"sandbox_id": "sandbox-x7k2p", "stdout": "4294967296\n", "stderr": "",
                            "exit_code": 0, "duration_ms": 38})
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append((self.path, dict(self.headers), json.loads(body)))
                status, reply = fake.reply
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def sandboxd(monkeypatch):
    fake = FakeSandboxd()
    for name in ("CODE_INTERPRETER_TIMEOUT_S", "SANDBOX_MAX_TIMEOUT_S", "CODE_INTERPRETER_SESSION",
                 "CODE_INTERPRETER_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SANDBOX_URL", fake.url)
    monkeypatch.setenv("SANDBOX_TOKEN", "tok-123")
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_run_python_posts_the_snippet_and_formats_the_result(sandboxd):
    assert run_python("print(2**32)") == "stdout:\n4294967296\nstderr:\n(empty)\nexit_code: 0"
    [(path, headers, body)] = sandboxd.requests
    assert path == "/v1/execute"
    assert headers["Authorization"] == "Bearer tok-123"
    assert body == {"language": "python", "code": "print(2**32)", "timeout_s": 20}


def test_run_python_shows_timeouts_and_files(sandboxd):
    sandboxd.reply = (200, {"stdout": "", "stderr": "timed out after 20s", "exit_code": -1,
                            "files": [{"path": "out.csv", "content_b64": ""}]})
    assert run_python("while True: pass") == (
        "stdout:\n(empty)\nstderr:\ntimed out after 20s\nexit_code: -1\nfiles: out.csv")


def test_timeout_comes_from_the_environment(sandboxd, monkeypatch):
    monkeypatch.setenv("CODE_INTERPRETER_TIMEOUT_S", "45")
    run_python("1")
    assert sandboxd.requests[0][2]["timeout_s"] == 45


def test_timeout_above_the_server_maximum_is_refused_d5(sandboxd, monkeypatch):
    monkeypatch.setenv("CODE_INTERPRETER_TIMEOUT_S", "90")
    with pytest.raises(ValueError, match=r"CODE_INTERPRETER_TIMEOUT_S is 90 s, above the sandbox's "
                                         r"maximum of 60 s .*set it to 60 or less"):
        run_python("1")
    assert sandboxd.requests == []
    monkeypatch.setenv("SANDBOX_MAX_TIMEOUT_S", "120")
    run_python("1")
    assert sandboxd.requests[0][2]["timeout_s"] == 90


@pytest.mark.parametrize("value", ["0", "121", "ten"])
def test_timeout_outside_the_guide_range_is_refused(sandboxd, monkeypatch, value):
    monkeypatch.setenv("CODE_INTERPRETER_TIMEOUT_S", value)
    with pytest.raises(ValueError, match="from 1 to 120"):
        run_python("1")


def test_401_says_to_redeploy_the_agent(sandboxd):
    sandboxd.reply = (401, {"error": "token expired"})
    message = run_python("1")
    assert message.startswith("sandbox error: HTTP 401: token expired")
    assert "redeploy the agent" in message


def test_server_errors_are_returned_with_their_message(sandboxd):
    sandboxd.reply = (502, {"error": "sandbox pod returned HTTP 400: file path escapes working "
                                     "directory: '../x'"})
    assert run_python("1") == ("sandbox error: HTTP 502: sandbox pod returned HTTP 400: "
                               "file path escapes working directory: '../x'")


def test_unreachable_sandbox(sandboxd, monkeypatch):
    from conftest import free_port
    monkeypatch.setenv("SANDBOX_URL", f"http://127.0.0.1:{free_port()}")
    assert run_python("1").startswith("sandbox error: could not reach the sandbox service")


def test_session_id_is_sent_in_session_mode(sandboxd, monkeypatch):
    monkeypatch.setenv("CODE_INTERPRETER_SESSION", "true")
    with pytest.raises(ValueError, match="CODE_INTERPRETER_SESSION_ID"):
        run_python("1")
    monkeypatch.setenv("CODE_INTERPRETER_SESSION_ID", "conv-7")
    run_python("1")
    assert sandboxd.requests[0][2]["session_id"] == "conv-7"


def test_token_from_env_then_file(monkeypatch, tmp_path):
    monkeypatch.setenv("SANDBOX_TOKEN", "from-env")
    assert internal_caller_headers() == {"Authorization": "Bearer from-env"}
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    monkeypatch.delenv("SANDBOX_TOKEN")
    monkeypatch.setenv("SANDBOX_TOKEN_FILE", str(token_file))
    assert internal_caller_headers() == {"Authorization": "Bearer from-file"}


def test_missing_token_tells_the_operator_to_redeploy(monkeypatch, tmp_path):
    monkeypatch.delenv("SANDBOX_TOKEN", raising=False)
    monkeypatch.setenv("SANDBOX_TOKEN_FILE", str(tmp_path / "absent"))
    with pytest.raises(MissingTokenError, match="redeploy the agent"):
        internal_caller_headers()


def test_the_package_stays_standard_library_and_names_the_adk_extra():
    """crusoe_adk imports no google-adk; its one ADK piece, SandboxdCodeExecutor, says how to get it when it is
    absent (the agent images install the package without it)."""
    probe = ("import sys, crusoe_adk, crusoe_adk.tools\n"
             "assert not [m for m in sys.modules if m.startswith(('google', 'pydantic'))]\n"
             "try:\n"
             "    import google.adk\n"
             "except ImportError:\n"
             "    try:\n"
             "        crusoe_adk.SandboxdCodeExecutor\n"
             "    except ImportError as error:\n"
             "        assert \"pip install 'crusoe-adk[adk]'\" in str(error), error\n"
             "    else:\n"
             "        raise AssertionError('SandboxdCodeExecutor without google-adk')\n")
    toolrunner = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=toolrunner,
                   env={"PYTHONPATH": str(toolrunner), "PATH": "/usr/bin:/bin"})


def test_a_run_becomes_the_text_of_the_shared_cases():
    """The run-text format is held in one table, which sandboxd's MCP tools are tested against too."""
    cases = json.loads((Path(__file__).parent / "run_text_cases.json").read_text())["cases"]
    for case in cases:
        assert format_run(case["reply"]) == case["text"], case
