"""Lifecycle: ``update``, ``delete``, ``forget``, ``provenance``, ``pin``, ``unpin``, ``chain``,
``prune`` and ``feedback``.

The rules (what prune selects, what a removal takes with it) live in ``lifecycle/``; this part
applies them to the store, and has ``Writing`` re-extract changed content. Every write is one
store transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, get_args

from ..pipeline.authority import annotate
from .._checks import check_choice, check_flag, check_metadata, check_number, check_scope, check_text
from ..requests import ID_CHARS, KIND_CHARS, SOURCE_CHARS, UpdateRequest
from .._identity import DEFAULT_DATASET, check_dataset, memory_identity
from ..dates import parse_user_datetime
from ..errors import ConflictError, NotFoundError, ValidationError
from ..lifecycle.improve import feedback_weight
from ..lifecycle.prune import PruneCriteria, prune_reason
from ..lifecycle.remove import removal_preview, remove_memories
from ..models import Chunk, ForgetResult, Memory, MemoryInput, MemoryKind, Provenance, PruneResult
from ..pipeline import known as known_facts
from ..settings import Settings
from ..store.base import MemoryFilter, Store, Txn
from .reading import get_memory
from .writing import Writing

__all__ = ["UPDATABLE_FIELDS", "Lifecycle"]

log = logging.getLogger(__name__)

#: the fields ``update`` accepts
#: what ``update`` may change: the fields of its request model (less the memory it names)
UPDATABLE_FIELDS = frozenset(UpdateRequest.model_fields) - {"memory_id"}
_STRUCTURED = ("topic", "context", "decisions", "rationale")
_PAGE = 500
_CHAIN_LIMIT = 10_000


class Lifecycle:
    def __init__(self, settings: Settings, store: Store, writing: Writing, now: Callable[[], dt.datetime]) -> None:
        self.settings, self.store, self.writing, self.now = settings, store, writing, now

    # -- helpers -----------------------------------------------------------------------------
    def _pages(self, flt: MemoryFilter) -> Iterator[list[Memory]]:
        """Every memory matching ``flt``, a page at a time (never all of them at once)."""
        offset = 0
        while True:
            page = self.store.list_memories(
                MemoryFilter(**{**vars(flt), "limit": _PAGE, "offset": offset})
            )
            if not page:
                return
            yield page
            offset += len(page)

    # -- supersession chains ----------------------------------------------------------------
    def chain(self, memory_id: str) -> list[Memory]:
        """The memory's supersession chain (everything connected to it by ``supersedes`` /
        ``superseded_by``), oldest to newest."""
        start = get_memory(self.store, memory_id)
        seen = {start.id: start}
        frontier = [start]
        while frontier and len(seen) < _CHAIN_LIMIT:
            ids = {i for m in frontier for i in [*m.supersedes, m.superseded_by] if i} - seen.keys()
            frontier = self.store.get_memories(sorted(ids))
            seen.update((m.id, m) for m in frontier)
        return sorted(seen.values(), key=lambda m: (m.created_at, m.id))

    # -- update ------------------------------------------------------------------------------
    def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change only the given fields; changed content is re-extracted atomically."""

        started = time.perf_counter()
        memory = get_memory(self.store, memory_id)
        unknown = sorted(set(changes) - UPDATABLE_FIELDS)
        if unknown:
            raise ValidationError(
                f"cannot update {', '.join(unknown)}; updatable: {', '.join(sorted(UPDATABLE_FIELDS))}"
            )
        if not changes:
            raise ValidationError(f"update needs a field to change: {', '.join(sorted(UPDATABLE_FIELDS))}")
        now = self.now()
        fields = _changed_fields(memory, changes, now)
        known_facts.check_update(memory, fields)
        reprocess = "content" in fields or "valid_at" in fields
        if "content" in fields:
            # the memory keeps its place: its scope (and a message's or episode's position)
            fields["content_hash"] = memory_identity(
                fields["content"], kind=memory.kind, user=memory.user, agent=memory.agent,
                session=memory.session, episode=memory.episode, position=memory.position,
                role=memory.role, speaker=memory.speaker)
            holder = self.store.memory_by_hash(memory.dataset, fields["content_hash"])
            if holder is not None and holder.id != memory.id:
                raise ConflictError(f"memory {holder.id!r} already has this content", memory_id=holder.id)
        if reprocess and memory.status == "processing":
            raise ConflictError(f"memory {memory_id!r} is being processed; try again when it is done")
        if reprocess and memory.status != "pending":
            self.writing.reprocess(memory, fields, now)
        elif fields:
            self.store.update_memory(memory_id, {**fields, "updated_at": now})
        log.info("memory updated", extra={
            "memory_id": memory_id, "dataset": memory.dataset, "fields": sorted(fields),
            "reprocessed": reprocess and memory.status != "pending",
            "seconds": round(time.perf_counter() - started, 6),
        })
        return get_memory(self.store, memory_id)

    # -- delete and forget -------------------------------------------------------------------
    def _remove(self, memories: list[Memory]) -> tuple[list[str], list[str]]:
        now = self.now()

        def remove(txn: Txn) -> tuple[list[str], list[str]]:
            current = self.store.get_memories([m.id for m in memories])
            return remove_memories(self.store, txn, current, now)

        return self.store.atomic(remove)

    def delete(self, memory_id: str) -> ForgetResult:
        """Hard-delete one memory; entities and facts another memory states survive."""
        started = time.perf_counter()
        memory = get_memory(self.store, memory_id)
        entity_ids, fact_ids = self._remove([memory])
        self.store.scrub()
        log.info("memory deleted", extra={
            "memory_id": memory_id, "dataset": memory.dataset, "entities_removed": len(entity_ids),
            "facts_removed": len(fact_ids), "seconds": round(time.perf_counter() - started, 6),
        })
        return ForgetResult(memory_ids=[memory_id], entity_ids=entity_ids, fact_ids=fact_ids)

    def forget(
        self, memory_id: str | None, *, dataset: str | None, everything: bool, user: str | None,
    ) -> ForgetResult:
        """Hard-delete one memory, a dataset, everything, or one user's memories in a dataset
        (default ``main``): exactly one selector (``dataset`` goes with ``user``)."""

        check_flag(everything, "everything")  # only True forgets everything, never a truthy "no"
        check_scope(user, "user")
        chosen = sum([memory_id is not None, dataset is not None and user is None, everything, user is not None])
        if chosen != 1:
            raise ValidationError("forget needs exactly one of: a memory id, dataset=…, everything=True, user=…")
        if memory_id is not None:
            return self.delete(memory_id)
        if user is not None:
            dataset = dataset or DEFAULT_DATASET
        if dataset is not None:
            check_dataset(dataset)
            _require_dataset(self.store, dataset)
        started = time.perf_counter()
        out = ForgetResult()
        # Each page is deleted in its own transaction, so forgetting a huge dataset never
        # holds the write lock for long; a rerun finishes an interrupted forget.
        while page := self.store.list_memories(
            MemoryFilter(dataset=dataset, user=user, order_by="created_at", descending=False, limit=_PAGE)
        ):
            entity_ids, fact_ids = self._remove(page)
            out.memory_ids += [m.id for m in page]
            out.entity_ids += entity_ids
            out.fact_ids += fact_ids
        self.store.scrub()
        log.info("forgot", extra={
            "dataset": dataset, "everything": bool(everything), "user_scoped": user is not None, "memories": len(out.memory_ids),
            "entities_removed": len(out.entity_ids), "facts_removed": len(out.fact_ids),
            "seconds": round(time.perf_counter() - started, 6),
        })
        return out

    # -- provenance and pinning --------------------------------------------------------------
    def provenance(self, memory_id: str) -> Provenance:
        get_memory(self.store, memory_id)
        entity_ids, fact_ids = self.store.memory_graph(memory_id)
        chunks = [Chunk(id=c.id, position=c.position, text=c.text, token_count=c.token_count, location=c.location)
                  for c in self.store.memory_chunks(memory_id)]
        out = Provenance(memory_id=memory_id, chunks=chunks, entities=self.store.get_entities(entity_ids),
                         facts=self.store.get_facts(fact_ids))
        annotate(self.store, out.facts, out.entities)  # their origins and flags (pipeline/authority.py)
        return out

    def pin(self, memory_id: str, reason: str | None) -> Memory:
        check_text(reason, "pin reason", optional=True, empty=True, max_chars=SOURCE_CHARS)
        get_memory(self.store, memory_id)
        self.store.update_memory(memory_id, {"pinned": True, "pin_reason": reason or None,
                                             "updated_at": self.now()})
        log.info("memory pinned", extra={"memory_id": memory_id})
        return get_memory(self.store, memory_id)

    def unpin(self, memory_id: str) -> Memory:
        get_memory(self.store, memory_id)
        self.store.update_memory(memory_id, {"pinned": False, "pin_reason": None, "updated_at": self.now()})
        log.info("memory unpinned", extra={"memory_id": memory_id})
        return get_memory(self.store, memory_id)

    # -- prune -------------------------------------------------------------------------------
    def prune(
        self,
        *,
        dataset: str,
        max_age_days: float | None,
        min_score: float | None,
        superseded_older_than_days: float | None,
        dry_run: bool,
    ) -> PruneResult:
        """Remove what has decayed, aged out or been superseded. A dry run only reads, and
        reports exactly what a real run would remove."""

        check_dataset(dataset)
        check_flag(dry_run, "dry_run")
        for name, value in (("max_age_days", max_age_days), ("min_score", min_score),
                            ("superseded_older_than_days", superseded_older_than_days)):
            check_number(value, name, 0, 1e6, optional=True)
        criteria = PruneCriteria(max_age_days, min_score, superseded_older_than_days)
        started = time.perf_counter()
        now = self.now()
        evaluated, selected = 0, []
        reasons: Counter[str] = Counter()
        for page in self._pages(MemoryFilter(dataset=dataset, order_by="created_at", descending=False)):
            evaluated += len(page)
            for memory in page:
                reason = prune_reason(memory, criteria, self.settings, now)
                if reason is not None:
                    selected.append(memory.id)
                    reasons[reason] += 1
        result = PruneResult(dry_run=dry_run, evaluated=evaluated)
        if selected:
            self._prune_selected(selected, criteria, now, result)
        log.info("prune", extra={
            "dataset": dataset, "dry_run": dry_run, "evaluated": evaluated, "pruned": result.pruned,
            "reasons": dict(reasons), "entities_removed": len(result.entity_ids),
            "facts_removed": len(result.fact_ids), "seconds": round(time.perf_counter() - started, 6),
        })
        return result

    def _prune_selected(self, ids: list[str], criteria: PruneCriteria, now: dt.datetime,
                        result: PruneResult) -> None:
        """A real run deletes a page per transaction. A dry run only reads: it replays the same
        garbage collection over the stored provenance (``removal_preview``), so it reports
        exactly what a real run would remove and never holds the store's write lock."""
        for start in range(0, len(ids), _PAGE):
            page = ids[start : start + _PAGE]
            if result.dry_run:
                batch = self.store.get_memories(page)
                entity_ids, fact_ids = removal_preview(self.store, batch, result.memory_ids)
            else:
                batch, (entity_ids, fact_ids) = self.store.atomic(
                    lambda txn, page=page: self._prune_page(txn, page, criteria, now))  # type: ignore[misc]  # a lambda's bound defaults
            result.memory_ids += [m.id for m in batch]
            result.entity_ids += entity_ids
            result.fact_ids += fact_ids
        result.pruned = len(result.memory_ids)
        if result.pruned and not result.dry_run:
            self.store.scrub()

    def _prune_page(self, txn: Txn, ids: list[str], criteria: PruneCriteria,
                    now: dt.datetime) -> tuple[list[Memory], tuple[list[str], list[str]]]:
        # Decide again inside the transaction, on rows it holds locked until it commits: a pin
        # committed before is seen and the memory stays; one made after waits, then finds the
        # memory gone (NotFoundError), so no acknowledged pin is ever deleted.
        batch = [m for m in txn.lock_memories(ids) if prune_reason(m, criteria, self.settings, now) is not None]
        return batch, remove_memories(self.store, txn, batch, now)


    # -- feedback ----------------------------------------------------------------------------
    def feedback(self, fact_id: str, *, helpful: bool) -> float:
        """Make a fact rank higher (helpful) or lower in recall; returns its new weight."""
        if not isinstance(helpful, bool):
            raise ValidationError("helpful must be true or false")
        rows = self.store.get_facts([check_text(fact_id, "fact id", max_chars=ID_CHARS)])
        if not rows:
            raise NotFoundError(f"no fact {fact_id!r}")
        weight = feedback_weight(rows[0].weight, helpful)
        self.store.set_fact_weight(fact_id, weight)
        log.info("feedback", extra={"fact_id": fact_id, "helpful": helpful, "weight": weight})
        return weight


