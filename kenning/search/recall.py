"""Recall: search lanes, evidence grouped by memory, fusion by lane weight, then the question's
time window, neighbouring turns and multipliers (validity at ``as_of``/``known_at``, decay,
feedback weight). No model call happens here.

Lanes: lexical (BM25 over chunks, facts and entities), vector (one embedder, every kind) and
graph (facts around the entities the question names). Each lane's scores are normalised to
[0, 1] within the lane (BM25 by the lane's best score, cosine by min-max over the lane's list,
the graph lane by rank), so lanes are weighed by what they are worth, not by their scales.

For the memory-level search types (``hybrid``, ``chunks``, ``chunks_lexical``, ``temporal``) a
memory is one piece of evidence: its chunks and the facts it states vote for it, each lane
counting once (its best record), and it is shown once, in its best form: the fact the question
asks about (it carries the timeline) or else its best passage; the other records that matched
are its ``support``. A memory next to a strong one in the same episode (the turn before or
after) gains a share of its neighbour's score: in a conversation the evidence is often the
reply to the turn that matched. ``facts``, ``entities`` and ``graph`` rank records.

Weights were chosen on the public dev split (LoCoMo conversations 1-5); docs/benchmarks.md has
the figures that chose them and the test-split figures.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..lifecycle.decay import decay_multiplier
from ..models import Entity, Fact, Hit, Memory, Neighbor, Usage
from ..text import STOP_WORDS, WORD, light_stem, normalize_name, terms_of
from ..providers.base import Embedder
from ..settings import Settings
from ..store.base import ChunkRow, FactRow, MemoryFilter, Scored, Store
from .._identity import DEFAULT_DATASET
from . import chat, recency
from .variants import with_variants
from .when import Window, query_window, time_words

__all__ = ["LANE_WEIGHTS", "SEARCH_TYPES", "Query", "asked_relations", "route", "search", "terms_of"]

#: what each lane's normalised score is worth, and the other ranking constants (dev-calibrated)
LANE_WEIGHTS: dict[str, float] = {
    "lexical": 1.0,
    "vector": 0.35,
    #: the graph lane proposes candidates (facts of the entities the question names); as
    #: evidence for ranking memories it measured worth nothing on the dev splits
    "graph": 0.0,
    #: a memory gains this share of its best neighbour's fused score
    "neighbor": 0.65,
    #: the share a memory two turns away gains (the answer is often a turn further on)
    "neighbor2": 0.5,
    #: the share the turn after one that asks something (its reply) gains instead, in a
    #: conversation between people (turns without a role): the reply is the answer to it
    "reply": 1.0,
    #: score multiplier 1 + this for a memory dated inside the window the question names
    "window": 1.0,
    #: a fact's lexical and vector scores count at this share towards its memory
    "fact": 0.25,
    #: score multiplier 1 + this for a turn ("Name: …") spoken by someone the question names
    "speaker": 0.25,
    #: a second full-text query with names from the best passages (two-hop questions)
    "expansion": 0.5,
    #: what that second query is worth for a question through something it does not name
    #: ("the author of…", "the state that…") when the best passages are documents (no
    #: episode): a name in a document is the bridge to the next one; in a chat the names are
    #: mostly the speakers', and the turn after the match is the bridge (``neighbor``)
    "bridge": 2.0,
    #: score multiplier 1 + this for a chat turn of the role the question points at (search/chat.py)
    "role": 1.0,
    #: in the second query over documents, a passage titled by a name of the best passages
    #: scores at least this share of that query's best passage (``_about_names``)
    "title": 0.5,
    #: in a question that gathers ("how many…"), each further hit from an episode already
    #: ranked keeps 1 - this of its score (search/chat.py)
    "session": 0.3,
}
#: a question about what ended ("which company did X leave") is not answered by what is current
_PAST = re.compile(r"\b(left|leave|leaving|quit|former(ly)?|previous(ly)?|used to|ex-|before|earlier|"
                   r"no longer|anymore|old)\b", re.IGNORECASE)
_EXPANSION_DOCS = 3
#: a scoped query asks its lanes for this many times more candidates: those outside the scope
#: are dropped after the lanes (``Store.in_scope``), before ranking
_SCOPED_FETCH = 8
#: entities from each entity lane that seed the graph lane
_SEEDS = 5
#: the score of a candidate that a lane returned but could not tell apart from the others
_FOUND = 1e-3
_EXPANSION_TERMS = 8
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
#: question words that point at a relation ("where does X live" -> lives_in)
_RELATION_CUES = {
    "works_at": {"work", "job", "employ", "employer", "company"},
    "lives_in": {"live", "home", "reside", "move", "based", "city"},
    "located_in": {"locat", "where", "headquarter", "based"},
    "ceo_of": {"ceo", "chief", "run", "lead"},
    "has_role": {"role", "title", "position", "job", "living", "occupation", "profession"},
    "married_to": {"married", "marri", "spouse", "wife", "husband"},
    "uses": {"use", "built", "stack", "technology", "tool"},
    "likes": {"like", "enjoy", "love", "favorite", "favourite"},
    "member_of": {"member", "belong"},
    "owns": {"own", "owner"},
    "founded": {"found", "founder", "start"},
    # everyday slots (pipeline/offline.py ``_SLOTS``, pipeline/changes.py kinds)
    "dating": {"partner", "dating", "boyfriend", "girlfriend", "relationship"},
    "engaged_to": {"partner", "engaged", "fiance", "fiancee"},
    "partner_of": {"partner"},
    "has_doctor": {"doctor", "gp", "physician"},
    "has_dentist": {"dentist"},
    "banks_with": {"bank"},
    "supports": {"support", "team", "club", "fan"},
    "has_diet": {"diet", "eat"},
    "learns": {"learn", "language"},
    "has_pet": {"pet"},
    "studied_at": {"study", "school", "university", "college", "uni"},
}
#: the asked relations that hold one value at a time: a current fact of one of them is *the*
#: answer ("where does Alice live") and leads; of the others ("what does Alice like") any one
#: fact is one answer among many, ranked with the passages
_ONE_VALUE = frozenset({"works_at", "lives_in", "located_in", "ceo_of", "has_role", "married_to", "dating",
                        "engaged_to", "partner_of", "has_doctor", "has_dentist", "banks_with", "supports",
                        "has_diet", "studied_at"})
#: score multiplier for a fact whose relation the question asks about
_RELATION_BOOST = 1.5
#: score multiplier for a hit about an entity the question names
_NAMED_BOOST = 1.5
_MAX_PROVENANCE = 10
_MAX_EMBED_CHARS = 8000
_MAX_MEMORY_TEXT = 2000
#: recall score multiplier for a fact that is not valid at the asked time (history)
_HISTORY = 0.35
_TEMPORAL_HINTS = re.compile(
    r"\b(when|since|before|after|until|till|during|used to|formerly|previous(ly)?|history|ago|"
    r"(in|on|as of) (\d{4}|january|february|march|april|may|june|july|august|september|october|"
    r"november|december))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Spec:
    lexical: tuple[str, ...]
    vector: tuple[str, ...]
    graph: bool
    by_memory: bool
    #: the full memory ranking: neighbouring turns and a second, expanded full-text query
    neighbors: bool = False


_LANES: dict[str, _Spec] = {
    # the graph lane stays in hybrid: its ranking weight is 0 and the benchmark sets score the
    # same without it, but it proposes the named entity's fact of the asked relation ("where
    # does Priya live" -> the current lives_in fact leads the context block); docs/benchmarks.md
    "hybrid": _Spec(("chunk", "fact", "entity"), ("chunk", "fact", "entity"), True, True, True),
    "chunks": _Spec(("chunk",), ("chunk",), False, True, True),
    "chunks_lexical": _Spec(("chunk",), (), False, True),
    "temporal": _Spec(("chunk", "fact", "entity"), ("chunk", "fact", "entity"), True, True, True),
    "facts": _Spec(("fact",), ("fact",), False, False),
    "entities": _Spec(("entity",), ("entity",), False, False),
    "graph": _Spec(("entity",), ("entity",), True, False),
}
#: answer modes retrieve like these, then make one model call
ANSWER_MODES = {"graph_completion": "hybrid", "rag_completion": "chunks"}
SEARCH_TYPES = tuple(_LANES) + tuple(ANSWER_MODES) + ("auto",)
#: lane names a Query may restrict itself to (evaluation of one lane at a time)
LANES = ("lexical", "vector", "graph", "neighbor", "reply", "window", "speaker", "expansion", "role", "session",
         "title")


@dataclass
class Query:
    text: str
    dataset: str = DEFAULT_DATASET
    search_type: str = "hybrid"
    top_k: int = 10
    depth: int = 1
    as_of: dt.datetime | None = None
    known_at: dt.datetime | None = None
    explain: bool = False
    #: attach this many neighbouring turns on each side to every hit
    neighbors: int = 0
    #: use only these lanes (None: every lane of the search type); for evaluation
    lanes: frozenset[str] | None = None
    #: only evidence from the memories this selects (user, agent, session, metadata filters)
    scope: MemoryFilter | None = None

    def uses(self, lane: str) -> bool:
        return self.lanes is None or lane in self.lanes


def asked_relations(terms: list[str]) -> set[str]:
    """Relations a question is about: their own words, or the cue words above."""
    stems = {light_stem(t) for t in terms}
    out = {rel for rel, cues in _RELATION_CUES.items() if stems & {light_stem(c) for c in cues}}
    return out | {"__stems__:" + s for s in stems}


def route(text: str) -> str:
    """The rule-based router: pick a search type from the wording of the query."""
    if _TEMPORAL_HINTS.search(text):
        return "temporal"
    return "hybrid"


def _relation_matches(relation: str, asked: set[str]) -> bool:
    if relation in asked:
        return True
    return any("__stems__:" + light_stem(w) in asked for w in relation.split("_") if len(w) > 2)


# -- lanes --------------------------------------------------------------------------------------

_T = TypeVar("_T")


@functools.cache
def _readers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="kenning-recall")


def _soon(store: Store, read: Callable[..., _T], *args: Any) -> Callable[[], _T]:
    """A read of the store (or a function of reads) begun now, its result asked for later: on
    another thread where the store answers reads on several connections at once (PostgreSQL's
    pool: the server works on each in a process of its own), else made here and now, so such a
    store sees its reads in the order they are begun. Reads change nothing: the result is the same."""
    if getattr(store, "concurrent_reads", False):
        return _readers().submit(read, *args).result
    result = read(*args)
    return lambda: result


@dataclass
class _Lanes:
    """Every lane's candidates, normalised: (kind, id) -> lane -> score in [0, 1]."""

    scores: dict[tuple[str, str], dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    why: dict[tuple[str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    #: lane weights for records (facts, entities): the graph lane is what the graph search is
    weights: dict[str, float] = field(default_factory=lambda: {**LANE_WEIGHTS, "graph": 1.0})

    def add(self, lane: str, items: list[Scored], scale: float = 1.0, limit: int | None = None) -> None:
        for rank, (item, score) in enumerate(zip(items, _normalise(lane, items, limit))):
            key = (item.kind, item.id)
            self.scores[key][lane] = max(scale * score, self.scores[key].get(lane, 0.0))
            self.why[key].append(f"{lane}#{rank + 1}")

    def fused(self, key: tuple[str, str]) -> float:
        # Every candidate some lane returned keeps a sliver of score, so the multipliers (validity,
        # relation, decay) still order candidates no lane could tell apart.
        return _FOUND + sum(self.weights[lane] * s for lane, s in self.scores[key].items())

    def ids(self, kind: str) -> list[str]:
        return [i for k, i in self.scores if k == kind]


def _normalise(lane: str, items: list[Scored], limit: int | None = None) -> list[float]:
    """Scores in [0, 1]: full text by the best score; similarity from the lane's cut-off (the
    score of its last item when the list was cut at ``limit``, else 0) to its best score."""
    if not items:
        return []
    if lane == "graph":
        return [1.0 / (1.0 + i) ** 0.5 for i in range(len(items))]
    scores = [s.score for s in items]
    hi = max(scores)
    if lane != "vector":
        return [s / hi if hi > 0 else 0.0 for s in scores]
    floor = max(0.0, min(scores)) if limit is not None and len(items) >= limit else 0.0
    # A vector lane whose scores are all equal, or never positive, told nothing apart.
    return [max(0.0, s - floor) / (hi - floor) if hi > floor else 0.0 for s in scores]


def _collect(store: Store, embedder: Embedder, q: Query, spec: _Spec, usage: Usage | None,
             entities: Callable[[], tuple[set[str], set[str]]], asked: set[str],
             told: AbstractSet[str] = frozenset()) -> _Lanes:
    limit = max(q.top_k * 3, 30) * (_SCOPED_FETCH if q.scope else 1)
    terms = terms_of(q.text)
    if len(kept := [t for t in terms if t not in told]) >= 2:
        terms = kept  # "a week ago" is read as the window (search/when.py), not searched for
    if q.uses("role") and LANE_WEIGHTS["role"] > 0:
        terms = chat.lexical_terms(q.text, terms)
    terms = with_variants(terms)  # "allergies" also finds "allergic"
    lanes = _Lanes()
    seeds: list[str] = []
    # Every read that waits for no other is begun first; the lists are added in one order.
    lexical = {kind: _soon(store, store.lexical, q.dataset, kind, terms,
                           limit if kind != "entity" or not spec.by_memory else _SEEDS)
               for kind in (spec.lexical if q.uses("lexical") else ())}
    # An embedder says what its lane is worth beside the full-text lane when ranking memories
    # (the hashing embedder's bag of words repeats it: 0, so its lane is skipped there unless
    # asked for alone); record searches (facts, entities) keep it to find records by likeness.
    alone = q.lanes is not None and not q.lanes - {"vector"}
    scale = embedder.recall_weight if spec.by_memory and not alone else 1.0
    vector = []
    if spec.vector and q.uses("vector") and scale > 0:
        vec = embedder.embed_query([q.text[:_MAX_EMBED_CHARS]], usage)[0]
        vector = [_soon(store, store.vector, q.dataset, kind, vec, limit) for kind in spec.vector]
    expansion = None
    if "chunk" in lexical and spec.neighbors and LANE_WEIGHTS["expansion"] and q.uses("expansion"):
        expansion = _soon(store, _expansion, store, q, terms, lexical["chunk"](), limit)
    if "entity" in lexical:
        seeds += [s.id for s in lexical["entity"]()[:_SEEDS]]  # the best entities seed the graph lane
    found: list[Scored] = []
    if vector:
        # One vector lane over every kind, ranked by similarity: the scores of one embedder are
        # comparable, so a kind with few records cannot put a weak match at rank 1.
        found = sorted((hit for hits in vector for hit in hits()), key=lambda h: -h.score)
        seeds += [s.id for s in found if s.kind == "entity"][:_SEEDS]
    graph = None
    if spec.graph and q.depth > 0 and q.uses("graph"):
        named, name_words = entities()
        graph = _graph_lane(store, q, terms, seeds, limit, named, name_words, asked)
    for kind, items in lexical.items():
        if kind != "entity" or not spec.by_memory:  # in memory rankings entities are pointers
            lanes.add("lexical", items())
        if kind == "chunk" and expansion is not None:
            more, documents = expansion()
            lanes.add("expansion", more, _bridge_scale() if documents and _hops(q.text) else 1.0)
    if vector:
        lanes.add("vector", [s for s in found if s.kind != "entity"][:limit] if spec.by_memory else found[:limit],
                  scale, limit)
    if graph is not None:
        lanes.add("graph", graph)
    return lanes


#: a question through something it does not name ("the architect of the Tower", "the state
#: that borders…", "the country where…"): its answer is a hop away from what it names
_HOPS = re.compile(r"\bthe \w+(?: \w+)? (?:of|by|for|from|behind|where|who|whom|which|that|whose)\b",
                   re.IGNORECASE)
#: the same through a name's possession ("Gisvi's city of birth", "Barry Wesson's team") or a
#: thing named by what follows it ("the country Signmark is from", "the country containing
#: Nugegoda", "the county in which …")
_HOPS_NAMED = re.compile(r"\b[A-Z][\w.-]*'s\s+[a-z]+|\bthe [a-z]+ (?:[A-Z]|containing |in which |where )")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]+")


def _hops(text: str) -> bool:
    """Whether the question goes through something it does not name (``_HOPS``)."""
    return bool(_HOPS.search(text) or _HOPS_NAMED.search(text))


def _expansion(store: Store, q: Query, terms: list[str], top: list[Scored],
               limit: int) -> tuple[list[Scored], bool]:
    """A second full-text query with the names the best passages mention and the question does
    not (pseudo-relevance feedback): the bridge to the second passage of a two-hop question.
    Also whether those passages are documents (their memories belong to no episode)."""
    asked = set(terms)
    counts: dict[str, int] = defaultdict(int)
    chunks = store.get_chunks([s.id for s in top[:_EXPANSION_DOCS]])
    for chunk in chunks:
        for name in dict.fromkeys(_NAME.findall(chunk.text)):
            word = name.casefold()
            if word not in asked and word not in STOP_WORDS and len(word) > 2:
                counts[word] += 1
    extra = sorted(counts, key=lambda w: -counts[w])[:_EXPANSION_TERMS]
    if not extra:
        return [], False
    memories = store.get_memories(list(dict.fromkeys(c.memory_id for c in chunks)))
    documents = bool(memories) and all(m.episode is None for m in memories)
    found = store.lexical(q.dataset, "chunk", extra, limit)
    if documents and found and LANE_WEIGHTS["title"] > 0 and q.uses("title"):
        found = _about_names(store, found, set(counts), LANE_WEIGHTS["title"])
    return found, documents


#: a title is a document's first line of at most this many words
_TITLE_WORDS = 6


def _about_names(store: Store, found: list[Scored], names: set[str], share: float) -> list[Scored]:
    """The second query's passages, those whose title is a name the best passages mention
    ("Somalia" from "Ceelmakoile is a town … of Somalia") raised to ``share`` of the lane's best
    score: the document about the bridge entity, not one that names it in passing."""
    floor = share * found[0].score
    # only a passage below the floor can rise: the others' texts are not read
    texts = {c.id: c.text for c in store.get_chunks([s.id for s in found if s.score < floor])}
    out = []
    for item in found:
        title = texts.get(item.id, "").split("\n", 1)
        words = [w.casefold() for w in WORD.findall(title[0].split("(")[0])] if len(title) > 1 else []
        content = [w for w in words if w not in STOP_WORDS]
        about = 0 < len(words) <= _TITLE_WORDS and bool(content) and set(content) <= names
        out.append(Scored(item.kind, item.id, max(item.score, floor)) if about else item)
    return sorted(out, key=lambda s: -s.score)


def _bridge_scale() -> float:
    """The share of the expansion lane's weight that makes it the document ``bridge`` weight."""
    return LANE_WEIGHTS["bridge"] / LANE_WEIGHTS["expansion"]


def _named_entities(store: Store, q: Query) -> tuple[set[str], set[str]]:
    """Entities the query names — word n-grams (up to 4) matched on normalized names — and the
    words those names cover. Where a longer name matches ("Alice Novak"), its parts ("Novak")
    do not count on their own."""
    words = [normalize_name(w) for w in WORD.findall(q.text[:2000])]
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
    store: Store, q: Query, terms: list[str], seeds: list[str], limit: int,
    named: set[str], name_words: set[str], asked: set[str],
) -> list[Scored]:
    """Breadth-first from the entities the query names and those the other lanes found. A
    neighbour fact is kept when it links two named entities, or shares a word (other than the
    names) with the query, or has the relation the query asks about: a hub entity's hundreds of
    unrelated facts are not evidence."""
    frontier = list(dict.fromkeys([*named, *seeds]))
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
            words_in = {light_stem(w) for w in WORD.findall(row.description.casefold())}
            overlap = sum(1 for t in content_terms if light_stem(t) in words_in)
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


# -- entry point --------------------------------------------------------------------------------

def search(
    store: Store,
    embedder: Embedder,
    settings: Settings,
    q: Query,
    now: dt.datetime,
    usage: Usage | None = None,
) -> tuple[list[Hit], list[Memory]]:
    """Rank a query the engine has validated (text, top_k, depth, neighbors)."""
    spec = _LANES[q.search_type]
    entities = _soon(store, _named_entities, store, q)
    asked = asked_relations(terms_of(q.text))
    # The words of "a week ago" are left out of the full-text query when the question's window
    # is read against the clock; when nothing ranked was said in that window, the question
    # does not share the clock's frame ("what did Evan start one year ago" asked of a chat long
    # past) and its phrase is most likely the text's own words: asked again with them.
    told = time_words(q.text, now) if spec.by_memory and q.uses("window") else set()
    for drop in ([told, set()] if told else [set()]):
        lanes = _collect(store, embedder, q, spec, usage, entities, asked, drop)
        named = entities()[0]
        ctx = _Context(store, settings, q, now, asked, named, past=bool(_PAST.search(q.text)))
        hits = _by_memory(ctx, lanes, spec) if spec.by_memory else _by_record(ctx, lanes)
        if not drop or _said_in(ctx, hits, query_window(q.text, now)):
            break
    if q.neighbors:
        _attach_neighbors(ctx, hits)
    used = list(dict.fromkeys(m for h in hits for m in h.memory_ids))
    return hits, [ctx.memories[m] for m in used if m in ctx.memories]


def _said_in(ctx: _Context, hits: list[Hit], window: Window | None) -> bool:
    """Whether a memory of the hits was said inside ``window``."""
    return window is not None and any(
        window.contains(memory.valid_at) for h in hits for m in h.memory_ids[:1]
        if (memory := ctx.memories.get(m)) is not None)


@dataclass
class _Context:
    store: Store
    settings: Settings
    q: Query
    now: dt.datetime
    asked: set[str]
    named: set[str]
    #: the question asks about what ended: closed facts are its answers, open ones context
    past: bool = False
    memories: dict[str, Memory] = field(default_factory=dict)
    #: facts shown that answer the question (see ``answers``)
    answers_found: set[str] = field(default_factory=set)
    #: loaded memories outside the query's scope: never shown, nor provenance
    outside: set[str] = field(default_factory=set)

    def load_memories(self, ids: Iterable[str]) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.memories]
        self.memories.update((m.id, m) for m in self.store.get_memories(missing))
        if self.q.scope is not None and missing:
            inside = set(self.store.in_scope("memory", missing, self.q.scope))
            self.outside.update(i for i in missing if i not in inside)

    def visible(self, ids: Iterable[str]) -> list[Memory]:
        out = []
        for memory_id in ids:
            memory = self.memories.get(memory_id)
            if memory is None or memory_id in self.outside or memory.status not in ("active", "superseded"):
                continue
            if self.q.known_at is not None and memory.created_at > self.q.known_at:
                continue
            grace = dt.timedelta(days=self.settings.supersession_grace_days)
            if memory.status == "superseded" and memory.updated_at < self.now - grace:
                continue
            out.append(memory)
        return out

    def decay(self, memories: list[Memory]) -> float:
        return max(decay_multiplier(m, self.settings, self.now) for m in memories)

    def fact_state(self, fact: Fact) -> tuple[bool, bool]:
        """(visible, current): whether kenning knew the fact at ``known_at`` and whether it was
        valid at the asked instant. A closing learned after ``known_at`` was not yet believed."""
        q = self.q
        if q.known_at is not None and fact.created_at > q.known_at:
            return False, False
        invalid_at = _as_believed(fact, q.known_at).invalid_at
        at = q.as_of or q.known_at or self.now
        return True, fact.valid_at <= at and (invalid_at is None or at < invalid_at)

    def fact_boost(self, fact: Fact) -> float:
        """"Where does Alice live": a fact of the relation asked about is an answer; when the
        question names entities, only if it is about one of them (Bob's home answers nothing
        about Alice), and then it leads."""
        if not _relation_matches(fact.relation, self.asked):
            return 1.0
        if not self.named:
            return _RELATION_BOOST
        return _RELATION_BOOST * _NAMED_BOOST if self._about_named(fact) else 1.0

    def answers(self, fact: Fact) -> bool:
        """A fact of the relation asked about, of an entity the question names."""
        return self._about_named(fact) and _relation_matches(fact.relation, self.asked)

    def _about_named(self, fact: Fact) -> bool:
        return fact.source_id in self.named or fact.target_id in self.named


