"""Four processes remember overlapping content into one dataset at the same moment: the store
ends up with exactly the memories, entities and facts one process would have made, with no
duplicates and nothing lost. Runs on both backends."""

from __future__ import annotations

import multiprocessing
from collections import Counter

import pytest

from kenning import Kenning

_PEOPLE = ["Alice", "Bob", "Carol", "Dana", "Evan", "Fiona", "George", "Hana", "Ivan", "Julia", "Karl", "Lena"]
_ORGS = ["Acme", "Globex", "Initech"]
#: one sentence per person; every company is named by several of them
TEXTS = [f"{p} works at {_ORGS[i % 3]}. {p} likes {['chess', 'jazz'][i % 2]}." for i, p in enumerate(_PEOPLE)]
WORKERS = 4


def _share(worker: int) -> list[str]:
    """Each worker gets half of the texts, so every text is sent by two workers."""
    return [TEXTS[(worker * 3 + i) % len(TEXTS)] for i in range(len(TEXTS) // 2)]


def _worker(url: str, texts: list[str], barrier, errors) -> None:  # noqa: ANN001
    try:
        with Kenning(url) as kn:
            barrier.wait(timeout=60)
            for text in texts:
                result = kn.remember(text)
                if result.errors:
                    errors.put(result.errors)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        errors.put(repr(exc))


def _graph(kn: Kenning) -> tuple[Counter, Counter]:
    entities: Counter = Counter()
    facts: Counter = Counter()
    for name in [*_PEOPLE, *_ORGS, "chess", "jazz"]:
        timeline = kn.timeline(name)
        entities[timeline.entity.name] += 1
        for fact in timeline.facts:
            if fact.source == name:
                facts[(fact.source, fact.relation, fact.target, fact.expired_at is None)] += 1
    return entities, facts


@pytest.mark.timeout(180)
def test_four_processes_remember_overlapping_content(store_url: str, tmp_path) -> None:  # noqa: ANN001
    ctx = multiprocessing.get_context("spawn")
    barrier, errors = ctx.Barrier(WORKERS), ctx.Queue()
    Kenning(store_url).close()  # the store exists (and is migrated) before the race starts
    procs = [ctx.Process(target=_worker, args=(store_url, _share(w), barrier, errors)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(150)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    assert errors.empty(), errors.get()

    with Kenning(f"sqlite:///{tmp_path / 'alone.db'}") as kn:
        kn.remember(TEXTS)
        expected = kn.stats(), _graph(kn)
    with Kenning(store_url) as kn:
        stats, graph = kn.stats(), _graph(kn)
        memories = kn.list(limit=100)
    assert sorted(m.content for m in memories) == sorted(TEXTS)
    assert {m.status for m in memories} == {"active"}
    assert graph == expected[1]
    assert max(graph[0].values()) == 1 and max(graph[1].values()) == 1
    assert (stats.memories, stats.chunks, stats.entities, stats.facts, stats.facts_live) == (
        len(TEXTS), expected[0].chunks, expected[0].entities, expected[0].facts, expected[0].facts_live
    )
