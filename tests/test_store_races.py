"""Writes racing each other on both stores, with real threads: ``update`` racing ``delete`` ends in
a typed error or a success, never a raw database error; and the small typed errors of the
lifecycle verbs (``forget`` of an unknown dataset, ``update`` with nothing to change)."""

from __future__ import annotations

import threading

import pytest

from kenning import Kenning, NotFoundError, ValidationError

TRIALS = 25


def _both(first, second) -> list[BaseException | None]:  # noqa: ANN001
    """Run two calls at the same moment on two threads; what each raised (None: it returned)."""
    barrier = threading.Barrier(2)
    outcome: list[BaseException | None] = [None, None]

    def run(slot: int, call) -> None:  # noqa: ANN001
        barrier.wait(timeout=30)
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            outcome[slot] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outcome


@pytest.mark.timeout(300)
def test_update_racing_delete_is_not_found_or_done(store_url: str) -> None:
    raced = 0
    with Kenning(store_url) as kn:
        for i in range(TRIALS):
            [memory_id] = kn.remember(f"Trial {i}: Alice Trial{i} works at Acme{i} in Paris.").memory_ids
            updated, deleted = _both(
                lambda: kn.update(memory_id, content=f"Trial {i}: Alice Trial{i} works at Globex{i} in Rome."),
                lambda: kn.delete(memory_id),
            )
            assert updated is None or isinstance(updated, NotFoundError), repr(updated)
            assert deleted is None or isinstance(deleted, NotFoundError), repr(deleted)
            raced += isinstance(updated, NotFoundError)
            with pytest.raises(NotFoundError):
                kn.get(memory_id)
        # nothing of the deleted memories is left behind by an update that lost the race
        stats = kn.stats()
        assert (stats.memories, stats.chunks, stats.facts) == (0, 0, 0)
    assert raced  # the update lost the race at least once: the case really happened


def test_forget_of_an_unknown_dataset_is_not_found(kn: Kenning) -> None:
    kn.remember("Alice works at Acme.")
    with pytest.raises(NotFoundError):
        kn.forget(dataset="nope")
    with pytest.raises(NotFoundError):
        kn.forget(dataset="nope", user="alice")
    assert kn.stats().memories == 1
    assert len(kn.forget(dataset="main").memory_ids) == 1
    assert kn.forget(dataset="main").memory_ids == []  # a known dataset, now empty


def test_update_with_nothing_to_change_is_invalid(kn: Kenning) -> None:
    [memory_id] = kn.remember("Alice works at Acme.").memory_ids
    before = kn.get(memory_id)
    with pytest.raises(ValidationError):
        kn.update(memory_id)
    assert kn.get(memory_id) == before