def _as_believed(fact: Fact, known_at: dt.datetime | None) -> Fact:
    """The fact as kenning believed it at ``known_at``: a closing learned later is not shown."""
    if known_at is None or fact.expired_at is None or fact.expired_at <= known_at:
        return fact
    return fact.model_copy(update={"invalid_at": None, "expired_at": None, "superseded_by": None})


# -- memory-level ranking -----------------------------------------------------------------------

@dataclass
class _Evidence:
    """One memory as evidence: its best score per lane and the records that matched."""

    memory_id: str
    lanes: dict[str, float] = field(default_factory=dict)
    chunks: list[tuple[float, ChunkRow]] = field(default_factory=list)
    #: the matched chunks by id, read (into ``chunks``) only for the memories that rank
    chunk_ids: list[tuple[float, str]] = field(default_factory=list)
    facts: list[tuple[float, Fact]] = field(default_factory=list)
    #: the matched facts by id, read (into ``facts``) likewise
    fact_ids: list[tuple[float, str]] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    bonus: float = 0.0
    multiplier: float = 1.0
    #: a multiplier of the memory's own evidence only (not of what its neighbours lend it)
    own: float = 1.0

    @property
    def fused(self) -> float:
        return _FOUND + sum(LANE_WEIGHTS[lane] * s for lane, s in self.lanes.items())

    @property
    def score(self) -> float:
        return (self.fused * self.own + self.bonus) * self.multiplier

    def vote(self, lane_scores: dict[str, float], fused: float, kind: str, record: str,
             why: list[str]) -> None:
        """A matched record by its kind (chunk or fact) and id."""
        is_fact = kind == "fact"
        for lane, s in lane_scores.items():
            if is_fact and lane != "graph":
                s *= LANE_WEIGHTS["fact"]  # a fact's sentence mostly repeats its passage
            self.lanes[lane] = max(s, self.lanes.get(lane, 0.0))
        (self.fact_ids if is_fact else self.chunk_ids).append((fused, record))
        self.why.extend(why)


