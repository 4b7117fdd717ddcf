"""Hard deletion inside one store transaction, with garbage collection by provenance.

``Txn.unlink_memory`` removes the facts and entities nothing else states. Two things it cannot
know are handled here: memories the deleted one superseded become current again, and a shared
entity keeps no description or alias that only the deleted memories supported (a forgotten
memory must leave no text behind that recall could return).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence

from ..errors import ConflictError, NotFoundError
from ..models import Fact, Memory
from ..store.base import Store, Txn

__all__ = ["removal_preview", "remove_memories", "require_present", "scrub_entities"]

#: memories read, at most, to find support for a shared entity's description and aliases;
#: past it the text is dropped (losing a description is cheap, keeping forgotten text is not)
_SUPPORT_SCAN = 1000
_PAGE = 100
_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def remove_memories(
    store: Store, txn: Txn, memories: Sequence[Memory], now: dt.datetime
) -> tuple[list[str], list[str]]:
    """Delete ``memories`` and everything only they stated; returns (entity_ids, fact_ids)."""
    gone = {m.id for m in memories}
    touched: set[str] = set()
    for memory in memories:
        touched.update(store.memory_graph(memory.id)[0])
    dead_entities: list[str] = []
    dead_facts: list[str] = []
    for memory in memories:
        entities, facts = txn.unlink_memory(memory.id)
        txn.delete_memory(memory.id)
        dead_entities.extend(entities)
        dead_facts.extend(facts)
    _restore_superseded(store, txn, memories, gone, now)
    scrub_entities(store, txn, touched - set(dead_entities), gone=gone)
    return dead_entities, dead_facts


def require_present(txn: Txn, memory_id: str) -> None:
    """Inside a write that replaces a memory's graph (``update``): the memory still exists and
    no worker holds it, checked on the row the transaction now holds. A ``delete`` or a claim
    that committed while the new version was extracted outside the transaction is a typed
    error, never a write against a row that is gone."""
    state = txn.claim_state(memory_id)
    if state is None:
        raise NotFoundError(f"no memory {memory_id!r}: it was deleted while being updated")
    if state[0] == "processing":
        raise ConflictError(f"memory {memory_id!r} is being processed; try again when it is done")


def removal_preview(
    store: Store, memories: Sequence[Memory], removed_before: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """What ``remove_memories`` would delete, from reads only: the same garbage collection,
    memory by memory in the same order, over the stored provenance. A fact dies once every
    memory that states it is removed; an entity once every memory that names it is removed
    and every fact at either end of it has died. ``removed_before``: memories an earlier
    batch of the same run removes. Returns (entity_ids, fact_ids) in ``unlink_memory``'s order."""
    removed = set(removed_before)

    def dead(fact: Fact) -> bool:
        return bool(fact.memory_ids) and removed.issuperset(fact.memory_ids)

    dead_entities: list[str] = []
    dead_facts: list[str] = []
    for memory in memories:
        removed.add(memory.id)
        entity_ids, fact_ids = store.memory_graph(memory.id)
        dead_facts += sorted(f.id for f in store.get_facts(fact_ids) if dead(f))
        dead_entities += sorted(
            e.id for e in store.get_entities(entity_ids)
            if removed.issuperset(e.memory_ids) and all(dead(f) for f in store.entity_facts(e.id))
        )
    return dead_entities, dead_facts


def _restore_superseded(
    store: Store, txn: Txn, memories: Sequence[Memory], gone: set[str], now: dt.datetime
) -> None:
    """A memory superseded only by a deleted one is current again (as a fact closed by a
    deleted fact is reopened)."""
    for memory in memories:
        older = [i for i in memory.supersedes if i not in gone]
        for old in store.get_memories(older):
            if old.superseded_by == memory.id:
                status = "active" if old.processed_at is not None else "pending"
                txn.update_memory(old.id, {"status": status, "superseded_by": None, "updated_at": now})


def scrub_entities(
    store: Store,
    txn: Txn,
    entity_ids: Iterable[str],
    *,
    gone: set[str],
    replaced: dict[str, str] | None = None,
) -> None:
    """Drop the description and aliases of surviving entities that no remaining memory's
    content supports. ``replaced`` maps a memory id to its new content (an update)."""
    for entity in store.get_entities(sorted(entity_ids)):
        wanted = {a: _norm(a) for a in entity.aliases}
        description = _norm(entity.description)
        found_description = not description
        found_aliases: set[str] = set()
        remaining = [i for i in entity.memory_ids if i not in gone]
        for text in _contents(store, remaining, replaced or {}):
            found_description = found_description or description in text
            found_aliases.update(a for a, n in wanted.items() if n in text)
            if found_description and len(found_aliases) == len(wanted):
                break
        changes: dict[str, object] = {}
        if not found_description:
            changes["description"] = ""
        if len(found_aliases) != len(wanted):
            changes["aliases"] = [a for a in entity.aliases if a in found_aliases]
        if changes:
            txn.update_entity(entity.id, changes)


def _contents(store: Store, memory_ids: list[str], replaced: dict[str, str]) -> Iterator[str]:
    ids = memory_ids[:_SUPPORT_SCAN]
    for start in range(0, len(ids), _PAGE):
        for memory in store.get_memories(ids[start : start + _PAGE]):
            yield _norm(replaced.get(memory.id, memory.content))
