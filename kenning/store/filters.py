"""Metadata filters: the expression a caller gives (``recall``/``list`` ``filters=``), checked
into :class:`Condition` s that each store compiles to SQL (``sqlite/dialect.py``,
``postgres/dialect.py``).

The expression is a JSON object; every key must hold (the conditions are ANDed)::

    {"topic": "billing"}                          equality (a string, number or boolean)
    {"topic": {"in": ["billing", "refunds"]}}     one of these values
    {"priority": {"gte": 2, "lte": 5}}            a number in a range (both ends included)
    {"due": {"gte": "2024-06-01"}}                an ISO date in a range (compared as instants)

A key is a metadata key, or a dotted path into nested objects (``"ticket.state"``). A value a
key does not hold, or holds with another type, does not match. An unknown operator, an empty
``in`` list or a bound that is neither a number nor a date is a ``ValidationError``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..dates import parse_user_datetime

__all__ = ["OPERATORS", "Condition", "parse_filters"]

#: the operators a condition may use
OPERATORS = ("eq", "in", "gte", "lte")
_KEY = re.compile(r"[\w-]{1,100}(?:\.[\w-]{1,100}){0,7}")
_MAX_CONDITIONS = 32
_MAX_IN = 100
Scalar = str | int | float | bool


@dataclass(frozen=True)
class Condition:
    """``path`` (the key split on dots) ``op`` ``value``. For ``gte``/``lte`` the value is a
    number or an aware UTC datetime; for ``in`` a tuple of scalars; for ``eq`` one scalar."""

    path: tuple[str, ...]
    op: str
    value: Any


def parse_filters(expression: Mapping[str, Any] | None, *, now: dt.datetime | None = None) -> tuple[Condition, ...]:
    """The conditions of a filter expression (None or ``{}``: none). Date bounds are read by
    the one date parser, relative to ``now``."""
    if expression is None:
        return ()
    if not isinstance(expression, Mapping):
        raise ValidationError(f"filters must be a JSON object, not {type(expression).__name__}")
    out: list[Condition] = []
    for key, spec in expression.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValidationError(
                f"filter key {key!r:.100} is not a metadata key: use letters, digits, '_' or '-',"
                " and dots for nested keys"
            )
        path = tuple(key.split("."))
        if isinstance(spec, Mapping):
            if not spec:
                raise ValidationError(f"filter on {key!r} has no operator: use one of {', '.join(OPERATORS)}")
            out.extend(_condition(path, key, str(op), value, now) for op, value in spec.items())
        else:
            out.append(_condition(path, key, "eq", spec, now))
    if len(out) > _MAX_CONDITIONS:
        raise ValidationError(f"filters hold {len(out)} conditions; the limit is {_MAX_CONDITIONS}")
    return tuple(out)


def _condition(path: tuple[str, ...], key: str, op: str, value: Any, now: dt.datetime | None) -> Condition:
    if op == "eq":
        return Condition(path, op, _scalar(value, key))
    if op == "in":
        if not isinstance(value, (list, tuple)) or not value or len(value) > _MAX_IN:
            raise ValidationError(f"filter {key!r} 'in' takes a list of 1 to {_MAX_IN} values")
        return Condition(path, op, tuple(_scalar(v, key) for v in value))
    if op in ("gte", "lte"):
        return Condition(path, op, _bound(value, key, op, now))
    raise ValidationError(
        f"unknown filter operator {op!r:.50} on {key!r}: use one of {', '.join(OPERATORS)}",
        operator=op[:50],
    )


def _scalar(value: Any, key: str) -> Scalar:
    if isinstance(value, (str, bool)) or (isinstance(value, (int, float)) and math.isfinite(value)):
        return value
    if isinstance(value, (list, tuple)):
        raise ValidationError(f"filter {key!r} holds a list: to match one of several values use {{'in': [...]}}")
    raise ValidationError(f"filter {key!r} compares with a {type(value).__name__}: use a string, number or boolean")


def _bound(value: Any, key: str, op: str, now: dt.datetime | None) -> float | dt.datetime:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    if isinstance(value, (str, dt.date)):
        return parse_user_datetime(value, now=now, name=f"filter {key!r} {op}")
    raise ValidationError(f"filter {key!r} {op!r} takes a number or a date, not {type(value).__name__}")