def _by_memory(ctx: _Context, lanes: _Lanes, spec: _Spec) -> list[Hit]:
    q, store = ctx.q, ctx.store
    # a record's memories are all the ranking needs: chunks and facts are read for the ranked
    # memories only
    chunk_ids = lanes.ids("chunk")
    owner_of = _soon(store, store.chunk_owners, chunk_ids)
    stated_by = _soon(store, store.fact_owners, lanes.ids("fact"))()
    owner = owner_of()
    pool: dict[str, _Evidence] = {}
    records: list[tuple[str, str, list[str]]] = [*(("chunk", c, [owner[c]]) for c in chunk_ids if c in owner),
                                                 *(("fact", f, stated_by[f]) for f in lanes.ids("fact") if f in stated_by)]
    for kind, record, owners in records:
        key = (kind, record)
        for memory_id in owners[:_MAX_PROVENANCE]:
            ev = pool.setdefault(memory_id, _Evidence(memory_id))
            ev.vote(lanes.scores[key], lanes.fused(key), kind, record, lanes.why[key])
    if spec.neighbors and q.uses("neighbor"):
        _neighbor_bonus(ctx, pool, q.top_k)
    if q.scope is not None:
        pool = {m: pool[m] for m in store.in_scope("memory", list(pool), q.scope)}
    ranked = sorted(pool.values(), key=lambda e: -e.score)[: max(q.top_k * 2, 30)]
    chunks_of = _soon(store, store.get_chunks, list(dict.fromkeys(c for e in ranked for _, c in e.chunk_ids)))
    facts_of = _soon(store, store.get_facts, list(dict.fromkeys(f for e in ranked for _, f in e.fact_ids)))
    # for ``_settle``: the facts each ranked memory states (those of its hits among them), the named entities
    stated = _soon(store, store.memory_facts, [e.memory_id for e in ranked])
    named = _soon(store, store.get_entities, sorted(ctx.named))
    ctx.load_memories(e.memory_id for e in ranked)
    rows = {c.id: c for c in chunks_of()}
    facts = {f.id: f for f in facts_of()}
    for e in ranked:
        e.chunks = [(s, rows[c]) for s, c in e.chunk_ids if c in rows]
        e.facts = [(s, facts[f]) for s, f in e.fact_ids if f in facts]
    ctx.load_memories(m for e in ranked for _, f in e.facts for m in f.memory_ids[:_MAX_PROVENANCE])
    window = query_window(q.text, ctx.now) if q.uses("window") else None
    hits = [h for e in ranked if (h := _evidence_hit(ctx, e, window)) is not None]
    # Facts lead when the question asks for one: a current fact that answers it ("where does
    # Alice live") ranks above every passage, whatever the passages' scores.
    lead = 0.0 if ctx.past else max((h.score for h in hits), default=0.0)
    for hit in hits:
        if hit.id in ctx.answers_found and hit.current:
            hit.score += lead
    hits.sort(key=functools.partial(_order, ctx))
    if q.uses("session") and LANE_WEIGHTS["session"] > 0 and chat.gathers(q.text):
        hits = chat.diversify(hits, lambda h: _episode(ctx, h), LANE_WEIGHTS["session"])
    _settle(ctx, hits[: max(q.top_k * 2, 20)], window, stated(), named())
    hits.sort(key=functools.partial(_order, ctx))
    return _dedupe(hits)[: q.top_k]


