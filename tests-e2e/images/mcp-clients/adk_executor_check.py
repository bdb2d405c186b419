"""Google ADK's code-execution loop against a real sandboxd: an LlmAgent whose model is scripted (no model is
called) answers with a ```python block, and crusoe_adk.SandboxdCodeExecutor runs it through POST /v1/execute.

    check_adk_code_executor(base_url, token_headers)           one turn: print(6 * 7) must come back as 42
    check_adk_code_executor_stateful(base_url, token_headers)  stateful=True, two turns: x = 6 * 7, then print(x)
    check_adk_code_executor_chart(base_url, token_headers)     a matplotlib chart left open comes back as an output
                                                               file, kept by ADK as an image/png artifact (D16)
    check_adk_code_executor_data_file(base_url, token_headers) optimize_data_file=True: ADK loads a CSV the user
                                                               attached with pandas in the sandbox, explores it, and
                                                               the model's code sums a column of that DataFrame

`token_headers` is what crusoe_core.adapter.internal_caller_headers() gives an agent:
{"Authorization": "Bearer <project token>"}. Each check returns {"name", "ok", "detail"} and never raises;
google.adk is imported only when a check runs, so importing this module is cheap.
"""
import asyncio
import concurrent.futures

APP = "adk-code-executor-check"
# The code never contains the marker: it can only come from the code having run.
TURNS_ONE = [("compute", "print(6 * 7)")]
TURNS_STATEFUL = [("set", "x = 6 * 7"), ("show", "print(x)")]
TURNS_CHART = [("chart", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 4])\nprint(6 * 7)")]
MARKER = "42"
CHART = ("figure-1.png", "image/png")
# ADK names an attached file data_<content>_<part>.csv and loads it as the DataFrame of that name (data_1_2 in
# ADK 2.13); the model's code finds it as a model would, by what ADK printed. b sums to 42.
TURNS_DATA_FILE = [("sum", "df = next(v for k, v in globals().items() if k.startswith('data_'))\n"
                           "print(int(df['b'].sum()))")]
DATA_FILE = b"a,b\n1,20\n3,22\n"


def check_adk_code_executor(base_url: str, token_headers: dict) -> dict:
    """One turn, one single-use sandbox: the code block's printed 42 comes back in ADK's events."""
    return _check("adk-code-executor", base_url, token_headers, TURNS_ONE, stateful=False)


def check_adk_code_executor_stateful(base_url: str, token_headers: dict) -> dict:
    """stateful=True: two turns of one ADK session share one sandboxd session (its id is the ADK session's),
    so the second turn's print(x) finds the x the first turn set."""
    return _check("adk-code-executor-stateful", base_url, token_headers, TURNS_STATEFUL, stateful=True)


def check_adk_code_executor_chart(base_url: str, token_headers: dict) -> dict:
    """A chart the code block leaves open comes back as one of the run's output files, which ADK keeps as an
    artifact of the session with its MIME type."""
    return _check("adk-code-executor-chart", base_url, token_headers, TURNS_CHART, stateful=False, artifact=CHART)


def check_adk_code_executor_data_file(base_url: str, token_headers: dict) -> dict:
    """optimize_data_file=True (stateful, as ADK's data-file flow needs the DataFrame kept): ADK runs its own
    pandas code on the attached CSV first (one more code execution result), then the model's code uses the
    DataFrame it loaded."""
    return _check("adk-code-executor-data-file", base_url, token_headers, TURNS_DATA_FILE, stateful=True,
                  data_file=DATA_FILE)


