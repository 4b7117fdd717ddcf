"""The one core behind ``Kenning`` and ``AsyncKenning``: every decision is made here, once.

The engine owns its collaborators (store, embedder, extractor, chat model, clock), all passed
in or built from settings. It is synchronous and thread-safe; the async facade runs it on a
worker thread, and model calls of a batch run on a bounded thread pool.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._checks import check_flag, check_int, check_metadata, check_text
from ._time import as_utc, utcnow
from .errors import KenningError, ModelNotConfiguredError, NotFoundError, ValidationError
from .models import (
    CognifyResult,
    Memory,
    MemoryInput,
    RecallResult,
    RememberResult,
    Stats,
    Timeline,
    Usage,
)
from .pipeline.dates import find_dates, parse_user_datetime
from .pipeline.commit import CommitOutcome, apply_plan, new_id
from .pipeline.extract import Extractor, normalize_name, normalize_relation
from .pipeline.process import PipelineConfig, build_plans, estimate_usage, group_memories
from .pipeline.temporal import RelationRules
from .providers.base import ChatModel, Embedder
from .lifecycle.improve import ImproveMixin
from .lifecycle.verbs import LifecycleMixin
from ._identity import check_dataset, content_hash
from .search.recall import ANSWER_MODES, SEARCH_TYPES, Query, route, search
from .settings import Settings
from .store.base import MemoryFilter, Store

__all__ = ["Engine"]

log = logging.getLogger(__name__)


ContentInput = str | MemoryInput | dict[str, Any]

#: the limits of the Python verbs' arguments (HTTP narrows some: see ``server.schemas``)
MAX_LIST = 10_000
MEMORY_STATUSES = ("pending", "processing", "active", "failed", "superseded")
RETENTIONS = ("permanent", "decision", "standard", "ephemeral", "session")
ORDERS = ("created_at", "updated_at", "access_count", "last_accessed_at")


def content_items(content: Any) -> list[Any]:
    """One input or a list of them, as a list; anything else is a ValidationError."""
    if isinstance(content, (str, MemoryInput, dict)):
        return [content]
    if isinstance(content, (list, tuple)):
        return list(content)
    raise ValidationError(
        f"content must be a string, a structured memory or a list of them, not {type(content).__name__}"
    )


def reference_time(valid_at: Any) -> dt.datetime | None:
    """An input's reference time: a datetime or an ISO 8601 string (None: now)."""
    try:
        return as_utc(valid_at)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"invalid valid_at {valid_at!r}: {exc}") from exc


def check_choice(value: Any, name: str, choices: Sequence[str]) -> Any:
    if value is not None and value not in choices:
        raise ValidationError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def parse_when(value: dt.datetime | str | None) -> dt.datetime | None:
    """A caller-given instant: a datetime, an RFC 3339 / ISO 8601 string, or a natural date."""
    if value is None or isinstance(value, dt.datetime):
        return as_utc(value)
    return parse_user_datetime(value)


def dates_in_query(text: str, now: dt.datetime) -> dt.datetime | None:
    """The instant a temporal question asks about ("in 2023", "in June 2024"), if it names one."""
    return find_dates(text, now).valid_at


