"""sandboxd's MCP door (/mcp) tried with each framework's own released MCP client, no model involved.

    SANDBOXD_MCP_URL=http://sandboxd.cai-system.svc:8080/mcp SANDBOXD_TOKEN=... python3 /opt/mcp-clients/frameworks.py

Prints one JSON line per check, {"name", "ok", "detail"}, then a summary line without a name,
{"summary": "N passed, M failed", "ok", "passed", "failed"}; exits 0 only when every check passed (2 when
SANDBOXD_MCP_URL or SANDBOXD_TOKEN is missing).

Each check runs in a child process of its own (python3 frameworks.py --check NAME): a hung client is stopped at
the check's timeout (MCP_CLIENTS_TIMEOUT_S, default 60) and killed soon after, and each framework imports the MCP
SDK its own pip install would bring. The whole run stops starting checks after MCP_CLIENTS_BUDGET_S (default 360;
the checks left are reported failed), so a server that never answers still gets a complete report in time.
Two environments are needed: langchain-mcp-adapters 0.3.2 requires mcp<2, the others take mcp 2.3.0. They are the
folders site (requirements.txt) and site-langchain (requirements-langchain.txt) beside this file (/opt/mcp-clients
in the image), or under MCP_CLIENTS_ROOT. A check's child gets this folder (crusoe_adk, adk_executor_check.py) and
its environment's site on PYTHONPATH; other entries of PYTHONPATH are kept.

    mcp-sdk                 the MCP Python SDK 2.x (ClientSession over streamable_http_client with the bearer
                            header): initialize (Mcp-Session-Id), tools/list (both tools with input schemas),
                            run_python print(6*7) -> 42, run_python_session x = 41 then print(x+1) -> 42, another
                            session does not see x, the client's exit DELETEs the session, after which its id is
                            404 or has lost x; a matplotlib chart left open comes back as an image/png block
    mcp-sdk-v1              the same with the SDK 1.x that langchain-mcp-adapters installs
    openai-agents           agents.mcp.MCPServerStreamableHttp: list_tools, call_tool (both tools), and the tool as
                            an agent sees it (MCPUtil.to_function_tool, MCPUtil.invoke_mcp_tool)
    langchain-mcp-adapters  MultiServerMCPClient(transport "streamable_http"): get_tools(), tool.ainvoke (a session
                            per call), then load_mcp_tools(session) in one client.session(...) keeping x
    adk-mcp-toolset         google.adk McpToolset(StreamableHTTPConnectionParams): get_tools(), the tool's Gemini
                            declaration, run_async with a minimal ToolContext (both tools)
    adk-code-executor       adk_executor_check.check_adk_code_executor(base URL, bearer headers): ADK's code
    adk-code-executor-stateful   executor loop through sandboxd's REST API (crusoe_adk.SandboxdCodeExecutor)
    adk-code-executor-chart      the same, a chart left open coming back as an image/png artifact
    adk-code-executor-data-file  optimize_data_file: ADK's pandas exploration of an attached CSV, then the model's code

MCP_CLIENTS_CHECKS=name,name runs only those.
"""
import asyncio
import base64
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("MCP_CLIENTS_ROOT") or HERE
SITES = {"main": os.path.join(ROOT, "site"), "langchain": os.path.join(ROOT, "site-langchain")}
TIMEOUT_S = float(os.environ.get("MCP_CLIENTS_TIMEOUT_S", "60"))
BUDGET_S = float(os.environ.get("MCP_CLIENTS_BUDGET_S", "360"))
# A child's own imports (google.adk takes seconds) come before its check's clock starts.
KILL_GRACE_S = 20

CODE_42 = "print(6*7)"
SET_X, SHOW_X = "x = 41", "print(x+1)"
# A chart left open: it comes back as an image content block (D16).
CHART = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 4])"


def url():
    return os.environ["SANDBOXD_MCP_URL"]


def bearer():
    return {"Authorization": "Bearer " + os.environ["SANDBOXD_TOKEN"]}


class CheckFailed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise CheckFailed(what)


def field(obj, *names, default=None):
    """An attribute or key under the first of its spellings present: the SDK 1.x names fields in camelCase
    (structuredContent), 2.x in snake_case (structured_content); dumps use the wire's camelCase."""
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return default


