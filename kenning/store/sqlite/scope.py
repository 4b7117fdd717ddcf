"""A :class:`MemoryFilter` as SQLite SQL: the columns it names and its metadata conditions
(``json_extract`` over the ``metadata`` column), for ``memories`` under any alias."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..._time import to_text
from .. import filters
from ..base import MemoryFilter
from ..filters import Condition

__all__ = ["memory_where"]

#: an ISO date at the start of a text value: only those are compared as instants (julianday()
#: would also read 'now' and bare numbers)
_ISO_DATE = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*"


def memory_where(flt: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
    """(clauses to AND, their arguments) selecting the memories ``flt`` selects."""
    return filters.memory_where(flt, _condition, alias, flag=int)


def _path(cond: Condition) -> str:
    return "$" + "".join('."' + part + '"' for part in cond.path)


def _condition(cond: Condition, column: str) -> tuple[str, list[Any]]:
    path = _path(cond)
    value, kind = f"json_extract({column}, ?)", f"json_type({column}, ?)"
    if cond.op in ("eq", "in"):
        values = cond.value if cond.op == "in" else (cond.value,)
        parts, args = [], []
        for v in values:
            sql, more = _equals(v, value, kind, path)
            parts.append(sql)
            args += more
        return "(" + " OR ".join(parts) + ")", args
    op = ">=" if cond.op == "gte" else "<="
    if isinstance(cond.value, dt.datetime):
        return (f"({kind} = 'text' AND {value} GLOB '{_ISO_DATE}'"
                f" AND julianday({value}) {op} julianday(?))", [path, path, path, to_text(cond.value)])
    return f"({kind} IN ('integer', 'real') AND {value} {op} ?)", [path, path, cond.value]


def _equals(v: Any, value: str, kind: str, path: str) -> tuple[str, list[Any]]:
    """One typed equality: a JSON true is not the number 1, a number is not its string."""
    if isinstance(v, bool):
        return f"{kind} = ?", [path, "true" if v else "false"]
    if isinstance(v, (int, float)):
        return f"({kind} IN ('integer', 'real') AND {value} = ?)", [path, path, v]
    return f"({kind} = 'text' AND {value} = ?)", [path, path, v]
