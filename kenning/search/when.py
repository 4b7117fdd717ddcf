"""Time windows named by a question, read without a model.

"on 13 October, 2023", "October 13, 2023" and "2023-10-13" name a day; "in July 2023" and
"2023-07" a month; "in 2023" a year; "in June" a month of any year; "yesterday", "last week",
"last month", "last year", "this year" and "last May" are read relative to ``now``. Recall
prefers memories dated inside the window (a preference, not a filter: a question's date is often
approximate, and memories are dated by when they were said, not by when things happened).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import cast

__all__ = ["Window", "query_window"]

_MONTHS = {name.casefold(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.casefold(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|20|21)\d\d)"
#: a day named in a question matches memories dated this close to it (either side)
_DAY_SLACK = dt.timedelta(days=1)

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("day", re.compile(rf"\b{_YEAR}-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b")),
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("month", re.compile(rf"\b{_YEAR}-(?P<m>[01]\d)\b(?!-)")),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("relative", re.compile(r"\b(?P<rel>yesterday|today|(?:last|this|past)\s+(?:week|month|year))\b", re.I)),
    ("last_month_name", re.compile(rf"\blast\s+{_MONTH}\b", re.I)),
    ("year", re.compile(rf"\b(?:in|during|of|since|for|throughout)\s+{_YEAR}\b", re.I)),
    ("month_any_year", re.compile(rf"\b(?:in|during|of|early|late|mid)\s+{_MONTH}\b(?!\s+\d)", re.I)),
]


@dataclass(frozen=True)
class Window:
    """A half-open interval of valid time, or a month of any year (``month`` set, no bounds)."""

    start: dt.datetime | None = None
    end: dt.datetime | None = None
    month: int | None = None

    def contains(self, at: dt.datetime) -> bool:
        if self.month is not None:
            return at.month == self.month
        return self.start is not None and self.end is not None and self.start <= at < self.end

    def overlaps(self, start: dt.datetime, end: dt.datetime | None) -> bool:
        """Whether the period ``[start, end)`` (open when ``end`` is None) meets the window."""
        if self.month is None:
            assert self.start is not None and self.end is not None
            return start < self.end and (end is None or end > self.start)
        if end is None or (end - start).days >= 366:
            return True
        year, month = start.year, start.month
        while _utc(year, month) < end:
            if month == self.month:
                return True
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return False


def _utc(year: int, month: int = 1, day: int = 1) -> dt.datetime:
    return dt.datetime(year, month, day, tzinfo=dt.UTC)


def _month_window(year: int, month: int) -> Window:
    end = _utc(year + 1, 1) if month == 12 else _utc(year, month + 1)
    return Window(_utc(year, month), end)


def _day_window(year: int, month: int, day: int) -> Window | None:
    try:
        start = _utc(year, month, day)
    except ValueError:
        return None
    return Window(start - _DAY_SLACK, start + dt.timedelta(days=1) + _DAY_SLACK)


def _relative(phrase: str, now: dt.datetime) -> Window:
    phrase = " ".join(phrase.casefold().split())
    today = _utc(now.year, now.month, now.day)
    if phrase == "today":
        return Window(today, today + dt.timedelta(days=1))
    if phrase == "yesterday":
        return Window(today - dt.timedelta(days=1), today)
    unit = phrase.split()[-1]
    last = not phrase.startswith("this")
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday())
        return Window(monday - dt.timedelta(days=7), monday) if last else Window(monday, monday + dt.timedelta(days=7))
    if unit == "month":
        year, month = (now.year, now.month - 1) if last else (now.year, now.month)
        if month == 0:
            year, month = year - 1, 12
        return _month_window(year, month)
    year = now.year - 1 if last else now.year
    return Window(_utc(year), _utc(year + 1))


def _window(kind: str, match: re.Match[str], now: dt.datetime) -> Window | None:
    groups = match.groupdict()
    month = _MONTHS.get((groups.get("month") or "").casefold()) or int(groups.get("m") or 0) or None
    if kind == "relative":
        return _relative(groups["rel"], now)
    if kind == "month_any_year":
        return Window(month=month)
    if kind == "last_month_name":
        named = cast(int, month)  # the pattern matched a month's name
        year = now.year if named < now.month else now.year - 1
        return _month_window(year, named)
    year = int(groups["year"])
    if kind == "year":
        return Window(_utc(year), _utc(year + 1))
    if kind == "month":
        return _month_window(year, month) if month and 1 <= month <= 12 else None
    day = int(groups.get("day") or groups.get("d") or 0)
    return _day_window(year, month or 0, day)


def query_window(text: str, now: dt.datetime) -> Window | None:
    """The most specific time window the question names, if any."""
    for kind, pattern in _PATTERNS:
        match = pattern.search(text)
        if match:
            window = _window(kind, match, now)
            if window is not None:
                return window
    return None
