"""Recall: lanes (lexical, vector, graph) fused by reciprocal rank, then multipliers for
validity at ``as_of``/``known_at``, decay and feedback weight. No model call happens here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import ValidationError
from ..lifecycle.decay import decay_multiplier
from ..models import Fact, Hit, Memory, Usage
from ..pipeline.extract import normalize_name
from ..providers.base import Embedder
from ..settings import Settings
from ..store.base import FactRow, Scored, Store

__all__ = ["SEARCH_TYPES", "Query", "route", "search"]

#: reciprocal-rank constant: small, because each lane is short and its top ranks carry the signal
_RRF_K = 10
#: the graph lane votes at half weight: it finds neighbours, not matches
_LANE_WEIGHT = {"lexical": 1.0, "vector": 1.0, "graph": 0.5}
#: entities are pointers to facts and passages: they vote at half weight
_KIND_WEIGHT = {"chunk": 1.0, "fact": 1.0, "entity": 0.5}
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an the and or of to in on at for by with from is are was were be been am do does did what "
    "where when who whom which how why that this these those it its i you he she we they me him "
    "her us them my your his our their as about tell know any there has have had can could would "
    "should will shall may might".split()
)
_MAX_TERMS = 64
#: question words that point at a relation ("where does X live" -> lives_in)
_RELATION_CUES = {
    "works_at": {"work", "job", "employ", "employer", "company"},
    "lives_in": {"live", "home", "reside", "move", "based", "city"},
    "located_in": {"locat", "where", "headquarter", "based"},
    "ceo_of": {"ceo", "chief", "run", "lead"},
    "has_role": {"role", "title", "position", "job"},
    "married_to": {"married", "marri", "spouse", "wife", "husband"},
    "uses": {"use", "built", "stack", "technology", "tool"},
    "likes": {"like", "enjoy", "love", "favorite", "favourite"},
    "member_of": {"member", "belong"},
    "owns": {"own", "owner"},
    "founded": {"found", "founder", "start"},
}
#: score multiplier for a fact whose relation the question asks about
_RELATION_BOOST = 1.3
_MAX_PROVENANCE = 10
#: score multiplier for a hit about an entity the question names
_NAMED_BOOST = 1.2
_MAX_EMBED_CHARS = 8000
#: recall score multiplier for a fact that is not valid at the asked time (history)
_HISTORY = 0.35
_TEMPORAL_HINTS = re.compile(
    r"\b(when|since|before|after|until|till|during|used to|formerly|previous(ly)?|history|ago|"
    r"(in|on|as of) (\d{4}|january|february|march|april|may|june|july|august|september|october|"
    r"november|december))\b",
    re.IGNORECASE,
)

_LANES: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    # search type: (lexical kinds, vector kinds, graph lane)
    "hybrid": (("fact", "entity", "chunk"), ("fact", "entity", "chunk"), True),
    "chunks": (("chunk",), ("chunk",), False),
    "chunks_lexical": (("chunk",), (), False),
    "facts": (("fact",), ("fact",), False),
    "entities": (("entity",), ("entity",), False),
    "graph": (("entity",), ("entity",), True),
    "temporal": (("fact", "chunk"), ("fact", "chunk"), True),
}
#: answer modes retrieve like these, then make one model call
ANSWER_MODES = {"graph_completion": "hybrid", "rag_completion": "chunks"}
SEARCH_TYPES = tuple(_LANES) + tuple(ANSWER_MODES) + ("auto",)


@dataclass
class Query:
    text: str
    dataset: str = "main"
    search_type: str = "hybrid"
    top_k: int = 10
    depth: int = 1
    as_of: dt.datetime | None = None
    known_at: dt.datetime | None = None
    explain: bool = False


def terms_of(text: str) -> list[str]:
    words = [w for w in _WORD.findall(text[: _MAX_EMBED_CHARS * 4].casefold()) if w not in _STOP]
    return list(dict.fromkeys(words))[:_MAX_TERMS]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def asked_relations(terms: list[str]) -> set[str]:
    """Relations a question is about: their own words, or the cue words above."""
    stems = {_stem(t) for t in terms}
    out = {rel for rel, cues in _RELATION_CUES.items() if stems & {_stem(c) for c in cues}}
    return out | {"__stems__:" + s for s in stems}


def route(text: str) -> str:
    """The rule-based router: pick a search type from the wording of the query."""
    if _TEMPORAL_HINTS.search(text):
        return "temporal"
    return "hybrid"


@dataclass
class _Candidate:
    kind: str
    id: str
    score: float = 0.0
    lanes: set[str] = field(default_factory=set)
    why: list[str] = field(default_factory=list)


def _fuse(ranked_lists: Iterable[tuple[str, list[Scored]]]) -> dict[tuple[str, str], _Candidate]:
    pool: dict[tuple[str, str], _Candidate] = {}
    for lane, items in ranked_lists:
        for rank, item in enumerate(items):
            cand = pool.setdefault((item.kind, item.id), _Candidate(item.kind, item.id))
            cand.score += _LANE_WEIGHT[lane] * _KIND_WEIGHT[item.kind] / (_RRF_K + rank + 1)
            cand.lanes.add(lane)
            cand.why.append(f"{lane}#{rank + 1}")
    return pool


def search(
    store: Store,
    embedder: Embedder,
    settings: Settings,
    q: Query,
    now: dt.datetime,
    usage: Usage | None = None,
) -> tuple[list[Hit], list[Memory]]:
    if not isinstance(q.text, str) or not q.text.strip():
        raise ValidationError("query is empty")
    if q.top_k < 1 or q.top_k > 1000:
        raise ValidationError("top_k must be between 1 and 1000")
    if q.depth < 0 or q.depth > 5:
        raise ValidationError("depth must be between 0 and 5")
    lexical_kinds, vector_kinds, use_graph = _LANES[q.search_type]
    limit = max(q.top_k * 3, 30)
    terms = terms_of(q.text)
    lanes: list[tuple[str, list[Scored]]] = []
    for kind in lexical_kinds:
        lanes.append(("lexical", store.lexical(q.dataset, kind, terms, limit)))
    if vector_kinds:
        vec = embedder.embed([q.text[:_MAX_EMBED_CHARS]], usage)[0]
        # One vector lane over every kind, ranked by similarity: the scores of one embedder are
        # comparable, so a kind with few records cannot put a weak match at rank 1.
        found = [hit for kind in vector_kinds for hit in store.vector(q.dataset, kind, vec, limit)]
        lanes.append(("vector", sorted(found, key=lambda h: -h.score)[: limit * 2]))
    named, name_words = _named_entities(store, q)
    asked = asked_relations(terms)
    if use_graph and q.depth > 0:
        lanes.append(("graph", _graph_lane(store, q, terms, lanes, limit, named, name_words, asked)))
    pool = _fuse(lanes)
    if q.search_type in ("graph",):
        pool = {k: c for k, c in pool.items() if c.kind == "fact"}
    # Only the best fused candidates are loaded: the multipliers reorder within a few ranks,
    # and loading hundreds of records per query would dominate the latency.
    keep = sorted(pool.items(), key=lambda kv: -kv[1].score)[: max(q.top_k * 4, 40)]
    pool = dict(keep)
    return _materialize(store, settings, q, pool, now, asked, named)


def _named_entities(store: Store, q: Query) -> tuple[set[str], set[str]]:
    """Entities the query names — word n-grams (up to 4) matched on normalized names — and the
    words those names cover. Where a longer name matches ("Alice Novak"), its parts ("Novak")
    do not count on their own."""
    words = [normalize_name(w) for w in _WORD.findall(q.text[:2000])]
    grams = [" ".join(words[i : i + n]) for n in range(4, 0, -1) for i in range(len(words) - n + 1)]
    found = store.find_entities(q.dataset, [g for g in grams if g])
    covered: set[str] = set()
    named = set()
    for gram in sorted(found, key=lambda g: -len(g.split())):
        parts = set(gram.split())
        if parts <= covered:
            continue
        covered |= parts
        named.add(found[gram].id)
    return named, covered


def _graph_lane(
    store: Store, q: Query, terms: list[str], lanes: list[tuple[str, list[Scored]]], limit: int,
    named: set[str], name_words: set[str], asked: set[str],
) -> list[Scored]:
    """Breadth-first from the entities the query names and those the other lanes found. A
    neighbour fact is kept when it links two named entities, or shares a word (other than the
    names) with the query, or has the relation the query asks about: a hub entity's hundreds of
    unrelated facts are not evidence."""
    found = [s.id for _, items in lanes for s in items[:5] if s.kind == "entity"]
    frontier = list(dict.fromkeys([*named, *found]))
    seen_entities = set(frontier)
    content_terms = [t for t in terms if t not in name_words]
    scored: dict[str, tuple[int, int, int]] = {}
    rows: list[FactRow] = []
    for hop in range(1, q.depth + 1):
        if not frontier:
            break
        nxt = []
        for row in store.neighbors(q.dataset, frontier, limit * 4):
            if row.id in scored:
                continue
            words_in = {_stem(w) for w in _WORD.findall(row.description.casefold())}
            overlap = sum(1 for t in content_terms if _stem(t) in words_in)
            overlap += int(_relation_matches(row.relation, asked))
            both_named = int(row.source_id in named) + int(row.target_id in named)
            if overlap == 0 and both_named < 2:
                continue
            scored[row.id] = (-both_named, -overlap, hop)
            rows.append(row)
            for e in (row.source_id, row.target_id):
                if e not in seen_entities:
                    seen_entities.add(e)
                    nxt.append(e)
        frontier = nxt
    ordered = sorted(rows, key=lambda r: (scored[r.id], r.expired_at is not None))
    return [Scored("fact", r.id, 1.0 / (1 + i)) for i, r in enumerate(ordered[:limit])]


def _fact_state(fact: Fact, q: Query, now: dt.datetime) -> tuple[bool, bool]:
    """(visible, current): whether kenning knew the fact at ``known_at`` and whether it was
    valid at the asked instant. A closing learned after ``known_at`` was not yet believed."""
    if q.known_at is not None and fact.created_at > q.known_at:
        return False, False
    invalid_at = fact.invalid_at
    if q.known_at is not None and fact.expired_at is not None and fact.expired_at > q.known_at:
        invalid_at = None  # the closing was learned after known_at
    at = q.as_of or q.known_at or now
    current = fact.valid_at <= at and (invalid_at is None or at < invalid_at)
    return True, current


def _relation_matches(relation: str, asked: set[str]) -> bool:
    if relation in asked:
        return True
    return any("__stems__:" + _stem(w) in asked for w in relation.split("_") if len(w) > 2)


def _dedupe(hits: list[Hit]) -> list[Hit]:
    """One hit per text: a sentence that states several facts is shown once, with the
    provenance of all; a chunk that only repeats a fact's sentence gives way to the fact,
    which carries the timeline. A sentence is only as true as the least of its facts ("Bob is
    the CEO of Acme" states ceo_of and works_at; once ceo_of closes the sentence is history),
    so the fact shown, and its timeline and score, are the one that ends first."""
    fact_texts = {h.text.strip().casefold() for h in hits if h.kind == "fact"}
    seen: dict[tuple[str, str], int] = {}
    out: list[Hit] = []
    for hit in hits:
        text = hit.text.strip().casefold()
        if hit.kind == "chunk" and text in fact_texts:
            continue
        index = seen.get((hit.kind, text))
        if index is None:
            seen[(hit.kind, text)] = len(out)
            out.append(hit)
            continue
        first = out[index]
        keep = hit if hit.kind == "fact" and _ends_sooner(hit, first) else first
        keep.memory_ids = list(dict.fromkeys([*first.memory_ids, *hit.memory_ids]))
        keep.lanes = sorted(set(first.lanes) | set(hit.lanes))
        out[index] = keep
    order = {"fact": 0, "entity": 1, "chunk": 2}
    return sorted(out, key=lambda h: (-h.score, order[h.kind], h.id))


def _ends_sooner(a: Hit, b: Hit) -> bool:
    never = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    return (a.current, a.invalid_at or never) < (b.current, b.invalid_at or never)


def _materialize(
    store: Store, settings: Settings, q: Query, pool: dict, now: dt.datetime, asked: set[str],
    named: set[str],
) -> tuple[list[Hit], list[Memory]]:
    by_kind: dict[str, list[str]] = defaultdict(list)
    for kind, item_id in pool:
        by_kind[kind].append(item_id)
    facts = {f.id: f for f in store.get_facts(by_kind["fact"])}
    entities = {e.id: e for e in store.get_entities(by_kind["entity"])}
    chunks = {c.id: c for c in store.get_chunks(by_kind["chunk"])}
    # A hit names at most _MAX_PROVENANCE memories: an entity mentioned by thousands of
    # memories would otherwise make every query load them all. An entity names first the
    # memories the other candidates come from: those are the ones this query is about.
    relevant = {c.memory_id for c in chunks.values()} | {m for f in facts.values() for m in f.memory_ids}
    for entity in entities.values():
        entity.memory_ids = [m for m in entity.memory_ids if m in relevant] or entity.memory_ids[:1]
    for record in (*facts.values(), *entities.values()):
        record.memory_ids = record.memory_ids[:_MAX_PROVENANCE]
    memory_ids = {c.memory_id for c in chunks.values()}
    memory_ids |= {m for f in facts.values() for m in f.memory_ids}
    memory_ids |= {m for e in entities.values() for m in e.memory_ids}
    memories = {m.id: m for m in store.get_memories(sorted(memory_ids))}

    hits: list[Hit] = []
    for (kind, item_id), cand in pool.items():
        hit = _hit(kind, item_id, cand, facts, entities, chunks, memories, q, now, settings)
        if hit is None:
            continue
        if hit.kind == "fact":
            fact = facts[item_id]
            if _relation_matches(fact.relation, asked):
                # "where does Alice live": the relation asked about, of the entity named
                hit.score *= _RELATION_BOOST
                if fact.source_id in named or fact.target_id in named:
                    hit.score *= _NAMED_BOOST
        hits.append(hit)
    order = {"fact": 0, "entity": 1, "chunk": 2}
    hits.sort(key=lambda h: (-h.score, order[h.kind], h.id))
    hits = _dedupe(hits)[: q.top_k]
    used = list(dict.fromkeys(m for h in hits for m in h.memory_ids))
    return hits, [memories[m] for m in used if m in memories]


def _visible_memories(ids: list[str], memories: dict[str, Memory], q: Query, settings: Settings,
                      now: dt.datetime) -> list[Memory]:
    out = []
    for memory_id in ids:
        memory = memories.get(memory_id)
        if memory is None:
            continue
        if q.known_at is not None and memory.created_at > q.known_at:
            continue
        if memory.status == "superseded" and memory.updated_at < now - dt.timedelta(
            days=settings.supersession_grace_days
        ):
            continue
        out.append(memory)
    return out


def _hit(kind, item_id, cand, facts, entities, chunks, memories, q, now, settings) -> Hit | None:  # noqa: ANN001, PLR0913
    explanation = ", ".join(cand.why) if q.explain else None
    if kind == "fact":
        fact = facts.get(item_id)
        if fact is None:
            return None
        visible, current = _fact_state(fact, q, now)
        mems = _visible_memories(fact.memory_ids, memories, q, settings, now)
        if not visible or not mems:
            return None
        weight = fact.weight * (1.0 if current else _HISTORY)
        return Hit(
            kind="fact", id=fact.id, text=fact.description, lanes=sorted(cand.lanes),
            score=cand.score * weight * _decay(mems, settings, now), memory_ids=[m.id for m in mems],
            current=current, source=fact.source, relation=fact.relation, target=fact.target,
            valid_at=fact.valid_at, invalid_at=fact.invalid_at, created_at=fact.created_at,
            expired_at=fact.expired_at, superseded_by=fact.superseded_by, explanation=explanation,
        )
    if kind == "entity":
        entity = entities.get(item_id)
        if entity is None or (q.known_at is not None and entity.created_at > q.known_at):
            return None
        mems = _visible_memories(entity.memory_ids, memories, q, settings, now)
        if not mems:
            return None
        text = entity.name + (f": {entity.description}" if entity.description else "")
        return Hit(kind="entity", id=entity.id, text=text, lanes=sorted(cand.lanes),
                   score=cand.score * _decay(mems, settings, now), memory_ids=[m.id for m in mems],
                   created_at=entity.created_at, explanation=explanation)
    chunk = chunks.get(item_id)
    if chunk is None:
        return None
    mems = _visible_memories([chunk.memory_id], memories, q, settings, now)
    if not mems:
        return None
    return Hit(kind="chunk", id=chunk.id, text=chunk.text, lanes=sorted(cand.lanes),
               score=cand.score * _decay(mems, settings, now), memory_ids=[chunk.memory_id],
               current=mems[0].status != "superseded", created_at=mems[0].created_at,
               explanation=explanation)


def _decay(memories: list[Memory], settings: Settings, now: dt.datetime) -> float:
    return max(decay_multiplier(m, settings, now) for m in memories)
