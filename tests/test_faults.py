"""Fault injection at a small size: kill -9 of writers and of ``cognify``, two processes on one
SQLite file, PostgreSQL lock contention. Each test states the fault and what must hold after it.
"""

from __future__ import annotations

import os
import re
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
    """A write of recall's access counts (buffered, then flushed) that hits a lock timeout fails
    with a StoreError; the connection it ran on is replaced, so every later recall works (it
    used to raise psycopg's 'prepared statement does not exist' forever)."""
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
            kn._engine.store.flush_access()  # the counts are buffered: written here, if not by the recall
        other.rollback()
        for _ in range(3):
            assert kn.recall("Alice Acme").hits
        assert "lock timeout" in caught.value.message and "memories" not in caught.value.message


@pg
def test_forget_remember_and_recall_in_parallel_never_deadlock() -> None:
    """Threads remember, forget and recall one dataset over and over: no call raises (writers
    take the dataset lock before any row; recall counts accesses under it, shared)."""
    url = _pg_url()
    errors: list[str] = []
    with Kenning(url, pool_size=6) as kn:
        stop = time.monotonic() + 4

        def loop(call) -> None:  # noqa: ANN001
            while time.monotonic() < stop:
                try:
                    call()
                except Exception as exc:  # noqa: BLE001 - collected and asserted below
                    errors.append(repr(exc))

        calls = [lambda: kn.remember(_TEXTS), lambda: kn.forget(dataset="main"),
                 *[lambda: kn.recall("Person3 Company1 Topic2 works likes", top_k=30)] * 2]
        threads = [threading.Thread(target=loop, args=(call,)) for call in calls]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


@pg
def test_a_deadlock_victim_is_retried_and_internals_stay_hidden() -> None:
    """A write transaction the server aborts to break a deadlock is run again by
    ``Store.atomic``; the error a caller would see names no pid and no relation."""
    from kenning.store.postgres.store import _store_error

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


# -- kill -9 -------------------------------------------------------------------------------------
_CHILD = """
import json, sys
from kenning import Kenning
url, base_url, verb, texts = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
with Kenning(url, llm="m", llm_base_url=base_url, llm_api_key="k", llm_concurrency=1, llm_max_retries=0) as kn:
    kn.remember(texts) if verb == "remember" else kn.cognify()
"""


