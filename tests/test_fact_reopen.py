"""Deleting (or rewriting) a memory reopens the facts its facts had closed, re-decided against
every later fact of the same relation that remains: never two open values of a single-valued
relation. The middle of a chain by hand, then random remember/update/delete sequences, on both
stores."""

from __future__ import annotations

import random

import pytest

from kenning import Kenning, NotFoundError

PEOPLE = ["Alice", "Bruno"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli"]


def _works_at(kn: Kenning, person: str) -> list[tuple[str, int, int | None, bool]]:
    """(employer, start year, end year, open) of the person's works_at facts, by start."""
    facts = [f for f in kn.timeline(person).facts if f.relation == "works_at" and f.source == person]
    return sorted((f.target, f.valid_at.year, f.invalid_at.year if f.invalid_at else None,
                   f.invalid_at is None and f.expired_at is None) for f in facts)


def _open(kn: Kenning, person: str) -> list[str]:  # the employers open now
    return [target for target, _, _, is_open in _works_at(kn, person) if is_open]


def test_deleting_the_middle_fact_closes_the_first_at_the_last(kn: Kenning) -> None:
    ids = {org: kn.remember(f"In {year}, Alice joined {org}.").memory_ids[0]
           for org, year in (("Acme", 2020), ("Globex", 2021), ("Initech", 2022))}
    kn.delete(ids["Globex"])
    assert _works_at(kn, "Alice") == [("Acme", 2020, 2022, False), ("Initech", 2022, None, True)]
    current = [h for h in kn.recall("Where does Alice work?", search_type="facts").hits if h.current]
    assert [h.text for h in current if "Acme" in h.text] == []
    kn.delete(ids["Initech"])  # now nothing later remains: Acme is current again
    assert _works_at(kn, "Alice") == [("Acme", 2020, None, True)]


def test_rewriting_the_middle_memory_keeps_one_open_value(kn: Kenning) -> None:
    ids = {org: kn.remember(f"In {year}, Alice joined {org}.").memory_ids[0]
           for org, year in (("Acme", 2020), ("Globex", 2021), ("Initech", 2022))}
    kn.update(ids["Globex"], content="Alice likes chess.")
    assert _open(kn, "Alice") == ["Initech"]


def _statement(rng: random.Random) -> str:
    person = PEOPLE[0] if rng.random() < 0.8 else PEOPLE[1]
    return f"In {rng.randint(2001, 2024)}, {person} joined {rng.choice(ORGS)}."


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", range(6))
def test_random_sequences_never_leave_two_open_values(store_url: str, seed: int) -> None:
    rng = random.Random(seed)
    done: list[str] = []
    with Kenning(store_url) as kn:
        live: list[str] = []
        for step in range(14):
            op = rng.choice(["remember", "remember", "update", "delete"]) if live else "remember"
            if op == "remember":
                text = _statement(rng)
                result = kn.remember(text)
                live += [i for i in result.memory_ids if i not in live]
                done.append(f"remember {text!r}")
            elif op == "update":
                memory_id, text = rng.choice(live), _statement(rng)
                if any(m.content == text for m in kn.list(limit=100)):
                    continue
                kn.update(memory_id, content=text)
                done.append(f"update #{live.index(memory_id)} -> {text!r}")
            else:
                memory_id = rng.choice(live)
                kn.delete(memory_id)
                done.append(f"delete #{live.index(memory_id)}")
                live.remove(memory_id)
            for person in PEOPLE:
                try:
                    facts = _works_at(kn, person)
                except NotFoundError:  # no memory names the person (yet, or any more)
                    continue
                assert sum(is_open for *_, is_open in facts) <= 1, (person, facts, done)


def test_deleting_the_middle_change_statement_keeps_one_current_preference(kn: Kenning) -> None:
    """A change statement closes a fact of another relation of the same family ("likes" tea,
    then "prefers" coffee): its successor is found by the deleted fact's relation."""
    ids = [kn.remember(text, valid_at=f"{year}-01-01").memory_ids[0] for text, year in (
        ("Alice loves tea.", 2020), ("Alice switched from tea to coffee.", 2021),
        ("Alice switched from coffee to green juice.", 2022))]
    kn.delete(ids[1])
    facts = sorted((f.target, f.valid_at.year, f.invalid_at.year if f.invalid_at else None)
                   for f in kn.timeline("Alice").facts)
    assert facts == [("green juice", 2022, None), ("tea", 2020, 2022)]
