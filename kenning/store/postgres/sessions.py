"""Scopes and sessions in PostgreSQL: which records a memory filter reaches, the facts its
memories state, a session's latest turns and the list of sessions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from ..._time import as_utc
from ...models import Fact, Memory, Session
from ..base import MemoryFilter
from .scope import memory_where

__all__ = ["PostgresSessionsMixin"]

#: how each kind of record reaches the memories that state it
_REACH = {
    "memory": "SELECT m.id FROM memories m WHERE m.id = ANY(%s)",
    "chunk": "SELECT r.id FROM chunks r JOIN memories m ON m.id = r.memory_id WHERE r.id = ANY(%s)",
    "fact": "SELECT DISTINCT p.fact_id AS id FROM fact_memories p JOIN memories m ON m.id = p.memory_id"
            " WHERE p.fact_id = ANY(%s)",
    "entity": "SELECT DISTINCT p.entity_id AS id FROM entity_memories p JOIN memories m ON m.id = p.memory_id"
              " WHERE p.entity_id = ANY(%s)",
}


def _and(clauses: list[sql.Composable], lead: str) -> sql.Composable:
    return sql.SQL(lead) + sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("")


class PostgresSessionsMixin:
    """Mixed into ``PostgresStore``; relies on its ``_conn()``, ``get_memories`` and
    ``get_facts``."""

    def in_scope(self, kind: str, ids: Sequence[str], flt: MemoryFilter) -> list[str]:
        if not ids:
            return []
        clauses, args = memory_where(flt, "m")
        query = sql.SQL(_REACH[kind]) + _and(clauses, " AND ")
        with self._conn() as conn:  # type: ignore[attr-defined]
            found = {r["id"] for r in conn.execute(query, [list(dict.fromkeys(ids)), *args]).fetchall()}
        return [i for i in ids if i in found]

    def facts_stated(self, flt: MemoryFilter) -> list[Fact]:
        clauses, args = memory_where(flt, "m")
        query = sql.SQL(
            "SELECT f.id FROM facts f WHERE f.id IN (SELECT p.fact_id FROM fact_memories p"
            " JOIN memories m ON m.id = p.memory_id{})"
            " ORDER BY (f.expired_at IS NOT NULL OR f.invalid_at IS NOT NULL), f.valid_at DESC, f.id"
            " LIMIT %s OFFSET %s"
        ).format(_and(clauses, " WHERE "))
        with self._conn() as conn:  # type: ignore[attr-defined]
            ids = [r["id"] for r in conn.execute(query, [*args, flt.limit, flt.offset]).fetchall()]
        return self.get_facts(ids)  # type: ignore[attr-defined]

    def session_messages(self, dataset: str, session: str, last: int, before: int | None = None) -> list[Memory]:
        with self._conn() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(
                "SELECT id FROM memories WHERE dataset = %(d)s AND session = %(s)s"
                + (" AND position < %(before)s" if before is not None else "")
                + " ORDER BY position DESC NULLS LAST, valid_at DESC, created_at DESC, id DESC LIMIT %(n)s",
                {"d": dataset, "s": session, "before": before, "n": max(0, last)},
            ).fetchall()
        return self.get_memories([r["id"] for r in rows][::-1])  # type: ignore[attr-defined]

    def sessions(self, flt: MemoryFilter) -> list[Session]:
        clauses, args = memory_where(flt)
        query = sql.SQL(
            'SELECT session, dataset, min("user") AS "user", min(agent) AS agent, min(valid_at) AS first_at,'
            " max(valid_at) AS last_at, count(*) AS messages FROM memories WHERE session IS NOT NULL{}"
            " GROUP BY dataset, session ORDER BY last_at DESC, dataset, session LIMIT %s OFFSET %s"
        ).format(_and(clauses, " AND "))
        with self._conn() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(query, [*args, flt.limit, flt.offset]).fetchall()
        return [_session(r) for r in rows]


def _session(row: dict[str, Any]) -> Session:
    return Session(
        id=row["session"], dataset=row["dataset"], user=row["user"], agent=row["agent"],
        first_at=as_utc(row["first_at"]), last_at=as_utc(row["last_at"]), messages=row["messages"],
    )
