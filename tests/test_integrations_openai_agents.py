"""The OpenAI Agents SDK integration against the real ``openai-agents`` package: a scripted model
(the SDK's ``Model`` interface, implemented here) drives ``Runner.run`` with a ``KenningSession``
and kenning's function tools; no network, no real model."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from kenning.integrations.openai_agents import KenningSession, memory_tools

set_tracing_disabled(True)  # no trace export: nothing leaves the machine


def _say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def _call(name: str, arguments: dict[str, Any], n: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{n}", call_id=f"call_{n}", type="function_call", name=name,
                                    arguments=json.dumps(arguments))


class ScriptedModel(Model):
    """Answers each turn with the next scripted output; records what it was given."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.inputs: list[Any] = []
        self.tools: list[list[str]] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,  # noqa: A002, ANN001
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None):  # noqa: ANN001
        self.inputs.append(input)
        self.tools.append([t.name for t in tools])
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        raise NotImplementedError("the test model does not stream")


def test_session_keeps_the_history_as_kenning_messages(kn):
    session = KenningSession(kn, "conv-1", user="alice", dataset="main")

    async def main() -> tuple:
        await session.add_items([{"role": "user", "content": "I moved to Lisbon last month."},
                                 {"role": "assistant", "content": "Noted: Lisbon."}])
        await session.add_items([{"type": "function_call", "call_id": "c1", "name": "recall", "arguments": "{}"},
                                 {"type": "function_call_output", "call_id": "c1", "output": "nothing"}])
        everything = await session.get_items()
        latest = await session.get_items(limit=2)
        popped = await session.pop_item()
        after = await session.get_items()
        return everything, latest, popped, after

    everything, latest, popped, after = anyio.run(main)
    assert [i.get("content", i.get("type")) for i in everything] == [
        "I moved to Lisbon last month.", "Noted: Lisbon.", "function_call", "function_call_output"]
    assert latest == everything[2:]
    assert popped == {"type": "function_call_output", "call_id": "c1", "output": "nothing"}
    assert after == everything[:3]
    # the text turns are kenning messages of that user and session, their facts extracted
    assert {m.session for m in kn.list(session="conv-1")} == {"conv-1"}
    assert "Lisbon" in kn.context(user="alice").text
    anyio.run(session.clear_session)
    assert anyio.run(session.get_items) == [] and kn.list(session="conv-1") == []


def test_an_agent_run_uses_the_session_and_the_memory_tools(kn):
    kn.remember("Alice is allergic to peanuts.", user="alice")
    model = ScriptedModel([
        [_call("recall", {"query": "What is Alice allergic to?"}, 1)],
        [_call("remember", {"content": "Alice wants a nut-free cake for Saturday."}, 2)],
        [_say("A nut-free cake it is: you are allergic to peanuts.")],
        [_say("You asked for a nut-free cake.")],
    ])
    agent = Agent(name="baker", instructions="Use memory.", model=model,
                  tools=memory_tools(kn, user="alice", session="s1"))
    session = KenningSession(kn, "s1", user="alice")

    async def main() -> tuple:
        first = await Runner.run(agent, "Bake me a cake for Saturday.", session=session)
        second = await Runner.run(agent, "What did I ask for?", session=session)
        return first, second

    first, second = anyio.run(main)
    assert first.final_output.startswith("A nut-free cake")
    assert model.tools[0] == ["recall", "remember", "context"]
    # the recall tool's answer (compact text) reached the model in its next input
    tool_output = next(i for i in model.inputs[1] if isinstance(i, dict) and i.get("type") == "function_call_output")
    assert "allergic to peanuts" in tool_output["output"] and "current" in tool_output["output"]
    # the remember tool stored into the user's scope, and the second run saw the first's history
    assert any("nut-free cake" in m.content for m in kn.list(user="alice"))
    assert any(isinstance(i, dict) and i.get("content") == "Bake me a cake for Saturday." for i in model.inputs[3])
    assert second.final_output == "You asked for a nut-free cake."


def test_a_bad_tool_call_reaches_the_model_as_a_typed_error(kn):
    (recall,) = memory_tools(kn, ["recall"], user="alice")
    assert "user" not in recall.params_json_schema["properties"]  # fixed by the application

    async def main() -> str:
        return await recall.on_invoke_tool(None, json.dumps({"query": "x", "lanes": "all"}))

    answer = anyio.run(main)
    assert answer.startswith("error: validation_error") and "unknown argument 'lanes'" in answer
