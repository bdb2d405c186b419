"""Agent-side pieces of the platform: the run_python tool (tools.py); the agent runtime's entry point
(serve.py), which relocates every tool of the agent into a sandbox before serving (relocation.py,
tool_call.py, errors.py; D7); and the in-image tool runner (toolrunner.py, started by sandboxd as
`python3 -m crusoe_adk.toolrunner`). Importing the package imports none of them."""
