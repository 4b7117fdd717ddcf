"""The LLM extractor: entities and facts of one memory in one structured-output call.

All chunks of a memory go into one prompt while they fit ``max_call_tokens`` (overlapping text
between neighbouring chunks is sent once); longer memories take one call per batch of chunks.
Tokens are a measured cost, so the prompt is short: the instructions and the schema together
are about 400 tokens (characters / 4). An answer that is not valid JSON for the schema gets exactly one retry
with the validation error fed back; a second failure raises ``ModelResponseError`` and the
pipeline stores nothing of the memory's graph.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._time import as_utc
from ..errors import ConfigurationError, ModelResponseError
from ..models import Usage
from ..providers.base import ChatModel
from .extract import (
    ENTITY_TYPES,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    normalize_name,
    normalize_relation,
)
from .jsonparse import parse_model

__all__ = ["EXTRACTION_SCHEMA", "LLMExtractor", "parse_date"]

_DATE = {"type": ["string", "null"]}
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "type": {"type": "string"},
                    "description": {"type": "string"},
                },
                "required": ["name", "type", "description"],
            },
        },
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "source": {"type": "string"},
                    "relation": {"type": "string"},
                    "target": {"type": "string"},
                    "sentence": {"type": "string"},
                    "valid_at": _DATE,
                    "invalid_at": _DATE,
                    "ends": {"type": "boolean"},
                },
                "required": ["source", "relation", "target", "sentence", "valid_at", "invalid_at", "ends"],
            },
        },
    },
    "required": ["entities", "facts"],
}

_SYSTEM = """\
Extract a knowledge graph from the user's text as JSON.
entities: everything the facts mention. name: fullest form in the text; type: one of {types}; \
description: a few words from the text.
facts: each relationship the text states between two entities. source, target: entity names; \
relation: short snake_case verb phrase ({relations}); sentence: the fact as one standalone \
sentence with full names, no pronouns; valid_at: when it became true, ISO 8601, only if the text \
dates it, else null; invalid_at: when it stopped being true, else null; ends: true if the text \
says it ended (left, quit, moved away): then give the relation that ended and its end date as \
invalid_at.
Resolve relative dates ("last year", "in May") against the reference time. State only what the \
text says.{extra}"""

_DEFAULT_RELATIONS = "works_at, lives_in, founded"
_RETRY = "That answer was invalid: {error}\nReply with the corrected JSON only."


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _RawEntity(_Loose):
    name: str
    type: str | None = None
    description: str | None = None


class _RawFact(_Loose):
    source: str
    relation: str
    target: str
    sentence: str | None = None
    valid_at: Any = None
    invalid_at: Any = None
    ends: bool | None = False


class _RawExtraction(_Loose):
    entities: list[_RawEntity] = Field(default_factory=list)
    facts: list[_RawFact] = Field(default_factory=list)


class LLMExtractor:
    """Implements the ``Extractor`` protocol with any ``ChatModel``.

    ``graph_model`` is JSON ``{"entity_types": [...], "relation_types": [...]}`` (items are names,
    or objects with ``name`` and ``description``); ``prompt`` is appended to the instructions.
    """

    def __init__(
        self,
        chat: ChatModel,
        *,
        graph_model: str | None = None,
        prompt: str | None = None,
        max_call_tokens: int = 6000,
    ) -> None:
        self.chat = chat
        self.max_call_tokens = max_call_tokens
        entity_types, relation_types = _read_graph_model(graph_model)
        self.entity_types = entity_types
        self.system_prompt = _SYSTEM.format(
            types=", ".join(entity_types),
            relations="e.g. " + _DEFAULT_RELATIONS
            if not relation_types
            else "prefer: " + ", ".join(relation_types),
            extra=f"\n{prompt.strip()}" if prompt and prompt.strip() else "",
        )

    def extract(self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage) -> Extraction:
        results = [self._extract_text(text, reference_time, usage) for text in self.batches(chunks)]
        return _merge(results)

    def batches(self, chunks: list[str]) -> list[str]:
        """The texts sent, one per call: chunks joined while they fit ``max_call_tokens``."""
        texts: list[str] = []
        current: list[str] = []
        size, previous = 0, ""
        for chunk in (c for c in chunks if c.strip()):
            piece = _without_overlap(previous, chunk) if current else chunk
            if current and size + _tokens(piece) > self.max_call_tokens:
                texts.append("\n".join(current))
                current, size, piece = [], 0, chunk
            current.append(piece)
            size += _tokens(piece)
            previous = chunk
        if current:
            texts.append("\n".join(current))
        return texts

    def messages(self, text: str, reference_time: dt.datetime) -> list[dict[str, str]]:
        when = as_utc(reference_time) or reference_time
        stamp = when.strftime("%Y-%m-%d %H:%M UTC, %A")
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": f"Reference time: {stamp}\nText:\n{text}"},
        ]

    def estimate(self, chunks: list[str], reference_time: dt.datetime | None = None) -> Usage:
        """Calls and tokens an ``extract`` would spend (no call is made): for ``dry_run``.

        Completion tokens are guessed as the size of the text, a typical ratio for this schema.
        """
        when = reference_time or dt.datetime.now(dt.timezone.utc)
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": "extraction", "schema": EXTRACTION_SCHEMA, "strict": False},
        }
        schema_tokens = _tokens(json.dumps(response_format))
        usage = Usage()
        for text in self.batches(chunks):
            prompt = "".join(m["content"] for m in self.messages(text, when))
            usage.chat_calls += 1
            usage.prompt_tokens += _tokens(prompt) + schema_tokens
            usage.completion_tokens += _tokens(text)
        return usage

    def _extract_text(self, text: str, reference_time: dt.datetime, usage: Usage) -> Extraction:
        messages = self.messages(text, reference_time)
        answer = ""
        try:
            answer = self.chat.complete_json(messages, EXTRACTION_SCHEMA, "extraction", usage)
            raw = parse_model(answer, _RawExtraction)
        except ModelResponseError as first:  # unreadable or empty; transport errors propagate
            if answer:
                messages.append({"role": "assistant", "content": answer[:4000]})
            messages.append({"role": "user", "content": _RETRY.format(error=first.message)})
            try:
                answer = self.chat.complete_json(messages, EXTRACTION_SCHEMA, "extraction", usage)
                raw = parse_model(answer, _RawExtraction)
            except ModelResponseError as second:
                raise ModelResponseError(f"extraction failed twice; last error: {second.message}") from None
        return _clean(raw, self.entity_types)


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


def _without_overlap(previous: str, chunk: str, minimum: int = 16) -> str:
    """``chunk`` minus the text it shares with the end of ``previous`` (chunker overlap)."""
    longest = min(len(previous), len(chunk))
    for size in range(longest, minimum - 1, -1):
        if previous.endswith(chunk[:size]):
            return chunk[size:].lstrip()
    return chunk


def _read_graph_model(graph_model: str | None) -> tuple[list[str], list[str]]:
    if not graph_model:
        return list(ENTITY_TYPES), []
    try:
        data = json.loads(graph_model)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"graph_model is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigurationError('graph_model must be a JSON object {"entity_types": [...], ...}')

    def names(key: str) -> list[str]:
        items = data.get(key) or []
        if not isinstance(items, list):
            raise ConfigurationError(f"graph_model {key} must be a list")
        out = []
        for item in items:
            if isinstance(item, dict) and item.get("name"):
                described = f" ({item['description']})" if item.get("description") else ""
                out.append(f"{item['name']}{described}")
            elif isinstance(item, str) and item.strip():
                out.append(item.strip())
            else:
                raise ConfigurationError(f"graph_model {key}: each item is a name or {{name, description}}")
        return out

    entity_types = names("entity_types") or list(ENTITY_TYPES)
    if not any(t.split(" (")[0].casefold() == "concept" for t in entity_types):
        entity_types.append("concept")
    return entity_types, names("relation_types")


_PARTIAL = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")
_FORMATS = ("%B %Y", "%b %Y", "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%Y/%m/%d")


def parse_date(value: object) -> dt.datetime | None:
    """A model's date, tolerantly: partial dates take their earliest instant; junk gives None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int) and 1000 <= value <= 9999:
        value = str(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _PARTIAL.match(text)
    try:
        if match:
            year, month, day = (int(part) if part else 1 for part in match.groups())
            return dt.datetime(year, month, day, tzinfo=dt.timezone.utc)
        return as_utc(text)
    except (ValueError, TypeError, OverflowError):
        pass
    for pattern in _FORMATS:
        try:
            return dt.datetime.strptime(text, pattern).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue
    return None


def _clean(raw: _RawExtraction, entity_types: list[str]) -> Extraction:
    entities: dict[str, ExtractedEntity] = {}
    for item in raw.entities:
        name = " ".join(item.name.split())
        key = normalize_name(name)
        if not key:
            continue
        kind = (item.type or "").strip().casefold() or "concept"
        description = (item.description or "").strip()
        known = entities.get(key)
        if known is None:
            entities[key] = ExtractedEntity(name=name, type=kind, description=description)
        elif not known.description and description:
            known.description = description
    facts: list[ExtractedFact] = []
    for item in raw.facts:
        fact = _clean_fact(item)
        if fact is None:
            continue
        facts.append(fact)
        for endpoint in (fact.source, fact.target):
            entities.setdefault(normalize_name(endpoint), ExtractedEntity(name=endpoint, type="concept"))
    return Extraction(entities=list(entities.values()), facts=facts)


def _clean_fact(item: _RawFact) -> ExtractedFact | None:
    source, target = " ".join(item.source.split()), " ".join(item.target.split())
    if not normalize_name(source) or not normalize_name(target):
        return None
    if normalize_name(source) == normalize_name(target):
        return None
    relation = normalize_relation(item.relation)
    valid_at, invalid_at = parse_date(item.valid_at), parse_date(item.invalid_at)
    if valid_at is not None and invalid_at is not None and invalid_at <= valid_at:
        invalid_at = None
    sentence = " ".join((item.sentence or "").split()) or f"{source} {relation.replace('_', ' ')} {target}."
    return ExtractedFact(
        source=source,
        relation=relation,
        target=target,
        sentence=sentence,
        valid_at=valid_at,
        invalid_at=invalid_at,
        ends=bool(item.ends),
    )


def _merge(results: list[Extraction]) -> Extraction:
    if len(results) == 1:
        return results[0]
    entities: dict[str, ExtractedEntity] = {}
    facts: dict[tuple[Any, ...], ExtractedFact] = {}
    for result in results:
        for entity in result.entities:
            entities.setdefault(normalize_name(entity.name), entity)
        for fact in result.facts:
            key = (
                normalize_name(fact.source),
                fact.relation,
                normalize_name(fact.target),
                fact.valid_at,
                fact.invalid_at,
                fact.ends,
            )
            facts.setdefault(key, fact)
    return Extraction(entities=list(entities.values()), facts=list(facts.values()))
