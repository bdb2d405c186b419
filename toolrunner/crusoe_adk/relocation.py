"""Relocation (D7): every tool function of an agent runs in a one-use sandbox of the agent's own image.

The agent runtime's entry point (`python -m crusoe_adk.serve module:attr`, see serve.py) calls
`prepare()` before the agent serves traffic, so the agent author calls nothing. Each tool function is
replaced by a proxy with the same name, signature, annotations, docstring and module (so the model
sees exactly the same tool declaration) that sends the call to sandboxd's POST /v1/call: the image
from the agent's token, the function's module and name, and the arguments bound by name.

With TOOL_SANDBOX=true (the default; platform-owned) a tool that cannot be relocated stops start-up
with ToolRefused, naming each such tool and why; TOOL_SANDBOX=false leaves every tool in-process
and warns at every start.

The rule a tool must meet (check_tool):
* It is a plain Python function (`def` or `async def`) defined at the top level of an importable
  module, and `module.name` is that very function: the sandbox imports it by module and name.
  Refused: lambdas, closures and other nested functions, methods (bound or not), functools.partial,
  built-ins, callable objects, functions defined in __main__, generators (sync or async: a sandboxed
  call returns one result, it cannot stream).
* Its arguments travel by name as JSON: no positional-only parameters and no *args (**kwargs is
  fine). Each parameter's annotation must be a JSON type (`json_type_problem`): str, int, float,
  bool, None, list, dict, list[T], dict[str, T], Optional[T] / T | None / Union of those, Literal of
  JSON scalars, a TypedDict of those, NewType and Annotated around those, or typing.Any. An
  unannotated parameter means "any JSON value": the model's argument is JSON already and is sent as
  it came. Refused: tuple, set, bytes, datetime, Enum, dataclasses, pydantic models and other classes
  (they would arrive in the sandbox as something else than the tool receives in-process).
  String annotations (`from __future__ import annotations`) are resolved in the tool's own module.
* Its result travels as JSON: the return annotation follows the same rule; an unannotated result is
  checked when the tool returns (the tool runner answers "result is not JSON-serialisable: <type>",
  raised in the agent as ToolError).
* ADK's injected context (a parameter named `tool_context`, or annotated with ADK's
  Context/ToolContext) is never sent: it lives in the agent. It stays in the proxy's signature (so
  ADK still injects it and leaves it out of the declaration), but the tool must not need it: the
  parameter needs a default (the sandbox calls the tool without it). ADK's live `input_stream`
  cannot travel either and is refused.
* Async tools stay async: the proxy of an `async def` is an `async def` (the HTTP call runs in a
  worker thread, so the event loop keeps serving), and of a `def` a `def`.
* `crusoe_adk.tools.run_python` is not relocated: it already runs its code in a sandbox.

In an ADK agent (walked by duck typing): plain functions in `tools` are replaced by proxies; an ADK
FunctionTool (or a subclass that adds no code of its own) gets a proxy as its `func`; an AgentTool's
agent and every sub-agent are walked too; an ADK tool that does not implement run_async (built-ins such
as google_search) runs nothing in the agent and is left as it is. Any other tool object or toolset runs
its own code in the agent, so it is refused.

What a tool is decides, never a mark its author can set (issue 43):
* A tool counts as relocated only when it is one of the proxies make_proxy made, by identity, with the
  code and closure it was made with (`proxy_target`); there is no attribute that says so.
* An ADK tool is recognised by its real class hierarchy (`type(tool).__mro__`, which neither
  `__class__`, ABC registration nor `__module__` changes) against ADK's own classes, taken from ADK's
  modules as this process imported them; this never loads ADK (an object can only be an ADK tool when
  ADK is loaded already). A class is ADK's own only when it is the very object its ADK module
  holds under its name (`adk_defined`), so a class that merely claims an ADK `__module__` is the
  author's, and its code counts as code that would run in the agent.
"""
import asyncio
import contextvars
import enum
import importlib
import inspect
import json
import logging
import os
import re
import sys
import types
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, NoReturn, TypeVar

from . import tool_call
from .errors import ToolRefused

LOG = logging.getLogger("crusoe_adk.relocation")

