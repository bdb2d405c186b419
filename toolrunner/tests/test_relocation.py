"""D7: tools relocated into sandboxes (crusoe_adk.relocation, tool_call, serve), against a fake sandboxd
that runs each call in a fresh crusoe_adk.toolrunner process. ADK itself: ../tests_adk."""
import asyncio
import builtins
import inspect
import json
import logging
import os
import subprocess
import sys
import time
import typing
import urllib.request

import pytest

import disguised_tools as disguised
import relocation_samples as samples
from conftest import TOOLRUNNER_DIR
from crusoe_adk import errors, relocation, tool_call
from crusoe_adk import serve as entry_point
from crusoe_adk.tools import run_python
from crusoe_core.adapter import MalformedTokenError, agent_image, token_claims
from fake_sandboxd import IMAGE, FakeSandboxd, free_port, make_token

sys.path.insert(0, str(TOOLRUNNER_DIR / "sample_agent"))
import agent  # the sample agent's tools, importable as `agent` like in its image

AGENT_SECRET = "the-agent-s-own-credential"


@pytest.fixture
def sandboxd(monkeypatch):
    fake = FakeSandboxd()
    for name in ("TOOL_SANDBOX", "TOOL_SANDBOX_TIMEOUT_S", "SANDBOX_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SANDBOX_URL", fake.url)
    monkeypatch.setenv("SANDBOX_TOKEN", make_token({"project": "p1", "agent": "a1", "image": IMAGE}))
    monkeypatch.setenv("AGENT_SECRET", AGENT_SECRET)
    yield fake
    fake.close()


# ---- the token and the switch ----

def test_the_image_comes_from_the_token_s_image_claim(monkeypatch):
    monkeypatch.setenv("SANDBOX_TOKEN", make_token({"image": IMAGE, "project": "p1"}))
    assert agent_image() == IMAGE
    monkeypatch.setenv("SANDBOX_TOKEN", make_token({"project": "p1"}))
    with pytest.raises(MalformedTokenError, match="no `image` claim.*redeploy the agent"):
        agent_image()
    with pytest.raises(MalformedTokenError, match="not a JWT"):
        token_claims("opaque-token")


@pytest.mark.parametrize("value, enabled", [(None, True), ("", True), ("true", True), ("TRUE", True),
                                            ("false", False), (" False ", False)])
def test_tool_sandbox_defaults_to_true(value, enabled):
    environ = {} if value is None else {"TOOL_SANDBOX": value}
    assert relocation.tool_sandbox_enabled(environ) is enabled


@pytest.mark.parametrize("value", ["0", "no", "off", "flase"])
def test_any_other_tool_sandbox_value_refuses_to_start(value):
    with pytest.raises(ValueError, match=f"TOOL_SANDBOX must be true or false, got '{value}'"):
        relocation.tool_sandbox_enabled({"TOOL_SANDBOX": value})


# ---- the rule (D7): what can be relocated ----

@pytest.mark.parametrize("tool", [
    samples.unannotated, samples.scalars, samples.containers, samples.optionals, samples.literals,
    samples.typed_dict, samples.anything, samples.with_context, samples.asynchronous, samples.decorated,
])
def test_accepted(tool):
    assert relocation.check_tool(tool) == []


