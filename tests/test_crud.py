"""Memory CRUD with provenance and garbage collection, and forget, through the facade on real
SQLite files."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from kenning import (
    ConflictError,
    Kenning,
    MemoryInput,
    ModelResponseError,
    NotFoundError,
    ValidationError,
)
from kenning.pipeline.offline import OfflineExtractor



@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "kn.db")


@pytest.fixture
def sqlite_kn(db):
    """SQLite only: these tests read the SQLite full-text tables directly, without kenning.
    The same garbage collection on PostgreSQL is covered in test_postgres_store.py."""
    with Kenning(db) as k:
        yield k


def fact_texts(kn: Kenning, query: str) -> set[str]:
    return {h.text for h in kn.recall(query, search_type="facts", top_k=50).hits if h.kind == "fact"}


def fts_rows(db: str, word: str) -> int:
    """Rows of every full-text table that still contain ``word``, read without kenning."""
    con = sqlite3.connect(db)
    try:
        return sum(
            con.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (word,)).fetchone()[0]
            for table in ("chunks_fts", "facts_fts", "entities_fts")
        )
    finally:
        con.close()


class FailingExtractor(OfflineExtractor):
    """The offline extractor, failing on text that contains a trigger word."""

    def extract(self, chunks, *, reference_time, usage):
        if any("EXPLODE" in c for c in chunks):
            raise ModelResponseError("extraction failed")
        return super().extract(chunks, reference_time=reference_time, usage=usage)


# -- create and read ---------------------------------------------------------------------------
def test_structured_memory_round_trip(kn) -> None:
    until = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    memory_id = kn.remember(MemoryInput(
        topic="Storage engine", context="We compared engines.", decisions=["Use SQLite"],
        rationale=["Zero configuration"], metadata={"team": "core"}, source="adr-7",
        retention="decision", retention_until=until,
    )).memory_ids[0]
    memory = kn.get(memory_id)
    assert (memory.topic, memory.context, memory.decisions, memory.rationale) == (
        "Storage engine", "We compared engines.", ["Use SQLite"], ["Zero configuration"])
    assert memory.metadata == {"team": "core"} and memory.source == "adr-7"
    assert memory.retention == "decision" and memory.retention_until == until
    assert memory.content.startswith("Storage engine.") and "Decision: Use SQLite" in memory.content
    assert memory.status == "active" and memory.pinned is False and memory.access_count == 0
    assert kn.list(retention="decision")[0].id == memory_id


def test_structured_memory_validation(kn) -> None:
    with pytest.raises(ValidationError, match="topic"):
        kn.remember({"topic": "  "})
    with pytest.raises(ValidationError):
        kn.remember({"topic": "x", "retention": "forever"})
    assert kn.stats().memories == 0


def test_identical_content_returns_the_existing_memory(kn) -> None:
    first = kn.remember("Alice works at Acme.").memory_ids[0]
    again = kn.remember("Alice   works at Acme.")
    assert again.memory_ids == [first] and again.skipped == [first]
    assert kn.stats().memories == 1


def test_provenance_in_both_directions(kn) -> None:
    a = kn.remember("Alice works at Acme.").memory_ids[0]
    b = kn.remember("Alice works at Acme. Bob lives in Paris.").memory_ids[0]
    prov = kn.provenance(a)
    assert {e.name for e in prov.entities} == {"Alice", "Acme"}
    assert [f.description for f in prov.facts] == ["Alice works at Acme."]
    assert sorted(prov.facts[0].memory_ids) == sorted([a, b])
    assert {e.name for e in kn.provenance(b).entities} == {"Alice", "Acme", "Bob", "Paris"}
    assert [(c.position, c.text) for c in prov.chunks] == [(0, "Alice works at Acme.")]


def test_list_filters_and_orders(kn, clock) -> None:
    a = kn.remember("Alice works at Acme.").memory_ids[0]
    clock.advance(seconds=1)
    b = kn.remember("Bob lives in Paris.").memory_ids[0]
    kn.recall("Bob Paris", search_type="chunks_lexical")
    kn.pin(a)
    assert [m.id for m in kn.list(order_by="access_count")] == [b, a]
    assert [m.id for m in kn.list(pinned=False)] == [b]
    assert [m.id for m in kn.list(order_by="created_at", descending=False)] == [a, b]


# -- update ------------------------------------------------------------------------------------
def test_update_changes_only_the_given_fields(kn) -> None:
    memory_id = kn.remember("Alice works at Acme.", metadata={"a": 1}).memory_ids[0]
    before = kn.get(memory_id)
    graph = kn.provenance(memory_id)
    after = kn.update(memory_id, metadata={"b": 2}, retention="ephemeral", source="chat")
    assert after.metadata == {"b": 2} and after.retention == "ephemeral" and after.source == "chat"
    assert (after.content, after.content_hash, after.processed_at) == (
        before.content, before.content_hash, before.processed_at)
    assert kn.provenance(memory_id) == graph


def test_update_content_reextracts_and_collects_garbage(kn) -> None:
    memory_id = kn.remember("Alice works at Acme. Carol lives in Rome.").memory_ids[0]
    kn.remember("Carol lives in Rome. Alice lives in Oslo.")
    updated = kn.update(memory_id, content="Alice works at Globex.")
    assert updated.content == "Alice works at Globex." and updated.status == "active"
    assert {e.name for e in kn.provenance(memory_id).entities} == {"Alice", "Globex"}
    texts = fact_texts(kn, "Alice Acme Globex Carol Rome")
    assert "Alice works at Acme." not in texts
    assert {"Alice works at Globex.", "Carol lives in Rome."} <= texts
    hits = kn.recall("Where does Alice work? Acme", top_k=50).hits
    assert hits and not [h.text for h in hits if "acme" in h.text.casefold()]  # not even a description
    assert kn.recall("Acme", search_type="chunks_lexical").hits == []


def test_update_structured_fields_rerenders_content(kn) -> None:
    memory_id = kn.remember(MemoryInput(topic="Queue", decisions=["Use Redis"])).memory_ids[0]
    updated = kn.update(memory_id, decisions=["Use Kafka"], rationale=["Replay"])
    assert updated.decisions == ["Use Kafka"] and updated.topic == "Queue"
    assert "Decision: Use Kafka" in updated.content and "Redis" not in updated.content
    assert kn.recall("Redis", search_type="chunks_lexical").hits == []
    assert kn.recall("Kafka", search_type="chunks_lexical").hits[0].memory_ids == [memory_id]


def test_update_errors(kn) -> None:
    plain = kn.remember("Alice works at Acme.").memory_ids[0]
    other = kn.remember("Bob lives in Paris.").memory_ids[0]
    structured = kn.remember(MemoryInput(topic="Queue")).memory_ids[0]
    with pytest.raises(ConflictError):
        kn.update(other, content="Alice works at Acme.")
    assert kn.get(other).content == "Bob lives in Paris."
    with pytest.raises(ValidationError, match="cannot update"):
        kn.update(plain, pinned=True)
    with pytest.raises(ValidationError):
        kn.update(plain, content="  ")
    with pytest.raises(ValidationError):
        kn.update(plain, topic="Now structured")
    with pytest.raises(ValidationError):
        kn.update(structured, content="free text")
    with pytest.raises(ValidationError):
        kn.update(structured, topic="")
    with pytest.raises(ValidationError):
        kn.update(plain, retention="forever")
    with pytest.raises(NotFoundError):
        kn.update("mem_missing", source="x")


def test_failed_reextraction_changes_nothing(store_url) -> None:
    with Kenning(store_url, extractor=FailingExtractor()) as kn:
        memory_id = kn.remember("Alice works at Acme.").memory_ids[0]
        before, graph = kn.get(memory_id), kn.provenance(memory_id)
        with pytest.raises(ModelResponseError):
            kn.update(memory_id, content="Alice works at Globex. EXPLODE")
        assert kn.get(memory_id) == before
        assert kn.provenance(memory_id) == graph


# -- delete, garbage collection, forget --------------------------------------------------------
def test_delete_keeps_shared_entities_and_facts(kn) -> None:
    a = kn.remember("Alice works at Acme. Dave owns Zeppelin.").memory_ids[0]
    b = kn.remember("Alice works at Acme. Erin knows Frank.").memory_ids[0]
    shared_fact = next(f for f in kn.provenance(a).facts if f.description == "Alice works at Acme.")
    only_a = {e.id: e.name for e in kn.provenance(a).entities if e.name in ("Dave", "Zeppelin")}
    result = kn.delete(a)
    assert result.memory_ids == [a]
    assert set(result.entity_ids) == set(only_a)
    assert shared_fact.id not in result.fact_ids and len(result.fact_ids) == 1
    remaining = kn.provenance(b)
    assert shared_fact.id in {f.id for f in remaining.facts}
    assert next(f for f in remaining.facts if f.id == shared_fact.id).memory_ids == [b]
    assert "Dave owns Zeppelin." not in fact_texts(kn, "Dave Zeppelin Alice")
    with pytest.raises(NotFoundError):
        kn.get(a)
    with pytest.raises(NotFoundError):
        kn.delete(a)


def test_not_found_everywhere(kn) -> None:
    for call in (kn.provenance, kn.pin, kn.unpin, kn.chain, kn.delete, kn.get, kn.forget):
        with pytest.raises(NotFoundError):
            call("mem_missing")


def test_forget_needs_exactly_one_selector(kn) -> None:
    memory_id = kn.remember("Alice works at Acme.").memory_ids[0]
    for kwargs in ({}, {"dataset": "main", "everything": True}):
        with pytest.raises(ValidationError):
            kn.forget(**kwargs)
    with pytest.raises(ValidationError):
        kn.forget(memory_id, dataset="main")
    with pytest.raises(ValidationError):
        kn.forget(dataset="bad name!")
    assert kn.stats().memories == 1


def test_forget_leaves_no_trace_in_recall_stats_or_fulltext(sqlite_kn, db) -> None:
    kn = sqlite_kn
    secret = kn.remember("Alice works at Acme. Alice knows Zorblax.").memory_ids[0]
    kn.remember("Alice lives in Paris.")
    assert fts_rows(db, "zorblax") > 0 and fts_rows(db, "acme") > 0
    before = kn.stats()
    result = kn.forget(secret)
    assert result.memory_ids == [secret]
    after = kn.stats()
    assert (after.memories, after.chunks) == (before.memories - 1, before.chunks - 1)
    assert after.entities == before.entities - 2 and after.facts == before.facts - 2
    assert fts_rows(db, "zorblax") == 0 and fts_rows(db, "acme") == 0
    for query in ("Zorblax", "Where does Alice work?", "Acme", "Alice"):
        for hit in kn.recall(query, top_k=50).hits:
            assert secret not in hit.memory_ids
            assert "acme" not in hit.text.casefold() and "zorblax" not in hit.text.casefold()


def test_forget_a_dataset_and_everything(sqlite_kn, db) -> None:
    kn = sqlite_kn
    kn.remember(["Alice works at Acme.", "Bob lives in Paris."], dataset="scratch")
    kept = kn.remember("Carol lives in Rome.").memory_ids[0]
    result = kn.forget(dataset="scratch")
    assert len(result.memory_ids) == 2 and len(result.entity_ids) == 4 and len(result.fact_ids) == 2
    assert kn.stats("scratch").memories == 0 and kn.stats("scratch").entities == 0
    assert kn.recall("Alice", dataset="scratch").hits == []
    assert [m.id for m in kn.list()] == [kept]
    kn.forget(everything=True)
    stats = kn.stats()
    assert (stats.memories, stats.chunks, stats.entities, stats.facts) == (0, 0, 0, 0)
    assert fts_rows(db, "rome") == 0 and fts_rows(db, "acme") == 0


def test_delete_reopens_what_the_deleted_fact_closed(kn, clock) -> None:  # noqa: ANN001
    first = kn.remember("Alice works at Acme. Alice likes chess.").memory_ids[0]
    clock.advance(days=30)
    second = kn.remember("Alice works at Globex.").memory_ids[0]
    [closed] = [f for f in kn.timeline("Alice").facts if f.description == "Alice works at Acme."]
    assert closed.invalid_at is not None and closed.superseded_by is not None
    removed = kn.delete(second)
    assert len(removed.fact_ids) == 1 and len(removed.entity_ids) == 1  # Globex went with it
    live = {f.description: f for f in kn.timeline("Alice").facts}
    assert set(live) == {"Alice works at Acme.", "Alice likes chess."}
    reopened = live["Alice works at Acme."]
    assert (reopened.invalid_at, reopened.expired_at, reopened.superseded_by) == (None, None, None)
    kn.delete(first)
    stats = kn.stats()
    assert (stats.memories, stats.entities, stats.facts) == (0, 0, 0)
