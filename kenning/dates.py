"""Dates in text, resolved against a reference time. Pure, stdlib only.

Three entry points:

- ``parse_date(text, reference)``: one date expression -> its earliest instant (UTC), or None.
- ``find_dates(sentence, reference)``: the validity period a sentence states ("since 2019",
  "from 2019 to 2021", "in June 2024", "last year"...) and the character spans it consumed, so
  the offline extractor can cut date phrases out before it reads names.
- ``parse_user_datetime(value, now=)``: a date given by a user on any surface (Python, CLI, HTTP,
  MCP), relative to the engine's clock; raises ``ValidationError`` naming ``ACCEPTED_FORMS``
  (``parse_when`` is the same, letting None through).
- ``absolute_date(value)``: a date that names its year, as a model writes one; anything else
  (a phrase relative to a clock, junk) is None.

Conventions (docs/architecture.md, "Time"):

- Partial dates take their earliest instant: "June 2024" is 2024-06-01T00:00Z, "2019" is
  2019-01-01T00:00Z, "last week" is the Monday that week began. "from 2019 to 2021" therefore
  ends at 2021-01-01: the earliest reading, consistently.
- A month without a year ("in June") is that month of the reference year, even when it lies
  after the reference: the text rarely says which year, and guessing the previous one would be
  wrong as often as right.
- "N units ago" keeps the day: "two years ago" from 2024-06-15T10:00 is 2022-06-15T00:00
  (months shift by calendar month, clamped to the month's last day).
- Slash dates are US order: "03/01/2024" is March 1.
- Everything returned is timezone-aware UTC; a naive reference is taken as UTC.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
from dataclasses import dataclass

from ._time import UTC, as_utc, utcnow
from .errors import ValidationError

__all__ = ["ACCEPTED_FORMS", "DateSpan", "absolute_date", "find_dates", "parse_date", "parse_user_datetime", "parse_when"]

_MONTH_NUMBERS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

# Building blocks. Every token is bounded by \b, so a scan never starts inside a word.
_TOKENS = {
    "MONTH": (
        r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
        r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
    ),
    "DAY": r"\b(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?\b",
    "YEAR": r"\b(?:1[6-9]|2[01])\d\d\b",
    "NUM": r"\b(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b",
}


def _expand(template: str) -> str:
    for token, pattern in _TOKENS.items():
        template = template.replace(token, pattern)
    return template


# One date expression per form, most specific first: in an alternation the first form that
# matches wins, so "June 5, 2024" must be tried before "June 5" and "June".
_FORMS: list[tuple[str, str]] = [
    ("iso", r"\b(?P<y>\d{4})-(?P<m>\d\d?)-(?P<d>\d\d?)\b"),
    ("us", r"\b(?P<m>\d\d?)/(?P<d>\d\d?)/(?P<y>\d{4})\b"),
    ("mdy", _expand(r"(?P<mon>MONTH)\s+(?P<d>DAY),?\s+(?P<y>YEAR)")),
    ("dmy", _expand(r"(?P<d>DAY)\s+(?:of\s+)?(?P<mon>MONTH),?\s+(?P<y>YEAR)")),
    ("my", _expand(r"(?P<mon>MONTH),?\s+(?:of\s+)?(?P<y>YEAR)")),
    ("md", _expand(r"(?P<mon>MONTH)\s+(?P<d>DAY)")),
    ("dm", _expand(r"(?P<d>DAY)\s+(?:of\s+)?(?P<mon>MONTH)")),
    ("rel", r"\b(?P<which>last|this|next|past)\s+(?P<unit>year|month|week)\b"),
    ("ago", _expand(r"(?P<n>NUM)\s+(?P<unit>day|week|month|year)s?\s+ago\b")),
    ("word", r"\b(?P<word>yesterday|today|tomorrow)\b"),
    ("y", _expand(r"(?P<y>YEAR)")),
    ("mon", _expand(r"(?P<mon>MONTH)")),
]
# Forms that read as a date on their own; the others ("2019", "June", "June 5") only count
# after a preposition, or "Acme has 2000 employees" and "Alice may join" would be dates.
_STRONG = {"iso", "us", "mdy", "dmy", "my", "rel", "ago", "word"}


# The patterns are compiled on first use, not at import: compiling them all costs ~50 ms, and
# a process that reads no dates (``kenning --help``, most recalls) never needs them.
@functools.cache
def _full() -> dict[str, re.Pattern[str]]:
    return {kind: re.compile(pattern, re.IGNORECASE) for kind, pattern in _FORMS}


_NOW = re.compile(r"now|right\s+now", re.IGNORECASE)
_LEADING_PREPOSITION = re.compile(r"(?:in|on|during|at)\s+(?:the\s+)?", re.IGNORECASE)


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


_ANY = "(?:" + "|".join(_unnamed(p) for _, p in _FORMS) + ")"
_ANY_STRONG = "(?:" + "|".join(_unnamed(p) for k, p in _FORMS if k in _STRONG) + ")"

# Phrases, scanned in this order; a later phrase may not overlap an earlier one (compiled on
# first use, as ``_full``: these alternations are the costliest patterns here).
@functools.cache
def _phrases() -> list[tuple[str, re.Pattern[str]]]:
    return [
        (
            "range",
            re.compile(
                rf"\b(?:from|between)\s+(?P<a>{_ANY})"
                rf"(?:\s+(?:to|and|until|till|through)\s+|\s*[-–—]\s*)(?P<b>{_ANY})",
                re.IGNORECASE,
            ),
        ),
        (
            "range",
            re.compile(
                _expand(r"(?:\b(?:in|from|during)\s+)?(?P<a>YEAR)\s*[-–—]\s*(?P<b>YEAR)"),
                re.IGNORECASE,
            ),
        ),
        (
            "since",
            re.compile(
                r"\b(?:since|starting(?:\s+(?:in|on|from))?|beginning(?:\s+(?:in|on))?"
                rf"|as\s+of|effective(?:\s+(?:from|on))?)\s+(?:the\s+)?(?P<a>{_ANY})",
                re.IGNORECASE,
            ),
        ),
        (
            "until",
            re.compile(
                r"\b(?:until|till|til|through|thru|up\s+(?:to|until)|ending(?:\s+(?:in|on))?)"
                rf"\s+(?:the\s+)?(?P<b>{_ANY})",
                re.IGNORECASE,
            ),
        ),
        (
            "point",
            re.compile(
                rf"\b(?:in|on|during)\s+(?:the\s+)?(?:(?:early|mid|late)[-\s]+)?(?P<a>{_ANY})",
                re.IGNORECASE,
            ),
        ),
        ("point", re.compile(rf"(?P<a>{_ANY_STRONG})", re.IGNORECASE)),
    ]


# Cheap gate: most sentences hold no date at all, and this one test is all they pay.
_HINT = re.compile(
    _expand(r"\d|MONTH|\b(?:last|this|next|past|yesterday|today|tomorrow|ago)\b"), re.IGNORECASE
)
#: ASCII text's words as bytes: a letter, digit or "_" kept (lower case), anything else a space
_WORD_BYTES = bytes(
    (b | 0x20 if chr(b).isalpha() else b) if chr(b).isalnum() or b == 0x5F else 0x20 for b in range(128)
) + b" " * 128
#: words one of which every form holds, as a whole word, but the ones made of digits and the
#: calendar-relative ones: a month's name (``MONTH``), "yesterday", "today", "tomorrow", "ago"
_DATE_WORDS = frozenset(
    w.encode() for w in (
        "jan january feb february mar march apr april may jun june jul july aug august sep sept "
        "september oct october nov november dec december yesterday today tomorrow ago"
    ).split()
)
_WHICH = frozenset({b"last", b"this", b"next", b"past"})
_NOT_DIGITS = bytes(b for b in range(256) if not 0x30 <= b <= 0x39)
_UNITS = frozenset({b"year", b"month", b"week"})


def _may_hold_date(sentence: str) -> bool:
    """False only where no form can match: in ASCII text every form holds a word of
    ``_DATE_WORDS``, or a calendar-relative pair ("last" … "week", ``rel``), or a word of
    exactly four digits (the year of ``iso``, ``us`` and ``YEAR``; a day or a count is said
    with a month or "ago"). Other text takes the broader ``_HINT`` search (case folding
    outside ASCII is not lower-casing)."""
    if not sentence.isascii():
        return _HINT.search(sentence) is not None
    spaced = sentence.encode().translate(_WORD_BYTES)
    words = set(spaced.split())
    return (not words.isdisjoint(_DATE_WORDS)
            or (not words.isdisjoint(_WHICH) and not words.isdisjoint(_UNITS))
            or (len(spaced.translate(None, _NOT_DIGITS)) >= 4 and any(len(w) == 4 and w.isdigit() for w in words)))


@dataclass(frozen=True, slots=True)
class DateSpan:
    """The validity period a sentence states, and the character spans that stated it."""

    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    spans: tuple[tuple[int, int], ...] = ()

    def strip(self, sentence: str) -> str:
        """The sentence with the date phrases cut out (whitespace left as it falls)."""
        parts, start = [], 0
        for begin, end in self.spans:
            parts.append(sentence[start:begin])
            start = end
        parts.append(sentence[start:])
        return " ".join(part.strip() for part in parts if part.strip())


def parse_date(text: str, reference: dt.datetime) -> dt.datetime | None:
    """The earliest instant ``text`` names, relative to ``reference``; None if it names none."""
    if not isinstance(text, str):
        return None
    text = " ".join(text.split())
    preposition = _LEADING_PREPOSITION.match(text)
    if preposition:
        text = text[preposition.end() :]
    reference = as_utc(reference)
    if _NOW.fullmatch(text):
        return reference
    for pattern in _full().values():
        match = pattern.fullmatch(text)
        if match:
            try:
                return _resolve(match.groupdict(), reference)
            except (ValueError, OverflowError):  # "2024-02-30", "13/45/2024": not a date
                return None
    return None


def _resolve(found: dict[str, str | None], reference: dt.datetime) -> dt.datetime:
    groups = {name: text for name, text in found.items() if text}  # the groups that matched
    if groups.get("word"):
        offset = {"yesterday": -1, "today": 0, "tomorrow": 1}[groups["word"].lower()]
        return _midnight(reference.date() + dt.timedelta(days=offset))
    if groups.get("which"):
        return _calendar_relative(groups["which"].lower(), groups["unit"].lower(), reference)
    if groups.get("n"):
        count = groups["n"].lower()
        amount = int(count) if count.isdigit() else _NUMBER_WORDS[count]
        return _ago(amount, groups["unit"].lower(), reference)
    year = int(groups["y"]) if groups.get("y") else reference.year
    if groups.get("mon"):
        month = _MONTH_NUMBERS[groups["mon"][:3].lower()]
    else:
        month = int(groups["m"]) if groups.get("m") else 1
    digits = re.match(r"\d+", groups["d"]) if groups.get("d") else None
    day = int(digits.group()) if digits else 1
    return dt.datetime(year, month, day, tzinfo=UTC)


def _calendar_relative(which: str, unit: str, reference: dt.datetime) -> dt.datetime:
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[which]
    today = reference.date()
    if unit == "year":
        return dt.datetime(today.year + step, 1, 1, tzinfo=UTC)
    if unit == "month":
        first = _shift_months(today.replace(day=1), step)
        return _midnight(first)
    monday = today - dt.timedelta(days=today.weekday())
    return _midnight(monday + dt.timedelta(weeks=step))


def _ago(amount: int, unit: str, reference: dt.datetime) -> dt.datetime:
    today = reference.date()
    if unit == "day":
        return _midnight(today - dt.timedelta(days=amount))
    if unit == "week":
        return _midnight(today - dt.timedelta(weeks=amount))
    months = amount * (12 if unit == "year" else 1)
    return _midnight(_shift_months(today, -months))


def _shift_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=UTC)


def find_dates(sentence: str, reference: dt.datetime) -> DateSpan:
    """The period ``sentence`` states: "since"/points give valid_at, "until" gives invalid_at.

    The first phrase of each kind wins; later date phrases are still consumed (their spans are
    returned) so they never end up inside an entity name. An ``invalid_at`` not after
    ``valid_at`` is dropped.
    """
    if not sentence or not _may_hold_date(sentence):
        return DateSpan()
    return _find_dates(sentence, reference)


def _find_dates(sentence: str, reference: dt.datetime) -> DateSpan:
    """``find_dates`` without its gate: every phrase searched."""
    reference = as_utc(reference)
    valid_at = invalid_at = None
    spans: list[tuple[int, int]] = []
    for _kind, pattern in _phrases():
        for match in pattern.finditer(sentence):
            if any(match.start() < end and start < match.end() for start, end in spans):
                continue
            start_date = _group_date(match, "a", reference)
            end_date = _group_date(match, "b", reference)
            if start_date is None and end_date is None:
                continue
            spans.append(match.span())
            valid_at = valid_at or start_date
            invalid_at = invalid_at or end_date
    if valid_at and invalid_at and invalid_at <= valid_at:
        invalid_at = None
    return DateSpan(valid_at, invalid_at, tuple(sorted(spans)))


def _group_date(match: re.Match[str], name: str, reference: dt.datetime) -> dt.datetime | None:
    text = match.groupdict().get(name)
    return parse_date(text, reference) if text else None


#: the forms every date argument accepts, on every surface (named in errors and in the docs)
ACCEPTED_FORMS = (
    "ISO 8601 (2024-03-01, 2024-03-01T12:00:00Z, 2024-06, 2024) or a phrase such as "
    "'June 2024', 'last year', '3 days ago', 'yesterday', 'now'"
)
_PARTIAL_ISO = re.compile(r"(?P<y>\d{4})(?:-(?P<m>\d\d?))?")


def parse_user_datetime(
    value: object, *, now: dt.datetime | None = None, name: str = "date"
) -> dt.datetime:
    """The one parser of a date given by a user (Python, CLI, HTTP, MCP): a datetime or date
    (naive is UTC), ISO 8601 / RFC 3339 with or without time and zone, a partial ISO date
    ("2024-06", "2024"), or a natural phrase relative to ``now`` (the engine's clock).

    Partial dates take their earliest instant. Raises ``ValidationError`` naming ``name`` and
    the accepted forms when ``value`` is none of them or lies outside years 1-9999 in UTC.
    """
    try:
        return _user_datetime(value, now)
    except OverflowError:
        raise ValidationError(
            f"{name} {value!s:.100} is outside the supported range (years 1 to 9999 in UTC)",
            value=str(value)[:100],
        ) from None
    except ValueError:
        shown = value if isinstance(value, str) else type(value).__name__
        raise ValidationError(
            f"could not read {name} {shown!r:.100} as a date: use {ACCEPTED_FORMS}",
            value=str(shown)[:100],
        ) from None


def _user_datetime(value: object, now: dt.datetime | None) -> dt.datetime:
    if isinstance(value, (dt.datetime, dt.date)):
        return as_utc(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("not a date")
    text = value.strip()
    partial = _PARTIAL_ISO.fullmatch(text)
    if partial:
        return dt.datetime(int(partial["y"]), int(partial["m"] or 1), 1, tzinfo=UTC)
    try:
        iso = as_utc(text)
    except ValueError:
        iso = None  # not ISO 8601: try the natural forms
    if iso is not None:
        return iso
    parsed = parse_date(text, now or utcnow())
    if parsed is None:
        raise ValueError("not a date")
    return parsed


def parse_when(value: object, now: dt.datetime, name: str) -> dt.datetime | None:
    """A caller-given instant (None stays None), read by ``parse_user_datetime`` against ``now``."""
    return None if value is None else parse_user_datetime(value, now=now, name=name)


#: the forms that name a date without a reference time
_ABSOLUTE = ("iso", "us", "mdy", "dmy", "my", "y")


def absolute_date(value: object) -> dt.datetime | None:
    """A date that names its year ("2024", "2024-06", ISO 8601, "June 15, 2024", a year as a
    number), partial dates at their earliest instant; None for anything else, never an error."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        return None
    text = " ".join(value.split())
    try:
        if partial := _PARTIAL_ISO.fullmatch(text):
            return dt.datetime(int(partial["y"]), int(partial["m"] or 1), 1, tzinfo=UTC)
        return as_utc(text)
    except (ValueError, OverflowError):
        pass  # not ISO 8601: try the written forms
    match = next((m for kind in _ABSOLUTE if (m := _full()[kind].fullmatch(text))), None)
    try:
        return _resolve(match.groupdict(), dt.datetime(1, 1, 1, tzinfo=UTC)) if match else None
    except (ValueError, OverflowError):
        return None
