"""Agent-side pieces of the platform: the run_python tool (tools.py) and the in-image tool runner
(toolrunner.py, started by sandboxd as `python3 -m crusoe_adk.toolrunner`)."""
