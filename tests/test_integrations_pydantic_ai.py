"""The Pydantic AI toolset against the real ``pydantic-ai-slim`` package, driven by its own
``FunctionModel`` (scripted tool calls) and ``TestModel`` (calls every tool); no real model."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from kenning.integrations.pydantic_ai import memory_toolset


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]


def test_an_agent_remembers_and_recalls_through_the_toolset(kn):
    seen: dict[str, object] = {}

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.setdefault("tools", [t.name for t in info.function_tools])
        returns = _returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("remember", {"content": "Grace prefers window seats."})])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "Which seat does Grace prefer?", "top_k": 5})])
        if len(returns) == 2:
            return ModelResponse(parts=[ToolCallPart("context", {"query": "seats"})])
        seen["recall"], seen["context"] = returns[1].content, returns[2].content
        return ModelResponse(parts=[TextPart("A window seat.")])

    agent = Agent(FunctionModel(script), toolsets=[memory_toolset(kn, user="grace", session="trip")])
    result = agent.run_sync("Book me a seat; I like the window.")
    assert result.output == "A window seat."
    assert seen["tools"] == ["recall", "remember", "context"]
    assert "Grace prefers window seats" in seen["recall"] and "current" in seen["recall"]
    assert "Grace prefers window seats" in seen["context"]
    stored = kn.list(user="grace")
    assert [m.session for m in stored] == ["trip"]  # the application's scope, not the model's


def test_a_bad_argument_goes_back_to_the_model_in_kennings_words(kn):
    answers: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        told = [str(p.content) for m in messages for p in getattr(m, "parts", [])
                if p.part_kind in ("retry-prompt", "tool-return")]
        if not told:
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "x", "top_k": 0})])
        answers.extend(told)
        return ModelResponse(parts=[TextPart("gave up")])

    agent = Agent(FunctionModel(script), toolsets=[memory_toolset(kn, ["recall"])])
    assert agent.run_sync("?").output == "gave up"
    assert answers == ["recall: top_k: Input should be greater than or equal to 1"]


def test_the_test_model_calls_every_tool(kn):
    kn.remember("Heidi lives in Oslo.", user="heidi")
    agent = Agent(TestModel(), toolsets=[memory_toolset(kn, user="heidi")])
    result = agent.run_sync("hello")
    returns = _returns(result.all_messages())
    assert {r.tool_name for r in returns} == {"recall", "remember", "context"}
    assert all(isinstance(r.content, str) and not r.content.startswith("error") for r in returns)