def texts(content):
    """The text of MCP content blocks (objects or dicts), or of LangChain's blocks / str."""
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if isinstance(block, str):
            out.append(block)
        elif field(block, "type") == "text":
            out.append(field(block, "text", default=""))
    return "\n".join(out)


def check_run_result(tool, text, structured, is_error, want="42"):
    """The tool result's shape: text "stdout:\\n...\\nstderr:\\n...\\nexit_code: N" and structuredContent
    {sandbox_id, stdout, stderr, exit_code, duration_ms, files}; stdout is `want`."""
    expect(not is_error, f"{tool}: isError is set: {text[:300]!r}")
    expect(text.startswith("stdout:\n") and "\nstderr:\n" in text and "\nexit_code: " in text,
           f"{tool}: text is not 'stdout:/stderr:/exit_code:': {text[:300]!r}")
    expect(want in text.split("\nstderr:\n")[0], f"{tool}: {want} not in the text's stdout: {text[:300]!r}")
    expect(isinstance(structured, dict), f"{tool}: no structuredContent (got {type(structured).__name__})")
    missing = {"sandbox_id", "stdout", "stderr", "exit_code", "duration_ms", "files"} - set(structured)
    expect(not missing, f"{tool}: structuredContent lacks {sorted(missing)}: {structured}")
    expect(structured["exit_code"] == 0, f"{tool}: exit_code {structured['exit_code']}: {structured}")
    expect(structured["stdout"].strip() == want, f"{tool}: structuredContent.stdout {structured['stdout']!r}")
    return structured


def check_schemas(tools_by_name, schema_of):
    for name in ("run_python", "run_python_session"):
        expect(name in tools_by_name, f"no tool {name}: the server lists {sorted(tools_by_name)}")
        schema = schema_of(tools_by_name[name]) or {}
        props = schema.get("properties") or {}
        expect("code" in props and "code" in (schema.get("required") or []),
               f"{name}: input schema has no required 'code': {schema}")
    return sorted(tools_by_name)


def version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


# --- mcp-sdk, mcp-sdk-v1: the SDK's own ClientSession ------------------------------------------------------

async def check_mcp_sdk():
    mcp_version = version("mcp")
    v2 = int(mcp_version.split(".")[0]) >= 2
    if v2:
        import httpx2 as httpx  # the SDK 2.x's HTTP client
    else:
        import httpx
    seen = []  # (method, JSON-RPC method or "", status, request's session id, response's session id, protocol)
    pending, offered = {}, []

    async def on_request(request):
        rpc = ""
        if request.method == "POST":
            try:
                body = json.loads(request.content)
                rpc = body.get("method", "(reply)")
                if rpc == "initialize":
                    offered.append(body["params"].get("protocolVersion"))
            except Exception:  # noqa: BLE001
                rpc = "?"
        pending[id(request)] = rpc

    async def on_response(response):
        request = response.request
        seen.append((request.method, pending.pop(id(request), ""), response.status_code,
                     request.headers.get("mcp-session-id"), response.headers.get("mcp-session-id"),
                     request.headers.get("mcp-protocol-version")))

    hooks = {"request": [on_request], "response": [on_response]}
    http = httpx.AsyncClient(headers=bearer(), timeout=httpx.Timeout(30, read=TIMEOUT_S + 30), event_hooks=hooks)
    try:
        return await mcp_sdk_steps(http, seen, offered, mcp_version)
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 - a timeout's cancellation goes through
        # The SDK 2.x reports an HTTP 401 or 500 only as "Server returned an error response": say what came back.
        exchange = ", ".join(f"{m} {rpc or ''} -> {status}".replace("  ", " ") for m, rpc, status, *_ in seen)
        raise CheckFailed(f"{describe(error)}; HTTP: {exchange or 'no response'}") from error


