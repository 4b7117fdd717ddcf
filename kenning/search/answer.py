"""Answers from retrieved facts: exactly one model call, with citations mapped back to ids.

Each fact goes to the model with its sentence, its valid-time interval, whether it is still
true at ``now``, and short labels (``f1`` for facts, ``m1`` for memories) instead of store ids.
The model cites labels; we map them back and drop any label that was not in the prompt. The
citations are the cited fact ids, then the memory ids cited directly or through a cited fact.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, Field

from .._time import as_utc
from ..errors import ModelNotConfiguredError, ModelResponseError
from ..models import Usage
from ..providers.jsonparse import find_json_object, strip_reasoning
from ..providers.base import ChatModel

__all__ = ["ANSWER_SCHEMA", "NO_MEMORIES", "AnswerFact", "answer_question"]

NO_MEMORIES = "No relevant memories."

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "citations": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["answer", "citations"],
}

_SYSTEM = """\
Answer the question using only the facts given. Now is {now}. Each fact shows when it was true \
and whether it still is: answer about the present from current facts unless the question asks \
about another time. If the facts do not answer the question, say so. Reply JSON: answer (short), \
citations (labels of the facts f and memories m you used)."""


class AnswerFact(BaseModel):
    """A retrieved fact as the answer step sees it (other hits, such as chunks, fit too: they
    have no dates and are shown without a period)."""

    id: str
    sentence: str
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    current: bool = True
    memory_ids: list[str] = Field(default_factory=list)
    #: where it was read, for a passage of a file: ``report.pdf p. 12 › Results``
    where: str | None = None


def answer_question(
    chat: ChatModel | None, query: str, facts: list[AnswerFact], now: dt.datetime, usage: Usage
) -> tuple[str, list[str]]:
    """``(answer, citations)``; with no facts, ``NO_MEMORIES`` and no call."""
    if not facts:
        return NO_MEMORIES, []
    if chat is None:
        raise ModelNotConfiguredError(
            "answers need a chat model: set KENNING_LLM (and KENNING_LLM_BASE_URL for a local server)"
        )
    memory_labels: dict[str, str] = {}
    for fact in facts:
        for memory_id in fact.memory_ids:
            memory_labels.setdefault(memory_id, f"m{len(memory_labels) + 1}")
    lines = ["Facts:"]
    for i, fact in enumerate(facts):
        memories = ", ".join(memory_labels[m] for m in fact.memory_ids)
        notes = "; ".join(part for part in (fact.where, _period(fact), memories) if part)
        lines.append(f"f{i + 1} ({notes}) {fact.sentence}" if notes else f"f{i + 1} {fact.sentence}")
    lines.append(f"Question: {query}")
    stamp = (as_utc(now) or now).strftime("%Y-%m-%d %H:%M UTC")
    messages = [
        {"role": "system", "content": _SYSTEM.format(now=stamp)},
        {"role": "user", "content": "\n".join(lines)},
    ]
    raw = chat.complete_json(messages, ANSWER_SCHEMA, "answer", usage)
    answer, cited = _read(raw)
    return answer, _citations(cited, facts, {label: m for m, label in memory_labels.items()})


def _period(fact: AnswerFact) -> str:
    if fact.valid_at is None and fact.invalid_at is None:
        # undated text (a chunk, an entity): claim nothing about its time unless it is closed
        return "" if fact.current else "no longer true"
    start = fact.valid_at.date().isoformat() if fact.valid_at else "?"
    end = fact.invalid_at.date().isoformat() if fact.invalid_at else "now"
    return f"{start} to {end}, {'true now' if fact.current else 'no longer true'}"


def _read(raw: str) -> tuple[str, list[object]]:
    try:
        data = find_json_object(raw)
    except ModelResponseError:
        text = strip_reasoning(raw)
        if text and "{" not in text:  # a server without structured output answered in prose
            return text, []
        raise
    answer = data.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        raise ModelResponseError("the answer JSON has no 'answer' text")
    cited = data.get("citations")
    return answer.strip(), cited if isinstance(cited, list) else []


def _citations(cited: list[object], facts: list[AnswerFact], memories: dict[str, str]) -> list[str]:
    fact_ids: list[str] = []
    memory_ids: list[str] = []
    for value in cited:
        label = str(value).strip().strip("[]()").casefold()
        if label in memories:
            memory_ids.append(memories[label])
        elif label.startswith("f") and label[1:].isdigit() and 0 < int(label[1:]) <= len(facts):
            fact = facts[int(label[1:]) - 1]
            fact_ids.append(fact.id)
            memory_ids += fact.memory_ids
    return list(dict.fromkeys(fact_ids)) + list(dict.fromkeys(memory_ids))
