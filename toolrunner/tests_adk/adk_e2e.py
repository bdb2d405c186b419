"""The ADK half of ToolRelocationIT, run on the node with the venv of ../adk-venv.sh against the real
sandboxd (SANDBOX_URL: its Service's ClusterIP; SANDBOX_TOKEN: a token naming the test agent image).

The guide's quick-start LlmAgent (sample_agent/adk_agent.py) is relocated by the entry point's loader,
exactly as `python -m crusoe_adk.serve adk_agent:root_agent` does, then ADK's own Runner executes the
tool calls a scripted model asks for (no model is called). Prints one JSON report on stdout:
  declarations_before / declarations_after   what ADK declares to the model for each tool
  responses                                   {tool: the function response ADK got}
  sandboxes                                   [{tool, sandbox_id, duration_ms}] from the client's log
"""
import json
import logging
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "sample_agent")]

import adk_agent  # noqa: E402
from adk_harness import declarations, run_agent  # noqa: E402
from crusoe_adk import serve  # noqa: E402

CALLS = [("get_weather", {"city": "Reykjavik"}),
         ("convert_temperature", {"celsius": 4, "unit": "K"}),
         ("remember", {"note": "umbrella"}),
         ("inspect_environment", {})]


class Sandboxes(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        if getattr(record, "sandbox", None):
            self.records.append(record.sandbox)


def main():
    sandboxes = Sandboxes()
    logging.getLogger("crusoe_adk").addHandler(sandboxes)
    logging.getLogger("crusoe_adk").setLevel(logging.INFO)
    before = declarations(adk_agent.root_agent)
    root = serve.load_agent("adk_agent:root_agent")  # the entry point's loader: relocates every tool
    after = declarations(root)
    responses, _requests = run_agent(root, CALLS)
    print(json.dumps({"declarations_before": before, "declarations_after": after,
                      "responses": dict(responses), "sandboxes": sandboxes.records}))


if __name__ == "__main__":
    main()
