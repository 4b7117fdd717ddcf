"""From one stored memory to a write plan: chunk -> extract -> embed -> resolve -> plan.

Every function here does I/O only through the collaborators it is given (extractor, embedder,
chat model, store reads). Nothing is written: the caller applies the plan in one transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from ..models import Memory, Usage
from ..providers.base import ChatModel, Embedder
from ..store.base import ChunkRow, Store
from .chunk import chunk_text
from .commit import EntityDraft, FactDraft, WritePlan, new_id
from .extract import Extraction, Extractor, normalize_name, normalize_relation

__all__ = ["PipelineConfig", "build_plan", "drafts_from_extraction"]

log = logging.getLogger(__name__)

#: below the merge threshold but above this, a model (when configured) decides
_AMBIGUOUS_MARGIN = 0.08


@dataclass(frozen=True)
class PipelineConfig:
    chunk_size: int = 256
    chunk_overlap: int = 32
    entity_similarity: float = 0.92


def drafts_from_extraction(
    extraction: Extraction, reference_time: dt.datetime
) -> tuple[list[EntityDraft], list[FactDraft]]:
    """Deduplicate entities by normalized name and turn facts into drafts with both dates."""
    entities: dict[str, EntityDraft] = {}
    for e in extraction.entities:
        key = normalize_name(e.name)
        if key and key not in entities:
            entities[key] = EntityDraft(key=key, name=e.name.strip(), type=e.type or "concept",
                                        description=e.description)
        elif key and entities[key].type == "concept" and e.type and e.type != "concept":
            entities[key].type = e.type
    facts: list[FactDraft] = []
    for f in extraction.facts:
        source, target = normalize_name(f.source), normalize_name(f.target)
        if not source or not target or source == target:
            continue
        for key, name in ((source, f.source), (target, f.target)):
            entities.setdefault(key, EntityDraft(key=key, name=name.strip(), type="concept"))
        valid_at = f.valid_at or reference_time
        invalid_at = f.invalid_at
        if invalid_at is not None and invalid_at <= valid_at and not f.ends:
            invalid_at = None  # an end not after the start says nothing usable
        facts.append(
            FactDraft(
                source_key=source, relation=normalize_relation(f.relation), target_key=target,
                description=f.sentence.strip(), valid_at=valid_at, invalid_at=invalid_at,
                ends=f.ends, dated=f.valid_at is not None,
            )
        )
    return list(entities.values()), facts


def build_plan(
    memory: Memory,
    *,
    config: PipelineConfig,
    extractor: Extractor,
    embedder: Embedder,
    store: Store,
    chat: ChatModel | None,
    now: dt.datetime,
    replace: bool,
    usage: Usage,
) -> WritePlan:
    chunks = chunk_text(memory.content, config.chunk_size, config.chunk_overlap)
    extraction = extractor.extract([c.text for c in chunks], reference_time=memory.valid_at, usage=usage)
    entities, facts = drafts_from_extraction(extraction, memory.valid_at)

    known = store.find_entities(memory.dataset, [e.key for e in entities])
    fresh = [e for e in entities if e.key not in known]
    texts = [c.text for c in chunks] + [e.name for e in fresh] + [f.description for f in facts]
    vectors = embedder.embed(texts, usage)
    chunk_vecs = vectors[: len(chunks)]
    entity_vecs = vectors[len(chunks) : len(chunks) + len(fresh)]
    fact_vecs = vectors[len(chunks) + len(fresh) :]
    for draft, vec in zip(fresh, entity_vecs):
        draft.embedding = vec
    for draft, vec in zip(facts, fact_vecs):
        draft.embedding = vec

    questions = _resolve_by_similarity(memory.dataset, fresh, store, config.entity_similarity)
    if chat is not None:
        _resolve_with_model(memory.dataset, chat, store, entities, facts, known, questions, usage)

    return WritePlan(
        memory_id=memory.id,
        dataset=memory.dataset,
        now=now,
        chunks=[
            ChunkRow(id=new_id("chk"), memory_id=memory.id, dataset=memory.dataset, position=c.position,
                     text=c.text, token_count=c.token_count, embedding=v)
            for c, v in zip(chunks, chunk_vecs)
        ],
        entities=entities,
        facts=facts,
        replace=replace,
    )


def _resolve_by_similarity(
    dataset: str, fresh: list[EntityDraft], store: Store, threshold: float
) -> list[tuple[EntityDraft, list[tuple[str, float]]]]:
    """Merge a new name into an existing entity of a compatible type when their embeddings are
    close enough; return the near misses for the model to decide."""
    ambiguous = []
    for draft in fresh:
        hits = store.vector(dataset, "entity", draft.embedding, 3)
        if not hits:
            continue
        rows = {e.id: e for e in store.get_entities([h.id for h in hits])}
        options = [
            (h.id, h.score) for h in hits
            if h.id in rows and _compatible(rows[h.id].type, draft.type)
        ]
        if options and options[0][1] >= threshold:
            draft.resolved_id = options[0][0]
        elif options and options[0][1] >= threshold - _AMBIGUOUS_MARGIN:
            ambiguous.append((draft, [o for o in options if o[1] >= threshold - _AMBIGUOUS_MARGIN]))
    return ambiguous


def _compatible(a: str, b: str) -> bool:
    return a == b or "concept" in (a, b)


def _resolve_with_model(
    dataset: str,
    chat: ChatModel,
    store: Store,
    entities: list[EntityDraft],
    facts: list[FactDraft],
    known: dict,
    questions: list,
    usage: Usage,
) -> None:
    """At most one model call per memory: duplicates and contradictions among candidate facts,
    and the ambiguous entity names, together. No candidates, no call."""
    from .llm_resolve import CandidateFact, EntityQuestion, NewFact, resolve_with_model

    ids = {k: row.id for k, row in known.items()}
    ids.update({e.key: e.resolved_id for e in entities if e.resolved_id})
    candidates: dict[str, object] = {}
    for draft in facts:
        source, target = ids.get(draft.source_key), ids.get(draft.target_key)
        if source is None:
            continue
        for row in store.live_facts_touching(dataset, source, target or "", draft.relation):
            if (row.source_id, row.relation, row.target_id) == (source, draft.relation, target):
                continue  # an exact repeat: merged in code, no model needed
            candidates.setdefault(row.id, row)
    if not candidates and not questions:
        return
    entity_ids = {e for row in candidates.values() for e in (row.source_id, row.target_id)}
    entity_ids |= {opt for _, options in questions for opt, _ in options}
    names = {e.id: e for e in store.get_entities(sorted(entity_ids))}
    cand_list = [
        CandidateFact(
            id=row.id, source=names[row.source_id].name if row.source_id in names else "?",
            relation=row.relation, target=names[row.target_id].name if row.target_id in names else "?",
            sentence=row.description, valid_at=row.valid_at, invalid_at=row.invalid_at,
        )
        for row in candidates.values()
    ]
    by_key = {e.key: e for e in entities}
    new_facts = [
        NewFact(source=by_key[f.source_key].name, relation=f.relation, target=by_key[f.target_key].name,
                sentence=f.description, valid_at=f.valid_at, invalid_at=f.invalid_at)
        for f in facts
    ]
    entity_questions = [
        EntityQuestion(
            name=draft.name, type=draft.type,
            options=[(oid, names[oid].name, names[oid].type) for oid, _ in options if oid in names],
        )
        for draft, options in questions
    ]
    verdicts = resolve_with_model(chat, new_facts, cand_list, usage, entity_questions)
    for index, fact_id in verdicts.duplicates.items():
        facts[index].duplicate_of = fact_id
    for index, fact_ids in verdicts.contradictions.items():
        facts[index].contradicts = list(fact_ids)
    for index, entity_id in verdicts.entity_matches.items():
        questions[index][0].resolved_id = entity_id
    log.debug("model resolution", extra={"candidates": len(cand_list), "questions": len(entity_questions)})