@pytest.mark.parametrize("tool, reason", [
    (samples.lambda_tool, "a lambda has no name the sandbox can import it by"),
    (samples.closure_tool, "a nested function or closure (make_closure.<locals>.closure)"),
    (samples.bound_method, "a bound method"),
    (samples.Greeter.static, "defined inside a class (Greeter.static)"),
    (samples.partial_tool, "a functools.partial"),
    (builtins.len, "a built-in or C function"),
    (samples.callable_object, "a callable object (CallableObject)"),
    (samples.first_original, "relocation_samples.original_name is not this function"),
    (samples.generator, "a generator streams its results"),
    (samples.async_generator, "a generator streams its results"),
    (samples.needs_context, "parameter 'tool_context' is ADK's tool context, which lives in the agent and is "
                            "never sent to the sandbox; the tool must run without it there: give it a default"),
    (samples.live, "parameter 'input_stream' is ADK's live input stream"),
    (samples.positional_only, "parameter 'a' is positional-only; arguments travel by name"),
    (samples.star_args, "*values cannot be passed by name"),
    (samples.a_tuple, "parameter 'pair' (tuple[int, int]) does not travel as JSON: tuple[int, int] is not a JSON type"),
    (samples.a_set, "set[str] is not a JSON type"),
    (samples.some_bytes, "parameter 'data' (bytes) does not travel as JSON: bytes is not a JSON type"),
    (samples.a_date, "parameter 'day' (datetime.date) does not travel as JSON: date is not a JSON type"),
    (samples.an_enum, "Colour is an Enum"),
    (samples.a_dataclass, "Point is not a JSON type"),
    (samples.int_keys, "JSON object keys are strings, not int"),
    (samples.bad_typed_dict, "BadKeys.when: date is not a JSON type"),
    (samples.returns_tuple, "its result (tuple[int, int]) does not travel as JSON"),
    (samples.unresolvable, "the annotation of 'value' cannot be resolved (NameError"),
])
def test_refused(tool, reason):
    reasons = relocation.check_tool(tool)
    assert any(reason in text for text in reasons), reasons


def test_a_function_defined_in_main_is_refused():
    def tool(a: int) -> int:
        return a
    tool.__module__, tool.__qualname__ = "__main__", "tool"
    assert "defined in __main__" in relocation.check_tool(tool)[0]


def test_every_refusal_names_the_tool_and_the_reason(sandboxd):
    with pytest.raises(errors.ToolRefused) as refused:
        relocation.prepare([agent.get_weather, samples.bound_method, samples.a_tuple, samples.lambda_tool])
    message = str(refused.value)
    assert message.startswith("refusing to start: TOOL_SANDBOX=true runs every tool in a sandbox")
    assert [name for name, _reason in refused.value.problems] == ["Greeter.greet", "a_tuple", "<lambda>"]
    assert "  - Greeter.greet: a bound method" in message
    assert "  - a_tuple: parameter 'pair' (tuple[int, int]) does not travel as JSON" in message
    assert "set TOOL_SANDBOX=false to run tools in-process and accept the risk knowingly" in message


def test_start_up_is_refused_when_no_call_could_be_made(sandboxd, monkeypatch):
    monkeypatch.delenv("SANDBOX_TOKEN")
    monkeypatch.setenv("SANDBOX_TOKEN_FILE", "/nonexistent/token")
    with pytest.raises(errors.ToolRefused, match="every tool: no internal sandbox token"):
        relocation.prepare([agent.add])
    monkeypatch.setenv("SANDBOX_TOKEN", make_token({"project": "p1"}))
    with pytest.raises(errors.ToolRefused, match="every tool: the internal sandbox token has no `image` claim"):
        relocation.prepare([agent.add])
    monkeypatch.setenv("SANDBOX_TOKEN", make_token({"image": IMAGE}))
    monkeypatch.setenv("TOOL_SANDBOX_TIMEOUT_S", "300")
    with pytest.raises(errors.ToolRefused, match="TOOL_SANDBOX_TIMEOUT_S must be .* from 1 to 120"):
        relocation.prepare([agent.add])
    assert relocation.prepare([run_python]) == [run_python], "run_python alone needs no /v1/call"


# ---- the proxy looks exactly like the tool ----

@pytest.mark.parametrize("tool", [agent.get_weather, agent.add, agent.convert_temperature, samples.typed_dict,
                                  samples.with_context, samples.decorated, samples.containers])