def _order(ctx: _Context, hit: Hit) -> tuple[float, float, int, str]:
    """Hits by score; equal scores (the turns around a match gain the same share of it) by
    something stable rather than by the random part of their ids: the newer memory first,
    then the earlier turn of an episode."""
    memory = ctx.memories.get(hit.memory_ids[0]) if hit.memory_ids else None
    if memory is None:
        return -hit.score, 0.0, 0, hit.id
    return -hit.score, -memory.valid_at.timestamp(), memory.position or 0, memory.id


def _settle(ctx: _Context, hits: list[Hit], window: Window | None, ranked_facts: dict[str, list[str]],
            named: list[Entity]) -> None:
    """Passages say whether they are current, and the newest evidence leads a present-tense
    question about a state (``search/recency.py``); ``ranked_facts`` are the facts each ranked
    memory states (every hit's first memory among them), ``named`` the entities the question names."""
    firsts = list(dict.fromkeys(h.memory_ids[0] for h in hits if h.memory_ids and h.kind != "fact"))
    stated = {m: ranked_facts[m] for m in firsts}
    facts = {f.id: f for f in ctx.store.get_facts(list(dict.fromkeys(f for ids in stated.values() for f in ids)))}
    facts_of = {m: [_as_believed(facts[f], ctx.q.known_at) for f in ids if f in facts] for m, ids in stated.items()}
    q = ctx.q
    subjects = {e.name.casefold() for e in named} | recency.names_in(q.text)
    if not subjects and q.scope is not None and q.scope.user:
        subjects = {q.scope.user.casefold()}
    now_question = q.as_of is None and q.known_at is None and window is None and not ctx.past and recency.asks_now(q.text)
    recency.settle(hits, ctx.memories, facts_of, question=q.text, at=q.as_of or q.known_at or ctx.now,
                   now_question=now_question, subjects=_outermost(subjects))