async def mcp_sdk_steps(http, seen, offered, mcp_version):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run(session, tool, code):
        result = await session.call_tool(tool, {"code": code})
        return (texts(field(result, "content")), field(result, "structured_content", "structuredContent"),
                bool(field(result, "is_error", "isError")))

    async with http:
        async with streamable_http_client(url(), http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                init = await session.initialize()
                protocol = field(init, "protocol_version", "protocolVersion")
                listed = await session.list_tools()
                names = check_schemas({t.name: t for t in listed.tools},
                                      lambda t: field(t, "input_schema", "inputSchema"))
                check_run_result("run_python", *await run(session, "run_python", CODE_42))
                first = await run(session, "run_python_session", SET_X)
                expect(not first[2] and first[1] and first[1].get("exit_code") == 0,
                       f"run_python_session {SET_X!r} failed: {first[0][:300]!r}")
                check_run_result("run_python_session", *await run(session, "run_python_session", SHOW_X))
                chart = await session.call_tool("run_python", {"code": CHART})
                images = [c for c in field(chart, "content") or [] if field(c, "type") == "image"]
                expect(len(images) == 1 and field(images[0], "mime_type", "mimeType") == "image/png"
                       and base64.b64decode(field(images[0], "data"))[:8] == b"\x89PNG\r\n\x1a\n",
                       f"run_python's chart came back as no PNG image block: {field(chart, 'content')!r}"[:600])
        initialize = [s for s in seen if s[1] == "initialize"]
        expect(initialize and initialize[0][4], f"initialize answered without Mcp-Session-Id: {seen}")
        session_id = initialize[0][4]
        later = [s for s in seen if s[0] == "POST" and s[1] != "initialize"]
        expect(all(s[3] == session_id for s in later), f"a request went without the session id: {later}")
        deletes = [s for s in seen if s[0] == "DELETE"]
        expect(deletes and deletes[0][3] == session_id, f"the client's exit sent no DELETE with the session id: "
               f"{seen}")
        expect(deletes[0][2] in (200, 202, 204), f"DELETE of the session answered {deletes[0][2]}")

        # Another session has an interpreter of its own: x is not defined there.
        async with streamable_http_client(url(), http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as other:
                await other.initialize()
                text, structured, is_error = await run(other, "run_python_session", SHOW_X)
        expect(is_error or (structured or {}).get("exit_code") != 0,
               f"a new MCP session saw the other session's x: {text[:300]!r}")

        # DELETE ended the session: its id is refused (the transport's 404 for a terminated session), or, with ids
        # that carry no state (sandboxd's are signed), it is accepted with a fresh interpreter where x is not defined.
        after = await http.post(url(), json={"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
            "name": "run_python_session", "arguments": {"code": SHOW_X}}}, headers={
            "mcp-session-id": session_id, "mcp-protocol-version": protocol,
            "accept": "application/json, text/event-stream"})
        if after.status_code == 404:
            ended = "404"
        else:
            expect(after.status_code == 200, f"a session run with the deleted session id got {after.status_code}")
            result = after.json().get("result") or {}
            structured = result.get("structuredContent") or {}
            expect(result.get("isError") or structured.get("exit_code") not in (0, None),
                   f"the deleted session's interpreter still holds x: {texts(result.get('content'))[:300]!r}")
            ended = "accepted, x gone"
            await http.delete(url(), headers={"mcp-session-id": session_id, "mcp-protocol-version": protocol})
    gets = sorted({s[2] for s in seen if s[0] == "GET"})
    notes = sorted({s[2] for s in seen if s[1] == "notifications/initialized"})
    return (f"mcp {mcp_version}: initialize -> protocol {protocol} (client offered "
            f"{offered[0] if offered else '?'}), Mcp-Session-Id received and sent back on {len(later)} requests; "
            f"notifications/initialized -> {notes}; GET stream -> {gets or 'not tried'}; tools {names}; "
            f"run_python -> 42, a chart -> an image/png block; run_python_session x=41, x+1 -> 42, not visible from "
            f"a new session; "
            f"DELETE -> {deletes[0][2]}; the deleted id then -> {ended}")


# --- openai-agents ------------------------------------------------------------------------------------------

async def check_openai_agents():
    from agents.mcp import MCPServerStreamableHttp, MCPUtil
    from agents.run_context import RunContextWrapper

    # Its defaults would fail any tool call that takes more than 5 s (client_session_timeout_seconds=5).
    server = MCPServerStreamableHttp(
        params={"url": url(), "headers": bearer(), "timeout": 30, "sse_read_timeout": TIMEOUT_S + 30},
        name="sandboxd", client_session_timeout_seconds=TIMEOUT_S + 30)
    async with server:
        tools = await server.list_tools()
        by_name = {t.name: t for t in tools}
        names = check_schemas(by_name, lambda t: field(t, "input_schema", "inputSchema"))

        async def call(tool, code):
            result = await server.call_tool(tool, {"code": code})
            return (texts(field(result, "content")), field(result, "structured_content", "structuredContent"),
                    bool(field(result, "is_error", "isError")))

        check_run_result("run_python", *await call("run_python", CODE_42))
        first = await call("run_python_session", SET_X)
        expect(not first[2], f"run_python_session {SET_X!r} failed: {first[0][:300]!r}")
        check_run_result("run_python_session", *await call("run_python_session", SHOW_X))

        # The tool as an Agent's model sees and calls it.
        function_tool = MCPUtil.to_function_tool(by_name["run_python"], server, convert_schemas_to_strict=False)
        expect("code" in function_tool.params_json_schema.get("properties", {}),
               f"FunctionTool schema lost 'code': {function_tool.params_json_schema}")
        output = await MCPUtil.invoke_mcp_tool(server, by_name["run_python"], RunContextWrapper(context=None),
                                               json.dumps({"code": CODE_42}))
        shown = output if isinstance(output, str) else json.dumps(output, default=str)
        expect("42" in shown, f"invoke_mcp_tool output has no 42: {shown[:300]!r}")
    return (f"openai-agents {version('openai-agents')} on mcp {version('mcp')}: list_tools {names}; call_tool "
            f"run_python -> 42; run_python_session x=41, x+1 -> 42 in one connection; FunctionTool "
            f"{function_tool.name} invoked -> 42")


# --- langchain-mcp-adapters ---------------------------------------------------------------------------------

async def check_langchain():
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    client = MultiServerMCPClient({"sandboxd": {
        "transport": "streamable_http", "url": url(), "headers": bearer(),
        "timeout": 30, "sse_read_timeout": TIMEOUT_S + 30}})
    tools = await client.get_tools()
    by_name = {t.name: t for t in tools}
    names = check_schemas(by_name, lambda t: t.args_schema if isinstance(t.args_schema, dict)
                          else t.args_schema.model_json_schema())
    run = by_name["run_python"]
    # A plain-args ainvoke gives the content; a ToolCall gives the ToolMessage with structuredContent as artifact.
    content = await run.ainvoke({"code": CODE_42})
    expect("42" in texts(content), f"run_python ainvoke: no 42 in {content!r:.300}")
    message = await run.ainvoke({"type": "tool_call", "id": "call-1", "name": "run_python",
                                 "args": {"code": CODE_42}})
    artifact = getattr(message, "artifact", None)
    check_run_result("run_python", texts(message.content), field(artifact, "structured_content"),
                     getattr(message, "status", "success") == "error")

    async with client.session("sandboxd") as session:
        session_tools = {t.name: t for t in await load_mcp_tools(session)}
        stateful = session_tools["run_python_session"]
        await stateful.ainvoke({"code": SET_X})
        shown = await stateful.ainvoke({"type": "tool_call", "id": "call-2", "name": "run_python_session",
                                        "args": {"code": SHOW_X}})
        check_run_result("run_python_session", texts(shown.content), field(shown.artifact, "structured_content"),
                         getattr(shown, "status", "success") == "error")
    return (f"langchain-mcp-adapters {version('langchain-mcp-adapters')} on mcp {version('mcp')}: get_tools {names}"
            f"; run_python.ainvoke -> 42 (content and artifact); load_mcp_tools(session) run_python_session x=41, "
            f"x+1 -> 42 in one client.session")


# --- google-adk McpToolset ----------------------------------------------------------------------------------

async def check_adk_toolset():
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
    from google.adk.tools.tool_context import ToolContext

    toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(
        url=url(), headers=bearer(), timeout=30, sse_read_timeout=TIMEOUT_S + 30))
    try:
        tools = await toolset.get_tools()
        by_name = {t.name: t for t in tools}
        names = check_schemas(by_name, lambda t: field(t._mcp_tool, "input_schema", "inputSchema"))
        # What the model would be offered: ADK converts the input schema to a Gemini FunctionDeclaration.
        declaration = by_name["run_python"]._get_declaration()
        declared = declaration.parameters_json_schema or (
            declaration.parameters.model_dump(exclude_none=True) if declaration.parameters else {})
        expect("code" in (declared.get("properties") or {}), f"declaration lost 'code': {declaration}")

        # The minimum a tool call needs: an invocation of a session, no agent, no model.
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="mcp-clients", user_id="e2e")
        context = InvocationContext(session_service=sessions, invocation_id="e2e-mcp-clients", session=session)

        async def call(tool, code):
            result = await by_name[tool].run_async(args={"code": code}, tool_context=ToolContext(context))
            expect(isinstance(result, dict) and "error" not in result, f"{tool}: {result!r:.300}")
            return (texts(field(result, "content")), field(result, "structuredContent", "structured_content"),
                    bool(field(result, "isError", "is_error")))

        check_run_result("run_python", *await call("run_python", CODE_42))
        first = await call("run_python_session", SET_X)
        expect(not first[2], f"run_python_session {SET_X!r} failed: {first[0][:300]!r}")
        check_run_result("run_python_session", *await call("run_python_session", SHOW_X))
    finally:
        await toolset.close()
    return (f"google-adk {version('google-adk')} on mcp {version('mcp')}: get_tools {names}; declaration "
            f"parameters {sorted(declared.get('properties') or {})}; run_async run_python -> 42; run_python_session "
            f"x=41, x+1 -> 42 (ADK keeps one MCP session per header set)")


