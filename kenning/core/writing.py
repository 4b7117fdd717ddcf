"""Writing: ``add``, ``remember``, ``cognify``, ``reembed`` and ``improve``.

Memories come in, are claimed by this part (kept fresh by a heartbeat while it works) and
processed in batches: extraction per group on a bounded thread pool, one embedding call per
batch, then each memory resolved and committed, all or nothing (offline, in commit groups that
share a transaction, one savepoint per memory).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any, cast, get_args

import numpy as np

from .._checks import check_choice, check_flag, check_metadata, check_scope, check_text
from ..requests import ID_CHARS, KIND_CHARS, SOURCE_CHARS, CognifyRequest
from .._identity import DEFAULT_DATASET, check_dataset, episode_key, memory_identity
from .._lease import Heartbeat, dead_owners, new_owner
from ..dates import parse_when
from ..errors import ConflictError, KenningError, StoreError, ValidationError
from ..lifecycle.improve import duplicate_pairs
from ..lifecycle.remove import require_present, scrub_entities
from ..models import (
    CognifyResult, FactInput, ImproveResult, Memory, MemoryInput, MemoryKind, MemoryStatus, Message, RememberResult,
    Usage,
)
from ..pipeline import known as known_facts
from ..pipeline.authority import flags_for, stamp
from ..pipeline.commit import CommitOutcome, apply_plan, new_id
from ..pipeline.messages import is_messages, message_memories, read_messages
from ..pipeline.extract import Extractor
from ..pipeline.process import (
    BATCH_MEMORIES,
    GROUP_DOCS,
    Drafted,
    PipelineConfig,
    build_plan,
    draft_group,
    embed_drafts,
    estimate_usage,
    finish_plan,
    group_memories,
)
from ..pipeline.temporal import RelationRules
from ..providers.base import ChatModel, Embedder
from ..settings import Settings
from ..store.base import ClaimFilter, EntityRow, MemoryFilter, Store, Txn

__all__ = ["ContentInput", "Writing"]

log = logging.getLogger(__name__)

ContentInput = str | MemoryInput | dict[str, Any]

MEMORY_KINDS = get_args(MemoryKind)
_FORGOTTEN = "forgotten (by another process) while it was being processed; nothing was stored"
_PAGE = 1000
#: memories committed together when processing waits for no model (``Store.write_group``);
#: the store's lock is held meanwhile, so other calls on this engine wait for at most a group
_COMMIT_GROUP = 64


def content_items(content: Any) -> list[Any]:
    """One input or a list of them, as a list; anything else is a ValidationError."""
    if isinstance(content, (str, MemoryInput, Message, FactInput, dict)):
        return [content]
    if isinstance(content, (list, tuple)):
        return list(content)
    raise ValidationError(
        f"content must be a string, a structured memory or a list of them, not {type(content).__name__}"
    )


def _processed(memory: Memory, now: dt.datetime, spent: Usage) -> dict[str, Any]:
    """The fields a memory's processing sets when it commits."""
    return {"status": "superseded" if memory.superseded_by else "active", "error": None,
            "processed_at": now, "updated_at": now, "usage": spent.model_dump(),
            "flags": flags_for(memory.content, memory.origin)}  # its text as it is now (authority.py)


class _LostClaim(ConflictError):
    """At commit, the memory was gone or claimed by another worker: nothing is written."""

    def __init__(self, message: str, *, forgotten: bool) -> None:
        super().__init__(message)
        self.forgotten = forgotten


