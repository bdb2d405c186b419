"""The guide's quick-start agent, with the test image's tools: an ADK LlmAgent whose own tools are
relocated into sandboxes by the entry point (`python -m crusoe_adk.serve adk_agent:root_agent`); the
agent's code calls nothing for it.

Needs google-adk, so it is not in the test agent image (whose tool pods import only agent.py); the
ADK tests run it from the venv toolrunner/adk-venv.sh creates.
"""
from google.adk.agents import LlmAgent

from agent import Counter, add, convert_temperature, get_weather, inspect_environment, remember
from crusoe_adk.tools import run_python


def make_root_agent(model=""):
    return LlmAgent(
        name="analyst",
        model=model,
        tools=[run_python, get_weather, add, inspect_environment, convert_temperature, remember],
        instruction="When a question needs arithmetic or parsing, write Python and run it.",
    )


root_agent = make_root_agent()

# A tool that cannot be relocated: under TOOL_SANDBOX=true this agent must not start (D7).
unrelocatable_agent = LlmAgent(name="unrelocatable", tools=[get_weather, Counter().count])