# --- google-adk code executor (adk_executor_check.py, sandboxd's REST API) -----------------------------------

def executor_check(function_name):
    async def check():
        import importlib.util
        if importlib.util.find_spec("adk_executor_check") is None:
            raise CheckFailed(f"adk_executor_check.py is missing: not beside frameworks.py ({HERE}) nor on PYTHONPATH")
        import adk_executor_check
        function = getattr(adk_executor_check, function_name, None)
        expect(function is not None, f"adk_executor_check has no {function_name}")
        base = url().rstrip("/")
        base = base[: -len("/mcp")] if base.endswith("/mcp") else base
        # It runs its own event loop (in a thread when called from one): keep this loop free meanwhile.
        result = await asyncio.to_thread(function, base, bearer())
        expect(isinstance(result, dict), f"{function_name} returned {result!r:.300}, not a dict")
        expect(result.get("ok") is True, str(result.get("detail")))
        return str(result.get("detail"))
    return check


# name -> (environment, check)
CHECKS = {
    "mcp-sdk": ("main", check_mcp_sdk),
    "mcp-sdk-v1": ("langchain", check_mcp_sdk),
    "openai-agents": ("main", check_openai_agents),
    "langchain-mcp-adapters": ("langchain", check_langchain),
    "adk-mcp-toolset": ("main", check_adk_toolset),
    "adk-code-executor": ("main", executor_check("check_adk_code_executor")),
    "adk-code-executor-stateful": ("main", executor_check("check_adk_code_executor_stateful")),
    "adk-code-executor-chart": ("main", executor_check("check_adk_code_executor_chart")),
    "adk-code-executor-data-file": ("main", executor_check("check_adk_code_executor_data_file")),
}


