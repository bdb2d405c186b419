"""The agent runtime's entry point: loads the agent, relocates every tool (D7), then serves.

    python -m crusoe_adk.serve MODULE:ATTR [--host HOST] [--port PORT] [--check]
    python -m crusoe_adk.serve AGENTS_DIR  [--host HOST] [--port PORT] [--check]

MODULE:ATTR names the agent: an ADK agent or App (e.g. `agent:root_agent`), or a list of tool
functions (any other framework). AGENTS_DIR is an ADK agents directory, as `adk api_server` takes:
ADK's own AgentLoader, wrapped so every agent it loads is relocated (all are loaded at start).
TOOL_SANDBOX is read once, before any of the agent's code runs (its module, an ADK .env file). Before
anything is served, `relocation.prepare` replaces every tool with its sandboxed proxy (TOOL_SANDBOX=true,
the default), or warns that tools run in-process (TOOL_SANDBOX=false). A tool that cannot be relocated
stops start-up: the error names each such tool and why, and the process exits with status 3. The agent's
author calls nothing.

Then, for an ADK agent (google-adk installed in the agent's image), ADK's own API server serves it
(`get_fast_api_app` with a loader that hands out this one, relocated, agent; uvicorn). For a list of
tools, a small standard-library tool endpoint serves it, as a framework's runtime would call tools
once its model chose one:
  GET  /healthz            {"status": "ok", "tool_sandbox": bool}
  GET  /tools              {"tools": [{"name", "signature", "relocated"}]}
  POST /tools/<name>       {"args": {...}} -> {"result": ..., "sandbox_id": ...}, or
                           {"error": "<Type>: <text>", "exception": "<type>"} when the call raised
                           (a relocated tool's own error: ToolError, carrying the tool's text)
It listens on 127.0.0.1 unless --host says otherwise: whoever reaches it runs the agent's tools.
--check loads and relocates, prints each tool's declaration-relevant facts, and exits (0, or 3).
"""
import argparse
import asyncio
import importlib
import inspect
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import relocation, tool_call
from .errors import ToolError, ToolRefused

LOG = logging.getLogger("crusoe_adk.serve")
EXIT_REFUSED = 3
MAX_REQUEST_BYTES = 2 * 1024 * 1024


def load(spec: str) -> Any:
    """The object named by "module:attr", imported with the working directory on sys.path."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected MODULE:ATTR (e.g. agent:root_agent), got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def platform_switch(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """TOOL_SANDBOX as the platform set it, read before any of the agent's code runs: neither the
    agent's module (os.environ at import) nor an ADK agent's .env file can turn isolation off (D7)."""
    return {"TOOL_SANDBOX": (os.environ if environ is None else environ).get("TOOL_SANDBOX", "")}


def load_agent(spec: str, switch: Mapping[str, str] | None = None) -> Any:
    """What the entry point serves: the agent named by `spec`, every tool relocated (or, with
    TOOL_SANDBOX=false, left in-process after a warning). Raises ToolRefused (D7)."""
    switch = platform_switch() if switch is None else switch
    return relocation.prepare(load(spec), switch)


ADK_AGENT_TYPES = (("google.adk.agents.base_agent", "BaseAgent"), ("google.adk.apps.app", "App"))


def is_adk_agent(target: object) -> bool:
    """An ADK agent or App: its class really derives from ADK's (not one that claims an ADK `__module__`)."""
    return any(relocation.inherits(target, where) is not None for where in ADK_AGENT_TYPES)


def describe(tools: Iterable[Any]) -> list[dict[str, Any]]:
    """Each tool as it will run: `relocated` only for a proxy relocation made (relocation.proxy_target),
    never because of an attribute the tool carries."""
    rows = []
    for tool in tools:
        function = getattr(tool, "func", tool) if relocation.is_adk_function_tool(tool) else tool
        try:
            signature = str(inspect.signature(function))
        except (TypeError, ValueError):
            signature = "(?)"
        relocated = relocation.proxy_target(function) is not None
        rows.append({"name": relocation.tool_name(tool), "signature": signature, "relocated": relocated,
                     "runs_in_sandbox": relocated or relocation.already_sandboxed(function)})
    return rows


# --- the standard-library tool endpoint (a list of tools) -------------------------------------------

def tool_endpoint(tools: list[Any], host: str, port: int,
                  switch: Mapping[str, str] | None = None) -> ThreadingHTTPServer:
    by_name: dict[str, Any] = {}
    for tool in tools:
        by_name[getattr(tool, "__name__", relocation.tool_name(tool))] = tool
    sandboxed = relocation.tool_sandbox_enabled(switch)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                self.reply(200, {"status": "ok", "tool_sandbox": sandboxed})
            elif self.path == "/tools":
                self.reply(200, {"tools": describe(tools)})
            else:
                self.reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            name = self.path[len("/tools/"):] if self.path.startswith("/tools/") else None
            tool = by_name.get(name) if name is not None else None
            if tool is None:
                self.reply(404, {"error": f"no tool {name!r}"})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if length > MAX_REQUEST_BYTES:
                    raise ValueError("request body too large")
                body = json.loads(self.rfile.read(length) or b"{}")
                args = body.get("args") or {}
                if not isinstance(args, dict):
                    raise ValueError("args must be an object")
            except ValueError as error:
                self.reply(400, {"error": f"invalid JSON body: {error}"})
                return
            tool_call.last_call.set(None)
            record: dict[str, Any] | None = None
            try:
                result = tool(**args)
                if inspect.isawaitable(result):
                    result, record = asyncio.run(_await(result))
                else:
                    record = tool_call.last_call.get()
                reply = {"result": result, "sandbox_id": record["sandbox_id"] if record else None}
            except Exception as error:  # noqa: BLE001 - reported to the caller, as a runtime would
                text = str(error) if isinstance(error, ToolError) else f"{type(error).__name__}: {error}"
                reply = {"error": text, "exception": type(error).__name__,
                         "sandbox_id": getattr(error, "sandbox_id", None)}
            try:
                self.reply(200, reply)
            except (TypeError, ValueError) as error:
                self.reply(200, {"error": f"result is not JSON: {error}", "exception": "TypeError"})

        def reply(self, status: int, body: Any) -> None:
            payload = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            if not self.path.startswith("/healthz"):
                super().log_message(format, *args)

    server = ThreadingHTTPServer((host, port), Handler)
    print(f"crusoe_adk.serve: {len(tools)} tool(s) on http://{host}:{server.server_port} "
          f"(TOOL_SANDBOX={'true' if sandboxed else 'false'})", file=sys.stderr, flush=True)
    return server


