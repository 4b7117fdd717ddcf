"""The offline ingest's writes. Memories commit in groups (``Store.write_group``): one SQLite
transaction for many memories, each in its own savepoint. What must hold: a memory that fails
is undone alone, nothing of a group is visible before its commit, and a group undone as a whole
leaves no trace in the vector indexes. And what each fact's commit reads goes through an index
that names it, not through every fact of a busy entity."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import pytest

from kenning import Kenning
from kenning.store.base import EntityRow
from kenning.store.sqlite.store import SQLiteStore, SQLiteTxn


class _BoomTxn(SQLiteTxn):
    def insert_fact(self, row) -> None:  # noqa: ANN001
        super().insert_fact(row)  # written, then undone with the memory's savepoint
        if "Boom" in row.description:
            raise OSError("disk vanished")


class _BoomStore(SQLiteStore):
    """Fails the commit of a memory that states a fact about Boom, after its chunks, entities
    and the fact itself were written."""

    @contextmanager
    def transaction(self):  # noqa: ANN201
        with self._write() as db:
            yield _BoomTxn(self, db)


def _count(db: str, sql: str) -> int:
    raw = sqlite3.connect(db)
    try:
        return raw.execute(sql).fetchone()[0]
    finally:
        raw.close()


def test_a_memory_failing_inside_a_commit_group_is_undone_alone(tmp_path) -> None:  # noqa: ANN001
    db = str(tmp_path / "g.db")
    texts = [f"Person{i} works at Company{i}." for i in range(5)]
    texts[2] = "Boom Baker works at Blast Labs."
    with Kenning(store=_BoomStore(db)) as kn:
        result = kn.remember(texts)
        failed = result.memory_ids[2]
        assert result.errors == [f"{failed}: OSError: disk vanished"]
        assert kn.get(failed).status == "failed"
        assert {kn.get(i).status for i in result.memory_ids if i != failed} == {"active"}
    assert _count(db, f"SELECT count(*) FROM chunks WHERE memory_id = '{failed}'") == 0
    assert _count(db, "SELECT count(*) FROM chunks") == _count(db, "SELECT count(*) FROM chunks_fts") == 4
    assert _count(db, "SELECT count(*) FROM facts") == 4
    assert _count(db, "SELECT count(*) FROM entities WHERE name LIKE 'B%'") == 0


def test_a_group_commits_once_and_undoes_only_a_failed_write(tmp_path) -> None:  # noqa: ANN001
    db = str(tmp_path / "g.db")
    with Kenning(db) as kn:
        first, second = kn.add(["One note.", "Another note."])
        store = kn.store
        with store.write_group():
            store.update_memory(first, {"topic": "kept"})
            assert _count(db, "SELECT count(*) FROM memories WHERE topic = 'kept'") == 0  # not yet
            with pytest.raises(ZeroDivisionError):
                store.atomic(lambda txn: (txn.update_memory(second, {"topic": "undone"}), 1 / 0))
        assert _count(db, "SELECT count(*) FROM memories WHERE topic = 'kept'") == 1
        assert kn.get(second).topic is None


def test_a_group_undone_as_a_whole_leaves_nothing_in_the_vector_indexes(tmp_path) -> None:  # noqa: ANN001
    """Resolving the second memory of a group searches the entity index, which then holds the
    first memory's uncommitted entities, up to their log position. When the group is undone,
    later rows take those rowids and log positions again: each must be found by its vector."""
    with Kenning(str(tmp_path / "g.db")) as kn:
        with pytest.raises(RuntimeError), kn.store.write_group():
            kn.remember(["Alice Arden works at Acme Corp.", "Bob Brandt lives in Paris."])
            raise RuntimeError("interrupted")
        assert kn.stats().entities == 0
        names = [f"Person{i} Quist" for i in range(10)]
        vectors = kn._engine.embedder.embed(names)
        rows = [EntityRow(id=f"ent_{i}", dataset="main", name=n, normalized=n.lower(), type="person",
                          embedding=v, created_at=kn._engine.now()) for i, (n, v) in enumerate(zip(names, vectors))]
        kn.store.atomic(lambda txn: [txn.insert_entity(row) for row in rows])
        found = [kn.store.vector("main", "entity", v, 1)[0].id for v in vectors]
        assert found == [row.id for row in rows]


def test_the_contradiction_candidates_are_read_through_indexes_that_name_them(tmp_path) -> None:  # noqa: ANN001
    """Every part of the candidates query searches an index on all its equalities: the facts of
    one source and relation, of the same two endpoints (either way). Walking the facts of the
    target instead cost 0.5 ms a fact at 20,000 memories (a city is the target of hundreds)."""
    with Kenning(str(tmp_path / "p.db")) as kn:
        kn.remember([f"Person{i} lives in Paris." for i in range(30)])
        statements: list[str] = []
        kn.store._db.set_trace_callback(statements.append)
        kn.remember("Person1 moved to Lyon.")
        kn.store._db.set_trace_callback(None)
        [query] = [s for s in statements if "expired_at IS NULL" in s and s.startswith("SELECT")]
        plan = [row[3] for row in kn.store._db.execute("EXPLAIN QUERY PLAN " + query)]
    searches = [step for step in plan if step.startswith("SEARCH facts")]
    assert searches == ["SEARCH facts USING INDEX facts_source (source_id=? AND relation=?)",
                        "SEARCH facts USING INDEX facts_pair (source_id=? AND target_id=?)",
                        "SEARCH facts USING INDEX facts_pair (source_id=? AND target_id=?)"], plan


def test_ids_made_later_sort_later_and_never_repeat() -> None:
    """A primary key grows at its end (fewer pages written a commit); ids made in the same
    millisecond still differ."""
    import re
    import time

    from kenning.pipeline.commit import new_id

    first = new_id("mem")
    time.sleep(0.003)
    ids = [new_id("mem") for _ in range(50_000)]
    assert all(re.fullmatch(r"mem_[0-9a-f]{24}", i) for i in (first, ids[0], ids[-1]))
    assert first < min(ids) and len(set(ids)) == len(ids)
