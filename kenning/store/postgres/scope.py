"""A :class:`MemoryFilter` as PostgreSQL SQL (``?`` placeholders, as ``ScopeReads`` writes
them): the columns it names and its metadata conditions (``jsonb`` paths over ``metadata``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ..base import MemoryFilter
from ..filters import Condition

__all__ = ["memory_where"]

_COLUMNS = ("dataset", "kind", "status", "retention", "pinned", "user", "agent", "session")


def memory_where(flt: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
    """(clauses to AND, their arguments) selecting the memories ``flt`` selects."""
    col = f"{alias}." if alias else ""
    clauses, args = [], []
    for name in _COLUMNS:
        value = getattr(flt, name)
        if value is not None:
            clauses.append(f'{col}"{name}" = ?')
            args.append(value)
    for cond in flt.filters:
        clause, cond_args = _condition(cond, f"{col}metadata")
        clauses.append(clause)
        args += cond_args
    return clauses, args


def _condition(cond: Condition, metadata: str) -> tuple[str, list[Any]]:
    path = list(cond.path)
    if cond.op in ("eq", "in"):
        # jsonb equality is typed: true is not 1, 1 is not "1", and 1 equals 1.0.
        values = cond.value if cond.op == "in" else (cond.value,)
        return f"({metadata} #> ?::text[]) = ANY(?::jsonb[])", [path, [json.dumps(v) for v in values]]
    op = ">=" if cond.op == "gte" else "<="
    if isinstance(cond.value, dt.datetime):
        return f"kenning_iso_time({metadata} #>> ?::text[]) {op} ?", [path, cond.value]
    return (f"(CASE WHEN jsonb_typeof({metadata} #> ?::text[]) = 'number'"
            f" THEN ({metadata} #>> ?::text[])::numeric END) {op} ?", [path, path, cond.value])
