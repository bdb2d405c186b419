"""Driving a real ADK agent without a model: a scripted model asks for tool calls, ADK's own Runner
executes them (FunctionTool.run_async, with a real ToolContext), and what the model was shown (the
tool declarations in its request) is kept. Used by the tests here and by ToolRelocationIT's script."""
import asyncio

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types


def scripted_model(calls):
    """(model, requests): the model asks for each (tool name, args) of `calls` in turn (one per turn),
    then answers "done"; `requests` collects every LlmRequest it was sent."""
    requests = []

    class ScriptedModel(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):
            requests.append(llm_request)
            step = len(requests) - 1
            if step < len(calls):
                name, args = calls[step]
                part = types.Part(function_call=types.FunctionCall(name=name, args=args))
            else:
                part = types.Part(text="done")
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    return ScriptedModel(model="scripted"), requests


async def declarations_async(agent):
    """The FunctionDeclaration ADK builds for each of the agent's tools, as JSON."""
    return [tool._get_declaration().model_dump(mode="json", exclude_none=True)
            for tool in await agent.canonical_tools()]


def declarations(agent):
    return asyncio.run(declarations_async(agent))


def shown_to_model(request):
    """The tool declarations of one LlmRequest, as the model receives them."""
    return [declaration.model_dump(mode="json", exclude_none=True)
            for tool in request.config.tools or [] for declaration in tool.function_declarations or []]


async def run_agent_async(agent, calls, text="go"):
    """Runs `agent` (its model replaced by a scripted one) for one user message; returns
    (function responses as [(name, response)], the requests the model got)."""
    model, requests = scripted_model(calls)
    agent.model = model
    runner = InMemoryRunner(agent=agent, app_name="relocation-test")
    session = await runner.session_service.create_session(app_name="relocation-test", user_id="user")
    responses = []
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
        for part in (event.content.parts if event.content else None) or []:
            if part.function_response:
                responses.append((part.function_response.name, part.function_response.response))
    return responses, requests


def run_agent(agent, calls, text="go"):
    return asyncio.run(run_agent_async(agent, calls, text))
