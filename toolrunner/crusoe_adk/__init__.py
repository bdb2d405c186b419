"""Agent-side pieces of the platform: the run_python tool (tools.py); the agent runtime's entry point
(serve.py), which relocates every tool of the agent into a sandbox before serving (relocation.py,
tool_call.py, errors.py; D7); the in-image tool runner (toolrunner.py, started by sandboxd as
`python3 -m crusoe_adk.toolrunner`); and SandboxdCodeExecutor (code_executor.py), Google ADK's code
executor for sandboxd. Importing the package imports none of them: the package is standard library only,
and `crusoe_adk.SandboxdCodeExecutor`, the one piece that needs google-adk (the `adk` extra), is imported
when first used."""
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees of the lazy attribute below
    from .code_executor import SandboxdCodeExecutor as SandboxdCodeExecutor


def __getattr__(name: str) -> Any:
    if name == "SandboxdCodeExecutor":
        try:
            from .code_executor import SandboxdCodeExecutor
        except ImportError as error:
            raise ImportError(f"crusoe_adk.SandboxdCodeExecutor needs google-adk ({error}): "
                              f"pip install 'crusoe-adk[adk]'") from error
        return SandboxdCodeExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