def test_the_proxy_keeps_name_signature_annotations_docstring_and_async(tool):
    proxy = relocation.relocate(tool)
    assert proxy is not tool
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__", "__annotations__"):
        assert getattr(proxy, attribute) == getattr(tool, attribute), attribute
    assert inspect.signature(proxy) == inspect.signature(tool)
    # String annotations (`from __future__ import annotations`) resolve in the tool's own module, or fail
    # alike (a TYPE_CHECKING-only import).
    try:
        hints = typing.get_type_hints(tool, include_extras=True)
    except NameError as error:
        with pytest.raises(NameError, match=str(error)):
            typing.get_type_hints(proxy, include_extras=True)
    else:
        assert typing.get_type_hints(proxy, include_extras=True) == hints
    assert inspect.iscoroutinefunction(proxy) == inspect.iscoroutinefunction(tool)
    assert not hasattr(proxy, "__wrapped__"), "nothing unwrapping the proxy may find the in-process tool"
    assert relocation.proxy_target(proxy) == f"{tool.__module__}:{tool.__name__}"
    assert relocation.relocate(proxy) is proxy, "relocating twice changes nothing"


def test_run_python_is_not_relocated(sandboxd):
    tools = relocation.prepare([run_python, agent.add])
    assert tools[0] is run_python and tools[1] is not agent.add
    assert relocation.needs_relocation(run_python) is False


# ---- calls through /v1/call ----

def test_a_relocated_tool_runs_through_v1_call_in_the_agent_s_image(sandboxd):
    add = relocation.relocate(agent.add)
    assert add(2, b=3) == 5
    [(headers, body)] = sandboxd.calls
    assert body == {"image": IMAGE, "module": "agent", "function": "add", "args": {"a": 2, "b": 3},
                    "timeout_s": 30}, "arguments bound by name"
    assert headers["Authorization"] == "Bearer " + os.environ["SANDBOX_TOKEN"]
    record = tool_call.last_call.get()
    assert record is not None and record["sandbox_id"] == "tool-fake1"


def test_results_come_back_as_the_return_value(sandboxd):
    assert relocation.relocate(agent.get_weather)("Reykjavik") == {"city": "Reykjavik", "temp_c": 4}
    assert relocation.relocate(agent.remember)("x")["note"] == "x"


def test_the_tool_runs_elsewhere_without_the_agent_s_credentials(sandboxd):
    relocated = relocation.relocate(agent.inspect_environment)()
    assert relocated["secret"] is None, "the agent's environment did not travel"
    assert agent.inspect_environment()["secret"] == AGENT_SECRET, "control: in-process it is there"


def test_a_tool_s_error_is_raised_with_the_tool_s_text(sandboxd):
    with pytest.raises(errors.ToolError) as raised:
        relocation.relocate(agent.fail)("boom")
    assert str(raised.value) == "ValueError: boom"
    assert (raised.value.tool, raised.value.sandbox_id) == ("fail", "tool-fake1")


def test_an_async_tool_stays_async_and_keeps_the_event_loop_free(sandboxd):
    convert = relocation.relocate(agent.convert_temperature)
    assert inspect.iscoroutinefunction(convert)

    async def both():
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
        ticker = asyncio.ensure_future(tick())
        result = await convert(100, unit="K")
        ticker.cancel()
        return result, ticks, tool_call.last_call.get()
    result, ticks, record = asyncio.run(both())
    assert result == {"value": 373.15, "unit": "K"}
    assert ticks > 0, "the loop ran while the sandbox worked"
    assert record["sandbox_id"] == "tool-fake1"


def test_adk_s_tool_context_is_never_sent(sandboxd):
    remember = relocation.relocate(agent.remember)
    assert remember("milk", tool_context=object()) == {"note": "milk", "had_context": False}
    assert sandboxd.calls[0][1]["args"] == {"note": "milk"}


def test_kwargs_travel_by_name(sandboxd):
    sandboxd.scripted.append((200, {"sandbox_id": "tool-x", "result": 1}, {}))
    relocation.relocate(samples.anything)(value=[1], retries=3)
    assert sandboxd.calls[0][1]["args"] == {"value": [1], "retries": 3}