def _outermost(names: set[str]) -> set[str]:
    """The names not part of a longer one ("alice novak", not also "novak")."""
    return {n for n in names if not any(n != m and set(n.split()) < set(m.split()) for m in names)}


def _episode(ctx: _Context, hit: Hit) -> str | None:
    memory = ctx.memories.get(hit.memory_ids[0]) if hit.memory_ids else None
    return memory.episode if memory is not None else None


def _neighbor_bonus(ctx: _Context, pool: dict[str, _Evidence], top_k: int) -> None:
    """A memory gains a share of the fused score of its best neighbour in the same episode
    (``neighbor`` for the turn before or after, ``neighbor2`` for two turns away); neighbours of
    the strongest memories join the pool on that share alone. In a conversation between people
    (turns without a user/assistant role) the turn after one that asks something is its reply,
    where the answer is: it gains the ``reply`` share. (In a chat with an assistant the user
    asks for help and states the facts in the asking, and the assistant's questions are
    clarifications: there the neighbour share stays, measured on LongMemEval dev.)"""
    strongest = sorted(pool.values(), key=lambda e: -e.fused)[: max(top_k * 2, 20)]
    fused = {e.memory_id: e.fused for e in pool.values()}
    best: dict[str, float] = defaultdict(float)
    shares = {1: LANE_WEIGHTS["neighbor"], 2: LANE_WEIGHTS["neighbor2"]}
    pairs_of = _soon(ctx.store, ctx.store.memory_neighbors, list(pool), 2 if shares[2] else 1)  # both passes
    first = {e.memory_id for e in strongest}
    reply = LANE_WEIGHTS["reply"] if ctx.q.uses("reply") else shares[1]
    asks: set[str] = set()
    if reply != shares[1]:
        ctx.load_memories(first)
        asks = {m for m in first if (memory := ctx.memories.get(m)) is not None and memory.role is None
                and "?" in memory.content}
    pairs = pairs_of()
    for of_id, neighbor_id, offset in pairs:
        if of_id in first:
            share = reply if offset == 1 and of_id in asks else shares[abs(offset)]
            best[neighbor_id] = max(best[neighbor_id], share * fused[of_id])
    # memories in the pool also gain from neighbours outside the strongest set
    rest = {m for m in pool if m not in best}
    for of_id, neighbor_id, offset in pairs:
        if of_id in rest and neighbor_id in fused:
            best[of_id] = max(best[of_id], shares[abs(offset)] * fused[neighbor_id])
    for memory_id, score in best.items():
        ev = pool.setdefault(memory_id, _Evidence(memory_id))
        ev.bonus = score
        ev.why.append(f"neighbor+{ev.bonus:.3f}")


