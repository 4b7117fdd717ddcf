"""A :class:`MemoryFilter` as PostgreSQL SQL (``?`` placeholders, as ``ScopeReads`` writes
them): the columns it names and its metadata conditions (``jsonb`` paths over ``metadata``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from .. import filters
from ..base import MemoryFilter
from ..filters import Condition

__all__ = ["memory_where"]



def memory_where(flt: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
    """(clauses to AND, their arguments) selecting the memories ``flt`` selects."""
    return filters.memory_where(flt, _condition, alias)


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