async def _await(awaitable: Awaitable[Any]) -> tuple[Any, dict[str, Any] | None]:
    # The async proxy records its sandbox in this task's context, a copy of the caller's.
    result = await awaitable
    return result, tool_call.last_call.get()


# --- ADK -----------------------------------------------------------------------------------------

def adk_loader(agent: Any) -> Any:
    """An ADK agent loader that hands out this one agent (already relocated) under its name."""
    from google.adk.cli.utils.base_agent_loader import BaseAgentLoader

    app_name = getattr(agent, "name", None) or "agent"

    class RelocatedAgentLoader(BaseAgentLoader):
        def load_agent(self, agent_name: str) -> Any:
            if agent_name != app_name:
                raise ValueError(f"no agent named {agent_name!r}; this runtime serves {app_name!r}")
            return agent

        def list_agents(self) -> list[str]:
            return [app_name]

    return RelocatedAgentLoader()


def relocating_loader(inner: Any, switch: Mapping[str, str] | None = None) -> Any:
    """Wraps an ADK agent loader (e.g. ADK's own AgentLoader over an agents directory, as `adk
    api_server DIR` uses): every agent it loads has its tools relocated before it is handed out."""
    from google.adk.cli.utils.base_agent_loader import BaseAgentLoader

    switch = platform_switch() if switch is None else switch

    class RelocatingAgentLoader(BaseAgentLoader):
        def __init__(self) -> None:
            self.prepared: dict[str, Any] = {}

        def load_agent(self, agent_name: str) -> Any:
            agent = inner.load_agent(agent_name)
            if self.prepared.get(agent_name) is not agent:
                relocation.prepare(agent, switch)
                self.prepared[agent_name] = agent
            return agent

        def list_agents(self) -> list[str]:
            names: list[str] = inner.list_agents()
            return names

        def list_agents_detailed(self) -> Any:
            return inner.list_agents_detailed()

    return RelocatingAgentLoader()


def serve_adk(loader: Any, agents_dir: str, host: str,  # pragma: no cover - needs google-adk; tests_adk run it
              port: int) -> None:
    import uvicorn
    from google.adk.cli.fast_api import get_fast_api_app

    app = get_fast_api_app(agents_dir=agents_dir, agent_loader=loader, web=False, host=host, port=port)
    print(f"crusoe_adk.serve: ADK agent(s) {', '.join(loader.list_agents())} on http://{host}:{port}",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def load_agents_dir(agents_dir: str, switch: Mapping[str, str]) -> tuple[Any, list[Any]]:
    """ADK's AgentLoader over a directory, wrapped so every agent is relocated; all of them are loaded
    (and so relocated, or refused) now, before anything is served."""
    from google.adk.cli.utils.agent_loader import AgentLoader

    loader = relocating_loader(AgentLoader(agents_dir), switch)
    agents = [loader.load_agent(name) for name in loader.list_agents()]
    return loader, [tool for agent in agents for tool in relocation.iter_tools(agent)]


# --- main ----------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crusoe_adk.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("agent", metavar="MODULE:ATTR",
                        help="the agent (or list of tools), e.g. agent:root_agent; or an ADK agents directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8080))
    parser.add_argument("--check", action="store_true", help="load and relocate, print the tools, exit")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(levelname)s: %(message)s")
    switch = platform_switch()  # before the agent's code runs
    try:
        relocation.tool_sandbox_enabled(switch)
    except ValueError as error:  # neither true nor false: neither reading may be guessed
        print(f"crusoe_adk.serve: refusing to start: {error}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    adk_dir = ":" not in options.agent and os.path.isdir(options.agent)
    module_name, _, attribute = options.agent.partition(":")
    if not adk_dir and not (module_name and attribute):
        parser.error(f"expected MODULE:ATTR (e.g. agent:root_agent) or an ADK agents directory, got {options.agent!r}")
    try:
        if adk_dir:
            loader, tools = load_agents_dir(options.agent, switch)
        else:
            agent = load_agent(options.agent, switch)
            tools = relocation.iter_tools(agent)
    except ToolRefused as refused:
        print(f"crusoe_adk.serve: {refused}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    if options.check:
        print(json.dumps({"tool_sandbox": relocation.tool_sandbox_enabled(switch), "tools": describe(tools)},
                         indent=2))
        return 0
    if adk_dir:
        serve_adk(loader, os.path.abspath(options.agent), options.host, options.port)
        return 0
    if is_adk_agent(agent):
        serve_adk(adk_loader(agent), os.getcwd(), options.host, options.port)
        return 0
    if not isinstance(agent, (list, tuple)):
        print(f"crusoe_adk.serve: {options.agent} is neither an ADK agent nor a list of tools",
              file=sys.stderr, flush=True)
        return 2
    server = tool_endpoint(list(agent), options.host, options.port, switch)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # as PID 1 of a pod it must handle SIGTERM
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