CONTEXT_PARAMETER = "tool_context"
LIVE_STREAM_PARAMETER = "input_stream"
ADK_CONTEXT_TYPES = ("Context", "ToolContext", "CallbackContext")
EVERY_TOOL = "every tool"
# ADK's classes relocation tells tools by (looked up in ADK's modules as imported, never by name alone).
ADK_BASE_TOOL = ("google.adk.tools.base_tool", "BaseTool")
ADK_BASE_TOOLSET = ("google.adk.tools.base_toolset", "BaseToolset")
ADK_FUNCTION_TOOL = ("google.adk.tools.function_tool", "FunctionTool")
ADK_AGENT_TOOL = ("google.adk.tools.agent_tool", "AgentTool")
# What a subclass of an ADK tool may define without adding code that ADK would run in the agent: its
# constructor runs while the agent's module is imported, which is the agent's own code anyway.
INERT_CLASS_ENTRIES = frozenset({"__init__", "__dict__", "__weakref__"})

ACCEPTED = ("str, int, float, bool, None, list, dict, list[T], dict[str, T], Optional/Union, "
            "Literal, TypedDict, Any, or no annotation")

ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])
# What stops start-up, as ToolRefused lists it: (tool name, reason), the name EVERY_TOOL for a setting.
Problems = list[tuple[str, str]]


# --- D7: the switch --------------------------------------------------------------------------------

def tool_sandbox_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """TOOL_SANDBOX: unset, empty or "true" -> True; "false" -> False; anything else refuses start-up
    (a typo must not silently turn isolation off, nor leave an owner believing it is off)."""
    raw = (os.environ if environ is None else environ).get("TOOL_SANDBOX", "").strip()
    if raw.lower() in ("", "true"):
        return True
    if raw.lower() == "false":
        return False
    raise ValueError(f"TOOL_SANDBOX must be true or false, got {raw!r}")


def prepare(target: Any, environ: Mapping[str, str] | None = None) -> Any:
    """What the agent runtime's entry point does before serving: relocates every tool of `target` (an
    ADK agent or App, or a list of tool functions) when TOOL_SANDBOX is on, and returns what to serve
    (the same agent, relocated in place; for a list, a new list). Raises ToolRefused (D7) when a tool
    cannot be relocated. With TOOL_SANDBOX=false it returns `target` unchanged after a warning."""
    if not tool_sandbox_enabled(environ):
        names = [tool_name(tool) for tool in iter_tools(target) if needs_relocation(tool)]
        LOG.warning("TOOL_SANDBOX=false: the agent's %d tool(s) (%s) run in-process, NOT sandboxed: they "
                    "can read the agent's credentials and reach whatever the agent reaches. The platform set "
                    "this because the project's owner accepted the risk knowingly.",
                    len(names), ", ".join(names) or "none")
        return target
    # Refused before serving, too, when no call could be made (no token, no image claim, bad timeout).
    setting_problems = call_setting_problems() \
        if any(needs_relocation(tool) for tool in iter_tools(target)) else []
    try:
        relocated = relocate_tools(target) if isinstance(target, (list, tuple)) else relocate_agent(
            target, dry_run=bool(setting_problems))
    except ToolRefused as refused:
        raise ToolRefused(refused.problems + setting_problems) from None
    if setting_problems:
        raise ToolRefused(setting_problems)
    return relocated


def call_setting_problems() -> Problems:
    from crusoe_core.adapter import agent_image
    problems: Problems = []
    for check in (tool_call.sandbox_url, agent_image, tool_call.call_timeout_s):
        try:
            check()
        except Exception as error:  # noqa: BLE001 - each is reported, then start-up stops
            problems.append((EVERY_TOOL, str(error)))
    return problems


# --- the function form: a plain list of tool functions (any framework) ------------------------------

