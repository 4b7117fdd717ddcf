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
from contextlib import nullcontext
from typing import Any, get_args

from ._checks import check_choice, check_flag, check_int, check_metadata, check_text
from ._time import as_utc, utcnow
from ._lease import Heartbeat, dead_owners, new_owner
from .errors import ConflictError, KenningError, ModelNotConfiguredError, NotFoundError, ValidationError
from .models import (
    CognifyResult,
    Hit,
    Memory,
    MemoryInput,
    MemoryKind,
    RecallResult,
    RememberResult,
    Stats,
    Timeline,
    Usage,
)
from .pipeline.dates import find_dates, parse_user_datetime
from .pipeline.commit import CommitOutcome, apply_plan, new_id
from .pipeline.extract import Extractor, normalize_name, normalize_relation
from .pipeline.process import (
    BATCH_MEMORIES,
    GROUP_DOCS,
    Drafted,
    PipelineConfig,
    draft_group,
    embed_drafts,
    estimate_usage,
    finish_plan,
    group_memories,
)
from .pipeline.temporal import RelationRules
from .providers.base import ChatModel, Embedder
from .providers.rerank import Reranker
from .lifecycle.improve import ImproveMixin
from .lifecycle.verbs import LifecycleMixin
from ._identity import check_dataset, content_hash
from .search.recall import ANSWER_MODES, SEARCH_TYPES, Query, route, search
from .search.rerank import rerank_hits
from .settings import Settings
from .store.base import ClaimFilter, MemoryFilter, Store, Txn

__all__ = ["Engine"]

log = logging.getLogger(__name__)


ContentInput = str | MemoryInput | dict[str, Any]

#: the limits of the Python verbs' arguments (HTTP narrows some: see ``server.schemas``)
MAX_LIST = 10_000
MEMORY_STATUSES = ("pending", "processing", "active", "failed", "superseded")
MEMORY_KINDS = get_args(MemoryKind)
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


_FORGOTTEN = "forgotten (by another process) while it was being processed; nothing was stored"


class _LostClaim(ConflictError):
    """At commit, the memory was gone or claimed by another worker: nothing is written."""

    def __init__(self, message: str, *, forgotten: bool) -> None:
        super().__init__(message)
        self.forgotten = forgotten