def _evidence_hit(ctx: _Context, ev: _Evidence, window: Window | None) -> Hit | None:
    mems = ctx.visible([ev.memory_id])
    if not mems:
        return None
    memory = mems[0]
    ev.multiplier = ctx.decay(mems)
    # a message names its speaker; other text may begin "Name: …"
    speaker = memory.speaker or ((m := _SPEAKER.match(memory.content)) and m.group(1))
    if speaker and LANE_WEIGHTS["speaker"] and ctx.q.uses("speaker") and _names_in(speaker, ctx.q.text):
        ev.multiplier *= 1.0 + LANE_WEIGHTS["speaker"]
        ev.why.append(f"speaker x{1 + LANE_WEIGHTS['speaker']:g}")
    if ctx.q.uses("role") and (role := chat.role_multiplier(ctx.q.text, memory, LANE_WEIGHTS["role"])) != 1.0:
        if chat.focus(ctx.q.text) == "assistant":  # chat.py, "Whose words answer the question"
            ev.own *= role
        else:
            ev.multiplier *= role
        ev.why.append(f"role x{role:g}")
    fact = _best_fact(ctx, ev)
    # The window the question names: a fact shown is judged by when it was true, a passage by
    # when it was said.
    inside = window is not None and (
        window.overlaps(fact.valid_at, _as_believed(fact, ctx.q.known_at).invalid_at)
        if fact is not None else window.contains(memory.valid_at))
    if inside:
        ev.multiplier *= 1.0 + LANE_WEIGHTS["window"]
        ev.why.append(f"window x{1 + LANE_WEIGHTS['window']:g}")
    lanes = sorted(ev.lanes) + (["neighbor"] if ev.bonus else [])
    explanation = ", ".join(ev.why) if ctx.q.explain else None
    chunk = max(ev.chunks, key=lambda c: c[0])[1] if ev.chunks else None
    if fact is not None:
        hit = _fact_hit(ctx, fact, ev.score, lanes, explanation, first=ev.memory_id)
        if hit is not None:
            hit.support = [c.id for _, c in ev.chunks] + [f.id for _, f in ev.facts if f.id != fact.id]
            hit.location = chunk.location if chunk is not None else None
            hit.speaker = memory.speaker
            return hit
    support = [f.id for _, f in ev.facts]
    if chunk is not None:
        return Hit(kind="chunk", id=chunk.id, text=chunk.text, lanes=lanes, score=ev.score,
                   memory_ids=[memory.id], current=memory.status != "superseded",
                   valid_at=memory.valid_at, created_at=memory.created_at, explanation=explanation,
                   support=support + [c.id for _, c in ev.chunks if c.id != chunk.id], location=chunk.location,
                   source=memory.source, speaker=memory.speaker)
    return Hit(kind="memory", id=memory.id, text=memory.content[:_MAX_MEMORY_TEXT], lanes=lanes,
               score=ev.score, memory_ids=[memory.id], current=memory.status != "superseded",
               valid_at=memory.valid_at, created_at=memory.created_at, explanation=explanation,
               support=support, source=memory.source, speaker=memory.speaker)