def relocate_tools(tools: Iterable[Any]) -> list[Any]:
    """A new list in which each tool function is replaced by its sandboxed proxy (run_python and
    already relocated tools are kept). Raises ToolRefused naming every tool that cannot be."""
    relocated: list[Any] = []
    problems: Problems = []
    for tool in tools:
        problem = adk_tool_problem(tool) if is_adk_tool(tool) else None
        if problem:
            problems.append((tool_name(tool), problem))
            continue
        if not needs_relocation(tool):
            relocated.append(tool)
            continue
        reasons = check_tool(tool)
        if reasons:
            problems.extend((tool_name(tool), reason) for reason in reasons)
        else:
            relocated.append(make_proxy(tool))
    if problems:
        raise ToolRefused(problems)
    return relocated


def relocate(function: ToolFunction) -> ToolFunction:
    """The proxy of one tool function (ToolRefused if it cannot be relocated)."""
    proxy: ToolFunction = relocate_tools([function])[0]  # with the function's very signature
    return proxy


# --- ADK agents, walked by duck typing --------------------------------------------------------------

def relocate_agent(agent: Any, dry_run: bool = False) -> Any:
    """Relocates, in place, every tool of an ADK agent or App, its sub-agents and AgentTools' agents.
    Either every tool is relocated or none is (ToolRefused lists all problems); `dry_run` only checks."""
    changes: list[tuple[Any, int, Any, Any]] = []
    problems: Problems = []
    for owner, index, tool in walk_agent_tools(agent):
        reason = adk_tool_problem(tool) if is_adk_tool(tool) else None  # even around an existing proxy
        if reason:
            problems.append((tool_name(tool), reason))
            continue
        if not needs_relocation(tool):
            continue
        function = tool
        if is_adk_tool(tool):
            if not is_adk_function_tool(tool):
                continue  # a model-side built-in or an AgentTool: nothing of its own runs in the agent
            function = tool.func
        reasons = check_tool(function)
        if reasons:
            problems.extend((tool_name(tool), reason) for reason in reasons)
        else:
            changes.append((owner, index, tool, function))
    if problems:
        raise ToolRefused(problems)
    if dry_run:
        return agent
    for owner, index, tool, function in changes:
        proxy = make_proxy(function)
        if tool is function:
            owner.tools[index] = proxy
        else:
            tool.func = proxy  # an ADK FunctionTool: its declaration is built from func
    return agent


def walk_agent_tools(agent: Any, seen: set[int] | None = None) -> Iterator[tuple[Any, int, Any]]:
    """(agent, index in agent.tools, tool) for every tool of the agent tree."""
    seen = set() if seen is None else seen
    if agent is None or id(agent) in seen:
        return
    seen.add(id(agent))
    if not hasattr(agent, "tools") and hasattr(agent, "root_agent"):  # an ADK App
        yield from walk_agent_tools(agent.root_agent, seen)
        return
    for index, tool in enumerate(list(getattr(agent, "tools", None) or [])):
        yield agent, index, tool
        if inherits(tool, ADK_AGENT_TOOL) is not None:  # AgentTool: its agent's tools run here too
            yield from walk_agent_tools(tool.agent, seen)
    for sub_agent in getattr(agent, "sub_agents", None) or []:
        yield from walk_agent_tools(sub_agent, seen)


def iter_tools(target: Any) -> list[Any]:
    if isinstance(target, (list, tuple)):
        return list(target)
    return [tool for _owner, _index, tool in walk_agent_tools(target)]


def adk_type(where: tuple[str, str]) -> type | None:
    """ADK's own class (module, name), from ADK's module as this process imported it; None when ADK is not
    loaded (then no object can be an instance of it). Never imports a module a tool's class names."""
    if "google.adk" not in sys.modules:
        return None
    module_name, name = where
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) else None


def inherits(tool: object, where: tuple[str, str]) -> type | None:
    """ADK's class `where` when `tool`'s class really derives from it (its MRO, which neither a
    `__class__` property, ABC registration nor `__module__` can fake), else None."""
    cls = adk_type(where)
    return cls if cls is not None and cls in type(tool).__mro__ else None


def adk_defined(cls: type) -> bool:
    """True when `cls` is one of ADK's own classes: the very object that ADK's module, as imported, holds
    under the class's name. A class that only claims an ADK `__module__` (or name) is not."""
    module_name = cls.__dict__.get("__module__")
    if not isinstance(module_name, str) or not module_name.startswith("google.adk."):
        return False
    found: Any = sys.modules.get(module_name)  # never imported from a name the class chose
    for part in getattr(cls, "__qualname__", "").split("."):
        found = getattr(found, part, None)
    return found is cls


