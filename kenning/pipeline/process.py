"""From stored memories to write plans: chunk -> extract -> embed -> resolve -> plan.

The steps are separate functions (``draft_group``, ``embed_drafts``, ``finish_plan``) so a
caller can extract groups apart, embed a whole batch in one call, and resolve each memory right
before it commits; ``build_plan`` runs them in a row for one memory.

Every function here does I/O only through the collaborators it is given (extractor, embedder,
chat model, store reads). Nothing is written: the caller applies each plan in one transaction.

Model calls are the cost, so with an LLM extractor:
- before extraction, code finds the entities the text names (name lookups, no model) and shows
  their live stored facts to the extractor, which judges duplicates and contradictions in the
  same call: one chat call per memory where others make two or more;
- short memories of one batch share an extraction call (``group_memories``): fewer than one
  chat call per memory; every memory of a batch shares one embedding call (``embed_drafts``);
- a second call is made only for what the extractor could not judge: entities matched by
  embedding similarity, and stored facts of entities the text did not name.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import KenningError, ValidationError
from .authority import keep_trusted_instructions
from .messages import addressee, memory_text, transcript
from ..models import Memory, Usage
from ..providers.base import ChatModel, Embedder
from ..store.base import ChunkRow, FactRow, Store
from .chunk import Chunk, chunk_text
from .commit import EntityDraft, FactDraft, WritePlan, new_id
from ..text import normalize_name, normalize_relation
from .extract import Document, Extraction, Extractor
from .names import same_people

if TYPE_CHECKING:
    from .llm_resolve import CandidateFact

__all__ = [
    "BATCH_MEMORIES", "Drafted", "PipelineConfig", "build_plan", "draft_group", "drafts_from_extraction",
    "embed_drafts", "estimate_usage", "finish_plan", "group_memories",
]

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
                ends=f.ends, dated=f.valid_at is not None, changes=bool(getattr(f, "changes", False)),
                # verdicts an extractor gave against the stored facts it was shown
                duplicate_of=getattr(f, "duplicate_of", None),
                contradicts=list(getattr(f, "contradicts", None) or []),
            )
        )
    return list(entities.values()), facts


#: memories planned together: all their texts go to the embedder in one call
BATCH_MEMORIES = 256
#: stored facts shown to the extractor per memory (most relevant first)
KNOWN_FACTS = 8
#: a group call holds at most this many memories, and this many tokens of their text
GROUP_DOCS = 4
#: the most earlier turns of its session a message's extraction is shown, and their characters
CONTEXT_TURNS, CONTEXT_CHARS = 6, 2000
GROUP_TOKENS = 1200
#: n-grams of the text looked up as entity names before extraction (longest names in words)
_MAX_NAME_WORDS = 4
_MAX_SCAN_KEYS = 4000
_WORDS = re.compile(r"\w+", re.UNICODE)


@dataclass
class Prepared:
    """A memory before extraction: its chunks and what the store already knows about it."""

    memory: Memory
    chunks: list[Chunk]
    #: live stored facts about entities the text names, shown to the extractor
    known: list[CandidateFact] = field(default_factory=list)
    #: entity ids whose stored facts were looked at (the model judged against them)
    scanned: set[str] = field(default_factory=set)


def group_memories(memories: list[Memory], extractor: Extractor, config: PipelineConfig) -> list[list[Memory]]:
    """Short memories of one dataset share an extraction call (an extractor that supports
    it); long ones go alone. Input order is kept inside and across groups."""
    if type(extractor).groupable is Extractor.groupable:  # it shares no call: no text to chunk
        return [[memory] for memory in memories]
    groups: list[list[Memory]] = []
    open_groups: dict[str, tuple[list[Memory], list[int]]] = {}
    for memory in memories:
        chunks = [c.text for c in _chunks(memory, config)]
        size = extractor.groupable(chunks)
        if size is None or size > GROUP_TOKENS // 2:
            groups.append([memory])
            continue
        group, total = open_groups.get(memory.dataset, (None, [0]))
        if group is None or len(group) >= GROUP_DOCS or total[0] + size > GROUP_TOKENS:
            group, total = [], [0]
            groups.append(group)
            open_groups[memory.dataset] = (group, total)
        group.append(memory)
        total[0] += size
    return groups


@dataclass
class Drafted:
    """A memory after extraction, before embedding and resolution."""

    prep: Prepared
    entities: list[EntityDraft]
    facts: list[FactDraft]
    #: stored entities the text names, by normalized name (found when drafted)
    known: dict
    #: what this memory spent (its share of shared calls included)
    usage: Usage
    #: entities whose stored facts the extractor judged against (None: it judged nothing)
    scanned: set[str] | None = None
    chunk_vectors: list = field(default_factory=list)

    @property
    def fresh(self) -> list[EntityDraft]:
        return [e for e in self.entities if e.key not in self.known]

    def texts(self) -> list[str]:
        """What ``embed_drafts`` embeds, in the order it hands the vectors back."""
        return [c.text for c in self.prep.chunks] + [e.name for e in self.fresh] + [f.description for f in self.facts]


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
    """One memory's plan, the three steps below in a row; raises what failed."""
    drafted = draft_group([memory], config=config, extractor=extractor, store=store, chat=chat, usages=[usage])[0]
    if isinstance(drafted, BaseException):
        raise drafted
    embed_drafts([drafted], embedder)
    return finish_plan(drafted, config=config, store=store, chat=chat, now=now, replace=replace)


