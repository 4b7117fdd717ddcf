"""Time windows named by a question, read without a model.

"on 13 October, 2023", "October 13, 2023" and "2023-10-13" name a day; "in July 2023" and
"2023-07" a month; "in 2023" a year; "in June" a month of any year; "yesterday", "last week",
"last month", "last year", "this year" and "last May" are read relative to ``now``, and so are
a distance back ("a week ago", "three days ago", "a couple of months ago": that instant, give or
take a quarter of the distance, half of it for a vague count like "a few") and a span up to now
("in the past three months", "over the last 10 days"). Recall
prefers memories dated inside the window (a preference, not a filter: a question's date is often
approximate, and memories are dated by when they were said, not by when things happened).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import cast

__all__ = ["Window", "query_window", "time_words"]

_MONTHS = {name.casefold(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.casefold(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|20|21)\d\d)"
#: a day named in a question matches memories dated this close to it (either side)
_DAY_SLACK = dt.timedelta(days=1)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
            "a few": 3, "few": 3, "several": 3}
#: counts that are guesses ("a few weeks ago"): their window is twice as wide
_VAGUE = frozenset({"a couple of", "couple of", "a few", "few", "several"})
#: "a week ago" is that instant give or take this share of the distance (at least ``_DAY_SLACK``)
_AGO_SLACK = 0.25
_COUNT = (r"(?P<n>\d{1,3}|" + "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True))
          + r")")
_UNIT = r"(?P<unit>day|week|month|year)s?"
_YEARS = re.compile(r"\byears?\b", re.I)

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("day", re.compile(rf"\b{_YEAR}-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b")),
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("month", re.compile(rf"\b{_YEAR}-(?P<m>[01]\d)\b(?!-)")),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("relative", re.compile(r"\b(?P<rel>yesterday|today|(?:last|this|past)\s+(?:week|month|year))\b", re.I)),
    ("ago", re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I)),
    ("span", re.compile(rf"\b(?:past|last|previous)\s+{_COUNT}\s+{_UNIT}\b", re.I)),
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


def _back(kind: str, count: str, unit: str, now: dt.datetime) -> Window | None:
    """"three days ago" (``ago``): that instant, give or take a share of the distance; "the
    past three months" (``span``): from then to now. Whole days either way."""
    count = " ".join(count.casefold().split())
    n = int(count) if count.isdigit() else _NUMBERS.get(count, 0)
    if n <= 0:
        return None
    distance = dt.timedelta(days=n * _UNIT_DAYS[unit.casefold().rstrip("s")])
    today = _utc(now.year, now.month, now.day) + dt.timedelta(days=1)  # the end of today
    if kind == "span":
        return Window(today - distance - _DAY_SLACK, today)
    slack = max(_DAY_SLACK, distance * _AGO_SLACK * (2 if count in _VAGUE else 1))
    return Window(now - distance - slack, now - distance + slack)


def _window(kind: str, match: re.Match[str], now: dt.datetime) -> Window | None:
    groups = match.groupdict()
    if kind in ("ago", "span"):
        return _back(kind, groups["n"], groups["unit"], now)
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


def _named(text: str, now: dt.datetime) -> tuple[Window, str, str] | None:
    """The most specific window the question names, the kind of phrase and the phrase."""
    for kind, pattern in _PATTERNS:
        match = pattern.search(text)
        if match:
            window = _window(kind, match, now)
            if window is not None:
                return window, kind, match.group(0)
    return None


def query_window(text: str, now: dt.datetime) -> Window | None:
    """The most specific time window the question names, if any."""
    named = _named(text, now)
    return named[0] if named is not None else None


def time_words(text: str, now: dt.datetime) -> set[str]:
    """The words of the phrase naming the question's window when it is a distance back or a
    span up to now ("a week ago", "the past three months"), casefolded: read as the window,
    they are no words of what is asked about (a turn saying "two weeks ago" was said at its
    own date, not a week before the question). Not years ("a few years ago"): a window of
    months either side hardly dates a chat, and such a question tells a life's history in the
    words the text used."""
    named = _named(text, now)
    if named is None or named[1] not in ("ago", "span") or _YEARS.search(named[2]):
        return set()
    return {w.casefold() for w in re.findall(r"\w+", named[2])}