def _require_dataset(store: Store, dataset: str) -> None:
    """The dataset exists, as a read requires it (``main`` always does; so does one created
    empty through the server's ``datasets create``): forgetting a misspelt name is an error,
    not an empty success."""
    if dataset == DEFAULT_DATASET or dataset in store.datasets():
        return
    from ..store.auth import AuthStore

    if isinstance(store, AuthStore) and store.dataset_records([dataset]):
        return
    raise NotFoundError(f"no dataset {dataset!r}")


def _changed_fields(memory: Memory, changes: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """Validate ``changes`` against ``memory``; return the columns that really change. Dates
    are read by the one date parser, relative to ``now``."""
    fields = dict(changes)
    structured = [name for name in _STRUCTURED if name in fields]
    if structured and memory.topic is None:
        raise ValidationError(
            f"memory {memory.id!r} is plain text: update its content, not {', '.join(structured)}"
        )
    if "content" in fields and memory.topic is not None:
        raise ValidationError(
            "a structured memory's content is rendered from its fields: update topic, context, "
            "decisions or rationale"
        )
    if structured:
        current = {name: getattr(memory, name) or ("" if name in ("topic", "context") else [])
                   for name in _STRUCTURED}
        try:
            rendered = MemoryInput(**{**current, **{k: fields[k] for k in structured}})
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"invalid structured memory: {exc}") from exc
        fields.update({name: getattr(rendered, name) for name in structured})
        fields["content"] = rendered.render()
    if "content" in fields:
        content = fields["content"]
        if not isinstance(content, str) or not content.strip():
            raise ValidationError("content must be a non-empty string")
        check_text(content, "content")
    for name in ("valid_at", "retention_until"):
        if fields.get(name) is not None:
            fields[name] = parse_user_datetime(fields[name], now=now, name=name)
    if "valid_at" in fields and fields["valid_at"] is None:
        raise ValidationError("valid_at cannot be removed")
    if "kind" in fields:
        check_text(fields["kind"], "kind", max_chars=KIND_CHARS)
        check_choice(fields["kind"], "kind", get_args(MemoryKind))
    if "source" in fields:
        check_text(fields["source"], "source", optional=True, max_chars=SOURCE_CHARS)
    if "metadata" in fields:
        fields["metadata"] = check_metadata(fields["metadata"])
    try:
        checked = Memory.model_validate({**memory.model_dump(), **fields})
    except ValueError as exc:
        raise ValidationError(f"invalid update: {exc}") from exc
    return {
        name: getattr(checked, name) for name in fields
        if getattr(checked, name) != getattr(memory, name)
    }