def is_adk_tool(tool: object) -> bool:
    return inherits(tool, ADK_BASE_TOOL) is not None or inherits(tool, ADK_BASE_TOOLSET) is not None


def is_adk_function_tool(tool: object) -> bool:
    return inherits(tool, ADK_FUNCTION_TOOL) is not None


class AddedCode(NamedTuple):
    """What a tool object adds to ADK's own code, which ADK would run in the agent."""
    adk_base: type | None  # the first of ADK's own classes in the tool's MRO
    methods: list[str]  # methods, properties and other descriptors of the classes before it
    replaced: list[str]  # methods the object itself replaces with an attribute of its own

    def __bool__(self) -> bool:
        return bool(self.methods or self.replaced)


def added_code(tool: object) -> AddedCode:
    methods: list[str] = []
    adk_base = None
    for cls in type(tool).__mro__:
        if adk_defined(cls):
            adk_base = cls
            break
        methods.extend(name for name, value in vars(cls).items()
                       if name not in INERT_CLASS_ENTRIES and (callable(value) or hasattr(value, "__get__")))
    replaced = [name for name in getattr(tool, "__dict__", {}) if callable(getattr(type(tool), name, None))]
    return AddedCode(adk_base, list(dict.fromkeys(methods)), replaced)


def adk_tool_problem(tool: object) -> str | None:
    """Why an ADK tool object cannot be left to run in the agent, or None. Only ADK's own code may run in
    the agent: a subclass (or the object itself) that adds code is refused, whatever it claims to be."""
    kind = type(tool).__name__
    a_kind = f"{'an' if kind[:1] in 'AEIOU' else 'a'} {kind}"
    if inherits(tool, ADK_BASE_TOOLSET) is not None:
        return (f"a toolset ({kind}) runs its tools in the agent or in a server the agent reaches; only "
                f"functions can be relocated into a sandbox")
    added = added_code(tool)
    function_tool = inherits(tool, ADK_FUNCTION_TOOL)
    if function_tool is not None:
        if not added:
            return None
        parts = [f"overrides FunctionTool.{name}" if hasattr(function_tool, name) else f"adds {name}"
                 for name in added.methods] + [f"replaces {name} on the object" for name in added.replaced]
        return (f"{kind} {', '.join(parts)}: that code would run in the agent, unisolated; keep the tool's "
                f"work in its function")
    if added:
        names = added.methods + [f"{name} (set on the object)" for name in added.replaced]
        return (f"{a_kind} is not a function tool: its {', '.join(names)} would run in the agent, unisolated; "
                f"only functions (and ADK FunctionTools of them) can be relocated into a sandbox")
    if inherits(tool, ADK_AGENT_TOOL) is not None:
        return None  # runs its agent, whose tools are relocated (walked above)
    runs = next((cls for cls in type(tool).__mro__ if "run_async" in vars(cls)), None)
    if added.adk_base is not None and runs is adk_type(ADK_BASE_TOOL):
        return None  # e.g. google_search: the model runs it, nothing runs in the agent
    return (f"{a_kind} is not a function tool: its run_async would run in the agent, unisolated; only "
            f"functions (and ADK FunctionTools of them) can be relocated into a sandbox")


# --- which tools, and the check -------------------------------------------------------------------

def already_sandboxed(function: object) -> bool:
    """Platform tools that run their work in a sandbox themselves (run_python), never relocated."""
    from . import tools as platform_tools
    return function is platform_tools.run_python


def needs_relocation(tool: object) -> bool:
    function = getattr(tool, "func", None) if is_adk_function_tool(tool) else tool
    return not (already_sandboxed(function) or proxy_target(function) is not None)


class _Made(NamedTuple):
    proxy: "weakref.ref[types.FunctionType]"
    code: types.CodeType
    closure: tuple[Any, ...]  # what the proxy's cells held when it was made
    target: str  # "<module>:<function>", what the sandbox imports


