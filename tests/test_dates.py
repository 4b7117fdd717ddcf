"""Date parsing relative to a reference time: every supported form, and the edges."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning.errors import ValidationError
from kenning.dates import DateSpan, find_dates, parse_date, parse_user_datetime

UTC = dt.timezone.utc
REF = dt.datetime(2024, 6, 15, 10, 30, tzinfo=UTC)


def day(year: int, month: int = 1, date: int = 1) -> dt.datetime:
    return dt.datetime(year, month, date, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-01", day(2024, 3, 1)),
        ("March 1, 2024", day(2024, 3, 1)),
        ("Mar 1 2024", day(2024, 3, 1)),
        ("1 March 2024", day(2024, 3, 1)),
        ("1st of March 2024", day(2024, 3, 1)),
        ("22nd September 2020", day(2020, 9, 22)),
        ("03/01/2024", day(2024, 3, 1)),  # US order
        ("June 2024", day(2024, 6, 1)),
        ("Jun 2024", day(2024, 6, 1)),
        ("Sept. 2020", day(2020, 9, 1)),
        ("2019", day(2019)),
        ("in 2019", day(2019)),
        ("on 1 March 2024", day(2024, 3, 1)),
    ],
)
def test_absolute_dates_take_their_earliest_instant(text: str, expected: dt.datetime) -> None:
    assert parse_date(text, REF) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("last year", day(2023)),
        ("this year", day(2024)),
        ("next year", day(2025)),
        ("last month", day(2024, 5, 1)),
        ("this month", day(2024, 6, 1)),
        ("next month", day(2024, 7, 1)),
        ("last week", day(2024, 6, 3)),  # the Monday the previous week began
        ("yesterday", day(2024, 6, 14)),
        ("today", day(2024, 6, 15)),
        ("tomorrow", day(2024, 6, 16)),
        ("two years ago", day(2022, 6, 15)),
        ("3 months ago", day(2024, 3, 15)),
        ("5 days ago", day(2024, 6, 10)),
        ("a week ago", day(2024, 6, 8)),
        ("twelve months ago", day(2023, 6, 15)),
    ],
)
def test_relative_dates_resolve_against_the_reference(text: str, expected: dt.datetime) -> None:
    assert parse_date(text, REF) == expected


def test_month_without_year_is_in_the_reference_year_even_after_the_reference() -> None:
    assert parse_date("in June", REF) == day(2024, 6, 1)
    assert parse_date("in December", REF) == day(2024, 12, 1)


def test_months_ago_clamps_to_the_end_of_a_shorter_month() -> None:
    reference = dt.datetime(2024, 3, 31, tzinfo=UTC)
    assert parse_date("one month ago", reference) == day(2024, 2, 29)


def test_results_are_utc_even_for_a_naive_or_offset_reference() -> None:
    naive = dt.datetime(2024, 6, 15, 10, 30)
    offset = dt.datetime(2024, 6, 15, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert parse_date("today", naive) == day(2024, 6, 15)
    assert parse_date("today", offset) == day(2024, 6, 16)  # 23:30 -05:00 is the 16th in UTC
    assert parse_date("2019", naive).tzinfo == UTC


@pytest.mark.parametrize(
    "text", ["", "garbage", "next Tuesday-ish", "2024-02-30", "13/45/2024", "Acme", "the 5th"]
)
def test_unparseable_text_is_none(text: str) -> None:
    assert parse_date(text, REF) is None


def test_parse_date_never_raises_on_odd_input() -> None:
    assert parse_date(None, REF) is None  # type: ignore[arg-type]
    assert parse_date("9999999999-01-01", REF) is None


# find_dates


def test_since_sets_valid_at() -> None:
    span = find_dates("Alice has lived in Rome since 2019", REF)
    assert (span.valid_at, span.invalid_at) == (day(2019), None)
    assert span.strip("Alice has lived in Rome since 2019") == "Alice has lived in Rome"


@pytest.mark.parametrize(
    "sentence",
    [
        "Bob worked at Initech from 2019 to 2021",
        "Bob worked at Initech between 2019 and 2021",
        "Bob worked at Initech 2019-2021",
        "Bob worked at Initech (2019–2021)",
    ],
)
def test_ranges_set_both_ends(sentence: str) -> None:
    span = find_dates(sentence, REF)
    assert (span.valid_at, span.invalid_at) == (day(2019), day(2021))
    assert "2019" not in span.strip(sentence) and "2021" not in span.strip(sentence)


@pytest.mark.parametrize("word", ["until", "till", "through"])
def test_until_sets_invalid_at_only(word: str) -> None:
    span = find_dates(f"Alice worked at Acme {word} March 2021", REF)
    assert (span.valid_at, span.invalid_at) == (None, day(2021, 3, 1))


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Alice moved to Berlin in June 2024", day(2024, 6, 1)),
        ("We met on 1 March 2024", day(2024, 3, 1)),
        ("Alice joined Acme in 2021", day(2021)),
        ("Alice joined Acme last year", day(2023)),
        ("Two years ago Alice moved to Rome", day(2022, 6, 15)),
        ("Alice left yesterday", day(2024, 6, 14)),
        ("The launch was on 2024-03-01", day(2024, 3, 1)),
    ],
)
def test_points_set_valid_at(sentence: str, expected: dt.datetime) -> None:
    assert find_dates(sentence, REF).valid_at == expected


def test_strip_removes_date_phrases_for_names() -> None:
    sentence = "In 2021, Alice joined Acme as CTO"
    assert find_dates(sentence, REF).strip(sentence) == ", Alice joined Acme as CTO"


def test_invalid_at_not_after_valid_at_is_dropped() -> None:
    backwards = find_dates("from 2021 to 2019", REF)
    assert (backwards.valid_at, backwards.invalid_at) == (day(2021), None)
    same = find_dates("from June 2020 to June 2020", REF)
    assert (same.valid_at, same.invalid_at) == (day(2020, 6, 1), None)


@pytest.mark.parametrize(
    "sentence",
    ["Acme has 2000 employees", "Alice may join Acme", "Alice lives in Paris", "nothing here", ""],
)
def test_sentences_without_dates_yield_nothing(sentence: str) -> None:
    assert find_dates(sentence, REF) == DateSpan()


# parse_user_datetime


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-01", day(2024, 3, 1)),
        ("2024-03-01T12:00:00Z", dt.datetime(2024, 3, 1, 12, tzinfo=UTC)),
        ("2024-03-01T12:00:00+02:00", dt.datetime(2024, 3, 1, 10, tzinfo=UTC)),
        ("2024-03-01 12:00", dt.datetime(2024, 3, 1, 12, tzinfo=UTC)),
        ("  June 2024 ", day(2024, 6, 1)),
        ("2019", day(2019)),
        ("last year", day(2023)),
        ("3 days ago", day(2024, 6, 12)),
        ("now", REF),
    ],
)
def test_user_datetimes(text: str, expected: dt.datetime) -> None:
    assert parse_user_datetime(text, now=REF) == expected


def test_user_datetime_passes_datetimes_through_as_utc() -> None:
    assert parse_user_datetime(dt.datetime(2024, 1, 1)) == day(2024)


@pytest.mark.parametrize("text", ["", "   ", "soonish", "2024-13-01", "yesterday-ish"])
def test_user_datetime_garbage_raises_validation_error(text: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_user_datetime(text, now=REF)
    assert "2024-03-01" in info.value.message  # the message shows an accepted form


def test_user_datetime_relative_default_is_now() -> None:
    before = dt.datetime.now(UTC)
    parsed = parse_user_datetime("today")
    assert parsed.date() in {before.date(), dt.datetime.now(UTC).date()}


def _test_strings() -> list[str]:
    """Every string constant of the tests and the fixtures' texts: sentences with and without dates."""
    import ast
    import json
    from pathlib import Path

    here = Path(__file__).resolve().parent
    texts: list[str] = []
    for path in sorted(here.glob("test_*.py")):
        texts += [node.value for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    for path in sorted(p for p in (here / "fixtures").rglob("*") if p.suffix in (".json", ".jsonl")):
        for line in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            stack = [json.loads(line)]
            while stack:
                value = stack.pop()
                if isinstance(value, str):
                    texts.append(value)
                elif isinstance(value, dict):
                    stack += value.values()
                elif isinstance(value, list):
                    stack += value
    return texts


@pytest.mark.parametrize("sentence", [
    "this week", "THIS WEEK I moved", "last  year", "the past month", "next week's plan", "3 days ago",
    "a year ago", "two Weeks AGO", "2024-06-01", "on 6/1/2024", "x 2024-1-1", "in June", "on Sept. 5",
    "since 1999", "2019-2021", "from 2019 to 2021", "2019–2021", "until Dec", "yesterday", "Today!",
    "in mid-2020", "May 5", "5th of may", "jan_1 2024", "(1999)", "Déjà vu in June 2020", "ſince 2019",
])
def test_the_gate_before_the_phrases_never_drops_a_date(sentence: str) -> None:
    from kenning.dates import _find_dates, _may_hold_date

    assert find_dates(sentence, REF) == _find_dates(sentence, REF)
    assert _may_hold_date(sentence) or not _find_dates(sentence, REF).spans


def test_the_gate_reads_what_the_phrases_read_on_every_test_string() -> None:
    from kenning.dates import _find_dates, _may_hold_date

    texts = [t for t in _test_strings() if len(t) < 5000]
    for text in texts:
        assert find_dates(text, REF) == _find_dates(text, REF), text
    # and it does skip: text without a month, a year, "ago" or a calendar-relative pair
    for text in ("this is it", "I can go", "call 555 01 99", "the past is past", "next to the 3 cups"):
        assert not _may_hold_date(text), text
    assert sum(not _may_hold_date(t) for t in texts) > len(texts) / 2