def draft_group(
    memories: list[Memory],
    *,
    config: PipelineConfig,
    extractor: Extractor,
    store: Store,
    chat: ChatModel | None,
    usages: list[Usage],
) -> list[Drafted | KenningError]:
    """Chunk and extract memories that share one extraction call (a group); a memory whose
    extraction failed gets its error. Calls and tokens of a shared call are split between the
    memories by the size of their text, so totals stay exact."""
    judged = chat is not None and extractor.judges
    prepared = [_prepare(m, config, store, scan=judged) for m in memories]
    shared = Usage() if len(memories) > 1 else usages[0]
    try:
        extractions = _extract(prepared, extractor, shared, earlier_turns(memories[0], store) if chat else None)
    finally:
        if len(memories) > 1:
            _split(shared, [len(m.content) for m in memories], usages)
    out: list[Drafted | KenningError] = []
    for prep, extraction, usage in zip(prepared, extractions, usages):
        if isinstance(extraction, KenningError):
            out.append(extraction)
            continue
        entities, facts = drafts_from_extraction(extraction, prep.memory.valid_at)
        entities, facts = keep_trusted_instructions(prep.memory, entities, facts)  # authority.py
        entities, facts = same_people(prep.memory, store, entities, facts)  # "Bob" is the session's Bob Stone
        known = store.find_entities(prep.memory.dataset, [e.key for e in entities])
        out.append(Drafted(prep, entities, facts, known, usage, prep.scanned if judged else None))
    return out


def embed_drafts(drafted: list[Drafted], embedder: Embedder) -> None:
    """One embedding call for every distinct text of these memories (chunks, new entity names,
    fact sentences): an embedder batches and length-sorts far better over many memories than
    over one. The call's usage is split between the memories by the size of their texts.
    Raises what the embedder raised."""
    if not drafted:
        return
    fresh = [d.fresh for d in drafted]
    texts = [d.texts() for d in drafted]
    # a text said twice in the batch (a repeated name or sentence) is embedded once
    unique = list(dict.fromkeys(t for part in texts for t in part))
    shared = Usage()
    try:
        found = embedder.embed(unique, shared) if unique else np.zeros((0, embedder.dimension), np.float32)
        row = {text: i for i, text in enumerate(unique)}
        vectors = iter([found[row[t]] for part in texts for t in part])
    finally:
        _split(shared, [sum(len(t) for t in part) for part in texts], [d.usage for d in drafted])
    for d, new in zip(drafted, fresh):
        d.chunk_vectors = [next(vectors) for _ in d.prep.chunks]
        for draft in new:
            draft.embedding = next(vectors)
        for fact in d.facts:
            fact.embedding = next(vectors)


