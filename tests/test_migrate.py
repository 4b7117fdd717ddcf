"""``kenning migrate``: SQLite → PostgreSQL → SQLite keeps everything."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli
from kenning.pipeline.messages import message_memories, read_messages
from tests.pg import pg_url

pytestmark = pytest.mark.postgres


def _fill(url: str, clock) -> None:  # noqa: ANN001
    with Kenning(url, clock=clock) as kn:
        kn.remember(["Alice works at Acme. Alice likes chess.", "Bob lives in Paris."],
                    metadata={"source": {"n": 1}})
        clock.set("2024-06-01")
        kn.remember("Alice works at Globex.", dataset="main")
        kn.remember("Carol works at Initech.", dataset="other")
        kn.add("Not processed yet.")
        kn.remember("# Notes\n\n## Games\n\nDave plays go on Sundays.", source="notes.md", metadata={"format": "markdown"})
        turns = read_messages([{"role": "user", "content": "Dan lives in Oslo."},
                               {"role": "assistant", "content": "Noted."}], user="dan", agent="ken", now=clock())
        kn.store.insert_memories(message_memories(turns, dataset="main", now=clock(), user="dan", agent="ken",
                                                  session="s1"))
        memory = kn.remember({"topic": "Storage", "decisions": ["Use PostgreSQL"],
                              "rationale": ["many writers"]}).memory_ids[0]
        kn.pin(memory, "keep")
        kn.recall("Where does Alice work?")
        store = kn._engine.store
        user = store.create_user("ann")
        store.create_key(user.id, "f" * 64, "kn_abc", "laptop")
        store.claim_dataset("main", user.id)
        store.set_grant("other", user.id, ["read", "write"])


def _snapshot(url: str) -> dict:
    with Kenning(url) as kn:
        store = kn._engine.store
        memories = sorted((m.model_dump() for m in kn.list(dataset=None, limit=100)), key=lambda m: m["id"])
        entity_ids, fact_ids = set(), set()
        for m in memories:
            entities, facts = store.memory_graph(m["id"])
            entity_ids.update(entities)
            fact_ids.update(facts)
        chunks = {}
        for kind in ("chunk", "fact", "entity"):
            for item_id, _ in store.texts_to_embed(kind, None, 1000):
                chunks[(kind, item_id)] = item_id
        stats = kn.stats().model_dump()
        stats["usage"]["seconds"] = round(stats["usage"]["seconds"], 6)  # a float sum, in any order
        return {
            "stats": stats,
            "memories": memories,
            "entities": [e.model_dump() for e in store.get_entities(sorted(entity_ids))],
            "facts": [f.model_dump() for f in store.get_facts(sorted(fact_ids))],
            "chunks": [c.__dict__ for c in store.get_chunks(sorted(i for k, i in chunks if k == "chunk"))],
            "vector": [(s.id, s.score) for s in store.vector(
                "main", "fact", kn._engine.embedder.embed(["Alice works"])[0], 5)],
            "datasets": kn.datasets(),
            "users": store.list_users(),
            "keys": store.list_keys(),
            "grants": store.grants("other"),
            "owners": store.dataset_records(),
        }


def _recall(url: str) -> list[tuple[str, str]]:
    with Kenning(url) as kn:
        return [(h.kind, h.id) for h in kn.recall("Where does Alice work?", top_k=100).hits]


def _migrate(source: str, target: str) -> str:
    result = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert result.exit_code == 0, result.output
    return result.output


def test_sqlite_to_postgres_to_sqlite_keeps_everything(tmp_path, clock) -> None:  # noqa: ANN001
    first, second, pg = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}", pg_url()
    _fill(first, clock)
    before = _snapshot(first)
    output = _migrate(first, pg)
    assert "facts.embedding" in output and "MISMATCH" not in output
    on_pg = _snapshot(pg)
    assert [str(c["location"]) for c in on_pg["chunks"] if c["location"]] == ["Notes › Games"]
    _migrate(pg, second)
    after = _snapshot(second)
    for name in before:
        if name == "vector":  # SQLite scores int8-quantized vectors: scores ±0.01, so near ties may swap
            last = before[name][-1][1]
            clear = {i for i, s in before[name] if s > last + 0.02}
            for other in (on_pg, after):
                assert clear <= {i for i, _ in other[name]}
                assert [s for _, s in other[name]] == pytest.approx([s for _, s in before[name]], abs=0.01)
            continue
        assert on_pg[name] == before[name], name
        assert after[name] == before[name], name
    # The lexical lanes score alike (BM25 on both), but a copy does not keep the rows' physical
    # order, which breaks SQLite's ties, and SQLite's vectors are quantized: the answer and the
    # hits found are the same.
    original = _recall(first)
    for copied in (_recall(pg), _recall(second)):
        assert copied[0] == original[0] and set(copied) == set(original)
    assert any(m["access_count"] for m in after["memories"])
    assert any(m["pinned"] for m in after["memories"])
    assert {(m["user"], m["agent"], m["session"], m["role"], m["speaker"]) for m in after["memories"]
            if m["kind"] == "message"} == {("dan", "ken", "s1", "user", "dan"), ("dan", "ken", "s1", "assistant", "ken")}
    assert any(f["expired_at"] is not None and f["superseded_by"] for f in after["facts"])


def test_a_copy_into_postgres_leaves_the_planner_its_statistics(tmp_path, clock) -> None:  # noqa: ANN001
    import psycopg

    source, pg = f"sqlite:///{tmp_path / 'a.db'}", pg_url()
    _fill(source, clock)
    _migrate(source, pg)
    with psycopg.connect(pg) as conn:  # -1: never analyzed (COPY alone counts nothing)
        rows = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass").fetchone()
    assert rows is not None and rows[0] > 0


def test_vectors_survive_bit_for_bit(tmp_path, clock) -> None:  # noqa: ANN001
    source, target = f"sqlite:///{tmp_path / 'a.db'}", pg_url()
    _fill(source, clock)
    _migrate(source, target)
    from kenning.store import open_store

    a, b = open_store(source), open_store(target)
    try:
        with b._conn() as conn:
            pg = {r["id"]: np.asarray(eval(r["e"]), dtype=np.float32)  # noqa: S307 - '[1,2]' literal
                  for r in conn.execute("SELECT id, embedding::text AS e FROM facts")}
        rows = a._db.execute("SELECT id, embedding FROM facts").fetchall()
        assert rows and all(np.array_equal(np.frombuffer(r[1], dtype=np.float32), pg[r[0]]) for r in rows)
    finally:
        a.close()
        b.close()


def test_refuses_a_target_that_is_not_empty(tmp_path, clock) -> None:  # noqa: ANN001
    source, target = f"sqlite:///{tmp_path / 'a.db'}", pg_url()
    _fill(source, clock)
    with Kenning(target) as kn:
        kn.remember("Already here.")
    result = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert result.exit_code == 1 and "not empty" in result.output


def test_a_missing_source_file_is_an_error(tmp_path) -> None:  # noqa: ANN001
    result = CliRunner().invoke(cli, ["migrate", "--from", str(tmp_path / "nope.db"), "--to", pg_url()])
    assert result.exit_code == 1 and "no SQLite store" in result.output
    assert not (tmp_path / "nope.db").exists()


def test_count_mismatch_exits_non_zero(tmp_path, clock, monkeypatch) -> None:  # noqa: ANN001
    from kenning.store import copy

    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _fill(source, clock)
    real = copy.SQLiteSide.write

    def lossy(self, table, columns, rows):  # noqa: ANN001, ANN202
        return real(self, table, columns, rows[1:] if table == "datasets" else rows)

    monkeypatch.setattr(copy.SQLiteSide, "write", lossy)
    result = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert result.exit_code == 1 and "MISMATCH" in result.output