def _check(name, base_url, token_headers, turns, stateful, artifact=None, data_file=None):
    try:
        outputs, artifacts = _run(_run_turns(base_url, token_headers, turns, stateful, data_file))
    except Exception as error:  # noqa: BLE001 - a check reports, it does not raise
        return {"name": name, "ok": False, "detail": f"{type(error).__name__}: {error}"}
    expected = len(turns) + (1 if data_file else 0)  # ADK's exploration of the file is a code execution too
    ok = (len(outputs) == expected and all(outcome == "OUTCOME_OK" for outcome, _output in outputs)
          and f"\n{MARKER}\n" in outputs[-1][1]  # the printed line itself
          and (artifact is None or artifacts.get(artifact[0]) == artifact[1]))
    shown = "; ".join(f"{outcome}: {_squashed(output)}" for outcome, output in outputs) or "no code execution result"
    if artifact:
        shown += f"; artifacts {artifacts}"
    how = "one interpreter across two turns" if stateful else "a single-use sandbox"
    if ok:
        detail = f"ADK ran the model's code blocks in sandboxd ({how}) and got {MARKER} back: {shown}"
    else:
        wanted = f" and the artifact {artifact[0]} ({artifact[1]})" if artifact else ""
        detail = (f"expected {expected} successful code execution result(s), the last with {MARKER}{wanted}; "
                  f"got {shown}")
    return {"name": name, "ok": ok, "detail": detail}


def _squashed(text, limit=300):
    """One line of at most `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _run(coroutine):
    """asyncio.run, also from a caller that is itself inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _run_turns(base_url, token_headers, turns, stateful, data_file=None):
    """[(outcome, output)] of every code execution result in the events of the turns, in order, and
    {artifact name: MIME type} of the session's artifacts (the runs' output files) afterwards."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from crusoe_adk import SandboxdCodeExecutor

    executor = SandboxdCodeExecutor(base_url=base_url, headers=dict(token_headers), timeout_s=20,
                                    stateful=stateful, optimize_data_file=data_file is not None)
    agent = LlmAgent(name="calculator", model=_scripted_model(dict(turns), executor), code_executor=executor,
                     instruction="Answer with Python code.")
    runner = InMemoryRunner(agent=agent, app_name=APP)
    session = await runner.session_service.create_session(app_name=APP, user_id="check")
    results = []
    for text, _code in turns:
        parts = [types.Part(text=text)]
        if data_file is not None:
            parts.append(types.Part(inline_data=types.Blob(mime_type="text/csv", data=data_file)))
        message = types.Content(role="user", parts=parts)
        async for event in runner.run_async(user_id="check", session_id=session.id, new_message=message):
            for part in (event.content.parts if event.content else None) or []:
                if part.code_execution_result:
                    outcome = part.code_execution_result.outcome
                    results.append((getattr(outcome, "name", str(outcome)), part.code_execution_result.output or ""))
    artifacts = {}
    scope = {"app_name": APP, "user_id": "check", "session_id": session.id}
    for key in await runner.artifact_service.list_artifact_keys(**scope):
        part = await runner.artifact_service.load_artifact(filename=key, **scope)
        artifacts[key] = part.inline_data.mime_type if part is not None and part.inline_data else None
    return results, artifacts


def _scripted_model(code_for, executor):
    """A BaseLlm that answers a user message with its code (in the executor's ```python fence), once, and
    anything after (its code's result, which ADK sends back as the next request's last content) with a closing
    sentence. The message is known by its first part's text: ADK may add parts (an attached file's name)."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    lead, trail = next(pair for pair in executor.code_block_delimiters if pair[0].startswith("```python"))

    answered = set()

    class ScriptedCodeModel(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):
            asked = [c.parts[0].text for c in llm_request.contents
                     if c.role == "user" and c.parts and c.parts[0].text in code_for]
            text = asked[-1] if asked else None
            if text is None or text in answered:
                answer = "Done."
            else:
                answered.add(text)
                answer = f"{lead}{code_for[text]}{trail}"
            # Usage reported (none spent), so ADK's telemetry does not warn about every answer.
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]),
                              usage_metadata=types.GenerateContentResponseUsageMetadata(
                                  prompt_token_count=0, candidates_token_count=0))

    return ScriptedCodeModel(model="scripted-code-model")
