"""Scope and session reads, written once for both backends: which records a memory filter
reaches (``in_scope``), the facts its memories state, a session's latest turns and the list of
sessions. A backend mixes :class:`ScopeReads` in and supplies two hooks: ``_scope_where`` (a
``MemoryFilter`` as SQL clauses with ``?`` placeholders, ``sqlite/scope.py`` and
``postgres/scope.py``) and ``_scope_rows`` (run a statement, rows by column name)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from .._time import as_utc
from ..models import Fact, Memory, Session
from .base import MemoryFilter

__all__ = ["ScopeReads"]

#: how each kind of record reaches the memories that state it
_REACH = {
    "memory": "SELECT m.id AS id FROM memories m WHERE m.id IN ({marks})",
    "chunk": "SELECT r.id AS id FROM chunks r JOIN memories m ON m.id = r.memory_id WHERE r.id IN ({marks})",
    "fact": "SELECT DISTINCT p.fact_id AS id FROM fact_memories p JOIN memories m ON m.id = p.memory_id"
            " WHERE p.fact_id IN ({marks})",
    "entity": "SELECT DISTINCT p.entity_id AS id FROM entity_memories p JOIN memories m ON m.id = p.memory_id"
              " WHERE p.entity_id IN ({marks})",
}
_BATCH = 500


def _and(clauses: list[str], lead: str) -> str:
    return lead + " AND ".join(clauses) if clauses else ""


class ScopeReads:
    """Mixed into a store that also has ``get_memories`` and ``get_facts``."""

    @abstractmethod
    def _scope_where(self, flt: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
        """(clauses to AND, their arguments) selecting the memories ``flt`` selects."""

    @abstractmethod
    def _scope_rows(self, sql: str, args: Sequence[Any]) -> list[Mapping[str, Any]]:
        """The rows of a read statement written with ``?`` placeholders."""

    def in_scope(self, kind: str, ids: Sequence[str], flt: MemoryFilter) -> list[str]:
        clauses, args = self._scope_where(flt, "m")
        unique = list(dict.fromkeys(ids))
        found: set[str] = set()
        for start in range(0, len(unique), _BATCH):
            part = unique[start : start + _BATCH]
            sql = _REACH[kind].format(marks=", ".join("?" * len(part))) + _and(clauses, " AND ")
            found.update(r["id"] for r in self._scope_rows(sql, [*part, *args]))
        return [i for i in ids if i in found]

    def facts_stated(self, flt: MemoryFilter) -> list[Fact]:
        clauses, args = self._scope_where(flt, "m")
        sql = (
            "SELECT f.id AS id FROM facts f WHERE f.id IN (SELECT p.fact_id FROM fact_memories p"
            f" JOIN memories m ON m.id = p.memory_id{_and(clauses, ' WHERE ')})"
            " ORDER BY (f.expired_at IS NOT NULL OR f.invalid_at IS NOT NULL), f.valid_at DESC, f.id"
            " LIMIT ? OFFSET ?"
        )
        ids = [r["id"] for r in self._scope_rows(sql, [*args, flt.limit, flt.offset])]
        return self.get_facts(ids)  # type: ignore[attr-defined]

    def session_messages(self, dataset: str, session: str, last: int, before: int | None = None) -> list[Memory]:
        # A message without a position (none is stored so) sorts last in both databases.
        sql = (
            "SELECT id FROM memories WHERE dataset = ? AND session = ?"
            + (" AND position < ?" if before is not None else "")
            + " ORDER BY position IS NULL, position DESC, valid_at DESC, created_at DESC, id DESC LIMIT ?"
        )
        args = [dataset, session, *([before] if before is not None else []), max(0, last)]
        ids = [r["id"] for r in self._scope_rows(sql, args)]
        return self.get_memories(ids[::-1])  # type: ignore[attr-defined]

    def sessions(self, flt: MemoryFilter) -> list[Session]:
        clauses, args = self._scope_where(flt)
        sql = (
            'SELECT session, dataset, min("user") AS "user", min(agent) AS agent, min(valid_at) AS first_at,'
            " max(valid_at) AS last_at, count(*) AS messages FROM memories"
            f" WHERE {' AND '.join([*clauses, 'session IS NOT NULL'])}"
            " GROUP BY dataset, session ORDER BY last_at DESC, dataset, session LIMIT ? OFFSET ?"
        )
        return [
            Session(id=r["session"], dataset=r["dataset"], user=r["user"], agent=r["agent"],
                    first_at=as_utc(r["first_at"]), last_at=as_utc(r["last_at"]), messages=r["messages"])
            for r in self._scope_rows(sql, [*args, flt.limit, flt.offset])
        ]