def _spawn(url: str, base_url: str, verb: str, texts: list[str]) -> subprocess.Popen:
    import json

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", _CHILD, url, base_url, verb, json.dumps(texts)], env=env)


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 30) -> None:  # noqa: ANN001
    """kill -9 the child once ``ready()`` holds (it is then waiting on the model)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None and time.monotonic() < deadline, "the child never got there"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _processing(kn: Kenning) -> int:
    return len(kn.list(status="processing", limit=1000))


def test_a_writer_killed_mid_remember_strands_nothing(store_url: str) -> None:
    """kill -9 while ``remember`` waits on the model: the memory stays ``processing`` under a
    dead owner. Remembering the same text processes it at once (it is not skipped), and
    ``cognify`` takes the other one over at once too (no lease to wait out)."""
    from tests.fakeopenai import FakeOpenAI

    texts = ["Alice works at Acme.", "Bob lives in Paris."]
    with FakeOpenAI(latency=60) as slow, Kenning(store_url) as kn:
        child = _spawn(store_url, slow.base_url, "remember", texts)
        _kill_when(child, lambda: len(slow.chat_requests) >= 1)
        assert _processing(kn) == 2 and not kn.recall("Acme", search_type="chunks").hits
        again = kn.remember("Alice works at Acme.")
        assert again.skipped == [] and again.errors == []
        assert kn.recall("Acme", search_type="chunks").hits
        assert kn.cognify().processed != [] and _processing(kn) == 0
        assert {m.status for m in kn.list()} == {"active"}


def test_a_killed_cognify_strands_one_small_batch(store_url: str) -> None:
    """cognify claims a few memories at a time: killed mid-way it leaves only its current batch
    ``processing``, and the next cognify processes everything at once."""
    from tests.fakeopenai import FakeOpenAI

    with Kenning(store_url) as kn:
        kn.add([f"Person{i} works at Company{i}." for i in range(12)])
    with FakeOpenAI(latency=60) as slow, Kenning(store_url) as kn:
        child = _spawn(store_url, slow.base_url, "cognify", [])
        _kill_when(child, lambda: len(slow.chat_requests) >= 1)
        stranded = _processing(kn)
        assert 0 < stranded <= 4 and kn.stats().pending == 12
        result = kn.cognify()
        assert len(result.processed) == 12 and _processing(kn) == 0


def _nothing_found(body: dict) -> dict:
    """A model that finds no entity in any document (single or grouped call)."""
    ids = re.findall(r'<document id="(\d+)"', body["messages"][-1]["content"])
    if not ids:
        return {"entities": [], "facts": []}
    return {"documents": [{"document": i, "entities": [], "facts": []} for i in ids]}


@pg
def test_parallel_postgres_workers_share_the_backlog() -> None:
    """Three cognify workers started together each process part of the backlog (one used to
    claim it all), and every memory is processed exactly once."""
    from tests.fakeopenai import FakeOpenAI

    url = _pg_url()
    with Kenning(url) as kn:
        kn.add([f"Note {i} about the weather." for i in range(24)])
    results, barrier = [], threading.Barrier(3)
    with FakeOpenAI(latency=0.05, chat_responder=_nothing_found) as fake:

        def worker() -> None:
            with Kenning(url, llm="m", llm_base_url=fake.base_url, llm_api_key="k", llm_concurrency=1) as kn:
                barrier.wait()
                results.append(kn.cognify())

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    processed = [m for r in results for m in r.processed]
    assert sorted(len(r.processed) for r in results)[0] > 0
    assert len(processed) == len(set(processed)) == 24


def test_a_live_worker_keeps_its_claim_past_the_lease(store_url: str) -> None:
    """A worker slower than the lease renews it while it works: another worker's cognify does
    not take the memory over, and the memory is processed once."""
    from tests.fakeopenai import FakeOpenAI

    with FakeOpenAI(latency=1.5, chat_responder=_nothing_found) as slow:
        with Kenning(store_url, llm="m", llm_base_url=slow.base_url, llm_api_key="k",
                     processing_timeout=0.6) as busy, Kenning(store_url, processing_timeout=0.6) as other:
            done = []
            worker = threading.Thread(target=lambda: done.append(busy.remember("Alice works at Acme.")))
            worker.start()
            while not slow.chat_requests:
                time.sleep(0.02)
            time.sleep(1.0)  # past the lease: only the heartbeat keeps the claim
            stolen = other.cognify()
            worker.join()
    assert stolen.processed == [] and done[0].errors == [] and done[0].skipped == []


# -- remember and forget racing ------------------------------------------------------------------
def test_a_memory_forgotten_while_being_remembered_is_reported_not_half_stored(store_url: str) -> None:
    """Another process forgets the dataset while ``remember`` waits on the model: remember
    returns normally, names the memory in ``errors`` as forgotten, and stores nothing for it
    (it used to fail on a foreign key, or raise KeyError)."""
    from tests.fakeopenai import FakeOpenAI

    with Kenning(store_url) as other:
        def forget_then_answer(body: dict) -> dict:
            other.forget(dataset="main")
            return _nothing_found(body)

        with FakeOpenAI(chat_responder=forget_then_answer) as fake, Kenning(
                store_url, llm="m", llm_base_url=fake.base_url, llm_api_key="k") as kn:
            result = kn.remember("Alice works at Acme.")
            [memory_id] = result.memory_ids
            assert result.errors == [f"{memory_id}: forgotten (by another process) while it was being"
                                     " processed; nothing was stored"]
            stats = kn.stats()
            assert (stats.memories, stats.chunks, stats.entities, stats.facts) == (0, 0, 0, 0)


_RACER = """
import sys, time
from kenning import Kenning
url, verb, stop = sys.argv[1], sys.argv[2], time.monotonic() + float(sys.argv[3])
problems = []
with Kenning(url) as kn:
    while time.monotonic() < stop:
        if verb == "forget":
            kn.forget(dataset="main")
            continue
        result = kn.remember([f"Person{i} works at Company{i % 3}." for i in range(6)])
        problems += [e for e in result.errors if "forgotten" not in e]
print(problems)
sys.exit(1 if problems else 0)
"""


def test_two_processes_remember_and_forget_one_sqlite_file(tmp_path) -> None:  # noqa: ANN001
    """One process remembers while another forgets the dataset over and over on one SQLite
    file: neither raises, and every memory that did not make it is reported as forgotten."""
    url = f"sqlite:///{tmp_path / 'race.db'}"
    Kenning(url).close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, url, verb, "2"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for verb in ("remember", "forget")]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    with Kenning(url) as kn:
        assert kn.stats().pending == 0


# -- forgotten text on disk ----------------------------------------------------------------------
def test_forgotten_text_leaves_no_bytes_in_the_sqlite_files(tmp_path) -> None:  # noqa: ANN001
    """After ``forget`` returns, with the store still open, no byte of the forgotten text is
    in the database, its -wal or its -shm file: not in freed pages, not in the full-text
    index's segments, not in the WAL."""
    db = tmp_path / "kn.db"
    secret = "Qwxzborp visited Vlemtrak on Tuesday with Zyglofant."
    words = [b"qwxzborp", b"vlemtrak", b"zyglofant"]
    with Kenning(str(db)) as kn:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris with Carol."])
        [secret_id] = kn.remember(secret).memory_ids
        kn.remember("Dana knows Erin.")
        assert any(w in _file_bytes(db) for w in words)
        kn.forget(secret_id)
        data = _file_bytes(db)
        assert [w for w in words if w in data] == []
        assert kn.recall("Alice Acme").hits  # the rest is intact and searchable
        [gone] = kn.remember("Frank met Qwxzborp.").memory_ids
        kn.forget(dataset="main")
        assert b"qwxzborp" not in _file_bytes(db) and b"frank" not in _file_bytes(db)


def _file_bytes(db) -> bytes:  # noqa: ANN001
    """The database file and its -wal and -shm companions, lower-cased."""
    parts = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    return b"".join(p.read_bytes() for p in parts if p.exists()).lower()