def parse_when(value: object, now: dt.datetime, name: str) -> dt.datetime | None:
    """A caller-given instant (None stays None), read by the one date parser against ``now``."""
    return None if value is None else parse_user_datetime(value, now=now, name=name)


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
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.chat = chat
        self.reranker = reranker
        self.clock = clock
        self.rules = RelationRules(settings.single_valued_relations)
        self.config = PipelineConfig(
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            entity_similarity=settings.entity_similarity,
        )
        self._result_lock = threading.Lock()
        #: this engine's claims on memories it processes, kept fresh while it works
        self.owner = new_owner()
        self._heartbeat = Heartbeat(lambda: store.renew_claims(self.owner, self.now()),
                                    settings.processing_timeout / 4)
        if verify_embedder:
            store.check_embedder(embedder.name, embedder.dimension)

    def now(self) -> dt.datetime:
        return as_utc(self.clock())

    def close(self) -> None:
        for part in (self.chat, self.embedder, self.reranker):
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
        check_choice(kind, "kind", MEMORY_KINDS)
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
            fields["retention_until"] = parse_when(item.retention_until, now, "retention_until")
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
        reference = parse_when(valid_at, now, "valid_at")
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
        out = self.store.insert_memories(memories, self.owner if status == "processing" else None)
        for memory, (_, created) in zip(memories, out):
            if created and memory.supersedes:
                self._apply_supersession(memory)
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
        with self._heartbeat:
            added = self.add(content, dataset=dataset, kind=kind, source=source, valid_at=valid_at,
                             metadata=metadata, status="processing")
            ids = [memory_id for memory_id, _ in added]
            todo, outcome = self._remember_todo(added, force)
            self._process([self._restate(m, source) for m in todo], outcome, progress)
        result = RememberResult(memory_ids=ids, skipped=outcome.skipped, usage=outcome.usage)
        result.entities_created = outcome.entities_created
        result.facts_created = outcome.facts_created
        result.facts_invalidated = outcome.facts_invalidated
        result.no_facts = outcome.no_facts
        result.errors = [f"{memory_id}: {reason}" for memory_id, reason in outcome.failed.items()]
        return result

    def _restate(self, memory: Memory, source: str | None) -> Memory:
        """A known memory processed again keeps the source the caller gives now."""
        if source is None or source == memory.source:
            return memory
        self.store.update_memory(memory.id, {"source": source, "updated_at": self.now()})
        return memory.model_copy(update={"source": source})

    def _remember_todo(self, added: list[tuple[str, bool]], force: bool) -> tuple[list[Memory], CognifyResult]:
        """The memories this remember processes: those it created, and existing ones with the
        same content that nobody is working on (pending, failed, a claim whose owner died or
        whose lease ran out; processed ones only with ``force``). Others are skipped; one
        forgotten by another process meanwhile is reported as failed."""
        unique = list(dict.fromkeys(memory_id for memory_id, _ in added))
        created = {memory_id for memory_id, new in added if new}
        existing = [i for i in unique if i not in created]
        taken: dict[str, Memory] = {}
        if existing:
            statuses = ["pending", "failed", *(["active", "superseded"] if force else [])]
            taken = {m.id: m for m in self._claim(ClaimFilter(statuses, self._stale_before(), ids=existing))}
        found = {m.id: m for m in self.store.get_memories([i for i in unique if i in created])}
        found.update(taken)
        out, todo = CognifyResult(), []
        for memory_id in unique:
            if memory_id in found:
                todo.append(found[memory_id])
            elif memory_id in created:
                out.failed[memory_id] = _FORGOTTEN
            else:
                out.skipped.append(memory_id)
        return todo, out

    def _stale_before(self) -> dt.datetime:
        return self.now() - dt.timedelta(seconds=self.settings.processing_timeout)

    def _claim(self, flt: ClaimFilter) -> list[Memory]:
        """Claim for this engine; claims of owners known dead (this host, process gone) count
        as free at once."""
        flt.dead_owners = dead_owners(self.store.claim_owners(flt.dataset))
        return self.store.claim(self.owner, self.now(), flt)

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
                                    source=fields["source"], valid_at=parse_when(fields["valid_at"], now, "valid_at"),
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
        result = CognifyResult()
        after = None
        # Small batches, each claimed when the last is done: a killed worker strands one batch
        # (reclaimed at once, its owner being dead), and parallel workers share the backlog.
        with self._heartbeat:
            while batch := self._claim(ClaimFilter(statuses, self._stale_before(), dataset=dataset,
                                                   after=after, limit=self._claim_batch)):
                after = (batch[-1].created_at, batch[-1].id)
                self._process(batch, result, progress)
        return result

    @property
    def _claim_batch(self) -> int:
        return GROUP_DOCS * self.settings.llm_concurrency

    # -- processing --------------------------------------------------------------------------
    def _process(self, memories: list[Memory], out: CognifyResult,
                 progress: Callable[[int], None] | None) -> None:
        """Memories are planned in batches: short ones share extraction calls (groups, on a
        bounded pool when a chat model is configured, so at most ``llm_concurrency`` calls are
        in flight); every text of a batch is embedded in one call; then each memory is
        resolved and committed in its own transaction. Outcomes are added to ``out``."""
        workers = min(self.settings.llm_concurrency, len(memories)) if self.chat is not None else 1
        with (ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kenning") if workers > 1
              else nullcontext()) as pool:
            for start in range(0, len(memories), BATCH_MEMORIES):
                self._process_batch(memories[start : start + BATCH_MEMORIES], out, pool, progress)

    def _process_batch(self, batch: list[Memory], out: CognifyResult, pool: ThreadPoolExecutor | None,
                       progress: Callable[[int], None] | None) -> None:
        """Extract (per group), embed (one call), then resolve and commit each memory: a memory
        whose extraction or resolution failed is marked failed and writes nothing, its
        neighbours still commit; a failed embedding call fails the memories it was for."""
        def each(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
            return list(pool.map(fn, items)) if pool is not None else [fn(item) for item in items]

        started = time.perf_counter()
        spent = {m.id: Usage() for m in batch}
        groups = group_memories(batch, self.extractor, self.config)
        drafted: dict[str, Drafted | Exception] = {}
        for group, result in zip(groups, each(lambda g: self._draft(g, spent), groups)):
            drafted.update(zip((m.id for m in group), result))
        try:
            embed_drafts([d for d in drafted.values() if isinstance(d, Drafted)], self.embedder)
        except Exception as exc:  # noqa: BLE001 - any failure must leave the memories visible as failed
            drafted = {k: exc if isinstance(d, Drafted) else d for k, d in drafted.items()}
        share = (time.perf_counter() - started) / len(batch)
        for memory in batch:
            spent[memory.id].seconds = round(share, 6)
        for _ in each(lambda m: self._finish(m, drafted[m.id], spent[m.id], out), batch):
            if progress:
                progress(1)

    def _draft(self, group: list[Memory], spent: dict[str, Usage]) -> list[Drafted | Exception]:
        try:
            return list(draft_group(group, config=self.config, extractor=self.extractor, store=self.store,
                                    chat=self.chat, usages=[spent[m.id] for m in group]))
        except Exception as exc:  # noqa: BLE001 - the whole group failed; each memory says so
            return [exc] * len(group)

    def _finish(self, memory: Memory, drafted: Drafted | Exception, part: Usage, out: CognifyResult) -> None:
        """Resolve one drafted memory against the store as it is now, and commit it."""
        usage = out.usage
        try:
            if isinstance(drafted, Exception):
                raise drafted
            started = time.perf_counter()
            plan = finish_plan(drafted, config=self.config, store=self.store, chat=self.chat, now=self.now(),
                               replace=memory.processed_at is not None)
            part.seconds = round(part.seconds + time.perf_counter() - started, 6)
            committed = self.store.atomic(lambda txn: self._commit(txn, memory, plan, part))
        except _LostClaim as lost:
            self._lost(memory, lost, part, usage, out)
            return
        except Exception as exc:  # noqa: BLE001 - any failure must leave the memory visible as failed
            self._fail(memory, self._reason(exc, memory.id), part, usage, out)
            return
        self._record(memory, committed, part, usage, out)

    @staticmethod
    def _reason(exc: Exception, memory_id: str) -> str:
        if isinstance(exc, KenningError):
            return exc.message
        # No traceback: exception messages may quote content, and logs never hold content.
        log.error("processing failed", extra={"memory_id": memory_id, "error_type": type(exc).__name__})
        return f"{type(exc).__name__}: {exc}"

    def _commit(self, txn: Txn, memory: Memory, plan: Any, spent: Usage) -> CommitOutcome:
        """Apply a memory's plan if this engine still holds its claim."""
        state = txn.claim_state(memory.id)
        if state is None:
            raise _LostClaim(_FORGOTTEN, forgotten=True)
        if state != ("processing", self.owner):
            raise _LostClaim("another worker took it over", forgotten=False)
        now = self.now()
        plan.now = now
        plan.memory_fields = {
            "status": "superseded" if memory.superseded_by else "active", "claimed_by": None,
            "error": None, "processed_at": now, "updated_at": now, "usage": spent.model_dump(),
        }
        return apply_plan(txn, plan, self.rules)

    def _lost(self, memory: Memory, lost: _LostClaim, spent: Usage, usage: Usage, out: CognifyResult) -> None:
        """Nothing was written: the memory was forgotten meanwhile (reported as failed: it is not
        stored) or another worker holds it now (skipped: that worker reports it)."""
        with self._result_lock:
            if lost.forgotten:
                out.failed[memory.id] = lost.message
            else:
                out.skipped.append(memory.id)
            usage.add(spent)
        log.warning("claim lost", extra={"memory_id": memory.id, "forgotten": lost.forgotten})

    def _fail(self, memory: Memory, reason: str, spent: Usage, usage: Usage, out: CognifyResult) -> None:
        fields: dict[str, Any] = {"status": "failed", "error": reason, "claimed_by": None, "updated_at": self.now()}
        if spent.chat_calls or spent.embedding_calls:  # money spent on a failure still counts
            fields["usage"] = spent.model_dump()
        try:
            self.store.update_memory(memory.id, fields)
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
            if not (committed.facts_created or committed.facts_merged or committed.facts_invalidated):
                out.no_facts.append(memory.id)
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

    def reembed(self, *, missing_only: bool = False, page: int = 512,
                progress: Callable[[int], None] | None = None) -> dict[str, int]:
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
                if progress:
                    progress(len(rows))
            counts[kind] = done
        self.store.set_embedder(self.embedder.name, self.embedder.dimension)
        log.info("re-embedded store", extra={"embedder_dimension": self.embedder.dimension, **counts})
        return counts

    # -- reads -------------------------------------------------------------------------------
    def _readable(self, dataset: str) -> None:
        """A read names a dataset that exists (the default ``main`` always does; so does one
        created empty through the server's ``datasets create``), or a NotFoundError names the
        ones that do. The server checks access first, so only a caller who may see every
        dataset (an admin, or the local user) ever gets this list."""
        check_dataset(dataset)
        if dataset == "main":
            return
        existing = self.store.datasets()
        if dataset in existing:
            return
        from .store.auth import AuthStore

        if isinstance(self.store, AuthStore) and self.store.dataset_records([dataset]):
            return
        raise NotFoundError(f"no dataset {dataset!r}; datasets: {', '.join(existing) or 'none yet'}")

    def stats(self, dataset: str | None = None) -> Stats:
        if dataset is not None:
            self._readable(dataset)
        return self.store.stats(dataset)

    def get(self, memory_id: str) -> Memory:
        found = self.store.get_memories([check_text(memory_id, "memory id", max_chars=200)])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r}")
        return found[0]

    def list(self, flt: MemoryFilter) -> list[Memory]:
        if flt.dataset is not None:
            self._readable(flt.dataset)
        check_choice(flt.kind, "kind", MEMORY_KINDS)
        check_choice(flt.status, "status", MEMORY_STATUSES)
        check_choice(flt.retention, "retention", RETENTIONS)
        check_flag(flt.pinned, "pinned", optional=True)
        check_choice(flt.order_by, "order_by", ORDERS)
        check_flag(flt.descending, "descending")
        check_int(flt.limit, "limit", 1, MAX_LIST)
        check_int(flt.offset, "offset", 0, 10**9)
        return self.store.list_memories(flt)

    def timeline(self, entity: str, *, dataset: str = "main", relation: str | None = None) -> Timeline:
        self._readable(dataset)
        check_text(entity, "entity", max_chars=1000)
        check_text(relation, "relation", optional=True, max_chars=200)
        entity_id = self._entity_id(entity, dataset)
        rel = normalize_relation(relation) if relation else None
        return Timeline(
            entity=self.store.get_entities([entity_id])[0],
            facts=self.store.entity_facts(entity_id, rel),
        )

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
        from .search.recall import terms_of

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
        self._readable(dataset)
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
        now = self.now()
        as_of_t, known_at_t = parse_when(as_of, now, "as_of"), parse_when(known_at, now, "known_at")
        if answer and self.chat is None:
            raise ModelNotConfiguredError(
                "an answer needs a chat model: set KENNING_LLM (and KENNING_LLM_BASE_URL) or pass llm=…"
            )
        q = Query(text=query, dataset=dataset, search_type=ANSWER_MODES.get(kind, kind), top_k=top_k,
                  depth=depth, as_of=as_of_t, known_at=known_at_t, explain=explain,
                  neighbors=neighbors, lanes=lanes)
        if kind == "temporal" and as_of_t is None:
            q.as_of = dates_in_query(query, now)
        usage = Usage()
        if self.reranker is not None:  # fused hits beyond top_k may be reranked into it
            q.top_k = max(top_k, min(self.settings.rerank_top_n, 1000))
        hits, memories = search(self.store, self.embedder, self.settings, q, now, usage)
        if self.reranker is not None:
            hits, memories = self._rerank(query, hits, memories, top_k)
        result = RecallResult(query=query, dataset=dataset, search_type=kind, hits=hits,
                              as_of=q.as_of, known_at=known_at_t, memories=memories, usage=usage)
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

    def _rerank(self, query: str, hits: list[Hit], memories: list[Memory], top_k: int) -> tuple[list[Hit], list[Memory]]:
        """The configured reranker's order of the first hits, cut to ``top_k``. A reranker
        that fails leaves the fused order (its hits then carry no ``rerank`` lane): recall
        keeps answering while a reranking endpoint is down."""
        try:
            hits = rerank_hits(self.reranker, query, hits, self.settings.rerank_top_n)
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
        from .search.answer import AnswerFact, answer_question

        facts = [
            AnswerFact(
                id=h.id, sentence=h.text, valid_at=h.valid_at, invalid_at=h.invalid_at,
                current=h.current, memory_ids=h.memory_ids,
            )
            for h in result.hits
        ]
        result.answer, result.citations = answer_question(self.chat, result.query, facts, now, result.usage)
