"""Fault injection at a small size: kill -9 of writers and of ``cognify``, two processes on one
SQLite file, PostgreSQL lock contention. Each test states the fault and what must hold after it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from kenning import Kenning
from kenning.errors import StoreError

pg = pytest.mark.postgres

_TEXTS = [f"Person{i} works at Company{i % 3}. Person{i} likes Topic{i % 4}." for i in range(24)]


def _pg_url() -> str:
    from tests.pg import pg_url

    return pg_url()


# -- PostgreSQL lock contention -----------------------------------------------------------------
@pg
def test_a_failed_statement_does_not_poison_the_pooled_connection() -> None:
    """A recall whose access-count update hits a lock timeout fails with a StoreError; the
    connection it ran on is replaced, so every later recall works (it used to raise psycopg's
    'prepared statement does not exist' forever)."""
    url = _pg_url()
    with Kenning(url, pool_size=1) as kn, psycopg.connect(url) as other:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris."])
        for _ in range(6):  # psycopg prepares a statement the fifth time it runs
            kn.recall("Alice Acme")
        with kn._engine.store._conn() as conn:
            conn.execute("SET lock_timeout = '100ms'")
        other.execute("SELECT id FROM memories FOR UPDATE")
        with pytest.raises(StoreError) as caught:
            kn.recall("Alice Acme")
        other.rollback()
        for _ in range(3):
            assert kn.recall("Alice Acme").hits
        assert "lock timeout" in caught.value.message and "memories" not in caught.value.message


@pg
def test_forget_and_recall_in_parallel_never_deadlock() -> None:
    """One thread remembers and forgets a dataset over and over while three recall it: no call
    fails (recall's access counts take the dataset lock shared, writers exclusively)."""
    url = _pg_url()
    errors: list[str] = []
    with Kenning(url, pool_size=6) as kn:
        stop = time.monotonic() + 6

        def churn() -> None:
            while time.monotonic() < stop:
                try:
                    kn.remember(_TEXTS)
                    kn.forget(dataset="main")
                except Exception as exc:  # noqa: BLE001 - collected and asserted below
                    errors.append(repr(exc))

        def recall() -> None:
            while time.monotonic() < stop:
                try:
                    kn.recall("Person3 Company1 Topic2 works likes", top_k=30)
                except Exception as exc:  # noqa: BLE001
                    errors.append(repr(exc))

        threads = [threading.Thread(target=churn), *(threading.Thread(target=recall) for _ in range(3))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


@pg
def test_a_deadlock_victim_is_retried_and_internals_stay_hidden() -> None:
    """A write transaction the server aborts to break a deadlock is run again by
    ``Store.atomic``; the error a caller would see names no pid and no relation."""
    from kenning.store.postgres import _store_error

    url = _pg_url()
    with Kenning(url) as kn:
        store = kn._engine.store
        [memory_id] = kn.remember("Alice works at Acme.").memory_ids
        runs = []

        def work(txn):  # noqa: ANN001, ANN202
            runs.append(1)
            if len(runs) == 1:
                _deadlock(url)
            txn.update_memory(memory_id, {"topic": "x"})
            return len(runs)

        assert store.atomic(work) == 2
        assert kn.get(memory_id).topic == "x"
        try:
            _deadlock(url)
        except psycopg.errors.DeadlockDetected as exc:
            error = _store_error(exc)
        assert error.details["transient"] is True
        assert "Process" not in error.message and "relation" not in error.message


def _deadlock(url: str) -> None:
    """Two sessions lock two rows in opposite orders; the loser's error is raised."""
    with psycopg.connect(url) as a, psycopg.connect(url) as b:
        a.execute("CREATE TABLE IF NOT EXISTS deadlock_probe (k int PRIMARY KEY)")
        a.execute("INSERT INTO deadlock_probe VALUES (1), (2) ON CONFLICT DO NOTHING")
        a.commit()
        a.execute("UPDATE deadlock_probe SET k = k WHERE k = 1")
        b.execute("UPDATE deadlock_probe SET k = k WHERE k = 2")
        failure: list[BaseException] = []

        def second() -> None:
            try:
                a.execute("UPDATE deadlock_probe SET k = k WHERE k = 2")
            except psycopg.Error as exc:
                failure.append(exc)

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.2)
        try:
            b.execute("UPDATE deadlock_probe SET k = k WHERE k = 1")
        except psycopg.Error as exc:
            failure.append(exc)
        t.join()
        raise failure[0]
