"""Reading: ``recall`` (and its answer), ``timeline``, ``stats``, ``get`` and ``list``.

Reads check their arguments and that the dataset exists, search through ``search/``, rerank
when a reranker is configured, and record which memories were used.
"""

from __future__ import annotations

import builtins
import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any, cast, get_args

from .._checks import check_choice, check_flag, check_int, check_scope, check_text
from ..requests import ID_CHARS, MAX_DEPTH, MAX_NEIGHBORS, MAX_OFFSET, MAX_PAGE, MAX_TOKENS, MAX_TOP_K, MIN_TOKENS, NAME_CHARS
from ..requests import CHOICE_CHARS, ORDERS, QUERY_CHARS, RecallRequest
from .._identity import DEFAULT_DATASET, check_dataset
from ..dates import find_dates, parse_when
from ..errors import KenningError, ModelNotConfiguredError, NotFoundError, ValidationError
from ..models import (
    Context, Hit, Memory, MemoryKind, MemoryStatus, RecallResult, Retention, Session, Stats, Timeline, Usage,
)
from ..providers.base import ChatModel, Embedder
from ..providers.rerank import Reranker
from ..search.answer import AnswerFact, answer_question
from ..pipeline.authority import annotate, annotate_hits
from ..pipeline.temporal import RelationRules
from ..search.context import MESSAGES, build_context
from ..search.recall import ANSWER_MODES, SEARCH_TYPES, Query, route, search
from ..search.rerank import rerank_hits
from ..settings import Settings
from ..store.base import MemoryFilter, Store
from ..store.filters import parse_filters
from ..text import normalize_name, normalize_relation, terms_of

__all__ = ["Reading", "get_memory"]

log = logging.getLogger(__name__)


def get_memory(store: Store, memory_id: str) -> Memory:
    """One memory by id, or a NotFoundError."""
    found = store.get_memories([check_text(memory_id, "memory id", max_chars=ID_CHARS)])
    if not found:
        raise NotFoundError(f"no memory {memory_id!r}")
    return found[0]