def describe(error):
    """An exception's text, the leaves of an ExceptionGroup (anyio task groups wrap the real error) included."""
    leaves = getattr(error, "exceptions", None)
    if leaves:
        return " | ".join(describe(leaf) for leaf in leaves)
    text = str(error) or repr(error)
    return text if isinstance(error, CheckFailed) else f"{type(error).__name__}: {text}"


def run_one(name):
    """In the child: run one check under its timeout, print its JSON line."""
    _, check = CHECKS[name]
    try:
        detail = asyncio.run(asyncio.wait_for(check(), TIMEOUT_S))
        line = {"name": name, "ok": True, "detail": detail}
    except asyncio.TimeoutError:
        line = {"name": name, "ok": False, "detail": f"timed out after {TIMEOUT_S:g} s"}
    except BaseException as error:  # noqa: BLE001 - a check reports
        line = {"name": name, "ok": False, "detail": describe(error)[:2000]}
    sys.stdout.flush()
    print(json.dumps(line), flush=True)


def child_env(environment):
    env = dict(os.environ)
    # As the image sets them: no trace export to OpenAI, no Google credential lookup (ADK's McpToolset otherwise
    # calls google.auth.default() for an mTLS probe on its first connection, metadata server included).
    for variable, value in (("OPENAI_AGENTS_DISABLE_TRACING", "1"), ("GOOGLE_API_USE_CLIENT_CERTIFICATE", "false"),
                            ("NO_GCE_CHECK", "true")):
        env.setdefault(variable, value)
    site = SITES[environment]
    known = {os.path.realpath(p) for p in [HERE, *SITES.values()]}
    others = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.realpath(p) not in known]
    env["PYTHONPATH"] = os.pathsep.join([HERE] + ([site] if os.path.isdir(site) else []) + others)
    return env