# Every proxy make_proxy made, by id() (removed when the proxy dies, before its id can be reused).
_MADE: dict[int, _Made] = {}


def proxy_target(tool: object) -> str | None:
    """What the proxy calls in the sandbox ("<module>:<function>") when `tool` is a proxy make_proxy made,
    still with the code and closure it was made with (so its calls still go to sandboxd); None for
    anything else, whatever its attributes say. This, not a mark, makes a tool count as relocated."""
    made = _MADE.get(id(tool))
    if made is None or made.proxy() is not tool or not isinstance(tool, types.FunctionType) \
            or tool.__code__ is not made.code:
        return None
    cells = tool.__closure__ or ()
    try:
        if len(cells) != len(made.closure) or any(cell.cell_contents is not value
                                                  for cell, value in zip(cells, made.closure, strict=True)):
            return None
    except ValueError:  # an emptied cell
        return None
    return made.target


def _record(proxy: types.FunctionType, target: str) -> None:
    key = id(proxy)
    _MADE[key] = _Made(weakref.ref(proxy), proxy.__code__,
                       tuple(cell.cell_contents for cell in proxy.__closure__ or ()), target)
    weakref.finalize(proxy, _MADE.pop, key, None)


def tool_name(tool: object) -> str:
    function = getattr(tool, "func", tool) if is_adk_function_tool(tool) else tool
    name = getattr(tool, "name", None) if is_adk_tool(tool) else None
    found: str = name or getattr(function, "__qualname__", None) or getattr(function, "__name__", None) \
        or type(tool).__name__
    return found


def check_tool(function: Any) -> list[str]:
    """Every reason `function` cannot be relocated (D7); empty when it can."""
    kind = callable_kind(function)
    if kind:
        return [kind]
    reasons: list[str] = []
    module_name, name, qualname = function.__module__, function.__name__, function.__qualname__
    if name == "<lambda>":
        return ["a lambda has no name the sandbox can import it by; define it with def at the top "
                "level of a module"]
    if "<locals>" in qualname:
        return [f"a nested function or closure ({qualname}) cannot be imported by module and name in the "
                f"sandbox, and what it closes over stays in the agent; define it at the top level of a "
                f"module"]
    if qualname != name:
        return [f"defined inside a class ({qualname}); the sandbox imports top-level functions only"]
    if not module_name or module_name == "__main__":
        return ["defined in __main__ (the script that was started), which the sandbox cannot import by "
                "name; move it into a module of the agent's image"]
    module = sys.modules.get(module_name)
    if module is None or getattr(module, name, None) is not function:
        return [f"{module_name}.{name} is not this function (it is shadowed, rebound or was never a module "
                f"attribute), so the sandbox would import something else"]
    if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
        reasons.append("a generator streams its results; a sandboxed call returns one JSON result")
    try:
        signature = inspect.signature(function)  # what ADK reads: through functools.wraps decorators
    except (TypeError, ValueError) as error:
        return reasons + [f"its signature cannot be read: {error}"]
    for parameter in signature.parameters.values():
        reasons.extend(parameter_problems(function, parameter))
    if signature.return_annotation is not inspect.Signature.empty:
        annotation, problem = resolve_annotation(function, "return", signature.return_annotation)
        problem = problem or json_type_problem(annotation)
        if problem:
            reasons.append(f"its result ({annotation_text(signature.return_annotation)}) does not travel "
                           f"as JSON: {problem}; accepted: {ACCEPTED}")
    return reasons


def callable_kind(function: object) -> str | None:
    """Why a callable is not a plain function, or None."""
    if inspect.isfunction(function):
        return None
    if inspect.ismethod(function):
        return ("a bound method: the sandbox imports functions by module and name and cannot rebuild the "
                "object it is bound to (nor should the object's state leave the agent); make it a top-level "
                "function")
    if type(function).__name__ == "partial":
        return ("a functools.partial: the arguments bound in the agent would not travel; make it a "
                "top-level function")
    if inspect.isbuiltin(function) or inspect.isroutine(function):
        return "a built-in or C function, not a Python function the sandbox can import from the agent's image"
    if callable(function):
        return (f"a callable object ({type(function).__name__}) carries state the sandbox cannot rebuild; "
                f"make the tool a top-level function")
    return f"not callable ({type(function).__name__})"


