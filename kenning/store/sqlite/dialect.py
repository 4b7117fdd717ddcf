"""How SQLite spells the shared SQL (``kenning.store.sql``): times as ISO text, JSON as text,
vectors as BLOBs, booleans as integers, permissions as comma lists, and metadata conditions
as ``json_extract`` over the ``metadata`` column."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

from ..._time import from_text, to_text
from ..filters import Condition
from ..sql import Dialect, json_text
from ..vectors import from_blob, to_blob

__all__ = ["SQLITE", "dataset_token"]

#: an ISO date at the start of a text value: only those are compared as instants (julianday()
#: would also read 'now' and bare numbers)
_ISO_DATE = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*"


def _condition(cond: Condition, column: str) -> tuple[str, list[Any]]:
    path = "$" + "".join('."' + part + '"' for part in cond.path)
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


def dataset_token(dataset: str) -> str:
    """One full-text token that names a dataset, whatever characters its name has."""
    return "ds" + hashlib.sha1(dataset.encode()).hexdigest()[:16]


SQLITE = Dialect(
    mark="?", condition=_condition, time_in=to_text, time_out=from_text, json_in=json_text, json_out=json.loads,
    bool_in=int, vector_in=to_blob, vector_out=from_blob, json_text="json_extract({column}, '$.{key}')",
    types={"id": "TEXT", "json": "TEXT", "time": "TEXT", "bool": "INTEGER", "false": "0", "vector": "BLOB", "real": "REAL",
           "perms": "TEXT", "fill": "", "table_options": " WITHOUT ROWID"},
    perms_in=",".join, perms_out=lambda text: frozenset(p for p in text.split(",") if p),
    catalog={
        # the full-text tables and their shadow tables are derived from the rows
        "tables": "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND instr(name, '_fts') = 0",
        "columns": "SELECT name, upper(coalesce(type, '')) FROM pragma_table_info(?)",
        "depends_on": 'SELECT "table" FROM pragma_foreign_key_list(?)',
        "primary_key": "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk",
        "collate": "",  # BINARY, the default
    },
)