class Reading:
    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, chat: ChatModel | None,
        reranker: Reranker | None, now: Callable[[], dt.datetime],
    ) -> None:
        self.settings, self.store, self.embedder, self.chat, self.reranker = settings, store, embedder, chat, reranker
        self.now = now
        self.rules = RelationRules(settings.single_valued_relations)

    # -- reads -------------------------------------------------------------------------------
    def _readable(self, dataset: str) -> None:
        """A read names a dataset that exists (the default ``main`` always does; so does one
        created empty through the server's ``datasets create``), or a NotFoundError names the
        ones that do. The server checks access first, so only a caller who may see every
        dataset (an admin, or the local user) ever gets this list."""
        check_dataset(dataset)
        if dataset == DEFAULT_DATASET:
            return
        existing = self.store.datasets()
        if dataset in existing:
            return
        from ..store.auth import AuthStore

        if isinstance(self.store, AuthStore) and self.store.dataset_records([dataset]):
            return
        raise NotFoundError(f"no dataset {dataset!r}; datasets: {', '.join(existing) or 'none yet'}")

    def stats(self, dataset: str | None) -> Stats:
        if dataset is not None:
            self._readable(dataset)
        return self.store.stats(dataset)

    def get(self, memory_id: str) -> Memory:
        return get_memory(self.store, memory_id)

    def list(self, flt: MemoryFilter) -> list[Memory]:
        if flt.dataset is not None:
            self._readable(flt.dataset)
        check_choice(flt.kind, "kind", get_args(MemoryKind))
        check_choice(flt.status, "status", get_args(MemoryStatus))
        check_choice(flt.retention, "retention", get_args(Retention))
        check_flag(flt.pinned, "pinned", optional=True)
        check_choice(flt.order_by, "order_by", ORDERS)
        check_flag(flt.descending, "descending")
        check_int(flt.limit, "limit", 1, MAX_PAGE)
        check_int(flt.offset, "offset", 0, MAX_OFFSET)
        for name in ("user", "agent", "session"):
            check_scope(getattr(flt, name), name)
        return self.store.list_memories(flt)

    def sessions(self, *, dataset: str, user: str | None, agent: str | None, limit: int,
                 offset: int) -> builtins.list[Session]:
        self._readable(dataset)
        check_int(limit, "limit", 1, MAX_PAGE)
        check_int(offset, "offset", 0, MAX_OFFSET)
        return self.store.sessions(MemoryFilter(dataset=dataset, user=check_scope(user, "user"),
                                                agent=check_scope(agent, "agent"), limit=limit, offset=offset))

    def context(self, query: str | None, *, dataset: str, user: str | None, agent: str | None,
                session: str | None, max_tokens: int, exclude_flagged: bool) -> Context:
        """The prompt block of a scope (``search/context.py``): the knowledge of the memories
        ``user`` and ``agent`` select in the dataset (all of them when neither is given), with a
        ``query`` the evidence recall finds among them, and ``session``'s latest turns. The
        session narrows the messages, not the knowledge: a new session knows the user."""
        self._readable(dataset)
        check_int(max_tokens, "max_tokens", MIN_TOKENS, MAX_TOKENS)
        scope = MemoryFilter(dataset=dataset, user=check_scope(user, "user"), agent=check_scope(agent, "agent"),
                             session=check_scope(session, "session"))
        evidence: list[Hit] = []
        if query is not None:
            evidence = self.recall(**RecallRequest.defaults(query=query, dataset=dataset, user=user, agent=agent)).hits
        return build_context(self.store, scope, as_of=self.now(), max_tokens=max_tokens, evidence=evidence,
                             exclude_flagged=check_flag(exclude_flagged, "exclude_flagged"), rules=self.rules)

    def _scope(self, dataset: str, now: dt.datetime, **scope: Any) -> MemoryFilter | None:
        """The filter of a scoped recall, or None when nothing narrows the dataset."""
        filters = parse_filters(scope.pop("filters"), now=now)
        for name, value in scope.items():
            check_scope(value, name)
        if not filters and not any(scope.values()):
            return None
        return MemoryFilter(dataset=dataset, filters=filters, **scope)

    def timeline(self, entity: str, *, dataset: str, relation: str | None) -> Timeline:
        self._readable(dataset)
        check_text(entity, "entity", max_chars=NAME_CHARS)
        check_text(relation, "relation", optional=True, max_chars=ID_CHARS)
        entity_id = self._entity_id(entity, dataset)
        rel = normalize_relation(relation) if relation else None
        timeline = Timeline(
            entity=self.store.get_entities([entity_id])[0],
            facts=self.store.entity_facts(entity_id, rel),
        )
        annotate(self.store, timeline.facts, [timeline.entity], self.rules)  # origins, competing claims
        return timeline

    def _entity_id(self, name: str, dataset: str) -> str:
        """An entity by exact name, id, alias or an unambiguous start of its name ("Bob" for
        "Bob Stone"); otherwise a NotFoundError that suggests the near names."""
        key = normalize_name(name)
        found = self.store.find_entities(dataset, [key])
        if key in found:
            return found[key].id
        by_id = self.store.get_entities([name])
        if by_id and by_id[0].dataset == dataset:
            return by_id[0].id
        scored = self.store.lexical(dataset, "entity", terms_of(name), 20)
        near = self.store.get_entities([s.id for s in scored])
        fits = [e for e in near if normalize_name(e.name).startswith(key + " ")
                or key in {normalize_name(a) for a in e.aliases}]
        if len(fits) == 1:
            return fits[0].id
        names = ", ".join(dict.fromkeys(e.name for e in (fits or near)[:5]))
        hint = f"; did you mean: {names}" if names else ""
        raise NotFoundError(f"no entity {name!r} in dataset {dataset!r}{hint}")

    # -- recall ------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        dataset: str,
        search_type: str | None,
        top_k: int,
        depth: int,
        as_of: dt.datetime | str | None,
        known_at: dt.datetime | str | None,
        answer: bool,
        explain: bool,
        neighbors: int,
        user: str | None,
        agent: str | None,
        session: str | None,
        filters: dict[str, Any] | None,
        lanes: frozenset[str] | None = None,
    ) -> RecallResult:
        """``neighbors`` attaches that many turns on each side of every hit; ``lanes``
        (internal, for evaluation) restricts recall to some of its lanes. A ``session``'s
        latest messages come back in ``messages`` whether extraction has run on them or not."""
        self._readable(dataset)
        check_text(query, "query", max_chars=QUERY_CHARS)
        check_text(search_type, "search_type", optional=True, max_chars=CHOICE_CHARS)
        check_int(top_k, "top_k", 1, MAX_TOP_K)
        check_int(depth, "depth", 0, MAX_DEPTH)
        check_flag(answer, "answer")
        check_flag(explain, "explain")
        check_int(neighbors, "neighbors", 0, MAX_NEIGHBORS)
        started = time.perf_counter()
        kind = search_type or "auto"
        if kind not in SEARCH_TYPES:
            raise ValidationError(f"unknown search type {kind!r}; choose one of {', '.join(SEARCH_TYPES)}")
        if kind == "auto":
            kind = route(query)
        answer = answer or kind in ANSWER_MODES
        now = self.now()
        as_of_t, known_at_t = parse_when(as_of, now, "as_of"), parse_when(known_at, now, "known_at")
        if answer and self.chat is None:
            raise ModelNotConfiguredError(
                "an answer needs a chat model: set KENNING_LLM (and KENNING_LLM_BASE_URL) or pass llm=…"
            )
        q = Query(text=query, dataset=dataset, search_type=ANSWER_MODES.get(kind, kind), top_k=top_k,
                  depth=depth, as_of=as_of_t, known_at=known_at_t, explain=explain,
                  neighbors=neighbors, lanes=lanes,
                  scope=self._scope(dataset, now, user=user, agent=agent, session=session, filters=filters))
        if kind == "temporal" and as_of_t is None:
            q.as_of = find_dates(query, now).valid_at  # the instant it asks about ("in June 2024")
        usage = Usage()
        if self.reranker is not None:  # fused hits beyond top_k may be reranked into it
            q.top_k = max(top_k, min(self.settings.rerank_top_n, MAX_TOP_K))
        hits, memories = search(self.store, self.embedder, self.settings, q, now, usage)
        if self.reranker is not None:
            hits, memories = self._rerank(query, hits, memories, top_k)
        annotate_hits(self.store, hits, memories, self.rules)  # origins, flags, competing claims
        result = RecallResult(query=query, dataset=dataset, search_type=kind, hits=hits,
                              as_of=q.as_of, known_at=known_at_t, memories=memories, usage=usage)
        if session is not None:
            result.messages = self.store.session_messages(dataset, session, MESSAGES)
        if hits:
            self.store.record_access(
                dataset,
                [m.id for m in memories],
                [h.id for h in hits if h.kind == "entity"],
                [h.id for h in hits if h.kind == "fact"],
                now,
            )
        if answer:
            self._answer(result, now)
        result.seconds = round(time.perf_counter() - started, 6)
        log.info("recall", extra={"dataset": dataset, "search_type": kind, "hits": len(hits),
                                  "seconds": result.seconds})
        return result

    def _rerank(self, query: str, hits: builtins.list[Hit], memories: builtins.list[Memory],
                top_k: int) -> tuple[builtins.list[Hit], builtins.list[Memory]]:
        """The configured reranker's order of the first hits, cut to ``top_k``. A reranker
        that fails leaves the fused order (its hits then carry no ``rerank`` lane): recall
        keeps answering while a reranking endpoint is down."""
        try:
            hits = rerank_hits(cast(Reranker, self.reranker), query, hits, self.settings.rerank_top_n)  # recall checked it is set
        except KenningError as exc:
            log.warning("rerank failed; fused order kept", extra={"error_type": type(exc).__name__})
        hits = hits[:top_k]
        used = {memory_id for hit in hits for memory_id in hit.memory_ids}
        return hits, [m for m in memories if m.id in used]

    def _answer(self, result: RecallResult, now: dt.datetime) -> None:
        """One model call with the retrieved facts, their timelines and the current time."""
        if not result.hits:
            result.answer = "No relevant memories."
            return
        files = {m.id: m.source for m in result.memories if m.source and m.metadata.get("format")}
        facts = [
            AnswerFact(
                id=h.id, sentence=h.text, valid_at=h.valid_at, invalid_at=h.invalid_at,
                current=h.current, memory_ids=h.memory_ids, where=_where(files, h),
            )
            for h in result.hits
        ]
        result.answer, result.citations = answer_question(self.chat, result.query, facts, now, result.usage)


def _where(files: dict[str, str], hit: Any) -> str | None:
    """``report.pdf p. 12 › Results`` for a hit from a file's passage (None otherwise)."""
    source = files.get(hit.memory_ids[0]) if hit.memory_ids else None
    if source is None:
        return None
    return f"{source} {hit.location}".strip() if hit.location is not None else source
