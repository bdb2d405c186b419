import pytest

from conftest import TOOLRUNNER_DIR


@pytest.fixture
def tool_runner(start_server):
    # The agent image runs the tool runner next to its agent.py, which is therefore importable.
    return start_server("crusoe_adk.toolrunner", {}, cwd=TOOLRUNNER_DIR / "sample_agent",
                        port_variable="TOOLRUNNER_PORT")


def call(server, function, args=None, module="agent"):
    return server.post("/call", {"module": module, "function": function, "args": args or {}})


def test_healthz(tool_runner):
    assert tool_runner.request("GET", "/healthz")[:2] == (200, {"status": "ok"})


@pytest.mark.parametrize("function, args, result", [
    ("add", {"a": 2, "b": 3}, 5),
    ("get_weather", {"city": "Reykjavik"}, {"city": "Reykjavik", "temp_c": 4}),
    ("big", {"n": 1000}, "x" * 1000),
])
def test_result(tool_runner, function, args, result):
    assert call(tool_runner, function, args) == (200, {"result": result})


def test_whoami_lists_environment_names(tool_runner):
    status, reply = call(tool_runner, "whoami")
    assert status == 200
    assert set(reply["result"]) == {"uid", "gid", "service_account_token_present", "env"}
    assert "TOOLRUNNER_PORT" in reply["result"]["env"]


def test_tool_exception_is_a_200_error(tool_runner):
    assert call(tool_runner, "fail", {"message": "boom"}) == (200, {"error": "ValueError: boom"})


def test_wrong_arguments_are_the_tool_failing(tool_runner):
    status, reply = call(tool_runner, "add", {"a": 1})
    assert status == 200 and reply["error"].startswith("TypeError: add() missing 1 required")


def test_result_that_is_not_json(tool_runner):
    assert call(tool_runner, "set", module="builtins") == (
        200, {"error": "result is not JSON-serialisable: set"})


def test_unknown_function(tool_runner):
    assert call(tool_runner, "nope") == (400, {"error": "no function 'nope' in module 'agent'"})


def test_unknown_module(tool_runner):
    assert call(tool_runner, "add", module="no_such_module") == (
        400, {"error": "no module named 'no_such_module'"})


def test_one_call_per_pod(tool_runner):
    assert call(tool_runner, "add", {"a": 1, "b": 1}) == (200, {"result": 2})
    assert call(tool_runner, "add", {"a": 1, "b": 1}) == (
        409, {"error": "this tool sandbox has already run a call"})


def test_bad_bodies_are_refused_without_using_up_the_pod(tool_runner):
    for raw in [b"nope", b"[]", b'{"function": "add"}', b'{"module": "agent"}',
                b'{"module": "agent", "function": "add", "args": []}']:
        status, reply, _headers = tool_runner.request("POST", "/call", raw=raw)
        assert (status, reply) == (400, {"error": "invalid JSON body"}), raw
    assert call(tool_runner, "add", {"a": 1, "b": 2}) == (200, {"result": 3})


def test_http_errors(tool_runner):
    assert tool_runner.request("GET", "/call")[:2] == (405, {"error": "method not allowed"})
    assert tool_runner.request("GET", "/nope")[0] == 404


def test_a_preloaded_module_is_imported_before_the_runner_answers(start_server, tmp_path):
    """Warm tool pods: TOOLRUNNER_PRELOAD imports the agent's module before /healthz answers."""
    (tmp_path / "slow_agent.py").write_text(
        "import pathlib, time\npathlib.Path('imported').write_text(str(time.time()))\n\n"
        "def ping():\n    return 'pong'\n")
    server = start_server("crusoe_adk.toolrunner", {"TOOLRUNNER_PRELOAD": "slow_agent"}, cwd=tmp_path,
                          port_variable="TOOLRUNNER_PORT")
    assert (tmp_path / "imported").exists(), "imported before the runner answered its health check"
    assert call(server, "ping", module="slow_agent") == (200, {"result": "pong"})


def test_a_module_that_fails_to_preload_is_the_calls_error(start_server, tmp_path):
    (tmp_path / "broken_agent.py").write_text("raise RuntimeError('no config')\n")
    server = start_server("crusoe_adk.toolrunner", {"TOOLRUNNER_PRELOAD": "broken_agent"}, cwd=tmp_path,
                          port_variable="TOOLRUNNER_PORT")
    assert "could not preload 'broken_agent'" in server.log()
    status, body = call(server, "anything", module="broken_agent")[:2]
    assert status == 400 and "RuntimeError: no config" in body["error"], body
