"""Scopes and sessions in SQLite: which records a memory filter reaches, the facts its memories
state, a session's latest turns and the list of sessions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._time import from_text
from ...models import Fact, Memory, Session
from ..base import MemoryFilter
from .scope import memory_where

__all__ = ["SQLiteSessionsMixin"]

#: how each kind of record reaches the memories that state it
_REACH = {
    "memory": "SELECT m.id FROM memories m WHERE m.id IN ({marks})",
    "chunk": "SELECT r.id FROM chunks r JOIN memories m ON m.id = r.memory_id WHERE r.id IN ({marks})",
    "fact": "SELECT DISTINCT p.fact_id FROM fact_memories p JOIN memories m ON m.id = p.memory_id"
            " WHERE p.fact_id IN ({marks})",
    "entity": "SELECT DISTINCT p.entity_id FROM entity_memories p JOIN memories m ON m.id = p.memory_id"
              " WHERE p.entity_id IN ({marks})",
}
_BATCH = 500


class SQLiteSessionsMixin:
    """Mixed into ``SQLiteStore``; relies on its ``_db``, ``_lock``, ``get_memories`` and
    ``get_facts``."""

    def in_scope(self, kind: str, ids: Sequence[str], flt: MemoryFilter) -> list[str]:
        clauses, args = memory_where(flt, "m")
        extra = "".join(f" AND {c}" for c in clauses)
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        with self._lock:  # type: ignore[attr-defined]
            for start in range(0, len(unique), _BATCH):
                part = unique[start : start + _BATCH]
                sql = _REACH[kind].format(marks=",".join("?" * len(part))) + extra
                found.update(r[0] for r in self._db.execute(sql, [*part, *args]))  # type: ignore[attr-defined]
        return [i for i in ids if i in found]

    def facts_stated(self, flt: MemoryFilter) -> list[Fact]:
        clauses, args = memory_where(flt, "m")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        sql = (
            "SELECT f.id FROM facts f WHERE f.id IN (SELECT p.fact_id FROM fact_memories p"
            f" JOIN memories m ON m.id = p.memory_id{where})"
            " ORDER BY f.expired_at IS NOT NULL OR f.invalid_at IS NOT NULL, f.valid_at DESC, f.id"
            " LIMIT ? OFFSET ?"
        )
        with self._lock:  # type: ignore[attr-defined]
            ids = [r[0] for r in self._db.execute(sql, [*args, flt.limit, flt.offset])]  # type: ignore[attr-defined]
        return self.get_facts(ids)  # type: ignore[attr-defined]

    def session_messages(self, dataset: str, session: str, last: int, before: int | None = None) -> list[Memory]:
        sql = (
            "SELECT id FROM memories WHERE dataset = ? AND session = ?"
            + (" AND position < ?" if before is not None else "")
            + " ORDER BY position DESC, valid_at DESC, created_at DESC, id DESC LIMIT ?"
        )
        args = [dataset, session, *([before] if before is not None else []), max(0, last)]
        with self._lock:  # type: ignore[attr-defined]
            ids = [r[0] for r in self._db.execute(sql, args)]  # type: ignore[attr-defined]
        return self.get_memories(ids[::-1])  # type: ignore[attr-defined]

    def sessions(self, flt: MemoryFilter) -> list[Session]:
        clauses, args = memory_where(flt)
        where = " AND ".join([*clauses, "session IS NOT NULL"])
        sql = (
            'SELECT session, dataset, min("user") AS user, min(agent) AS agent, min(valid_at) AS first_at,'
            f" max(valid_at) AS last_at, count(*) AS messages FROM memories WHERE {where}"
            " GROUP BY dataset, session ORDER BY last_at DESC, dataset, session LIMIT ? OFFSET ?"
        )
        with self._lock:  # type: ignore[attr-defined]
            rows = self._db.execute(sql, [*args, flt.limit, flt.offset]).fetchall()  # type: ignore[attr-defined]
        return [_session(r) for r in rows]


def _session(row: Any) -> Session:
    return Session(
        id=row["session"], dataset=row["dataset"], user=row["user"], agent=row["agent"],
        first_at=from_text(row["first_at"]), last_at=from_text(row["last_at"]), messages=row["messages"],
    )
