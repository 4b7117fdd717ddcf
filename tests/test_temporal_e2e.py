"""Issue scenarios for the bi-temporal model, through `remember` with the offline extractor."""

from __future__ import annotations

import datetime as dt

from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli

UTC = dt.timezone.utc


def d(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_new_employer_closes_the_old_one_and_the_past_stays_queryable(kn: Kenning, clock) -> None:  # noqa: ANN001
    clock.set("2023-01-01")
    first = kn.remember("Alice works at Acme.", valid_at="2023-01-01")
    kn.remember("Alice likes jazz.", valid_at="2023-01-01")
    clock.set("2024-03-01")
    second = kn.remember("Alice started working at Globex.", valid_at="2024-03-01")

    now = kn.recall("Where does Alice work?")
    assert now.hits[0].target == "Globex" and now.hits[0].current
    acme = next(f for f in kn.timeline("Alice").facts if f.target == "Acme")
    assert second.facts_invalidated == [acme.id]
    assert acme.invalid_at == d("2024-03-01") and acme.memory_ids == first.memory_ids
    assert [h.current for h in now.hits if h.kind == "fact" and h.target == "Acme"] == [False]

    past = kn.recall("Where does Alice work?", as_of="2023-06-01")
    assert past.hits[0].target == "Acme" and past.hits[0].current

    believed = kn.recall("Where does Alice work?", known_at="2023-06-01")
    assert all(h.target != "Globex" for h in believed.hits if h.kind == "fact")
    assert believed.hits[0].target == "Acme"

    jazz = next(f for f in kn.timeline("Alice").facts if f.target.lower() == "jazz")
    assert jazz.invalid_at is None and jazz.expired_at is None


def test_multi_valued_relations_accumulate(kn: Kenning) -> None:
    kn.remember("We use PostgreSQL for storage.", valid_at="2020-01-01")
    result = kn.remember("We use Redis for caching.", valid_at="2021-01-01")
    assert result.facts_invalidated == []
    facts = kn.timeline("our team", relation="uses").facts
    assert sorted(f.target for f in facts) == ["PostgreSQL", "Redis"]
    assert all(f.invalid_at is None for f in facts)


def test_stated_ending_closes_with_the_stated_date(kn: Kenning) -> None:
    kn.remember("Alice joined Acme as CTO in 2021.", valid_at="2021-02-01")
    result = kn.remember("Alice left Acme in June 2024.", valid_at="2024-07-01")
    works = [f for f in kn.timeline("Alice", relation="works_at").facts]
    assert len(works) == 1 and works[0].id in result.facts_invalidated
    assert works[0].valid_at == d("2021-01-01") and works[0].invalid_at == d("2024-06-01")


def test_left_and_joined_on_a_date_closes_the_old_job_at_that_date(kn: Kenning, clock) -> None:  # noqa: ANN001
    clock.set("2026-01-01")
    kn.remember("Alice Novak works at Acme.", valid_at="2019-01-01")
    kn.remember("Alice Novak left Acme and joined Globex on 2024-06-01.")
    acme = next(f for f in kn.timeline("Alice Novak").facts if f.target == "Acme")
    assert acme.invalid_at == d("2024-06-01")
    hits = kn.recall("Where does Alice Novak work?", as_of="2025-01-01", search_type="facts").hits
    assert {h.target for h in hits if h.kind == "fact" and h.current} == {"Globex"}


def test_a_sentence_is_shown_with_the_timeline_of_the_fact_that_ended(kn: Kenning) -> None:
    # "is the CEO of" states ceo_of, works_at and has_role; only ceo_of closes when Carol takes over
    kn.remember("Bob Stone is the CEO of Acme.", valid_at="2019-03-04")
    kn.remember("Carol Diaz is the CEO of Acme since July 2023.", valid_at="2023-07-01")
    hits = [h for h in kn.recall("Who is the CEO of Acme?", search_type="facts", top_k=20).hits if h.kind == "fact"]
    bob = [h for h in hits if h.text == "Bob Stone is the CEO of Acme."]
    assert len(bob) == 1 and bob[0].relation == "ceo_of"
    assert (bob[0].current, bob[0].invalid_at) == (False, d("2023-07-01"))
    assert [h.source for h in hits if h.current and "CEO" in h.text] == ["Carol Diaz"]


def test_an_implied_fact_has_its_own_text(kn: Kenning) -> None:
    # "is the CEO of" says ceo_of (and has_role); works_at is implied, so it gets its own words:
    # once Carol takes over, Bob still works at Acme as far as anyone said, but is not its CEO.
    kn.remember("Bob Stone is the CEO of Acme.", valid_at="2019-03-04")
    kn.remember("Carol Diaz is the CEO of Acme since July 2023.", valid_at="2023-07-01")
    for search_type in ("hybrid", "facts"):
        hits = kn.recall("Where does Bob Stone work?", search_type=search_type).hits
        for hit in (h for h in hits if h.kind == "fact"):
            assert ("CEO" in hit.text) == (hit.relation in ("ceo_of", "has_role")), (search_type, hit)
            assert not (hit.current and hit.text == "Bob Stone is the CEO of Acme."), (search_type, hit)
        bob = [h for h in hits if h.kind == "fact" and h.source == "Bob Stone" and h.current]
        assert [h.text for h in bob] == ["Bob Stone works at Acme."], (search_type, hits)


def test_demo_names_one_current_ceo() -> None:
    result = CliRunner().invoke(cli, ["demo"])
    assert result.exit_code == 0, result.output
    answer = result.output.split("? Who is the CEO of Acme?")[1].split("\n?")[0]
    current = [line for line in answer.splitlines() if "[fact]" in line and "CEO" in line and "…)" in line
               and "[history]" not in line]
    assert len(current) == 1 and "Carol Diaz" in current[0], answer


def test_history_is_append_only(kn: Kenning, clock) -> None:  # noqa: ANN001
    kn.remember("Bob lives in Paris.", valid_at="2020-01-01")
    before = {f.id: f for f in kn.timeline("Bob").facts}
    clock.advance(days=1)
    kn.remember("Bob moved to Berlin in 2022.", valid_at="2022-05-01")
    after = {f.id: f for f in kn.timeline("Bob").facts}
    assert set(before) < set(after)
    for fact_id, old in before.items():
        new = after[fact_id]
        unchanged = {"invalid_at", "expired_at", "superseded_by"}
        assert old.model_dump(exclude=unchanged | {"memory_ids"}) == new.model_dump(exclude=unchanged | {"memory_ids"})


def test_cli_as_of_and_timeline(db_path: str) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db_path, "remember", "Alice works at Acme.", "--valid-at", "2023-01-01"]).exit_code == 0
    assert runner.invoke(cli, ["--db", db_path, "remember", "Alice started working at Globex.",
                               "--valid-at", "2024-03-01"]).exit_code == 0
    past = runner.invoke(cli, ["--db", db_path, "recall", "Where does Alice work?", "--as-of", "2023-06-01", "-k", "1"])
    assert past.exit_code == 0 and "Acme" in past.output and "Globex" not in past.output
    line = runner.invoke(cli, ["--db", db_path, "timeline", "Alice"])
    assert line.exit_code == 0
    assert line.output.index("Acme") < line.output.index("Globex") and "superseded by" in line.output
    bad = runner.invoke(cli, ["--db", db_path, "recall", "x", "--as-of", "someday maybe"])
    assert bad.exit_code == 1 and "error:" in bad.output