class Engine(LifecycleMixin, ImproveMixin):
    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        chat: ChatModel | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
        *,
        verify_embedder: bool = True,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.chat = chat
        self.clock = clock
        self.rules = RelationRules(settings.single_valued_relations)
        self.config = PipelineConfig(
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            entity_similarity=settings.entity_similarity,
        )
        self._result_lock = threading.Lock()
        if verify_embedder:
            store.check_embedder(embedder.name, embedder.dimension)

    def now(self) -> dt.datetime:
        return as_utc(self.clock())

    def close(self) -> None:
        for part in (self.chat, self.embedder):
            if part is not None:
                part.close()
        self.store.close()

    # -- input -------------------------------------------------------------------------------
    def _to_memory(
        self,
        item: ContentInput,
        *,
        dataset: str,
        kind: str,
        source: str | None,
        valid_at: dt.datetime | None,
        metadata: dict[str, Any] | None,
        now: dt.datetime,
        status: str = "pending",
    ) -> Memory:
        fields: dict[str, Any] = {}
        if isinstance(item, dict):
            try:
                item = MemoryInput(**item)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"invalid structured memory: {exc}") from exc
        if isinstance(item, MemoryInput):
            content = item.render()
            fields = item.model_dump(exclude={"source", "metadata"})
            fields["metadata"] = {**(metadata or {}), **item.metadata}
            source = check_text(item.source, "source", optional=True, max_chars=2000) or source
            check_text(item.supersession_reason, "supersession_reason", optional=True, empty=True)
            for old_id in item.supersedes:
                check_text(old_id, "supersedes", max_chars=200)
            kind = "note" if kind == "knowledge" else kind
        elif isinstance(item, str):
            content = item
            fields["metadata"] = dict(metadata or {})
        else:
            raise ValidationError(f"content must be a string or a structured memory, not {type(item).__name__}")
        if not content.strip():
            raise ValidationError("content is empty")
        check_text(content, "content")
        fields["metadata"] = check_metadata(fields["metadata"])
        limit = self.settings.max_content_chars
        if len(content) > limit:
            raise ValidationError(f"content is {len(content)} characters; the limit is {limit}: split it")
        return Memory(
            id=new_id("mem"),
            dataset=dataset,
            kind=kind,
            content=content,
            source=source,
            content_hash=content_hash(content),
            valid_at=valid_at or now,
            status=status,
            created_at=now,
            updated_at=now,
            **fields,
        )

    def add(
        self,
        content: ContentInput | Sequence[ContentInput],
        *,
        dataset: str = "main",
        kind: str = "knowledge",
        source: str | None = None,
        valid_at: dt.datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        status: str = "pending",
    ) -> list[tuple[str, bool]]:
        """Store memories as ``pending``; returns (id, created) in input order.

        ``remember`` stores them directly as ``processing`` (it processes them at once): one
        write fewer per memory, and a crash still leaves them visible and reclaimable."""
        check_dataset(dataset)
        items = content_items(content)
        if not items:
            raise ValidationError("nothing to remember: content is an empty list")
        check_text(kind, "kind", max_chars=64)
        check_text(source, "source", optional=True, max_chars=2000)
        check_metadata(metadata)
        now = self.now()
        reference = reference_time(valid_at)
        # Validate every item before storing any, so a bad batch stores nothing.
        memories = [
            self._to_memory(i, dataset=dataset, kind=kind, source=source, valid_at=reference,
                            metadata=metadata, now=now, status=status)
            for i in items
        ]
        if len(memories) > 1:  # one call of several items is an episode: its turns, in order
            episode = new_id("ep")
            for position, memory in enumerate(memories):
                memory.episode, memory.position = episode, position
        self._check_supersedes(memories)
        out = []
        for memory in memories:
            memory_id, created = self.store.insert_memory(memory)
            if created and memory.supersedes:
                self._apply_supersession(memory)
            out.append((memory_id, created))
        log.info("memories added", extra={"dataset": dataset, "count": len(out),
                                          "new": sum(1 for _, c in out if c)})
        return out

    def remember(
        self,
        content: ContentInput | Sequence[ContentInput],
        *,
        dataset: str = "main",
        kind: str = "knowledge",
        source: str | None = None,
        valid_at: dt.datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        force: bool = False,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> RememberResult:
        check_flag(force, "force")
        if check_flag(dry_run, "dry_run"):
            return self._estimate(content, dataset=dataset, kind=kind, source=source,
                                  valid_at=valid_at, metadata=metadata, force=force)
        added = self.add(content, dataset=dataset, kind=kind, source=source, valid_at=valid_at,
                         metadata=metadata, status="processing")
        ids = [memory_id for memory_id, _ in added]
        memories = {m.id: m for m in self.store.get_memories(list(dict.fromkeys(ids)))}
        created = {memory_id for memory_id, new in added if new}
        todo, skipped = [], []
        for memory_id in dict.fromkeys(ids):
            memory = memories[memory_id]
            if memory_id in created:
                todo.append(memory)
            elif memory.status == "processing":
                skipped.append(memory_id)  # another worker has it; a crash is reclaimed by cognify
            elif memory.status in ("active", "superseded") and not force:
                skipped.append(memory_id)
            else:
                todo.append(memory)
        result = RememberResult(memory_ids=ids, skipped=skipped)
        outcome = self._process(todo, result.usage, progress)
        result.entities_created = outcome.entities_created
        result.facts_created = outcome.facts_created
        result.facts_invalidated = outcome.facts_invalidated
        result.errors = [f"{memory_id}: {reason}" for memory_id, reason in outcome.failed.items()]
        return result

    def _estimate(self, content: ContentInput | Sequence[ContentInput], *, dataset: str,
                  force: bool, **fields: Any) -> RememberResult:
        """What ``remember`` would spend, without storing anything or calling any model: the
        memories grouped as ``remember`` would group them, each group estimated by the pipeline."""
        check_dataset(dataset)
        items = content_items(content)
        if not items:
            raise ValidationError("nothing to remember: content is an empty list")
        check_text(fields["kind"], "kind", max_chars=64)
        check_text(fields["source"], "source", optional=True, max_chars=2000)
        check_metadata(fields["metadata"])
        now = self.now()
        memories = [self._to_memory(i, dataset=dataset, now=now, kind=fields["kind"],
                                    source=fields["source"], valid_at=reference_time(fields["valid_at"]),
                                    metadata=fields["metadata"]) for i in items]
        unique = list({m.content_hash: m for m in reversed(memories)}.values())[::-1]
        usage = estimate_usage(unique, config=self.config, extractor=self.extractor, store=self.store,
                               chat=self.chat, remote_embedder=not self.embedder.name.startswith("hashing"))
        return RememberResult(dry_run=True, memory_ids=[], usage=usage)

    def cognify(
        self, *, dataset: str | None = None, force: bool = False, retry_failed: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> CognifyResult:
        """Process every pending memory (and failed ones on request; everything with force)."""
        if dataset is not None:
            check_dataset(dataset)
        check_flag(force, "force")
        check_flag(retry_failed, "retry_failed")
        statuses = ["pending"]
        if retry_failed or force:
            statuses.append("failed")
        if force:
            statuses += ["active"]
        now = self.now()
        stale = now - dt.timedelta(seconds=self.settings.processing_timeout)
        claimed = self.store.claim(dataset, statuses, now, stale)
        result = CognifyResult()
        outcome = self._process(claimed, result.usage, progress)
        result.processed = outcome.processed
        result.failed = outcome.failed
        result.entities_created = outcome.entities_created
        result.facts_created = outcome.facts_created
        result.facts_invalidated = outcome.facts_invalidated
        return result

    # -- processing --------------------------------------------------------------------------
    def _process(
        self, memories: list[Memory], usage: Usage, progress: Callable[[int], None] | None
    ) -> CognifyResult:
        """Short memories share model calls (groups); groups run on a bounded pool, so at most
        ``llm_concurrency`` model calls are in flight; each memory commits in its own transaction."""
        out = CognifyResult()
        if not memories:
            return out
        groups = group_memories(memories, self.extractor, self.config)
        io_bound = self.chat is not None or not self.embedder.name.startswith("hashing")
        workers = min(self.settings.llm_concurrency, len(groups)) if io_bound else 1
        if workers <= 1:
            for group in groups:
                self._process_one(group, usage, out)
                if progress:
                    progress(len(group))
            return out
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kenning") as pool:
            for done in pool.map(lambda g: self._process_one(g, usage, out), groups):
                if progress:
                    progress(done)
        return out

    def _process_one(self, group: list[Memory], usage: Usage, out: CognifyResult) -> int:
        """Plan a group of memories (shared calls), then commit each memory on its own: a
        memory whose extraction failed is marked failed and writes nothing; its neighbours
        still commit. Returns how many memories were handled."""
        def reason(exc: Exception, memory_id: str) -> str:
            if isinstance(exc, KenningError):
                return exc.message
            # No traceback: exception messages may quote content, and logs never hold content.
            log.error("processing failed", extra={"memory_id": memory_id, "error_type": type(exc).__name__})
            return f"{type(exc).__name__}: {exc}"

        started = time.perf_counter()
        spent = [Usage() for _ in group]
        try:
            for memory in group:
                if memory.status != "processing":
                    self.store.set_status(memory.id, "processing", None, self.now())
            plans = build_plans(
                group, config=self.config, extractor=self.extractor, embedder=self.embedder,
                store=self.store, chat=self.chat, now=self.now(),
                replace=[m.processed_at is not None for m in group], usages=spent,
            )
        except Exception as exc:  # noqa: BLE001 - any failure must leave the memories visible as failed
            why = reason(exc, group[0].id)
            for memory, part in zip(group, spent):
                self._fail(memory, why, part, usage, out)
            return len(group)
        share = (time.perf_counter() - started) / len(group)
        for memory, plan, part in zip(group, plans, spent):
            part.seconds = round(share, 6)
            if isinstance(plan, KenningError):
                self._fail(memory, plan.message, part, usage, out)
                continue
            try:
                now = self.now()
                plan.now = now
                plan.memory_fields = {
                    "status": "superseded" if memory.superseded_by else "active",
                    "error": None, "processed_at": now, "updated_at": now, "usage": part.model_dump(),
                }
                with self.store.transaction() as txn:
                    committed = apply_plan(txn, plan, self.rules)
            except Exception as exc:  # noqa: BLE001
                self._fail(memory, reason(exc, memory.id), part, usage, out)
                continue
            self._record(memory, committed, part, usage, out)
        return len(group)

    def _fail(self, memory: Memory, reason: str, spent: Usage, usage: Usage, out: CognifyResult) -> None:
        try:
            self.store.set_status(memory.id, "failed", reason, self.now())
            if spent.chat_calls or spent.embedding_calls:  # money spent on a failure still counts
                self.store.update_memory(memory.id, {"usage": spent.model_dump()})
        except KenningError as exc:
            log.error("could not record failure", extra={"memory_id": memory.id, "error_type": type(exc).__name__})
        with self._result_lock:
            out.failed[memory.id] = reason
            usage.add(spent)
        log.warning("memory failed", extra={"memory_id": memory.id, "dataset": memory.dataset})

    def _record(
        self, memory: Memory, committed: CommitOutcome, spent: Usage, usage: Usage, out: CognifyResult
    ) -> None:
        with self._result_lock:
            out.processed.append(memory.id)
            out.entities_created += len(committed.entities_created)
            out.facts_created += len(committed.facts_created)
            out.facts_invalidated.extend(committed.facts_invalidated)
            usage.add(spent)
        log.info(
            "memory processed",
            extra={
                "memory_id": memory.id, "dataset": memory.dataset,
                "entities_created": len(committed.entities_created),
                "facts_created": len(committed.facts_created),
                "facts_invalidated": len(committed.facts_invalidated),
                "facts_merged": len(committed.facts_merged),
                "chat_calls": spent.chat_calls, "seconds": spent.seconds,
            },
        )

    def reembed(self, *, missing_only: bool = False, page: int = 512) -> dict[str, int]:
        """Rewrite every stored vector with this engine's embedder, then record it as the
        store's embedder. While it runs the store names no valid embedder, so an interrupted
        run is noticed (and simply run again) rather than leaving mixed vectors in use."""
        if not missing_only:
            self.store.set_embedder(f"reembedding:{self.embedder.name}", self.embedder.dimension)
        counts: dict[str, int] = {}
        for kind in ("chunk", "entity", "fact"):
            after, done = None, 0
            while rows := self.store.texts_to_embed(kind, after, page, missing_only):
                vectors = self.embedder.embed([text for _, text in rows])
                self.store.set_embeddings(kind, [(i, v) for (i, _), v in zip(rows, vectors)])
                after, done = rows[-1][0], done + len(rows)
            counts[kind] = done
        self.store.set_embedder(self.embedder.name, self.embedder.dimension)
        log.info("re-embedded store", extra={"embedder_dimension": self.embedder.dimension, **counts})
        return counts

    # -- reads -------------------------------------------------------------------------------
    def stats(self, dataset: str | None = None) -> Stats:
        if dataset is not None:
            check_dataset(dataset)
        return self.store.stats(dataset)

    def get(self, memory_id: str) -> Memory:
        found = self.store.get_memories([check_text(memory_id, "memory id", max_chars=200)])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r}")
        return found[0]

    def list(self, flt: MemoryFilter) -> list[Memory]:
        if flt.dataset is not None:
            check_dataset(flt.dataset)
        check_text(flt.kind, "kind", optional=True, max_chars=64)
        check_choice(flt.status, "status", MEMORY_STATUSES)
        check_choice(flt.retention, "retention", RETENTIONS)
        check_flag(flt.pinned, "pinned", optional=True)
        check_choice(flt.order_by, "order_by", ORDERS)
        check_flag(flt.descending, "descending")
        check_int(flt.limit, "limit", 1, MAX_LIST)
        check_int(flt.offset, "offset", 0, 10**9)
        return self.store.list_memories(flt)

    def timeline(self, entity: str, *, dataset: str = "main", relation: str | None = None) -> Timeline:
        check_dataset(dataset)
        check_text(entity, "entity", max_chars=1000)
        check_text(relation, "relation", optional=True, max_chars=200)
        key = normalize_name(entity)
        found = self.store.find_entities(dataset, [key])
        if key not in found:
            by_id = self.store.get_entities([entity])
            if not by_id or by_id[0].dataset != dataset:
                raise NotFoundError(f"no entity {entity!r} in dataset {dataset!r}")
            entity_id = by_id[0].id
        else:
            entity_id = found[key].id
        rel = normalize_relation(relation) if relation else None
        return Timeline(
            entity=self.store.get_entities([entity_id])[0],
            facts=self.store.entity_facts(entity_id, rel),
        )

    # -- recall ------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        dataset: str = "main",
        search_type: str | None = "hybrid",
        top_k: int = 10,
        depth: int = 1,
        as_of: dt.datetime | str | None = None,
        known_at: dt.datetime | str | None = None,
        answer: bool = False,
        explain: bool = False,
        neighbors: int = 0,
        lanes: frozenset[str] | None = None,
    ) -> RecallResult:
        """``neighbors`` attaches that many turns on each side of every hit; ``lanes``
        (internal, for evaluation) restricts recall to some of its lanes."""
        check_dataset(dataset)
        check_text(query, "query")
        check_text(search_type, "search_type", optional=True, max_chars=64)
        check_int(top_k, "top_k", 1, 1000)
        check_int(depth, "depth", 0, 5)
        check_flag(answer, "answer")
        check_flag(explain, "explain")
        check_int(neighbors, "neighbors", 0, 10)
        started = time.perf_counter()
        kind = search_type or "auto"
        if kind not in SEARCH_TYPES:
            raise ValidationError(f"unknown search type {kind!r}; choose one of {', '.join(SEARCH_TYPES)}")
        if kind == "auto":
            kind = route(query)
        answer = answer or kind in ANSWER_MODES
        try:
            as_of_t, known_at_t = parse_when(as_of), parse_when(known_at)
        except ValueError as exc:
            raise ValidationError(f"invalid time: {exc}") from exc
        if answer and self.chat is None:
            raise ModelNotConfiguredError(
                "an answer needs a chat model: set KENNING_LLM (and KENNING_LLM_BASE_URL) or pass llm=…"
            )
        now = self.now()
        q = Query(text=query, dataset=dataset, search_type=ANSWER_MODES.get(kind, kind), top_k=top_k,
                  depth=depth, as_of=as_of_t, known_at=known_at_t, explain=explain,
                  neighbors=neighbors, lanes=lanes)
        if kind == "temporal" and as_of_t is None:
            q.as_of = dates_in_query(query, now)
        usage = Usage()
        hits, memories = search(self.store, self.embedder, self.settings, q, now, usage)
        result = RecallResult(query=query, dataset=dataset, search_type=kind, hits=hits,
                              as_of=q.as_of, known_at=known_at_t, memories=memories, usage=usage)
        if hits:
            self.store.record_access(
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

    def _answer(self, result: RecallResult, now: dt.datetime) -> None:
        """One model call with the retrieved facts, their timelines and the current time."""
        if not result.hits:
            result.answer = "No relevant memories."
            return
        from .search.answer import AnswerFact, answer_question

        facts = [
            AnswerFact(
                id=h.id, sentence=h.text, valid_at=h.valid_at, invalid_at=h.invalid_at,
                current=h.current, memory_ids=h.memory_ids,
            )
            for h in result.hits
        ]
        result.answer, result.citations = answer_question(self.chat, result.query, facts, now, result.usage)
