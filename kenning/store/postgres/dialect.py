"""How PostgreSQL spells the shared SQL (``kenning.store.sql``): ``%s`` marks, id lists as
arrays, native times, ``jsonb`` (text stored without NUL), pgvector text literals, row locks,
and metadata conditions as ``jsonb`` paths over ``metadata``."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from ..filters import Condition
from ..sql import Dialect, json_text

__all__ = ["POSTGRES", "from_vector_text", "json_value", "to_vector_text"]


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def json_value(value: Any) -> Jsonb:
    """A value for a ``jsonb`` parameter (PostgreSQL text cannot hold NUL: it becomes U+FFFD)."""
    return Jsonb(_scrub(value), dumps=json_text)


def to_vector_text(vector: np.ndarray | None) -> str | None:
    """A vector as a pgvector text literal ('[1,2,3]'); sent as ``%s::vector``."""
    if vector is None:
        return None
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def from_vector_text(text: str | None) -> np.ndarray | None:
    if text is None:
        return None
    return np.array(text[1:-1].split(","), dtype=np.float32)


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


POSTGRES = Dialect(
    mark="%s", condition=_condition, json_in=json_value, vector_in=to_vector_text, vector_out=from_vector_text,
    vector_mark="?::vector", json_mark="?::jsonb", vector_select="embedding::text", json_text="{column} ->> '{key}'",
    for_update=" FOR UPDATE", skip_locked=" FOR {} SKIP LOCKED", arrays=True,
    types={"id": 'TEXT COLLATE "C"', "json": "JSONB", "time": "TIMESTAMPTZ", "bool": "BOOLEAN", "false": "false",
           "vector": "vector", "real": "DOUBLE PRECISION", "perms": "TEXT[]", "fill": " WITH (fillfactor = 80)",
           "table_options": ""},
    auth_lock="SELECT pg_advisory_xact_lock(hashtext('kenning_auth_schema'))",
    catalog={
        "tables": "SELECT table_name FROM information_schema.tables"
                  " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
        "columns": "SELECT column_name::text, CASE WHEN data_type = 'USER-DEFINED' THEN udt_name::text ELSE data_type::text END"
                   " FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s"
                   " AND is_generated = 'NEVER' ORDER BY ordinal_position",
        "depends_on": "SELECT confrelid::regclass::text FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass(%s)",
        "primary_key": "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                       " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary"
                       " ORDER BY array_position(i.indkey::int2[], a.attnum)",
        "collate": ' COLLATE "C"',
    },
)