@functools.lru_cache(maxsize=4096)
def _names_in(name: str, text: str) -> bool:
    """Whether ``text`` names the speaker (any part of the name, as a word)."""
    return any(re.search(rf"\b{re.escape(part)}\b", text) for part in name.split() if len(part) > 1)


def _best_fact(ctx: _Context, ev: _Evidence) -> Fact | None:
    """The fact to show for this memory, when a fact is its best form: the question asks for
    its relation, or no passage of the memory matched, or the passage only repeats the fact."""
    if not ev.facts:
        return None
    # of equal matches, the form that holds at the asked time (or, asked about what ended, the
    # closed one): "I left Acme and joined Globex" answers "where does she work" with Globex
    score, fact = max(ev.facts, key=lambda f: f[0] * ctx.fact_boost(f[1])
                      * (1.0 if ctx.fact_state(f[1])[1] != ctx.past else _HISTORY))
    if _relation_matches(fact.relation, ctx.asked) or not ev.chunks:
        return fact
    chunk_texts = {c.text.strip().casefold() for _, c in ev.chunks}
    return fact if fact.description.strip().casefold() in chunk_texts else None


def _fact_hit(ctx: _Context, fact: Fact, score: float, lanes: list[str], explanation: str | None,
              first: str | None = None) -> Hit | None:
    """A fact as a hit: scored as believed at ``known_at`` and valid at ``as_of``; ``first``
    is the memory it stands for (the others that state it follow); without one, the score is
    decayed by the fact's own memories."""
    visible, current = ctx.fact_state(fact)
    if not visible:
        return None
    mems = ctx.visible(fact.memory_ids[:_MAX_PROVENANCE])
    if not mems:
        return None
    if first is None:
        score *= ctx.decay(mems)
    # History ranks below what holds; a question about what ended turns that round.
    weight = fact.weight * (1.0 if current != ctx.past else _HISTORY) * ctx.fact_boost(fact)
    if ctx.answers(fact) and fact.relation in _ONE_VALUE:
        ctx.answers_found.add(fact.id)
    shown = _as_believed(fact, ctx.q.known_at)
    memory_ids = list(dict.fromkeys([*([first] if first else []), *(m.id for m in mems)]))
    return Hit(
        kind="fact", id=fact.id, text=fact.description, lanes=lanes, score=score * weight,
        memory_ids=memory_ids, current=current, source=fact.source, relation=fact.relation,
        target=fact.target, valid_at=shown.valid_at, invalid_at=shown.invalid_at,
        created_at=fact.created_at, expired_at=shown.expired_at, superseded_by=shown.superseded_by,
        explanation=explanation,
    )