class Writing:
    def __init__(
        self, settings: Settings, store: Store, embedder: Embedder, extractor: Extractor,
        chat: ChatModel | None, now: Callable[[], dt.datetime],
    ) -> None:
        self.settings, self.store, self.embedder, self.extractor, self.chat = settings, store, embedder, extractor, chat
        self.now = now
        self.rules = RelationRules(settings.single_valued_relations)
        self.config = PipelineConfig(settings.chunk_size, settings.chunk_overlap, settings.entity_similarity)
        self._result_lock = threading.Lock()
        self._sessions = threading.Lock()
        #: this part's claims on memories it processes, kept fresh while it works
        self.owner = new_owner()
        self._heartbeat = Heartbeat(lambda: store.renew_claims(self.owner, self.now()),
                                    settings.processing_timeout / 4)

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
        status: MemoryStatus = "pending",
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
            source = check_text(item.source, "source", optional=True, max_chars=SOURCE_CHARS) or source
            check_text(item.supersession_reason, "supersession_reason", optional=True, empty=True)
            for old_id in item.supersedes:
                check_text(old_id, "supersedes", max_chars=ID_CHARS)
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
            content_hash=memory_identity(content),
            valid_at=valid_at or now,
            status=status,
            created_at=now,
            updated_at=now,
            **fields,
        )

    def add(self, content: ContentInput | Sequence[ContentInput], *, status: MemoryStatus = "pending",
            **inputs: Any) -> list[tuple[str, bool]]:
        """Store memories as ``pending``; returns (id, created) in input order. ``inputs`` are
        the write fields of the request model (``kenning.requests._Write``: dataset, kind,
        source, valid_at, metadata, user, agent, session), checked by ``_memories``.

        ``remember`` stores them directly as ``processing`` (it processes them at once): one
        write fewer per memory, and a crash still leaves them visible and reclaimable."""
        return self._add(content, status=status, **inputs)[0]

    def _add(self, content: ContentInput | Sequence[ContentInput], *, status: MemoryStatus,
             **inputs: Any) -> tuple[list[tuple[str, bool]], list[Memory]]:
        """``add``, and the memories as they were stored (those created are not read back)."""
        session = inputs.get("session")
        # a session's next position is read, then taken: calls on sessions of this engine wait
        # for each other (other processes do not: their turns may share a position)
        with self._sessions if session is not None else nullcontext():
            origin = inputs.pop("origin", None)
            memories = self._memories(content, status=status, **inputs)
            stamp(memories, origin)  # who said it, and whether it addresses the model (authority.py)
            if len(memories) > 1 and memories[0].episode is None:  # one call of several items is an episode
                episode = episode_key(memories[0].dataset, [m.content_hash for m in memories])
                for position, memory in enumerate(memories):
                    memory.episode, memory.position = episode, position
                    # the same text remembered alone before is that memory; said in another
                    # episode ("Thanks!" in two conversations) it is this episode's own
                    holder = self.store.memory_by_hash(memory.dataset, memory.content_hash)
                    if holder is None or holder.episode is not None:
                        memory.content_hash = memory_identity(
                            memory.content, user=memory.user, agent=memory.agent, session=memory.session,
                            episode=episode, position=position)
            self._check_supersedes(memories)
            out = self.store.insert_memories(memories, self.owner if status == "processing" else None)
        for memory, (_, created) in zip(memories, out):
            if created and memory.supersedes:
                self._apply_supersession(memory)
        dataset = memories[0].dataset if memories else None
        log.info("memories added", extra={"dataset": dataset, "count": len(out), "new": sum(1 for _, c in out if c)})
        return out, memories

    def remember(self, content: ContentInput | Sequence[ContentInput], *, force: bool,
                 dry_run: bool, progress: Callable[[int], None] | None = None,
                 **inputs: Any) -> RememberResult:
        """Store and process now (``inputs``: the write fields, as for ``add``)."""
        check_flag(force, "force")
        if check_flag(dry_run, "dry_run"):
            return self._estimate(content, **inputs)
        with self._heartbeat:
            added, memories = self._add(content, status="processing", **inputs)
            ids = [memory_id for memory_id, _ in added]
            todo, outcome = self._remember_todo(added, memories, force)
            with self.store.bulk_load(len(todo)):
                self._process([self._restate(m, inputs.get("source")) for m in todo], outcome, progress)
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

    def _remember_todo(self, added: list[tuple[str, bool]], memories: list[Memory],
                       force: bool) -> tuple[list[Memory], CognifyResult]:
        """The memories this remember processes: those it created (as stored: one forgotten by
        another process meanwhile is reported as failed when it commits), and existing ones
        with the same content that nobody is working on (pending, failed, a claim whose owner
        died or whose lease ran out; processed ones only with ``force``). Others are skipped."""
        unique = list(dict.fromkeys(memory_id for memory_id, _ in added))
        created = {memory_id for memory_id, new in added if new}
        existing = [i for i in unique if i not in created]
        found = {m.id: m for m in memories if m.id in created}
        if existing:
            statuses = ["pending", "failed", *(["active", "superseded"] if force else [])]
            found.update((m.id, m) for m in self._claim(ClaimFilter(statuses, self._stale_before(), ids=existing)))
        out, todo = CognifyResult(), []
        for memory_id in unique:
            if memory_id in found:
                todo.append(found[memory_id])
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

    def _memories(self, content: ContentInput | Sequence[ContentInput], *, dataset: str = DEFAULT_DATASET,
                  kind: str = "knowledge", source: str | None = None, valid_at: dt.datetime | str | None = None,
                  metadata: dict[str, Any] | None = None, status: MemoryStatus = "pending", user: str | None = None,
                  agent: str | None = None, session: str | None = None) -> list[Memory]:
        """Every input of a call checked and made a Memory before any is stored, so a bad
        batch stores nothing. Chat messages become ``message`` memories (``messages.py``)
        that continue their session; other inputs carry the call's scope, which is part of
        their identity (one user's "I like tea" is not another's)."""
        check_dataset(dataset)
        scope = {name: check_scope(value, name) for name, value in
                 (("user", user), ("agent", agent), ("session", session))}
        items = content_items(content)
        if not items:
            raise ValidationError("nothing to remember: content is an empty list")
        check_text(kind, "kind", max_chars=KIND_CHARS)
        check_text(source, "source", optional=True, max_chars=SOURCE_CHARS)
        check_metadata(metadata)
        now = self.now()
        reference = parse_when(valid_at, now, "valid_at")
        if is_messages(items):
            return self._messages(items, dataset=dataset, source=source, valid_at=reference,
                                  metadata=metadata, now=now, status=status, **scope)
        if known_facts.is_known(items):
            return [known_facts.known_memory(items, dataset=dataset, now=now, valid_at=reference, source=source,
                                             metadata=check_metadata(dict(metadata or {})), status=status, **scope)]
        if kind == known_facts.KIND:
            raise ValidationError(f"kind {kind!r} is for known facts: give {{source, relation, target}} records")
        memories = [self._to_memory(i, dataset=dataset, kind=kind, source=source, valid_at=reference,
                                    metadata=metadata, now=now, status=status) for i in items]
        if any(scope.values()):
            for memory in memories:
                memory.user, memory.agent, memory.session = scope["user"], scope["agent"], scope["session"]
                memory.content_hash = memory_identity(memory.content, user=scope["user"], agent=scope["agent"],
                                                      session=scope["session"])
        return memories

    def _messages(self, items: list[Any], *, dataset: str, now: dt.datetime, session: str | None,
                  **fields: Any) -> list[Memory]:
        """One ``message`` memory per turn, after the session's last stored one."""
        turns = read_messages(items, user=fields["user"], agent=fields["agent"], now=now)
        limit = self.settings.max_content_chars
        for index, turn in enumerate(turns):
            if len(turn.content) > limit:
                raise ValidationError(f"messages[{index}].content is {len(turn.content)} characters; "
                                      f"the limit is {limit}: split it")
        last = self.store.session_messages(dataset, session, 1) if session else []
        start = last[-1].position + 1 if last and last[-1].position is not None else 0
        fields["metadata"] = check_metadata(dict(fields["metadata"] or {}))
        return message_memories(turns, dataset=dataset, now=now, session=session, start=start, **fields)

    def _estimate(self, content: ContentInput | Sequence[ContentInput], **fields: Any) -> RememberResult:
        """What ``remember`` would spend, without storing anything or calling any model: the
        memories grouped as ``remember`` would group them, each group estimated by the pipeline."""
        stamp([], fields.pop("origin", None))  # checked alike
        memories = self._memories(content, **fields)
        unique = list({m.content_hash: m for m in reversed(memories)}.values())[::-1]
        if unique and known_facts.is_known_memory(unique[0]):
            usage = known_facts.estimate_known(unique, store=self.store, chat=self.chat,
                                               remote_embedder=self.embedder.makes_calls)
            return RememberResult(dry_run=True, memory_ids=[], usage=usage)
        usage = estimate_usage(unique, config=self.config, extractor=self.extractor, store=self.store,
                               chat=self.chat, remote_embedder=self.embedder.makes_calls)
        return RememberResult(dry_run=True, memory_ids=[], usage=usage)

    def cognify(
        self, *, dataset: str | None, force: bool, retry_failed: bool,
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
                                                   after=after, limit=GROUP_DOCS * self.settings.llm_concurrency)):
                after = (batch[-1].created_at, batch[-1].id)
                self._process(batch, result, progress)
        return result

    # -- processing --------------------------------------------------------------------------
    def _process(self, memories: list[Memory], out: CognifyResult,
                 progress: Callable[[int], None] | None) -> None:
        """Memories are planned in batches: short ones share extraction calls (groups, on a
        bounded pool when a chat model is configured, so at most ``llm_concurrency`` calls are
        in flight); every text of a batch is embedded in one call; then each memory is
        resolved and committed on its own (offline, commit groups share a transaction, each
        memory in its own savepoint). Outcomes are added to ``out``."""
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
        # known facts are drafted without the extractor, each memory alone
        groups = group_memories([m for m in batch if not known_facts.is_known_memory(m)], self.extractor, self.config)
        groups += [[m] for m in batch if known_facts.is_known_memory(m)]
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
        if self.chat is not None:  # resolution may call the model: never inside a transaction
            settled = each(lambda m: self._settle(m, drafted[m.id], spent[m.id]), batch)
            self._report(batch, settled, spent, out, progress)
            return
        for start in range(0, len(batch), _COMMIT_GROUP):
            group = batch[start : start + _COMMIT_GROUP]
            self._report(group, self._settle_together(group, drafted, spent), spent, out, progress)

    def _settle_together(self, group: list[Memory], drafted: dict[str, Drafted | Exception],
                         spent: dict[str, Usage]) -> list[CommitOutcome | _LostClaim | str]:
        """``_settle`` each memory, sharing one commit (each its own savepoint). If that commit
        fails, none of them was written: each is marked failed."""
        try:
            with self.store.write_group():
                return [self._settle(m, drafted[m.id], spent[m.id]) for m in group]
        except StoreError as exc:
            reason = self._reason(exc, group[0].id)
            for memory in group:
                self._mark_failed(memory, reason, spent[memory.id])
            return [reason] * len(group)

    def _draft(self, group: list[Memory], spent: dict[str, Usage]) -> list[Drafted | Exception]:
        try:
            if known_facts.is_known_memory(group[0]):
                return [known_facts.draft_known(group[0], store=self.store, usage=spent[group[0].id])]
            return list(draft_group(group, config=self.config, extractor=self.extractor, store=self.store,
                                    chat=self.chat, usages=[spent[m.id] for m in group]))
        except Exception as exc:  # noqa: BLE001 - the whole group failed; each memory says so
            return [exc] * len(group)

    def _settle(self, memory: Memory, drafted: Drafted | Exception, part: Usage) -> CommitOutcome | _LostClaim | str:
        """Resolve one drafted memory against the store as it is now, and commit it: what it
        wrote, the claim it lost (nothing written), or why it failed (marked failed)."""
        try:
            if isinstance(drafted, Exception):
                raise drafted
            started = time.perf_counter()
            plan = finish_plan(drafted, config=self.config, store=self.store, chat=self.chat, now=self.now(),
                               replace=memory.processed_at is not None)
            part.seconds = round(part.seconds + time.perf_counter() - started, 6)
            return self.store.atomic(lambda txn: self._commit(txn, memory, plan, part))
        except _LostClaim as lost:
            return lost
        except Exception as exc:  # noqa: BLE001 - any failure must leave the memory visible as failed
            reason = self._reason(exc, memory.id)
            self._mark_failed(memory, reason, part)
            return reason

    def _report(self, memories: list[Memory], settled: list[CommitOutcome | _LostClaim | str],
                spent: dict[str, Usage], out: CognifyResult, progress: Callable[[int], None] | None) -> None:
        for memory, outcome in zip(memories, settled):
            if isinstance(outcome, _LostClaim):
                self._lost(memory, outcome, spent[memory.id], out)
            elif isinstance(outcome, str):
                self._failed(memory, outcome, spent[memory.id], out)
            else:
                self._record(memory, outcome, spent[memory.id], out)
            if progress:
                progress(1)

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
        plan.memory_fields = {**_processed(memory, now, spent), "claimed_by": None}
        return apply_plan(txn, plan, self.rules)

    def reprocess(self, memory: Memory, fields: dict[str, Any], now: dt.datetime) -> None:
        """``update``'s new version of a processed memory: extracted first (model calls outside
        any transaction), then its graph swapped in one transaction. A failure changes nothing
        and is raised."""
        new = memory.model_copy(update=fields)
        new.flags = flags_for(new.content, new.origin)  # what extraction reads (authority.py)
        spent = Usage()
        started = time.perf_counter()
        try:
            replace = memory.processed_at is not None
            if known_facts.is_known_memory(new):
                plan = known_facts.known_plan(new, config=self.config, embedder=self.embedder, store=self.store,
                                              chat=self.chat, now=now, replace=replace, usage=spent)
            else:
                plan = build_plan(
                    new, config=self.config, extractor=self.extractor, embedder=self.embedder,
                    store=self.store, chat=self.chat, now=now, replace=replace, usage=spent,
                )
        except KenningError:
            log.warning("update failed", extra={"memory_id": memory.id, "dataset": memory.dataset})
            raise
        spent.seconds = round(time.perf_counter() - started, 6)
        plan.memory_fields = {**fields, **_processed(new, now, spent)}
        old_entities = set(self.store.memory_graph(memory.id)[0])

        def swap(txn: Txn) -> None:
            require_present(txn, memory.id)  # a delete may have committed since the read
            apply_plan(txn, plan, self.rules)
            scrub_entities(self.store, txn, old_entities, gone=set(), replaced={memory.id: new.content})

        self.store.atomic(swap)

    def _lost(self, memory: Memory, lost: _LostClaim, spent: Usage, out: CognifyResult) -> None:
        """Nothing was written: the memory was forgotten meanwhile (reported as failed: it is not
        stored) or another worker holds it now (skipped: that worker reports it)."""
        with self._result_lock:
            if lost.forgotten:
                out.failed[memory.id] = lost.message
            else:
                out.skipped.append(memory.id)
            out.usage.add(spent)
        log.warning("claim lost", extra={"memory_id": memory.id, "forgotten": lost.forgotten})

    def _mark_failed(self, memory: Memory, reason: str, spent: Usage) -> None:
        fields: dict[str, Any] = {"status": "failed", "error": reason, "claimed_by": None, "updated_at": self.now()}
        if spent.chat_calls or spent.embedding_calls:  # money spent on a failure still counts
            fields["usage"] = spent.model_dump()
        try:
            self.store.update_memory(memory.id, fields)
        except KenningError as exc:
            log.error("could not record failure", extra={"memory_id": memory.id, "error_type": type(exc).__name__})

    def _failed(self, memory: Memory, reason: str, spent: Usage, out: CognifyResult) -> None:
        with self._result_lock:
            out.failed[memory.id] = reason
            out.usage.add(spent)
        log.warning("memory failed", extra={"memory_id": memory.id, "dataset": memory.dataset})

    def _record(self, memory: Memory, committed: CommitOutcome, spent: Usage, out: CognifyResult) -> None:
        with self._result_lock:
            out.processed.append(memory.id)
            if not (committed.facts_created or committed.facts_merged or committed.facts_invalidated):
                out.no_facts.append(memory.id)
            out.entities_created += len(committed.entities_created)
            out.facts_created += len(committed.facts_created)
            out.facts_invalidated.extend(committed.facts_invalidated)
            out.usage.add(spent)
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

    # -- supersession ------------------------------------------------------------------------
    def _check_supersedes(self, memories: Sequence[Memory]) -> None:
        """Validate every ``supersedes`` list of a batch before anything is stored."""
        claimed: dict[str, str] = {}
        for memory in memories:
            if not memory.supersedes:
                continue
            found = {m.id: m for m in self.store.get_memories(list(dict.fromkeys(memory.supersedes)))}
            for old_id in memory.supersedes:
                old = found.get(old_id)
                if old is None or old.dataset != memory.dataset:
                    raise ValidationError(
                        f"supersedes names unknown memory {old_id!r} in dataset {memory.dataset!r}"
                    )
                if old.superseded_by is not None:
                    raise ValidationError(
                        f"memory {old_id!r} is already superseded by {old.superseded_by!r}; "
                        "supersede the newest memory of its chain"
                    )
                if old.status == "processing":
                    raise ConflictError(f"memory {old_id!r} is being processed; try again when it is done")
                if claimed.setdefault(old_id, memory.id) != memory.id:
                    raise ValidationError(f"memory {old_id!r} is superseded twice in one batch")

    def _apply_supersession(self, memory: Memory) -> None:
        """Mark the memories ``memory`` supersedes (one transaction)."""
        self.supersede(memory.id, memory.dataset, memory.supersedes)

    def supersede(self, memory_id: str, dataset: str, old_ids: Sequence[str]) -> None:
        """Mark ``old_ids`` superseded by ``memory_id`` (one transaction)."""
        if not old_ids:
            return
        now = self.now()

        def mark(txn: Txn) -> None:
            for old_id in dict.fromkeys(old_ids):
                txn.update_memory(
                    old_id, {"status": "superseded", "superseded_by": memory_id, "updated_at": now}
                )

        self.store.atomic(mark)
        log.info("memories superseded", extra={"memory_id": memory_id, "dataset": dataset,
                                               "superseded_ids": list(old_ids)})


    # -- improve -----------------------------------------------------------------------------
    def improve(self, *, dataset: str, session: str | None) -> ImproveResult:
        """Process what is pending (of one ``session`` when given), merge duplicate entities,
        fill missing embeddings."""
        check_dataset(dataset)
        result = ImproveResult()
        cognified = (self.cognify(**CognifyRequest.defaults(dataset=dataset)) if session is None
                     else self._cognify_session(dataset, session))
        result.processed, result.failed = cognified.processed, cognified.failed
        for drop, keep in self._duplicates(dataset):
            result.facts_merged += self.store.atomic(
                lambda txn, keep=keep, drop=drop: txn.merge_entities(keep.id, drop.id))  # type: ignore[misc]  # a lambda's bound defaults
            result.entities_merged[drop.id] = keep.id
        result.embeddings_filled = sum(self.reembed(missing_only=True).values())
        log.info("improved", extra={"dataset": dataset, "processed": len(result.processed),
                                    "entities_merged": len(result.entities_merged),
                                    "facts_merged": len(result.facts_merged),
                                    "embeddings_filled": result.embeddings_filled})
        return result

    def _cognify_session(self, dataset: str, session: str) -> CognifyResult:
        """Process a session's pending (and stale) memories, a page at a time."""
        flt = MemoryFilter(dataset=dataset, session=check_scope(session, "session"), status="pending",
                           order_by="created_at", descending=False, limit=_PAGE)
        result = CognifyResult()
        with self._heartbeat:
            while ids := [m.id for m in self.store.list_memories(flt)]:
                claimed = self._claim(ClaimFilter(["pending"], self._stale_before(), dataset=dataset, ids=ids))
                if not claimed:
                    break
                self._process(claimed, result, None)
        return result

    def _duplicates(self, dataset: str) -> list[tuple[EntityRow, EntityRow]]:
        """(duplicate, kept) pairs of the dataset's entities, by name and by embedding."""
        rows: list[EntityRow] = []
        after = None
        while page := self.store.entity_rows(dataset, after, _PAGE):
            rows += page
            after = page[-1].id
        return duplicate_pairs(rows, lambda row: self.store.vector(dataset, "entity", cast(np.ndarray, row.embedding), 3),
                               self.settings.entity_similarity)
