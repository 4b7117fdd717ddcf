"""Known facts in, without extraction: records ``{source, relation, target, valid_at?,
invalid_at?, description?}`` an agent or a pipeline already has.

``remember`` (and ``add``) take a list of them as their ``content`` (``FactInput`` or plain
objects with a ``relation``). One call's records are one memory of kind ``facts`` that holds
them, one JSON object a line, with their dates as read when they arrived (a phrase such as
"last year" is not read again later), so provenance points at the call that stated them and
``update``/``force`` read the same facts again.

Processing skips the extractor, and nothing else: each record becomes the draft an extraction
would have given (``ExtractedFact`` → ``drafts_from_extraction``), so entities are resolved by
name, by embedding and (with a model) by the model; exact repeats merge; the contradiction rule
closes what a record contradicts, and a record that arrives late is stored already closed; a
record with ``invalid_at`` and no ``valid_at`` says the relation ended then, like "Alice left
Acme in June": it closes the open matching fact. Each record is one chunk (its sentence), so
the lexical and vector lanes find it and recall shows the fact.

Pure: reads the store only through the functions it is given; the caller applies the plan
(``commit.apply_plan``) in one transaction.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._checks import check_text
from .._identity import memory_identity
from ..dates import parse_user_datetime
from ..errors import ValidationError
from ..models import FactInput, Memory, MemoryStatus, Usage
from ..providers.base import ChatModel, Embedder
from ..store.base import Store
from ..text import normalize_name, normalize_relation
from .chunk import Chunk, count_tokens
from .commit import WritePlan, new_id
from .extract import ExtractedFact, Extraction
from .process import Drafted, PipelineConfig, Prepared, drafts_from_extraction, embed_drafts, finish_plan

__all__ = ["KIND", "check_update", "draft_known", "estimate_known", "is_known", "is_known_memory", "known_memory",
           "known_plan", "read_records"]

#: the kind of a memory that holds known facts. Such a memory states what the caller of
#: ``remember``/``add`` asserts, so its authority is the caller's (issue #27): set it where
#: ``known_memory`` makes the memory.
KIND = "facts"
_FIELDS = tuple(FactInput.model_fields)


def is_known(items: Sequence[Any]) -> bool:
    """Whether a verb's content items are known facts: a ``FactInput`` or an object with a
    ``relation`` among them (then every item must be one)."""
    return any(isinstance(i, FactInput) or (isinstance(i, Mapping) and "relation" in i) for i in items)


def is_known_memory(memory: Memory) -> bool:
    return memory.kind == KIND


def read_records(items: Sequence[Any], *, now: dt.datetime) -> list[dict[str, Any]]:
    """Every record checked before any is kept (``facts[i]`` names a bad one): the canonical
    form a ``facts`` memory holds, dates read against ``now`` and only the fields given."""
    records = []
    for index, item in enumerate(items):
        where = f"facts[{index}]"
        if isinstance(item, FactInput):
            fact = item
        elif isinstance(item, Mapping) and "relation" in item:
            unknown = sorted(set(item) - set(_FIELDS))
            if unknown:
                raise ValidationError(f"{where} has unknown field {unknown[0]!r:.50}: use {', '.join(_FIELDS)}")
            try:
                fact = FactInput(**item)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"{where} is not a fact: {_first_error(exc)}") from None
        else:
            raise ValidationError(f"{where} is not a fact {{source, relation, target}}: known facts are "
                                  "remembered on their own, not in a list with text or messages")
        records.append(_record(where, fact, now))
    return records


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'record'}: {first['msg']}"
    return str(exc)


def _record(where: str, fact: FactInput, now: dt.datetime) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name in ("source", "target"):
        value = " ".join(check_text(getattr(fact, name), f"{where}.{name}").split())
        if not normalize_name(value):
            raise ValidationError(f"{where}.{name} {value!r:.50} names no entity (letters or digits needed)")
        record[name] = value
    relation = check_text(fact.relation, f"{where}.relation")
    record["relation"] = normalize_relation(relation)
    if normalize_name(record["source"]) == normalize_name(record["target"]):
        raise ValidationError(f"{where}: source and target are the same entity ({record['source']!r:.50})")
    dates = {}
    for name in ("valid_at", "invalid_at"):
        value = getattr(fact, name)
        if value is not None:
            dates[name] = parse_user_datetime(value, now=now, name=f"{where}.{name}")
            record[name] = dates[name].isoformat()
    if "valid_at" in dates and "invalid_at" in dates and dates["invalid_at"] <= dates["valid_at"]:
        raise ValidationError(f"{where}.invalid_at ({record['invalid_at']}) is not after its valid_at "
                              f"({record['valid_at']}): a fact holds for a while")
    if fact.description is not None and fact.description.strip():
        record["description"] = " ".join(check_text(fact.description, f"{where}.description").split())
    return record


def known_memory(items: Sequence[Any], *, dataset: str, now: dt.datetime, valid_at: dt.datetime | None,
                 source: str | None, metadata: dict[str, Any], status: MemoryStatus, user: str | None = None,
                 agent: str | None = None, session: str | None = None) -> Memory:
    """The one memory holding a call's records. Its identity is its records with the call's
    scope: the same records remembered again are one memory (skipped, or reprocessed with
    ``force``)."""
    records = read_records(items, now=now)
    content = "\n".join(json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records)
    return Memory(
        id=new_id("mem"), dataset=dataset, kind=KIND, content=content, source=source, metadata=metadata,
        content_hash=memory_identity(content, kind=KIND, user=user, agent=agent, session=session), valid_at=valid_at or now,
        status=status, created_at=now, updated_at=now, user=user, agent=agent, session=session,
    )


def _stored_records(memory: Memory) -> list[dict[str, Any]]:
    """The records a ``facts`` memory holds (checked again: ``update`` may have changed them)."""
    items = []
    for number, line in enumerate(memory.content.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValidationError(f"memory {memory.id} holds known facts, one JSON object a line; "
                                  f"line {number} is not JSON: {exc.msg}") from None
    if not items or not all(isinstance(i, Mapping) and "relation" in i for i in items):
        raise ValidationError(f"memory {memory.id} holds known facts: each line must be an object "
                              "{source, relation, target, valid_at?, invalid_at?, description?}")
    return read_records(items, now=memory.valid_at)


def check_update(memory: Memory, fields: dict[str, Any]) -> None:
    """``update``'s changes to a memory, checked before anything is written: a ``facts``
    memory's new content must be records; the kind ``facts`` is neither given nor taken away."""
    if (fields.get("kind", memory.kind) == KIND) != is_known_memory(memory):
        raise ValidationError(f"kind {KIND!r} marks a memory of known facts: it cannot be given to "
                              "or taken from another memory (remember the records instead)")
    if is_known_memory(memory) and "content" in fields:
        _stored_records(memory.model_copy(update={"content": fields["content"]}))