def finish_plan(
    d: Drafted, *, config: PipelineConfig, store: Store, chat: ChatModel | None, now: dt.datetime, replace: bool
) -> WritePlan:
    """Resolve an embedded memory against the store (similar entity names; with a model, the
    duplicates and contradictions it could not judge) and make its write plan. Run it right
    before the memory commits, so it sees what the memories committed before it wrote."""
    memory = d.prep.memory
    questions = _resolve_by_similarity(memory.dataset, d.fresh, store, config.entity_similarity)
    if chat is not None:
        _resolve_with_model(memory.dataset, chat, store, d.entities, d.facts, d.known, questions, d.usage,
                            d.scanned)
    return WritePlan(
        memory_id=memory.id,
        dataset=memory.dataset,
        now=now,
        chunks=[
            ChunkRow(id=new_id("chk"), memory_id=memory.id, dataset=memory.dataset, position=c.position,
                     text=c.text, token_count=c.token_count, embedding=v, location=c.location)
            for c, v in zip(d.prep.chunks, d.chunk_vectors)
        ],
        entities=d.entities,
        facts=d.facts,
        replace=replace,
    )


def estimate_usage(
    memories: list[Memory], *, config: PipelineConfig, extractor: Extractor, store: Store,
    chat: ChatModel | None, remote_embedder: bool,
) -> Usage:
    """What processing would spend on these memories, grouped as they would be, without
    calling anything: the extractor's own estimate (stored facts it would be shown included),
    one embedding call per ``BATCH_MEMORIES`` memories, and (for an extractor that judges
    nothing) one resolution call per memory when the dataset already has facts."""
    usage = Usage()
    judged = chat is not None and extractor.judges
    has_facts = chat is not None and not judged and any(store.stats(m.dataset).facts for m in memories[:1])
    for group in group_memories(memories, extractor, config):
        prepared = [_prepare(m, config, store, scan=judged) for m in group]
        texts = [[c.text for c in p.chunks] for p in prepared]
        if chat is not None:  # an extractor shown nothing is given no known facts
            known = list({f.id: f for p in prepared for f in p.known}.values())
            documents = [Document(chunks=t, reference_time=p.memory.valid_at, **speakers_of(p.memory))
                         for t, p in zip(texts, prepared)]
            documents[0].context = earlier_turns(group[0], store)
            usage.add(extractor.estimate_many(documents, known))
            usage.chat_calls += len(group) if has_facts else 0
        usage.embedded_texts += sum(len(t) for t in texts)
    usage.embedding_calls += -(-len(memories) // BATCH_MEMORIES) if remote_embedder else 0
    return usage


def _prepare(memory: Memory, config: PipelineConfig, store: Store, *, scan: bool) -> Prepared:
    prep = Prepared(memory, _chunks(memory, config))
    if scan:
        prep.known, prep.scanned = _known_facts(memory, store)
    return prep


def _chunks(memory: Memory, config: PipelineConfig) -> list[Chunk]:
    """A memory read from a file names its format in ``metadata["format"]`` (kenning.files):
    its text is chunked by structure, with locations. A message is read as ``Speaker: text``."""
    fmt = memory.metadata.get("format")
    return chunk_text(memory_text(memory), config.chunk_size, config.chunk_overlap, fmt if isinstance(fmt, str) else None)


def _known_facts(memory: Memory, store: Store) -> tuple[list[CandidateFact], set[str]]:
    """Live stored facts about the entities the text names, most relevant first: no model call,
    only name lookups (every run of up to four words is a possible name) and one fact query."""
    from .llm_resolve import CandidateFact

    words = [normalize_name(w) for w in _WORDS.findall(memory.content)]
    words = [w for w in words if w]
    keys: dict[str, None] = {}
    for size in range(1, _MAX_NAME_WORDS + 1):
        for i in range(len(words) - size + 1):
            keys[" ".join(words[i : i + size])] = None
            if len(keys) >= _MAX_SCAN_KEYS:
                break
    names = list(keys)
    found: dict = {}
    for i in range(0, len(names), 500):
        found.update(store.find_entities(memory.dataset, names[i : i + 500]))
    if not found:
        return [], set()
    scanned = {row.id for row in found.values()}
    rows = [r for r in store.neighbors(memory.dataset, sorted(scanned), KNOWN_FACTS * 4) if r.expired_at is None]
    if not rows:
        return [], scanned
    text_words = set(words)

    def relevance(row) -> tuple[int, float]:
        both = row.source_id in scanned and row.target_id in scanned
        shared = set(normalize_name(row.description).split()) & text_words
        return (1 if both else 0, len(shared))

    rows = sorted(rows, key=relevance, reverse=True)[:KNOWN_FACTS]
    entity_names = {e.id: e.name for e in store.get_entities(sorted({x for r in rows for x in (r.source_id, r.target_id)}))}
    known = [
        CandidateFact(id=r.id, source=entity_names.get(r.source_id, "?"), relation=r.relation,
                      target=entity_names.get(r.target_id, "?"), sentence=r.description,
                      valid_at=r.valid_at, invalid_at=r.invalid_at)
        for r in rows
    ]
    return known, scanned


def speakers_of(memory: Memory) -> dict[str, str]:
    """Who says a memory ("I") and to whom ("you"), as ``Extractor.extract`` keyword arguments:
    a message's speaker and addressee (``messages.py``), else metadata ``{"speaker": …,
    "addressee": …}``; empty when it names neither, so an extractor written without these
    arguments still works. A value that is not a name raises."""
    voices = {}
    for key, said in (("speaker", memory.speaker), ("addressee", addressee(memory))):
        value = said or memory.metadata.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise ValidationError(f"metadata {key} must be a name (a non-empty string of at most 200 characters)")
        voices[key] = " ".join(value.split())
    return voices


def earlier_turns(memory: Memory, store: Store) -> str | None:
    """The session turns before a message (at most ``CONTEXT_TURNS``), as a transcript; None
    for other memories and a session's first turn. A group's later turns follow its first in the
    same call, so only the first is given them."""
    if memory.kind != "message" or memory.session is None or not memory.position:
        return None
    turns = store.session_messages(memory.dataset, memory.session, CONTEXT_TURNS, before=memory.position)
    return transcript(turns, max_chars=CONTEXT_CHARS) or None


def _extract(prepared: list[Prepared], extractor: Extractor, usage: Usage,
             context: str | None = None) -> list[Extraction | KenningError]:
    """One extraction per memory; only an extractor that judges was given known facts; the
    first document gets the turns before it (``context``)."""
    known = list({fact.id: fact for p in prepared for fact in p.known}.values())
    try:
        documents = [Document(chunks=[c.text for c in p.chunks], reference_time=p.memory.valid_at,
                              **speakers_of(p.memory)) for p in prepared]
    except KenningError as exc:
        return [exc] * len(prepared)
    documents[0].context = context
    return list(extractor.extract_many(documents, usage=usage, known=known))


def _split(total: Usage, weights: list[int], usages: list[Usage]) -> None:
    """Share ``total`` out by weight; integers by largest remainder, so the parts sum exactly."""
    weight = sum(weights) or 1
    for name, value in total.model_dump().items():
        if isinstance(value, float):
            for usage, w in zip(usages, weights):
                setattr(usage, name, getattr(usage, name) + value * w / weight)
            continue
        shares = [value * w / weight for w in weights]
        parts = [int(x) for x in shares]
        order = sorted(range(len(weights)), key=lambda i: shares[i] - parts[i], reverse=True)
        for i in order[: value - sum(parts)]:
            parts[i] += 1
        for usage, part in zip(usages, parts):
            setattr(usage, name, getattr(usage, name) + part)


def _resolve_by_similarity(
    dataset: str, fresh: list[EntityDraft], store: Store, threshold: float
) -> list[tuple[EntityDraft, list[tuple[str, float]]]]:
    """Merge a new name into an existing entity of a compatible type when their embeddings are
    close enough; return the near misses for the model to decide."""
    ambiguous = []
    for draft in fresh:
        if draft.embedding is None:  # embedded by embed_drafts before it is resolved
            continue
        hits = store.vector(dataset, "entity", draft.embedding, 3)
        if all(h.score < threshold - _AMBIGUOUS_MARGIN for h in hits):
            continue  # none is close enough to merge or to ask about: their rows are not read
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
    scanned: set[str] | None = None,
) -> None:
    """At most one model call per memory: duplicates and contradictions among candidate facts,
    and the ambiguous entity names, together. No candidates, no call.

    ``scanned``: entities whose stored facts the extractor was already shown (and judged the
    new facts against); their facts are not asked about again."""
    from .llm_resolve import CandidateFact, EntityQuestion, NewFact, resolve_with_model

    ids = {k: row.id for k, row in known.items()}
    ids.update({e.key: e.resolved_id for e in entities if e.resolved_id})
    candidates: dict[str, FactRow] = {}
    for draft in facts:
        source, target = ids.get(draft.source_key), ids.get(draft.target_key)
        if source is None or (scanned is not None and source in scanned):
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
                sentence=f.description, valid_at=f.valid_at, invalid_at=f.invalid_at, changes=f.changes)
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
