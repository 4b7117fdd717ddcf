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


def test_over_http_forget_of_an_unknown_dataset_is_404_and_update_racing_delete_never_500(tmp_path) -> None:  # noqa: ANN001
    """Two servers on one SQLite file: an update sent to one while the other deletes the
    memory answers 200 or 404, never a 500."""
    import httpx

    from tests.server_util import running

    path = str(tmp_path / "two.db")
    with running(path, auth=False) as (_, first), running(path, auth=False) as (_, second):
        with httpx.Client(base_url=first, timeout=60) as a, httpx.Client(base_url=second, timeout=60) as b:
            resp = a.post("/v1/forget", json={"dataset": "nope"})
            assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found", resp.text
            statuses = set()
            for i in range(12):
                memory_id = a.post("/v1/remember", json={"content": f"Run {i}: Bea Run{i} works at Hooli{i}."}
                                   ).json()["memory_ids"][0]
                got: list = [None, None]

                def update(i=i, memory_id=memory_id) -> None:  # noqa: ANN001
                    got[0] = a.patch(f"/v1/memories/{memory_id}", json={"content": f"Run {i}: Bea works at Initech{i}."})

                def delete(memory_id=memory_id) -> None:  # noqa: ANN001
                    got[1] = b.delete(f"/v1/memories/{memory_id}")

                _both(update, delete)
                statuses |= {got[0].status_code, got[1].status_code}
                assert got[0].status_code in (200, 404), got[0].text
                assert got[1].status_code in (200, 404), got[1].text
    assert statuses <= {200, 404}