def test_arguments_that_are_not_json_are_refused_before_any_call(sandboxd):
    with pytest.raises(TypeError, match="tool 'add': argument 'a' does not travel as JSON .*set is not JSON"):
        relocation.relocate(agent.add)({1}, 2)
    with pytest.raises(TypeError, match="missing a required argument: 'b'"):
        relocation.relocate(agent.add)(1)  # type: ignore[call-arg]  # the wrong call is the test
    assert sandboxd.calls == []


@pytest.mark.parametrize("status, error, exception, hint", [
    (401, "the agent's token has expired: redeploy the agent so the control plane mints it a current token",
     errors.SandboxAuthError, "redeploy the agent"),
    (403, 'this project\'s token allows tool calls only in its own agent image "a", not "b"',
     errors.ToolImageRefused, "by digest"),
    (413, "request body too large: the limit is 1048576 bytes", errors.ToolArgumentsTooLarge, "reference"),
    (503, "the tool sandbox did not start: the tool sandbox exited before it was ready (phase Failed); "
          "the agent image must contain crusoe_adk.toolrunner", errors.ToolSandboxUnavailable, None),
    (503, "timed out waiting for the tool sandbox to become ready", errors.ToolSandboxUnavailable, None),
    (502, "tool execution failed: no function 'add' in module 'agent'", errors.ToolExecutionFailed, None),
    (502, "invalid response from the tool sandbox", errors.ToolExecutionFailed, None),
    (400, "timeout_s must be between 1 and 120", errors.ToolSandboxError, None),
])
def test_sandboxd_s_refusals_are_distinct_exceptions_with_the_contract_message(sandboxd, status, error,
                                                                               exception, hint):
    sandboxd.fail_next(status, error)
    with pytest.raises(exception) as raised:
        relocation.relocate(agent.add)(1, 2)
    assert type(raised.value) is exception
    assert (raised.value.status, raised.value.detail, raised.value.tool) == (status, error, "add")
    assert "tool 'add': " in str(raised.value) and f"(HTTP {status}: {error})" in str(raised.value)
    if hint:
        assert hint in str(raised.value)
    assert not isinstance(raised.value, errors.ToolError), "never mistaken for the tool's own error"


def test_429_is_retried_after_retry_after(sandboxd, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(tool_call, "wait", waits.append)
    sandboxd.fail_next(429, "per-project limit reached: 4 concurrent tool calls", {"Retry-After": "2"})
    assert relocation.relocate(agent.add)(1, 2) == 3
    assert waits == [2.0]
    assert len(sandboxd.calls) == 2


def test_429_beyond_a_short_wait_raises_with_retry_after(sandboxd):
    sandboxd.fail_next(429, "per-project limit reached: 100 tool calls per minute", {"Retry-After": "3600"})
    with pytest.raises(errors.ToolCallRateLimited) as raised:
        relocation.relocate(agent.add)(1, 2)
    assert raised.value.retry_after == 3600
    assert "retry after 3600 s" in str(raised.value)
    assert "per-project limit reached: 100 tool calls per minute" in str(raised.value)
    for _ in range(3):
        sandboxd.fail_next(429, "per-project limit reached", {"Retry-After": "0"})
    with pytest.raises(errors.ToolCallRateLimited):
        relocation.relocate(agent.add)(1, 2)
    assert len(sandboxd.calls) == 1 + 3, "at most three attempts"


def test_retry_after_as_an_http_date():
    future = time.time() + 10
    header = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(future))
    wait_s = tool_call.parse_retry_after(header)
    assert wait_s is not None and 8 <= wait_s <= 10
    assert tool_call.parse_retry_after("soon") is None