def parameter_problems(function: Callable[..., Any], parameter: inspect.Parameter) -> list[str]:
    name = parameter.name
    if is_context_parameter(function, parameter):
        if parameter.default is inspect.Parameter.empty:
            return [f"parameter {name!r} is ADK's tool context, which lives in the agent and is never sent "
                    f"to the sandbox; the tool must run without it there: give it a default (None) or "
                    f"drop it"]
        return []
    if name == LIVE_STREAM_PARAMETER:
        return [f"parameter {name!r} is ADK's live input stream, which cannot travel to a sandbox"]
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        return [f"parameter {name!r} is positional-only; arguments travel by name"]
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        return [f"*{name} cannot be passed by name; arguments travel by name"]
    if parameter.annotation is inspect.Parameter.empty:
        return []  # any JSON value: what the model sends is JSON already
    annotation, problem = resolve_annotation(function, name, parameter.annotation)
    problem = problem or json_type_problem(annotation)
    if problem:
        return [f"parameter {name!r} ({annotation_text(parameter.annotation)}) does not travel as JSON: "
                f"{problem}; accepted: {ACCEPTED}"]
    return []


def is_context_parameter(function: Callable[..., Any], parameter: inspect.Parameter) -> bool:
    if parameter.name == CONTEXT_PARAMETER:
        return True
    annotation = parameter.annotation
    if isinstance(annotation, str):
        resolved, problem = resolve_annotation(function, parameter.name, annotation)
        if problem:  # e.g. imported under TYPE_CHECKING only
            return any(word.split(".")[-1] in ADK_CONTEXT_TYPES
                       for word in re.findall(r"[A-Za-z_][\w.]*", annotation))
        annotation = resolved
    return is_adk_context_type(annotation)


def is_adk_context_type(annotation: object) -> bool:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(is_adk_context_type(arm) for arm in typing.get_args(annotation))
    return isinstance(annotation, type) and annotation.__name__ in ADK_CONTEXT_TYPES and adk_defined(annotation)


def resolve_annotation(function: Callable[..., Any], name: str, annotation: Any) -> tuple[Any, str | None]:
    """(annotation with string forward references resolved in the tool's module, problem or None)."""
    if not isinstance(annotation, str) and not _has_forward_refs(annotation):
        return annotation, None
    holder = _AnnotationHolder()
    holder.__annotations__ = {"value": annotation}
    try:
        return typing.get_type_hints(holder, globalns=annotation_globals(function),
                                     include_extras=True)["value"], None
    except Exception as error:  # noqa: BLE001 - NameError, SyntaxError, TypeError...
        return annotation, f"the annotation of {name!r} cannot be resolved ({type(error).__name__}: {error})"


class _AnnotationHolder:
    pass