def await_reachable(limit_s=60):
    """A pod just started may be refused until the NetworkPolicy enforcer has added its address to the rule that
    lets sandboxd's clients in (kube-router REJECTs meanwhile): wait, as an agent's readiness check would, until a
    TCP connection to sandboxd's port succeeds, and say how long that took."""
    import socket
    import urllib.parse
    target = urllib.parse.urlsplit(url())
    started = time.monotonic()
    while True:
        try:
            socket.create_connection((target.hostname, target.port or 80), timeout=2).close()
            break
        except OSError as error:
            if time.monotonic() - started > limit_s:
                print(json.dumps({"note": f"sandboxd unreachable for {limit_s} s: {error}"}), flush=True)
                return
            time.sleep(0.5)
    print(json.dumps({"note": f"sandboxd reachable after {time.monotonic() - started:.1f} s"}), flush=True)


def run_all():
    for variable in ("SANDBOXD_MCP_URL", "SANDBOXD_TOKEN"):
        if not os.environ.get(variable):
            print(json.dumps({"summary": f"{variable} is not set", "ok": False, "passed": 0, "failed": 0}),
                  flush=True)
            return 2
    await_reachable()
    wanted = [n.strip() for n in os.environ.get("MCP_CLIENTS_CHECKS", "").split(",") if n.strip()]
    unknown = sorted(set(wanted) - set(CHECKS))
    names = wanted or list(CHECKS)
    passed = failed = 0
    started = time.monotonic()
    for name in names:
        left = BUDGET_S - (time.monotonic() - started)
        if name in unknown:
            line = {"name": name, "ok": False, "detail": f"no such check (known: {', '.join(CHECKS)})"}
        elif left < 5:
            line = {"name": name, "ok": False, "detail": f"not run: the run's budget of {BUDGET_S:g} s is spent"}
        else:
            line = run_child(name, min(TIMEOUT_S, left))
        passed += bool(line["ok"])
        failed += not line["ok"]
        print(json.dumps(line), flush=True)
    ok = failed == 0
    print(json.dumps({"summary": f"{passed} passed, {failed} failed", "ok": ok, "passed": passed, "failed": failed}),
          flush=True)
    return 0 if ok else 1


def run_child(name, timeout_s):
    started = time.monotonic()
    env = child_env(CHECKS[name][0])
    env["MCP_CLIENTS_TIMEOUT_S"] = f"{timeout_s:g}"
    try:
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--check", name], env=env,
                               capture_output=True, text=True, timeout=timeout_s + KILL_GRACE_S)
    except subprocess.TimeoutExpired as expired:
        forward(name, expired.stderr)
        return {"name": name, "ok": False, "detail": f"killed: no answer in {timeout_s + KILL_GRACE_S:g} s "
                                                      "(imports included)"}
    forward(name, child.stderr)
    for text in reversed(child.stdout.splitlines()):
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("name") == name:
            line["detail"] = f"{line['detail']} ({time.monotonic() - started:.1f} s)"
            return line
    tail = (child.stderr or "").strip().splitlines()[-3:]
    return {"name": name, "ok": False, "detail": f"the check's process exited {child.returncode} without a result: "
                                                  + " / ".join(tail)}


def forward(name, stderr):
    """A check's own log, on stderr (stdout holds only the JSON lines), its last 4000 characters."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    if stderr and stderr.strip():
        sys.stderr.write(f"--- {name} (stderr) ---\n{stderr[-4000:]}\n")
        sys.stderr.flush()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check" and sys.argv[2] in CHECKS:
        run_one(sys.argv[2])
    else:
        sys.exit(run_all())
