"""Pins racing a real ``prune``: other processes pin memories while one prunes them all, on both
stores. A pin that returned (acknowledged) must never be deleted: prune re-decides each page on
rows it holds locked, so a pin either lands first (and the memory stays) or waits and finds the
memory gone (NotFoundError, not acknowledged)."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import random

import pytest

from kenning import Kenning, NotFoundError

UTC = dt.timezone.utc
START = dt.datetime(2024, 1, 1, tzinfo=UTC)
PINNERS = 4


def _later() -> dt.datetime:
    return START + dt.timedelta(days=30)


def _pinner(url: str, ids: list[str], barrier, out) -> None:  # noqa: ANN001
    acknowledged, refused, errors = [], 0, []
    try:
        with Kenning(url, clock=_later) as kn:
            barrier.wait(timeout=120)
            for memory_id in ids:
                try:
                    kn.pin(memory_id, reason="keep")
                except NotFoundError:
                    refused += 1  # pruned before the pin: not acknowledged
                else:
                    acknowledged.append(memory_id)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        errors.append(repr(exc))
    out.put((acknowledged, refused, errors))


def _orders(ids: list[str]) -> list[list[str]]:
    """What each pinner pins, in order: two pin every memory in random orders (pins land on
    every page while it is deleted); two share the memories newest first, meeting the prune
    (which deletes the oldest first) somewhere in the middle, so that many pins are made."""
    shuffled = [random.Random(seed).sample(ids, len(ids)) for seed in range(2)]
    newest = ids[::-1]
    return [*shuffled, newest[0::2], newest[1::2]]


def race(url: str, memories: int, dataset: str = "main") -> tuple[int, int, int]:
    """(acknowledged pins, pins lost, memories pruned) of one race over ``dataset``."""
    with Kenning(url, clock=lambda: START) as kn:
        ids = kn.remember([f"Note {i}: item {i} is stored in box {i % 97}." for i in range(memories)],
                          dataset=dataset).memory_ids
    assert len(ids) == memories
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PINNERS + 1), ctx.Queue()
    procs = [ctx.Process(target=_pinner, args=(url, order, barrier, out)) for order in _orders(ids)]
    for p in procs:
        p.start()
    with Kenning(url, clock=_later) as kn:
        barrier.wait(timeout=120)
        pruned = kn.prune(dataset=dataset, max_age_days=7, dry_run=False).pruned
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * PINNERS
        assert [e for _, _, errors in results for e in errors] == []
        acknowledged = {i for ack, _, _ in results for i in ack}
        kept = {m.id: m for m in kn._engine.store.get_memories(sorted(acknowledged))}
        lost = [i for i in acknowledged if i not in kept or not kept[i].pinned]
        assert pruned + len(kept) == memories  # every memory was either pruned or kept pinned
    return len(acknowledged), len(lost), pruned


@pytest.mark.timeout(900)
def test_no_acknowledged_pin_is_pruned(store_url: str) -> None:
    # a race where every pin landed first (or the prune finished first) proves nothing: a loaded
    # machine can order them so, and then the race runs again on a new dataset, up to 3 times
    for attempt in range(3):
        acknowledged, lost, pruned = race(store_url, 600, dataset=f"race{attempt}")
        assert lost == 0, f"{lost} of {acknowledged} acknowledged pins pruned"
        if acknowledged > 0 and pruned > 0:
            break
    assert acknowledged > 0 and pruned > 0  # the pins really raced the prune


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_no_acknowledged_pin_is_pruned_at_scale(store_url: str) -> None:
    """Races (a fresh store of the backend each) until at least 1,000 pins were acknowledged."""
    from tests.pg import pg_url

    acknowledged = lost = pruned = races = 0
    url = store_url
    while acknowledged < 1000 and races < 20:
        got = race(url, 2000)
        acknowledged, lost, pruned, races = acknowledged + got[0], lost + got[1], pruned + got[2], races + 1
        url = pg_url() if url.startswith("postgresql") else url.replace(".db", f"{races}.db")
    print(f"pins racing prune: {lost} lost of {acknowledged} acknowledged ({pruned} pruned, {races} races)")
    assert acknowledged >= 1000 and pruned > 0
    assert lost == 0, f"{lost} of {acknowledged} acknowledged pins pruned"
