"""The graph lane's one-hop read at scale (issue #29): each entity's facts come from an index in
the lane's order (live first, newest first), at most ``limit`` of them, so a hub's thousands of
facts are neither read nor sorted; the facts returned are still the first ``limit`` of all."""

from __future__ import annotations

import pytest

from kenning import Kenning


def _store(path: str) -> Kenning:
    kn = Kenning(path)
    for dataset in ("main", "other"):
        kn.remember([f"Person{i} Quist works at Acme Corp." for i in range(30)], dataset=dataset)
        kn.remember(["Person1 Quist lives in Paris.", "Person2 Quist lives in Paris."], dataset=dataset)
        kn.remember(["Person1 Quist moved to Lyon.", "Person1 Quist left Acme Corp."], dataset=dataset)
    return kn


def _ids(kn: Kenning, *names: str) -> list[str]:
    found = kn.store.find_entities("main", list(names))
    assert set(found) == set(names)
    return [found[name].id for name in names]


@pytest.mark.parametrize("limit", [1, 3, 12, 100])
def test_the_neighbours_are_the_first_of_all_the_entities_facts(tmp_path, limit: int) -> None:
    with _store(str(tmp_path / "g.db")) as kn:
        ids = _ids(kn, "acme corp", "person1 quist", "paris")
        marks = ",".join("?" * len(ids))
        every = kn.store._db.execute(
            f"SELECT id, expired_at IS NULL, valid_at, rowid FROM facts WHERE dataset = 'main'"
            f" AND (source_id IN ({marks}) OR target_id IN ({marks}))", ids * 2).fetchall()
        assert any(not live for _, live, _, _ in every) and len(every) > 30  # expired facts, a hub
        first = [row[0] for row in sorted(every, key=lambda row: tuple(row[1:]), reverse=True)[:limit]]
        assert [f.id for f in kn.store.neighbors("main", ids, limit)] == first
        assert kn.store.neighbors("main", [], limit) == []


def test_a_hub_is_read_through_its_index_in_order_never_sorted(tmp_path) -> None:
    """Sorting a hub's facts meant reading each of them first: 20,000 facts of an organisation
    at 1M memories, about 100 ms of a recall."""
    with _store(str(tmp_path / "g.db")) as kn:
        ids = _ids(kn, "acme corp", "person1 quist")
        statements: list[str] = []
        kn.store._db.set_trace_callback(statements.append)
        kn.store.neighbors("main", ids, 5)
        kn.store._db.set_trace_callback(None)
        plans = [[row[3] for row in kn.store._db.execute("EXPLAIN QUERY PLAN " + sql)] for sql in statements]
    walks = [plan for plan in plans if any("_time" in step for step in plan)]
    assert walks and not [step for plan in walks for step in plan if "TEMP B-TREE" in step], plans
    reads = [step for plan in plans for step in plan if step.startswith(("SEARCH facts", "SCAN facts"))]
    assert all(step.endswith(("USING INDEX facts_source_time (source_id=?)", "USING INDEX facts_target_time (target_id=?)",
                              "USING INTEGER PRIMARY KEY (rowid=?)")) for step in reads), reads  # the last: ``limit`` rows
