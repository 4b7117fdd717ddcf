"""A :class:`MemoryFilter` as PostgreSQL SQL: the columns it names and its metadata conditions
(``jsonb`` paths over the ``metadata`` column), for ``memories`` under any alias."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from psycopg import sql

from ..base import MemoryFilter
from ..filters import Condition

__all__ = ["memory_where"]

_COLUMNS = ("dataset", "kind", "status", "retention", "pinned", "user", "agent", "session")


def memory_where(flt: MemoryFilter, alias: str = "") -> tuple[list[sql.Composable], list[Any]]:
    """(clauses to AND, their arguments) selecting the memories ``flt`` selects."""
    clauses: list[sql.Composable] = []
    args: list[Any] = []
    for name in _COLUMNS:
        value = getattr(flt, name)
        if value is not None:
            clauses.append(sql.SQL("{} = %s").format(_column(alias, name)))
            args.append(value)
    metadata = _column(alias, "metadata")
    for cond in flt.filters:
        clause, cond_args = _condition(cond, metadata)
        clauses.append(clause)
        args += cond_args
    return clauses, args


def _column(alias: str, name: str) -> sql.Composable:
    return sql.Identifier(alias, name) if alias else sql.Identifier(name)


def _condition(cond: Condition, metadata: sql.Composable) -> tuple[sql.Composable, list[Any]]:
    path = list(cond.path)
    if cond.op in ("eq", "in"):
        # jsonb equality is typed: true is not 1, 1 is not "1", and 1 equals 1.0.
        values = cond.value if cond.op == "in" else (cond.value,)
        return (sql.SQL("({} #> %s::text[]) = ANY(%s::jsonb[])").format(metadata),
                [path, [json.dumps(v) for v in values]])
    op = sql.SQL(">=" if cond.op == "gte" else "<=")
    if isinstance(cond.value, dt.datetime):
        return (sql.SQL("kenning_iso_time({} #>> %s::text[]) {} %s").format(metadata, op), [path, cond.value])
    return (sql.SQL("(CASE WHEN jsonb_typeof({m} #> %s::text[]) = 'number' THEN ({m} #>> %s::text[])::numeric"
                    " END) {op} %s").format(m=metadata, op=op), [path, path, cond.value])