def sentence(record: Mapping[str, Any]) -> str:
    """A record's sentence: its description, else ``Alice works at Acme.``"""
    if record.get("description"):
        return str(record["description"])
    return f"{record['source']} {record['relation'].replace('_', ' ')} {record['target']}."


def draft_known(memory: Memory, *, store: Store, usage: Usage) -> Drafted:
    """A ``facts`` memory drafted as an extraction would have drafted it, without calling
    the extractor: one chunk and one fact per record."""
    records = _stored_records(memory)
    chunks = [Chunk(position=i, text=sentence(r), token_count=count_tokens(sentence(r))) for i, r in enumerate(records)]
    facts = []
    for r in records:
        valid_at = dt.datetime.fromisoformat(r["valid_at"]) if "valid_at" in r else None
        invalid_at = dt.datetime.fromisoformat(r["invalid_at"]) if "invalid_at" in r else None
        facts.append(ExtractedFact(source=r["source"], relation=r["relation"], target=r["target"],
                                   sentence=sentence(r), valid_at=valid_at, invalid_at=invalid_at,
                                   ends=invalid_at is not None and valid_at is None))
    entities, drafts = drafts_from_extraction(Extraction(facts=facts), memory.valid_at)
    known = store.find_entities(memory.dataset, [e.key for e in entities])
    return Drafted(Prepared(memory, chunks), entities, drafts, known, usage)


def known_plan(memory: Memory, *, config: PipelineConfig, embedder: Embedder, store: Store,
               chat: ChatModel | None, now: dt.datetime, replace: bool, usage: Usage) -> WritePlan:
    """One ``facts`` memory's write plan (``update``'s new version): drafted, embedded and
    resolved as ``process.build_plan`` does for extracted memories."""
    drafted = draft_known(memory, store=store, usage=usage)
    embed_drafts([drafted], embedder)
    return finish_plan(drafted, config=config, store=store, chat=chat, now=now, replace=replace)


def estimate_known(memories: Sequence[Memory], *, store: Store, chat: ChatModel | None,
                   remote_embedder: bool) -> Usage:
    """What processing ``facts`` memories would spend: no extraction; their sentences embedded,
    and (with a model, when the dataset has facts already) one resolution call each, counted
    as ``process.estimate_usage`` counts it for extracted memories."""
    usage = Usage()
    if not memories:
        return usage
    for memory in memories:
        usage.embedded_texts += len([line for line in memory.content.splitlines() if line.strip()])
    usage.embedding_calls += 1 if remote_embedder else 0
    if chat is not None and store.stats(memories[0].dataset).facts:
        usage.chat_calls += len(memories)
    return usage