def annotation_globals(function: Any) -> dict[str, Any]:
    """The namespace typing.get_type_hints resolves a function's string annotations in: that of the
    innermost function behind functools.wraps decorators."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    namespace: dict[str, Any] = getattr(function, "__globals__", {})
    return namespace


def _has_forward_refs(annotation: object) -> bool:
    if isinstance(annotation, (str, typing.ForwardRef)):
        return True
    return any(_has_forward_refs(arg) for arg in typing.get_args(annotation))


def json_type_problem(annotation: Any) -> str | None:
    """None when values of this (resolved) annotation travel as JSON unchanged, else what does not."""
    if annotation is inspect.Parameter.empty or annotation is typing.Any or annotation is None \
            or annotation is type(None):
        return None
    if annotation in (str, int, float, bool, list, dict):
        return None
    if hasattr(annotation, "__supertype__"):  # typing.NewType
        return json_type_problem(annotation.__supertype__)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return json_type_problem(args[0])
    if origin in (typing.Union, types.UnionType):
        return next((problem for problem in map(json_type_problem, args) if problem), None)
    if origin is typing.Literal:
        bad = [value for value in args if value is not None and type(value) not in (str, int, float, bool)]
        return f"Literal values {bad!r} are not JSON scalars" if bad else None
    if origin is list:
        return json_type_problem(args[0]) if args else None
    if origin is dict:
        if args and args[0] is not str:
            return f"JSON object keys are strings, not {annotation_text(args[0])}"
        return json_type_problem(args[1]) if args else None
    if typing.is_typeddict(annotation) or (isinstance(annotation, type) and issubclass(annotation, dict)
                                           and hasattr(annotation, "__required_keys__")):  # typing_extensions
        hints = typing.get_type_hints(annotation, include_extras=True)
        return next((f"{annotation.__name__}.{key}: {problem}" for key, problem in
                     ((key, json_type_problem(hint)) for key, hint in hints.items()) if problem), None)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return f"{annotation.__name__} is an Enum (the sandbox would receive its value, not a member)"
    return f"{annotation_text(annotation)} is not a JSON type"


def annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


# --- the proxy ------------------------------------------------------------------------------------

def make_proxy(function: Callable[..., Any]) -> types.FunctionType:
    """A function that looks exactly like `function` to ADK and to the model (name, qualname, module,
    docstring, signature, annotations, async-ness, and the module globals its string annotations
    resolve in) and runs it through POST /v1/call. It keeps no reference to `function`: nothing
    unwrapping it (`__wrapped__`) can find the in-process original."""
    module_name, name = function.__module__, function.__name__
    signature = inspect.signature(function)
    context_names = {p.name for p in signature.parameters.values() if is_context_parameter(function, p)}
    variadic = {p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD}

    def send(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        bound = signature.bind(*args, **kwargs)
        call_args: dict[str, Any] = {}
        for parameter_name, value in bound.arguments.items():
            if parameter_name in context_names:
                continue  # ADK's context stays in the agent
            if parameter_name in variadic:
                call_args.update(value)
            else:
                call_args[parameter_name] = value
        check_arguments(name, call_args)
        return tool_call.call_tool(name, module_name, name, call_args)

    if inspect.iscoroutinefunction(function):
        async def send_async(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            context = contextvars.copy_context()
            try:
                return await asyncio.get_running_loop().run_in_executor(None, context.run, send, args, kwargs)
            finally:
                tool_call.last_call.set(context.get(tool_call.last_call))
        template = _async_template(send_async)
    else:
        template = _sync_template(send)
    # The proxy's code uses only its closure, so it may run with the tool module's globals: then
    # typing.get_type_hints (which ADK uses) resolves string annotations exactly as for the original.
    code = template.__code__.replace(co_name=name, co_qualname=function.__qualname__)
    proxy = types.FunctionType(code, annotation_globals(function), name, None, template.__closure__)
    proxy.__dict__.update({key: value for key, value in vars(function).items() if key != "__wrapped__"})
    proxy.__module__ = module_name
    proxy.__qualname__ = function.__qualname__
    proxy.__doc__ = function.__doc__
    proxy.__annotations__ = dict(function.__annotations__)
    proxy.__signature__ = signature  # type: ignore[attr-defined]  # what inspect.signature reads first
    _record(proxy, f"{module_name}:{name}")
    return proxy


def _sync_template(send: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> types.FunctionType:
    def proxy(*args: Any, **kwargs: Any) -> Any:
        return send(args, kwargs)
    return typing.cast(types.FunctionType, proxy)  # a def is one; mypy calls it a Callable


def _async_template(send_async: Callable[[tuple[Any, ...], dict[str, Any]], Awaitable[Any]]) -> types.FunctionType:
    async def proxy(*args: Any, **kwargs: Any) -> Any:
        return await send_async(args, kwargs)
    return typing.cast(types.FunctionType, proxy)


def check_arguments(tool: str, call_args: Mapping[str, Any]) -> None:
    """TypeError naming the argument when one does not travel as JSON (checked before any call)."""
    for name, value in call_args.items():
        try:
            json.dumps(value, allow_nan=False, default=_refuse)
        except (TypeError, ValueError) as error:
            raise TypeError(f"tool {tool!r}: argument {name!r} does not travel as JSON to the tool's "
                            f"sandbox ({error})") from None


def _refuse(value: object) -> NoReturn:
    raise TypeError(f"{type(value).__name__} is not JSON")
