"""The LLM extractor: entities and facts of one memory in one structured-output call.

All chunks of a memory go into one prompt while they fit ``max_call_tokens`` (overlapping text
between neighbouring chunks is sent once); longer memories take one call per batch of chunks.
Tokens are a measured cost, so the prompt is short: the instructions and the schema together
are about 400 tokens (characters / 4). An answer that is not valid JSON for the schema gets exactly one retry
with the validation error fed back; a second failure raises ``ModelResponseError`` and the
pipeline stores nothing of the memory's graph.

Two ways to spend fewer calls than one per memory plus one per resolution:

- ``known``: stored facts about the entities a memory names go into the extraction prompt
  (labels ``c1``, ``c2`` …), and each extracted fact says which stored fact it repeats
  (``same_as``) and which it makes no longer true (``replaces``). Resolution costs no extra call.
- ``extract_many``: several short memories in one call, each in its own ``<document>`` with its
  own reference time; the answer has one item per document. An unreadable group answer is
  retried once, then each memory alone, so one bad document cannot fail its neighbours.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .._time import as_utc
from ..dates import absolute_date
from ..errors import ConfigurationError, ModelResponseError
from ..models import Usage
from ..providers.base import ChatModel
from ..providers.jsonparse import parse_model
from ..text import normalize_name, normalize_relation
from .extract import (
    ENTITY_TYPES,
    Document,
    Extractor,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
)
from .llm_resolve import CandidateFact, fact_line

__all__ = ["EXTRACTION_SCHEMA", "JudgedFact", "LLMExtractor"]

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
                    "changes": {"type": "boolean"},
                },
                "required": ["source", "relation", "target", "sentence", "valid_at", "invalid_at", "ends",
                             "changes"],
            },
        },
    },
    "required": ["entities", "facts"],
}

#: extra fields of a fact when stored facts are shown
_VERDICT_PROPERTIES: dict[str, Any] = {
    "same_as": {"type": ["string", "null"], "description": "label of the stored fact it repeats, else null"},
    "replaces": {
        "type": "array",
        "items": {"type": "string"},
        "description": "labels of stored facts it makes no longer true, if any",
    },
}


def _schema(known: bool, documents: bool) -> dict[str, Any]:
    """The extraction schema: verdict fields only when stored facts are shown; one item per
    document when several documents share the call."""
    schema = EXTRACTION_SCHEMA
    if known:
        fact = EXTRACTION_SCHEMA["properties"]["facts"]["items"]
        facts = {**fact, "properties": {**fact["properties"], **_VERDICT_PROPERTIES},
                 "required": [*fact["required"], *_VERDICT_PROPERTIES]}
        schema = {**schema, "properties": {**schema["properties"], "facts": {"type": "array", "items": facts}}}
    if not documents:
        return schema
    item = {
        "type": "object",
        "properties": {"document": {"type": "string", "description": "the document's id"},
                       **schema["properties"]},
        "required": ["document", *schema["required"]],
    }
    return {"type": "object", "properties": {"documents": {"type": "array", "items": item}},
            "required": ["documents"]}


_SYSTEM = """\
Extract a knowledge graph from the user's text as JSON.
entities: everything the facts mention. name: fullest form in the text; type: one of {types}; \
description: a few words from the text.
facts: each relationship the text states between two entities. source, target: entity names; \
relation: short snake_case verb phrase ({relations}); sentence: the fact as one standalone \
sentence with full names, no pronouns; valid_at: when it became true, ISO 8601, only if the text \
dates it, else null; invalid_at: when it stopped being true, else null; ends: true if the text \
says it ended (left, quit, no longer): the relation that ended, its end as invalid_at; changes: \
true if it replaced an earlier value (switched to, now, "B, not A"; a named old value: its own \
fact, ends true). Plans: relation plans.
Resolve relative dates ("last year", "in May") against the reference time. "I", "me", "my" are \
the speaker (a "Name: text" line is said by Name), "you" the one spoken to: use their names. \
State only what the text says.{extra}"""

_SYSTEM_KNOWN = """
Stored facts (c1, c2 …) are already known. For each fact you extract: same_as: the label of the \
stored fact it repeats, else null; replaces: labels of stored facts it makes no longer true (a new \
employer, home, role, status, or a value of the same kind: a drink by a drink, a phone by a phone), \
if any."""
_SYSTEM_DOCUMENTS = """
The text is several documents, each in <document id=… time=…> with its own reference time: \
answer one item per document, with its id."""

_SYSTEM_CONTEXT = """
<context> holds the turns of the conversation before the text: read it to resolve what the text \
refers to ("yes", "that one", "there"), but extract nothing that only the context states."""

_DEFAULT_RELATIONS = "works_at, lives_in, founded"
M = TypeVar("M", bound=BaseModel)
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
    changes: bool | None = False
    same_as: Any = None
    replaces: Any = None


class _RawExtraction(_Loose):
    entities: list[_RawEntity] = Field(default_factory=list)
    facts: list[_RawFact] = Field(default_factory=list)


class _RawDocument(_RawExtraction):
    document: Any = None


class _RawDocuments(_Loose):
    documents: list[_RawDocument] = Field(default_factory=list)


class JudgedFact(ExtractedFact):
    """An extracted fact with the model's verdicts on the stored facts it was shown
    (store ids, already mapped back from labels)."""

    duplicate_of: str | None = None
    contradicts: list[str] = Field(default_factory=list)


class LLMExtractor(Extractor):
    """An ``Extractor`` over any ``ChatModel``; it judges new facts against stored ones.

    ``graph_model`` is JSON ``{"entity_types": [...], "relation_types": [...]}`` (items are names,
    or objects with ``name`` and ``description``); ``prompt`` is appended to the instructions.
    """

    judges = True

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

    def extract(
        self,
        chunks: list[str],
        *,
        reference_time: dt.datetime,
        usage: Usage,
        known: Sequence[CandidateFact] = (),
        speaker: str | None = None,
        addressee: str | None = None,
        context: str | None = None,
    ) -> Extraction:
        """One call per batch of chunks; ``known`` stored facts are shown for verdicts; the
        prompt names ``speaker`` ("I") and ``addressee`` ("you") when given, and shows
        ``context`` (earlier turns) before the text."""
        labels = _KnownLabels(list(known))
        voices = _voices(speaker, addressee)
        results = [self._extract_text(text, reference_time, usage, labels, voices, context)
                   for text in self.batches(chunks)]
        return _merge(results)

    def extract_many(
        self,
        documents: list[Document],
        *,
        usage: Usage,
        known: Sequence[CandidateFact] = (),
    ) -> list[Extraction | ModelResponseError]:
        """Several short memories in one call; one result per document, in order.

        A group answer that stays unreadable after its retry is not the documents' fault:
        each document is then extracted alone (and may fail alone)."""
        if len(documents) == 1:
            return [self._alone(documents[0], usage, known)]
        labels = _KnownLabels(list(known))
        messages = self._group_messages(documents, labels)
        schema = _schema(bool(labels.ids), documents=True)
        try:
            raw = self._ask(messages, schema, _RawDocuments, usage)
        except ModelResponseError:
            return [self._alone(document, usage, known) for document in documents]
        return _by_document(raw.documents, len(documents), self.entity_types, labels)

    def _alone(
        self, document: Document, usage: Usage, known: Sequence[CandidateFact]
    ) -> Extraction | ModelResponseError:
        try:
            return self.extract(document.chunks, reference_time=document.reference_time, usage=usage,
                                known=known, speaker=document.speaker, addressee=document.addressee,
                                context=document.context)
        except ModelResponseError as exc:
            return exc

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

    def messages(
        self, text: str, reference_time: dt.datetime, known: Sequence[CandidateFact] | _KnownLabels = (),
        voices: str = "",
        context: str | None = None,
    ) -> list[dict[str, str]]:
        labels = known if isinstance(known, _KnownLabels) else _KnownLabels(list(known))
        system = self.system_prompt + (_SYSTEM_KNOWN if labels.ids else "") + (_SYSTEM_CONTEXT if context else "")
        user = (f"Reference time: {_stamp(reference_time)}\n{labels.prompt()}{_context(context)}"
                f"<document{voices}>\n{text}\n</document>")
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _group_messages(self, documents: list[Document], labels: _KnownLabels) -> list[dict[str, str]]:
        context = documents[0].context
        system = self.system_prompt + (_SYSTEM_KNOWN if labels.ids else "") + _SYSTEM_DOCUMENTS + (
            _SYSTEM_CONTEXT if context else "")
        parts = [labels.prompt(), _context(context)]
        for i, document in enumerate(documents):
            text = self.batches(document.chunks)[0] if document.chunks else ""
            voices = _voices(document.speaker, document.addressee)
            stamp = _stamp(document.reference_time)
            parts.append(f'<document id="{i + 1}" time="{stamp}"{voices}>\n{text}\n</document>\n')
        return [{"role": "system", "content": system}, {"role": "user", "content": "".join(parts)}]

    def groupable(self, chunks: list[str]) -> int | None:
        """Tokens a memory adds to a group call, or None when it needs calls of its own."""
        texts = self.batches(chunks)
        return _tokens(texts[0]) if len(texts) == 1 else None

    def estimate(
        self,
        chunks: list[str],
        reference_time: dt.datetime | None = None,
        known: Sequence[CandidateFact] = (),
        voices: str = "",
        context: str | None = None,
    ) -> Usage:
        """Calls and tokens an ``extract`` would spend (no call is made): for ``dry_run``.

        Completion tokens are guessed as the size of the text, a typical ratio for this schema.
        """
        when = reference_time or dt.datetime.now(dt.UTC)
        labels = _KnownLabels(list(known))
        usage = Usage()
        for text in self.batches(chunks):
            usage.add(self._estimate(self.messages(text, when, labels, voices, context), _schema(bool(labels.ids), False),
                                     _tokens(text)))
        return usage

    def estimate_many(
        self, documents: list[Document], known: Sequence[CandidateFact] = ()
    ) -> Usage:
        """What one ``extract_many`` call would spend (no call is made)."""
        if len(documents) == 1:
            one = documents[0]
            return self.estimate(one.chunks, one.reference_time, known, _voices(one.speaker, one.addressee),
                                 one.context)
        labels = _KnownLabels(list(known))
        messages = self._group_messages(documents, labels)
        text = sum(_tokens(c) for d in documents for c in d.chunks)
        return self._estimate(messages, _schema(bool(labels.ids), True), text)

    @staticmethod
    def _estimate(messages: list[dict[str, str]], schema: dict[str, Any], completion: int) -> Usage:
        response_format = {"type": "json_schema", "json_schema": {"name": "extraction", "schema": schema,
                                                                  "strict": False}}
        prompt = "".join(m["content"] for m in messages)
        return Usage(chat_calls=1, prompt_tokens=_tokens(prompt) + _tokens(json.dumps(response_format)),
                     completion_tokens=completion)

    def _extract_text(
        self, text: str, reference_time: dt.datetime, usage: Usage, labels: _KnownLabels, voices: str,
        context: str | None = None,
    ) -> Extraction:
        messages = self.messages(text, reference_time, labels, voices, context)
        raw = self._ask(messages, _schema(bool(labels.ids), documents=False), _RawExtraction, usage)
        return _clean(raw, self.entity_types, labels)

    def _ask(self, messages: list[dict[str, str]], schema: dict[str, Any], model: type[M], usage: Usage) -> M:
        """One structured call, and one retry that feeds the validation error back."""
        answer = ""
        try:
            answer = self.chat.complete_json(messages, schema, "extraction", usage)
            return parse_model(answer, model)
        except ModelResponseError as first:  # unreadable or empty; transport errors propagate
            retry = list(messages)
            if answer:
                retry.append({"role": "assistant", "content": answer[:4000]})
            retry.append({"role": "user", "content": _RETRY.format(error=first.message)})
            try:
                answer = self.chat.complete_json(retry, schema, "extraction", usage)
                return parse_model(answer, model)
            except ModelResponseError as second:
                raise ModelResponseError(f"extraction failed twice; last error: {second.message}") from None


class _KnownLabels:
    """Stored facts shown to the model as ``c1``, ``c2`` …, and the way back to their ids."""

    def __init__(self, known: list[CandidateFact]) -> None:
        self.known = known
        self.ids = {f"c{i + 1}": fact.id for i, fact in enumerate(known)}

    def prompt(self) -> str:
        if not self.known:
            return ""
        lines = [fact_line(f"c{i + 1}", fact) for i, fact in enumerate(self.known)]
        return "Stored facts:\n" + "\n".join(lines) + "\n"

    def one(self, value: object) -> str | None:
        return self.ids.get(_label(value)) if value is not None else None

    def many(self, value: object) -> list[str]:
        values = value if isinstance(value, list) else [value] if value is not None else []
        return list(dict.fromkeys(i for i in (self.one(v) for v in values) if i is not None))


def _label(value: object) -> str:
    text = str(value).strip().strip("[]()").casefold() if isinstance(value, str | int) else ""
    return text if text.startswith("c") else f"c{text}"


def _voices(speaker: str | None, addressee: str | None) -> str:
    """Document attributes naming who says the text ("I") and to whom ("you")."""
    said = [(k, v) for k, v in (("speaker", speaker), ("addressee", addressee)) if v]
    return "".join(f" {key}={json.dumps(' '.join(value.split()), ensure_ascii=False)}" for key, value in said)


def _context(turns: str | None) -> str:
    """Earlier turns of the conversation, shown before the text (empty when there are none)."""
    return f"<context>\n{turns}\n</context>\n" if turns else ""


def _stamp(reference_time: dt.datetime) -> str:
    when = as_utc(reference_time) or reference_time
    return when.strftime("%Y-%m-%d %H:%M UTC, %A")


def _by_document(
    items: list[_RawDocument], count: int, entity_types: list[str], labels: _KnownLabels
) -> list[Extraction | ModelResponseError]:
    """Items to documents by their id; items without a usable id fill the remaining documents
    in order (a model that numbers nothing still answers in the order it was given)."""
    slots: list[_RawDocument | None] = [None] * count
    loose = []
    for item in items:
        match = re.search(r"\d+", str(item.document)) if item.document is not None else None
        index = int(match.group()) - 1 if match else -1
        if 0 <= index < count and slots[index] is None:
            slots[index] = item
        else:
            loose.append(item)
    for i in range(count):
        if slots[i] is None and loose:
            slots[i] = loose.pop(0)
    return [_clean(item, entity_types, labels) if item is not None else Extraction() for item in slots]


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


def _clean(raw: _RawExtraction, entity_types: list[str], labels: _KnownLabels | None = None) -> Extraction:
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
    for raw_fact in raw.facts:
        fact = _clean_fact(raw_fact, labels)
        if fact is None:
            continue
        facts.append(fact)
        for endpoint in (fact.source, fact.target):
            entities.setdefault(normalize_name(endpoint), ExtractedEntity(name=endpoint, type="concept"))
    return Extraction(entities=list(entities.values()), facts=facts)


def _clean_fact(item: _RawFact, labels: _KnownLabels | None = None) -> ExtractedFact | None:
    source, target = " ".join(item.source.split()), " ".join(item.target.split())
    if not normalize_name(source) or not normalize_name(target):
        return None
    if normalize_name(source) == normalize_name(target):
        return None
    relation = normalize_relation(item.relation)
    valid_at, invalid_at = absolute_date(item.valid_at), absolute_date(item.invalid_at)
    if valid_at is not None and invalid_at is not None and invalid_at <= valid_at:
        invalid_at = None
    sentence = " ".join((item.sentence or "").split()) or f"{source} {relation.replace('_', ' ')} {target}."
    fact = ExtractedFact(
        source=source,
        relation=relation,
        target=target,
        sentence=sentence,
        valid_at=valid_at,
        invalid_at=invalid_at,
        ends=bool(item.ends),
        changes=bool(item.changes) and not item.ends,
    )
    if labels is None or not labels.ids:
        return fact
    duplicate = labels.one(item.same_as)
    contradicts = [i for i in labels.many(item.replaces) if i != duplicate]
    if duplicate is None and not contradicts:
        return fact
    return JudgedFact(**fact.model_dump(), duplicate_of=duplicate, contradicts=contradicts)


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