def _dedupe(hits: list[Hit]) -> list[Hit]:
    """One hit per record and per text: a fact stated by several memories is shown once with
    the provenance of all; a passage that only repeats a fact's sentence gives way to the fact,
    which carries the timeline. A sentence is only as true as the least of the facts it states
    ("Bob is the CEO of Acme" states ceo_of and works_at; once ceo_of closes, the sentence is
    history), so the fact shown, with its timeline and score, is the one that ends first."""
    fact_texts = {h.text.strip().casefold() for h in hits if h.kind == "fact"}
    seen: dict[tuple[str, str], int] = {}
    out: list[Hit] = []
    for hit in hits:
        text = hit.text.strip().casefold()
        if hit.kind != "fact" and text in fact_texts:
            continue
        index = seen.get((hit.kind, hit.id), seen.get((hit.kind, text)))
        if index is None:
            seen[(hit.kind, hit.id)] = seen[(hit.kind, text)] = len(out)
            out.append(hit)
            continue
        first = out[index]
        keep = hit if hit.kind == "fact" and _ends_sooner(hit, first) else first
        keep.memory_ids = list(dict.fromkeys([*first.memory_ids, *hit.memory_ids]))
        keep.lanes = sorted(set(first.lanes) | set(hit.lanes))
        seen[(keep.kind, keep.id)] = index
        out[index] = keep
    return sorted(out, key=lambda h: -h.score)  # stable: the callers' order breaks ties


def _ends_sooner(a: Hit, b: Hit) -> bool:
    never = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    return (a.current, a.invalid_at or never) < (b.current, b.invalid_at or never)


# -- record-level ranking (facts, entities, graph) ----------------------------------------------

def _by_record(ctx: _Context, lanes: _Lanes) -> list[Hit]:
    q = ctx.q
    keys = sorted(lanes.scores, key=lambda k: -lanes.fused(k))
    if q.scope is not None:
        inside = {(kind, i) for kind in ("fact", "entity")
                  for i in ctx.store.in_scope(kind, [i for k, i in keys if k == kind], q.scope)}
        keys = [k for k in keys if k in inside]
    if q.search_type == "graph":
        keys = [k for k in keys if k[0] == "fact"]
    keys = keys[: max(q.top_k * 4, 40)]
    facts = {f.id: f for f in ctx.store.get_facts([i for k, i in keys if k == "fact"])}
    entities = {e.id: e for e in ctx.store.get_entities([i for k, i in keys if k == "entity"])}
    relevant = {m for f in facts.values() for m in f.memory_ids}
    for entity in entities.values():
        # An entity named by thousands of memories names first those the other hits come from.
        entity.memory_ids = [m for m in entity.memory_ids if m in relevant] or entity.memory_ids[:1]
    named: list[Fact | Entity] = [*facts.values(), *entities.values()]
    ctx.load_memories(m for r in named for m in r.memory_ids[:_MAX_PROVENANCE])
    hits = []
    for kind, item_id in keys:
        lane_names = sorted(lanes.scores[(kind, item_id)])
        explanation = ", ".join(lanes.why[(kind, item_id)]) if q.explain else None
        score = lanes.fused((kind, item_id))
        if kind == "fact" and item_id in facts:
            hit = _fact_hit(ctx, facts[item_id], score, lane_names, explanation)
        elif kind == "entity" and item_id in entities:
            hit = _entity_hit(ctx, entities[item_id], score, lane_names, explanation)
        else:
            hit = None
        if hit is not None:
            hits.append(hit)
    hits.sort(key=lambda h: (-h.score, h.id))
    return _dedupe(hits)[: q.top_k]


def _entity_hit(ctx: _Context, entity: Entity, score: float, lanes: list[str], explanation: str | None) -> Hit | None:
    if ctx.q.known_at is not None and entity.created_at > ctx.q.known_at:
        return None
    mems = ctx.visible(entity.memory_ids[:_MAX_PROVENANCE])
    if not mems:
        return None
    text = entity.name + (f": {entity.description}" if entity.description else "")
    return Hit(kind="entity", id=entity.id, text=text, lanes=lanes, score=score * ctx.decay(mems),
               memory_ids=[m.id for m in mems], created_at=entity.created_at, explanation=explanation)


# -- neighbouring turns -------------------------------------------------------------------------

def _attach_neighbors(ctx: _Context, hits: list[Hit]) -> None:
    """Each hit gets the turns around its first memory in the same episode, as they read."""
    firsts = {h.memory_ids[0] for h in hits if h.memory_ids}
    pairs = ctx.store.memory_neighbors(sorted(firsts), ctx.q.neighbors)
    ctx.load_memories(n for _, n, _ in pairs)
    around: dict[str, list[Neighbor]] = defaultdict(list)
    for of_id, neighbor_id, offset in pairs:
        for memory in ctx.visible([neighbor_id]):
            around[of_id].append(Neighbor(memory_id=memory.id, offset=offset,
                                          text=memory.content[:_MAX_MEMORY_TEXT], valid_at=memory.valid_at))
    for hit in hits:
        if hit.memory_ids:
            hit.neighbors = sorted(around.get(hit.memory_ids[0], []), key=lambda n: n.offset)
