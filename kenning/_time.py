"""Timestamps: always timezone-aware UTC, stored and serialized as fixed-width RFC 3339.

The fixed width (microseconds, ``+00:00``) makes stored strings sort like the instants they
name, so SQL comparisons on them are comparisons of time.
"""

from __future__ import annotations

import datetime as dt
from typing import overload

UTC = dt.timezone.utc


def utcnow() -> dt.datetime:
    return dt.datetime.now(UTC)


@overload
def as_utc(value: dt.datetime | dt.date) -> dt.datetime: ...
@overload
def as_utc(value: dt.datetime | dt.date | str | None) -> dt.datetime | None: ...
def as_utc(value: dt.datetime | dt.date | str | None) -> dt.datetime | None:
    """Coerce a datetime, date or ISO string to an aware UTC datetime (naive means UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.endswith("Z") or text.endswith("z"):
            text = text[:-1] + "+00:00"
        value = dt.datetime.fromisoformat(text)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=UTC)
    raise TypeError(f"not a timestamp: {type(value).__name__}")


def to_text(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    # isoformat pads the year to four digits (strftime's %Y does not on every platform).
    return as_utc(value).isoformat(timespec="microseconds")


def from_text(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    return dt.datetime.fromisoformat(value).astimezone(UTC)
