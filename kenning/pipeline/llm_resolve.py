"""Model-assisted resolution: duplicates, contradictions and ambiguous entities in ONE call.

The pipeline resolves everything it can in code first (exact repeats, normalized names,
aliases, embedding similarity); only the remainder reaches ``resolve_with_model``. The prompt
names things by short labels (``n1`` new facts, ``c1`` stored candidates, ``q1`` entity
questions, ``e1`` their options) instead of store ids: fewer tokens, and any label the model
invents maps to nothing and is dropped. With no candidates and no questions no call is made.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import BaseModel, Field

from ..models import Usage
from ..providers.base import ChatModel
from ..providers.jsonparse import find_json_object

__all__ = ["CandidateFact", "EntityQuestion", "NewFact", "Verdicts", "fact_line", "resolve_with_model"]


class NewFact(BaseModel):
    """A fact of the memory being processed; referred to by its index in the list."""

    source: str
    relation: str
    target: str
    sentence: str
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    #: stated as a change of value ("switched to coffee"): shown to the model as [changed]
    changes: bool = False


class CandidateFact(NewFact):
    """A live stored fact that a new fact may repeat or contradict."""

    id: str


class EntityQuestion(BaseModel):
    """A new entity name that code could not match with certainty.

    ``options`` are stored entities as ``(id, name, type)``.
    """

    name: str
    type: str
    options: list[tuple[str, str, str]]


class Verdicts(BaseModel):
    """``duplicates``: new-fact index → candidate id; ``contradictions``: new-fact index →
    candidate ids it closes; ``entity_matches``: question index → chosen entity id."""

    duplicates: dict[int, str] = Field(default_factory=dict)
    contradictions: dict[int, list[str]] = Field(default_factory=dict)
    entity_matches: dict[int, str] = Field(default_factory=dict)


_SYSTEM_FACTS = """\
Compare new facts (n) with stored facts (c). Answer JSON.
duplicates: a new fact stating the same as a stored fact, even if worded differently.
contradictions: stored facts a new fact makes no longer true (a new employer, home, partner or \
status replacing the old one; a new fact marked [changed] ends the old value of its kind: a drink \
by a drink, a phone by a phone); not facts that can both hold, not facts about other periods."""
_SYSTEM_ENTITIES = """\
entities: for each question (q), the option (e) that is the same real-world entity, else null."""
_SYSTEM_END = "Use only the given labels. Leave lists empty when nothing applies."

_STRING = {"type": "string"}
_FACT_PROPERTIES: dict[str, Any] = {
    "duplicates": {
        "type": "array",
        "description": "new facts that repeat a stored fact, if any",
        "items": {
            "type": "object",
            "properties": {"new": _STRING, "stored": _STRING},
            "required": ["new", "stored"],
        },
    },
    "contradictions": {
        "type": "array",
        "description": "new facts that end stored facts, if any",
        "items": {
            "type": "object",
            "properties": {"new": _STRING, "stored": {"type": "array", "items": _STRING}},
            "required": ["new", "stored"],
        },
    },
}
_ENTITY_PROPERTIES: dict[str, Any] = {
    "entities": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"question": _STRING, "match": {"type": ["string", "null"]}},
            "required": ["question", "match"],
        },
    },
}


def resolve_with_model(
    chat: ChatModel,
    new_facts: list[NewFact],
    candidates: list[CandidateFact],
    usage: Usage,
    ambiguous_entities: list[EntityQuestion] | tuple[EntityQuestion, ...] = (),
) -> Verdicts:
    """One call that judges duplicates, contradictions and ambiguous entities together."""
    ask_facts = bool(new_facts and candidates)
    questions = list(ambiguous_entities)
    if not ask_facts and not questions:
        return Verdicts()
    labels = _Labels(new_facts if ask_facts else [], candidates if ask_facts else [], questions)
    system, properties = [], {}
    if ask_facts:
        system.append(_SYSTEM_FACTS)
        properties.update(_FACT_PROPERTIES)
    if questions:
        system.append(_SYSTEM_ENTITIES)
        properties.update(_ENTITY_PROPERTIES)
    system.append(_SYSTEM_END)
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    messages = [
        {"role": "system", "content": "\n".join(system)},
        {"role": "user", "content": labels.prompt()},
    ]
    answer = chat.complete_json(messages, schema, "resolution", usage)
    return labels.read(find_json_object(answer))


def _when(valid_at: dt.datetime | None, invalid_at: dt.datetime | None) -> str:
    if valid_at is None and invalid_at is None:
        return ""
    start = valid_at.date().isoformat() if valid_at else "?"
    end = invalid_at.date().isoformat() if invalid_at else "now"
    return f" ({start} to {end})"


def fact_line(label: str, fact: NewFact) -> str:
    """One fact as a prompt line: label, relation, sentence and period."""
    changed = " [changed]" if fact.changes else ""
    return f"{label} [{fact.relation}]{changed} {fact.sentence}{_when(fact.valid_at, fact.invalid_at)}"


class _Labels:
    """The short labels of one prompt, and the way back from them to indexes and ids."""

    def __init__(
        self, new_facts: list[NewFact], candidates: list[CandidateFact], questions: list[EntityQuestion]
    ) -> None:
        self.new_facts = new_facts
        self.candidates = candidates
        self.questions = questions
        self.candidate_ids = {f"c{i + 1}": fact.id for i, fact in enumerate(candidates)}
        self.options: list[dict[str, str]] = []  # per question: option label -> entity id
        number = 0
        for question in questions:
            choices = {}
            for option in question.options:
                number += 1
                choices[f"e{number}"] = option[0]
            self.options.append(choices)

    def prompt(self) -> str:
        lines: list[str] = []
        if self.new_facts:
            lines.append("New facts:")
            lines += [fact_line(f"n{i + 1}", fact) for i, fact in enumerate(self.new_facts)]
            lines.append("Stored facts:")
            lines += [fact_line(f"c{i + 1}", fact) for i, fact in enumerate(self.candidates)]
        if self.questions:
            lines.append("Entities:")
            for i, question in enumerate(self.questions):
                options = "; ".join(
                    f'{label} "{option[1]}" ({option[2]})'
                    for label, option in zip(self.options[i], question.options, strict=True)
                )
                lines.append(f'q{i + 1} "{question.name}" ({question.type}): {options}')
        return "\n".join(lines)

    def read(self, data: dict[str, Any]) -> Verdicts:
        verdicts = Verdicts()
        for item in _items(data.get("duplicates")):
            index, stored = self._new(item.get("new")), self._candidate(item.get("stored"))
            if index is not None and stored is not None:
                verdicts.duplicates.setdefault(index, stored)
        for item in _items(data.get("contradictions")):
            index = self._new(item.get("new"))
            stored = item.get("stored")
            found = [self._candidate(label) for label in (stored if isinstance(stored, list) else [stored])]
            ids = [i for i in found if i is not None and (index is None or i != verdicts.duplicates.get(index))]
            if index is not None and index not in verdicts.duplicates and ids:
                known = verdicts.contradictions.setdefault(index, [])
                known += [i for i in ids if i not in known]
        for item in _items(data.get("entities")):
            index = _number(item.get("question"), "q", len(self.questions))
            if index is None:
                continue
            chosen = self.options[index].get(_label(item.get("match"), "e"))
            if chosen is not None:
                verdicts.entity_matches.setdefault(index, chosen)
        return verdicts

    def _new(self, value: object) -> int | None:
        return _number(value, "n", len(self.new_facts))

    def _candidate(self, value: object) -> str | None:
        return self.candidate_ids.get(_label(value, "c"))


_LABEL = re.compile(r"^\s*([a-z]?)(\d+)\s*$")


def _label(value: object, prefix: str) -> str:
    """``"c2"``, ``"C2"``, ``"2"`` or ``2`` → ``"c2"``; anything else → ``""``."""
    match = _LABEL.match(str(value).casefold()) if isinstance(value, str | int) else None
    if match is None or match.group(1) not in ("", prefix):
        return ""
    return f"{prefix}{int(match.group(2))}"


def _number(value: object, prefix: str, count: int) -> int | None:
    label = _label(value, prefix)
    if not label:
        return None
    index = int(label[len(prefix) :]) - 1
    return index if 0 <= index < count else None


def _items(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