def test_sandboxd_unreachable(sandboxd, monkeypatch):
    monkeypatch.setenv("SANDBOX_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(errors.SandboxUnreachable, match="tool 'add': sandboxd could not be reached"):
        relocation.relocate(agent.add)(1, 2)


def test_an_unusable_reply(sandboxd):
    sandboxd.scripted.append((200, ["not", "an", "object"], {}))
    with pytest.raises(errors.InvalidSandboxReply):
        relocation.relocate(agent.add)(1, 2)


# ---- prepare(): what the entry point does ----

def test_with_tool_sandbox_false_tools_run_in_process_with_a_warning_every_start(sandboxd, monkeypatch, caplog):
    monkeypatch.setenv("TOOL_SANDBOX", "false")
    caplog.set_level(logging.WARNING, logger="crusoe_adk")
    tools = [run_python, agent.add, samples.bound_method]
    for _start in range(2):
        assert relocation.prepare(tools) is tools
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert warnings[0].startswith("TOOL_SANDBOX=false: the agent's 2 tool(s) (add, Greeter.greet) run in-process, "
                                  "NOT sandboxed")
    assert agent.inspect_environment()["secret"] == AGENT_SECRET


class DuckAgent:
    """The shape of an ADK agent, for the walk without ADK (ADK itself: tests_adk)."""

    def __init__(self, tools, sub_agents=()):
        self.tools, self.sub_agents = list(tools), list(sub_agents)


def test_an_agent_tree_is_relocated_in_place(sandboxd):
    helper = DuckAgent([agent.get_weather])
    root = DuckAgent([run_python, agent.add], [helper])
    assert relocation.prepare(root) is root
    assert root.tools[0] is run_python
    assert relocation.proxy_target(root.tools[1]) == "agent:add"
    assert relocation.proxy_target(helper.tools[0]) == "agent:get_weather"
    assert helper.tools[0]("Oslo") == {"city": "Oslo", "temp_c": 4}


def test_an_agent_is_relocated_whole_or_not_at_all(sandboxd):
    helper = DuckAgent([samples.closure_tool])
    root = DuckAgent([agent.add], [helper])
    with pytest.raises(errors.ToolRefused, match="closure"):
        relocation.prepare(root)
    assert root.tools == [agent.add], "nothing was half-relocated"


# ---- marks do not decide (issue 43, finding 5): what a tool is does ----

TESTS_DIR = TOOLRUNNER_DIR / "tests"


@pytest.fixture
def disguised_sandboxd(sandboxd, monkeypatch):
    """A fake sandboxd whose pods can import disguised_tools, so a relocated call really runs there."""
    fake = FakeSandboxd(pod_env={"PYTHONPATH": f"{TOOLRUNNER_DIR}:{TESTS_DIR}"})
    monkeypatch.setenv("SANDBOX_URL", fake.url)
    yield fake
    fake.close()


def test_a_function_its_author_marked_as_relocated_is_relocated_all_the_same(disguised_sandboxd):
    assert disguised.marked()["secret"] == AGENT_SECRET, "control: in-process it reads the credential"
    [tool] = relocation.prepare([disguised.marked])
    assert tool is not disguised.marked and relocation.proxy_target(tool) == "disguised_tools:marked"
    assert tool()["secret"] is None, "it ran in the sandbox, without the agent's credential"
    assert [body["function"] for _headers, body in disguised_sandboxd.calls] == ["marked"]
    root = DuckAgent([disguised.marked])
    relocation.prepare(root)
    assert relocation.proxy_target(root.tools[0]) == "disguised_tools:marked"


def test_a_marked_function_that_cannot_be_relocated_stops_start_up(sandboxd):
    with pytest.raises(errors.ToolRefused, match="closure: a nested function or closure"):
        relocation.prepare([agent.add, disguised.marked_closure])
    with pytest.raises(errors.ToolRefused, match="closure: a nested function or closure"):
        relocation.prepare(DuckAgent([agent.add, disguised.marked_closure]))


@pytest.mark.parametrize("tool, reason", [
    (disguised.disguised_object, "BaseTool: a callable object (BaseTool)"),
    (disguised.disguised_function_tool, "FunctionTool: not callable (FunctionTool)"),
])
def test_a_class_claiming_an_adk_module_is_not_an_adk_tool(sandboxd, tool, reason):
    """A class that says its __module__ is google.adk.… is the author's: here (no ADK loaded) it is no
    ADK tool at all, so it is a callable object (or not callable), which cannot be relocated."""
    assert type(tool).__module__.startswith("google.adk.")
    root = DuckAgent([agent.add, tool])
    with pytest.raises(errors.ToolRefused) as refused:
        relocation.prepare(root)
    assert reason in str(refused.value)
    assert root.tools == [agent.add, tool], "nothing was half-relocated"
    assert not relocation.is_adk_tool(tool) and not relocation.is_adk_function_tool(tool)
    with pytest.raises(errors.ToolRefused) as refused:
        relocation.prepare([agent.add, tool])
    assert reason in str(refused.value)


def test_with_tool_sandbox_false_the_warning_names_a_marked_tool(sandboxd, monkeypatch, caplog):
    monkeypatch.setenv("TOOL_SANDBOX", "false")
    caplog.set_level(logging.WARNING, logger="crusoe_adk")
    relocation.prepare([agent.add, disguised.marked, disguised.disguised_object])
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "the agent's 3 tool(s) (add, marked, BaseTool) run in-process" in warning


def test_describe_says_relocated_only_of_a_proxy_relocation_made(sandboxd):
    def rows(tools):
        return {row["name"]: (row["relocated"], row["runs_in_sandbox"]) for row in entry_point.describe(tools)}
    assert rows([disguised.marked, disguised.disguised_object, run_python]) == {
        "marked": (False, False), "BaseTool": (False, False), "run_python": (False, True)}
    assert rows(relocation.prepare([disguised.marked, run_python])) == {
        "marked": (True, True), "run_python": (False, True)}


def test_a_proxy_whose_code_was_swapped_is_no_longer_relocated(sandboxd):
    """Identity is not enough either: a proxy made to run other code in the agent is not a proxy."""
    proxy = relocation.relocate(agent.add)

    def make():
        send = None

        def in_process(*args, **kwargs):
            return send or os.environ.get("AGENT_SECRET")
        return in_process
    proxy.__code__ = make().__code__
    assert relocation.proxy_target(proxy) is None and relocation.needs_relocation(proxy)
    with pytest.raises(errors.ToolRefused, match="agent.add is not this function"):
        relocation.prepare([proxy])
    swapped = relocation.relocate(agent.get_weather)
    assert swapped.__closure__ is not None
    swapped.__closure__[0].cell_contents = lambda args, kwargs: os.environ.get("AGENT_SECRET")
    assert relocation.proxy_target(swapped) is None


# ---- the entry point: python -m crusoe_adk.serve ----

def serve(args, env, cwd=TOOLRUNNER_DIR / "sample_agent"):
    return subprocess.Popen([sys.executable, "-m", "crusoe_adk.serve", *args], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(TOOLRUNNER_DIR), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_entry_point_refuses_an_agent_with_a_tool_that_cannot_be_relocated(sandboxd):
    process = serve(["agent:UNRELOCATABLE_TOOLS"], {})
    out, err = process.communicate(timeout=30)
    assert process.returncode == 3
    assert "refusing to start: TOOL_SANDBOX=true runs every tool in a sandbox" in err
    assert "  - Counter.count: a bound method" in err
    assert "get_weather" not in err, "only the tool that fails is named"


def post_tool(port, name, args):
    deadline = time.monotonic() + 20
    while True:
        try:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/tools/{name}",
                                             data=json.dumps({"args": args}).encode(), method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize("tool_sandbox", ["true", "false"])
def test_the_entry_point_relocates_every_tool_before_serving(sandboxd, tool_sandbox):
    port = free_port()
    process = serve(["agent:TOOLS", "--port", str(port)], {"TOOL_SANDBOX": tool_sandbox})
    try:
        weather = post_tool(port, "get_weather", {"city": "Reykjavik"})
        environment = post_tool(port, "inspect_environment", {})
        failed = post_tool(port, "fail", {"message": "boom"})
        converted = post_tool(port, "convert_temperature", {"celsius": 0})
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=10)
    assert weather["result"] == {"city": "Reykjavik", "temp_c": 4}
    assert converted["result"] == {"value": 32.0, "unit": "F"}
    assert failed["error"] == "ValueError: boom"
    if tool_sandbox == "true":
        assert weather["sandbox_id"] == "tool-fake1" and converted["sandbox_id"] == "tool-fake4"
        assert environment["result"]["secret"] is None
        assert failed["exception"] == "ToolError" and failed["sandbox_id"] == "tool-fake3"
        assert "TOOL_SANDBOX=false" not in err
    else:
        assert weather["sandbox_id"] is None and sandboxd.calls == []
        assert environment["result"]["secret"] == AGENT_SECRET, "control: in-process the credential is there"
        assert failed["exception"] == "ValueError"
        assert "WARNING: TOOL_SANDBOX=false: the agent's 7 tool(s)" in err


def test_the_entry_point_check_mode_lists_the_tools(sandboxd):
    process = serve(["agent:TOOLS", "--check"], {})
    out, _err = process.communicate(timeout=30)
    assert process.returncode == 0
    tools = {row["name"]: row for row in json.loads(out)["tools"]}
    assert tools["run_python"]["relocated"] is False and tools["run_python"]["runs_in_sandbox"] is True
    assert tools["get_weather"] == {"name": "get_weather", "signature": "(city: str) -> dict",
                                    "relocated": True, "runs_in_sandbox": True}


def test_the_entry_point_relocates_a_marked_tool_and_says_so_truly(disguised_sandboxd):
    env = {"PYTHONPATH": f"{TOOLRUNNER_DIR}:{TESTS_DIR}"}
    check = serve(["disguised_tools:TOOLS", "--check"], env)
    out, err = check.communicate(timeout=30)
    assert check.returncode == 0, err
    assert json.loads(out)["tools"] == [{"name": "marked", "signature": "(secret_variable: str = 'AGENT_SECRET') "
                                         "-> dict", "relocated": True, "runs_in_sandbox": True}]
    port = free_port()
    process = serve(["disguised_tools:TOOLS", "--port", str(port)], env)
    try:
        reply = post_tool(port, "marked", {})
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert reply["sandbox_id"] == "tool-fake1" and reply["result"]["secret"] is None


def test_the_agent_s_own_code_cannot_turn_relocation_off(sandboxd, tmp_path):
    """TOOL_SANDBOX is read before the agent's module runs: setting it there changes nothing (D7)."""
    (tmp_path / "sneaky.py").write_text("import os\nos.environ['TOOL_SANDBOX'] = 'false'\n"
                                        "from agent import get_weather\nTOOLS = [get_weather]\n")
    process = subprocess.Popen([sys.executable, "-m", "crusoe_adk.serve", "sneaky:TOOLS", "--check"], cwd=tmp_path,
                               env={**os.environ, "PYTHONPATH": f"{TOOLRUNNER_DIR}:{TOOLRUNNER_DIR / 'sample_agent'}"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    report = json.loads(out)
    assert report["tool_sandbox"] is True and report["tools"][0]["relocated"] is True
    assert "TOOL_SANDBOX=false" not in err


def test_the_entry_point_refuses_a_tool_sandbox_value_it_cannot_read(sandboxd):
    process = serve(["agent:TOOLS", "--check"], {"TOOL_SANDBOX": "off"})
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 3
    assert "refusing to start: TOOL_SANDBOX must be true or false, got 'off'" in err
