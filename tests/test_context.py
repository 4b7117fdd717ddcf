"""The context block (kenning.search.context): dated facts, no closed fact shown as current,
recent messages, evidence, all within the token budget."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning.models import Entity, Fact, Hit, Memory
from kenning.pipeline.chunk import count_tokens
from kenning.pipeline.instructions import HEADER
from kenning.search.context import fact_is_current, render_context

UTC = dt.timezone.utc
NOW = dt.datetime(2024, 6, 1, tzinfo=UTC)


def _at(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(day).replace(tzinfo=UTC)


def _fact(fid: str, text: str, valid: str, invalid: str | None = None, expired: str | None = None) -> Fact:
    source, relation, target = text.split(" ", 2)
    return Fact(id=fid, dataset="main", source_id="e1", source=source, relation=relation, target_id="e2",
                target=target, description=text, valid_at=_at(valid), invalid_at=invalid and _at(invalid),
                created_at=_at(valid), expired_at=expired and _at(expired))


def _message(n: int, speaker: str, text: str) -> Memory:
    at = NOW - dt.timedelta(minutes=10 - n)
    return Memory(id=f"m{n}", dataset="main", kind="message", content=text, content_hash=f"h{n}", valid_at=at,
                  status="active", created_at=at, updated_at=at, role="user", speaker=speaker, session="s",
                  position=n)


LYON = _fact("f1", "Alice lives_in Lyon", "2020-01-01", invalid="2024-02-01", expired="2024-02-02")
PARIS = _fact("f2", "Alice lives_in Paris", "2024-02-01")
ACME = _fact("f3", "Alice works_at Acme", "2021-05-01")
GLOBEX = _fact("f4", "Alice works_at Globex", "2024-09-01")  # begins after as_of
ALICE = Entity(id="e1", dataset="main", name="Alice", type="person", description="a customer",
               created_at=_at("2020-01-01"))


def test_current_facts_carry_their_dates_and_closed_ones_are_history() -> None:
    ctx = render_context(as_of=NOW, max_tokens=1500, facts=[LYON, PARIS, ACME, GLOBEX], entities=[ALICE])
    assert [f.id for f in ctx.facts] == ["f2", "f3"]
    assert [f.id for f in ctx.history] == ["f1", "f4"]
    current, history = ctx.text.split("# History")
    assert "- “Alice lives_in Paris” (since 2024-02-01)" in current
    assert "Lyon" not in current and "Globex" not in current
    assert "- “Alice lives_in Lyon” (2020-01-01 to 2024-02-01)" in history
    assert "- “Alice works_at Globex” (from 2024-09-01, not begun yet)" in history
    assert "- Alice (person)" in ctx.text.splitlines()
    assert "a customer" not in ctx.text  # an entity's description is undated: not shown
    assert ctx.tokens == count_tokens(ctx.text) and ctx.omitted == 0


def test_a_plan_holds_as_a_plan_not_as_the_state_it_names() -> None:
    # "I'm thinking of moving to Toronto": the plan is current, Toronto is not where Alice lives
    plan = _fact("f6", "Alice plans Toronto", "2024-03-01")
    ctx = render_context(as_of=NOW, max_tokens=1500, facts=[PARIS, plan])
    assert [f.id for f in ctx.facts] == ["f2"] and [f.id for f in ctx.plans] == ["f6"]
    facts, plans = ctx.text.split("# Plans")
    assert "Toronto" not in facts and "- “Alice plans Toronto” (since 2024-03-01)" in plans


def test_a_fact_closed_by_kenning_is_not_current_even_without_an_end_date() -> None:
    retracted = _fact("f5", "Alice likes tea", "2023-01-01", expired="2024-03-01")
    assert not fact_is_current(retracted, NOW)
    assert fact_is_current(retracted, _at("2024-02-01"))  # before kenning closed it
    ctx = render_context(as_of=NOW, max_tokens=500, facts=[retracted])
    assert ctx.facts == [] and "# Facts valid now" not in ctx.text


def test_messages_are_written_oldest_first_and_the_latest_survive_a_small_budget() -> None:
    turns = [_message(n, "Alice" if n % 2 else "Ken", f"turn number {n} about the trip") for n in range(6)]
    whole = render_context(as_of=NOW, max_tokens=1500, messages=turns)
    lines = whole.text.splitlines()
    assert lines[0] == HEADER  # what follows is recalled data, quoted (pipeline/instructions.py)
    assert lines[2] == "# Recent messages" and lines[3].endswith("Ken: “turn number 0 about the trip”")
    assert lines[-1] == "[2024-05-31 23:55] Alice: “turn number 5 about the trip”"
    small = render_context(as_of=NOW, max_tokens=40, messages=turns)
    assert [m.id for m in small.messages] == ["m4", "m5"][-len(small.messages):]
    assert small.messages and small.messages[-1].id == "m5" and small.omitted == 6 - len(small.messages)
    assert small.tokens <= 40


def test_evidence_says_whether_a_recalled_fact_still_holds() -> None:
    old = Hit(kind="fact", id="f1", text="Alice lives in Lyon", score=1.0, current=False,
              valid_at=_at("2020-01-01"), invalid_at=_at("2024-02-01"))
    new = Hit(kind="fact", id="f2", text="Alice lives in Paris", score=0.9, valid_at=_at("2024-02-01"))
    passage = Hit(kind="chunk", id="c1", text="We talked about\nthe move.", score=0.5, valid_at=_at("2024-02-03"))
    ctx = render_context(as_of=NOW, max_tokens=500, evidence=[old, new, passage])
    assert "- “Alice lives in Lyon” (not valid now: 2020-01-01 to 2024-02-01)" in ctx.text
    assert "- “Alice lives in Paris” (since 2024-02-01)" in ctx.text
    assert "- “We talked about the move.” (2024-02-03)" in ctx.text


@pytest.mark.parametrize("budget", [0, 5, 12, 25, 60, 120, 400])
def test_the_text_never_exceeds_the_budget_and_current_facts_come_first(budget: int) -> None:
    turns = [_message(n, "Alice", "a long message " * 8) for n in range(4)]
    evidence = [Hit(kind="memory", id="x", text="evidence text " * 30, score=1.0)]
    ctx = render_context(as_of=NOW, max_tokens=budget, facts=[PARIS, LYON, ACME], entities=[ALICE],
                         messages=turns, evidence=evidence)
    assert count_tokens(ctx.text) == ctx.tokens <= budget
    shown = len(ctx.facts) + len(ctx.history) + len(ctx.entities) + len(ctx.messages) + len(ctx.evidence)
    assert shown + ctx.omitted == 3 + 1 + 4 + 1
    if budget >= render_context(as_of=NOW, max_tokens=10_000, facts=[PARIS, ACME]).tokens:
        assert len(ctx.facts) == 2  # nothing of lower priority displaces a current fact that fits
    if budget == 0:
        assert ctx.text == "" and ctx.omitted == 9
