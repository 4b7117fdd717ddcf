"""The PostgreSQL store on a real server: what only PostgreSQL can get wrong (pool, advisory locks,
SKIP LOCKED, pgvector, tsquery building, NUL bytes) and the main stories end to end. The
backend-neutral suites run on it too, through the ``store_url`` fixture."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading

import numpy as np
import pytest

from kenning import AsyncKenning, Kenning
from kenning.errors import EmbedderMismatchError
from kenning.store.base import ClaimFilter, MemoryFilter
from kenning.store.postgres.schema import PG_MIGRATIONS
from tests.pg import pg_url

pytestmark = pytest.mark.postgres

UTC = dt.UTC


@pytest.fixture
def url() -> str:
    return pg_url()


def _store(kn: Kenning):  # noqa: ANN202
    return kn._engine.store


def test_memories_survive_reopening(url: str) -> None:
    with Kenning(url) as kn:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris."])
        before = kn.stats()
    with Kenning(url) as kn:
        assert kn.stats() == before
        assert kn.recall("Where does Alice work?").hits[0].text == "Alice works at Acme."


def test_remember_recall_end_to_end(url: str, clock) -> None:  # noqa: ANN001
    with Kenning(url, clock=clock) as kn:
        result = kn.remember(
            ["Alice works at Acme.", "Bob lives in Paris. Bob works at Globex.", "Carol likes chess."]
        )
        assert result.errors == [] and result.facts_created == 4
        hits = kn.recall("Where does Bob live?").hits
        assert "Bob lives in Paris." in [h.text for h in hits[:3]]
        assert all(h.memory_ids for h in hits if h.kind == "fact")
        # a lone text is not the list's turn (that one belongs to its episode): its own memory,
        # found again when it is remembered again
        alone = kn.remember("Alice works at Acme.")
        again = kn.remember("Alice works at Acme.")
        assert alone.skipped == [] and again.skipped == again.memory_ids == alone.memory_ids
        assert kn.stats().memories == 4 and kn.stats().facts == 4  # the fact is one, stated twice


def test_the_temporal_rule_closes_the_old_job(url: str, clock) -> None:  # noqa: ANN001
    with Kenning(url, clock=clock) as kn:
        kn.remember("Alice works at Acme.")
        clock.set("2024-06-01")
        result = kn.remember("Alice works at Globex.")
        assert len(result.facts_invalidated) == 1
        facts = {f.description: f for f in kn.timeline("Alice").facts}
        old, new = facts["Alice works at Acme."], facts["Alice works at Globex."]
        assert old.invalid_at == dt.datetime(2024, 6, 1, tzinfo=UTC)
        assert old.expired_at is not None and old.superseded_by == new.id
        assert new.invalid_at is None and new.expired_at is None
        assert kn.recall("Where does Alice work?").hits[0].text == "Alice works at Globex."


@pytest.mark.parametrize(
    "query",
    [
        "'; DROP TABLE memories; --",
        "Alice & !Acme | (Globex <-> x):*",
        "\x00Alice\x00",
        "((((((((",
        "\\ % _ ' \" ` $$ $1 ::vector",
        "Ålice wörks at Äcme 東京",
        "a " * 5000,
        "???",
    ],
)
def test_hostile_queries_are_only_text(url: str, query: str) -> None:
    with Kenning(url) as kn:
        kn.remember("Alice works at Acme.")
        kn.recall(query)
        kn.recall(query, search_type="chunks_lexical")
        store = _store(kn)
        assert store.lexical("main", "fact", [query, "alice"], 5)[0].score > 0
        assert kn.stats().memories == 1


def test_nul_bytes_are_stored_not_refused(url: str) -> None:
    with Kenning(url) as kn:
        result = kn.remember("Alice\x00 works at Acme.", metadata={"note": "a\x00b"})
        memory = kn.get(result.memory_ids[0])
        assert memory.content == "Alice\ufffd works at Acme."
        assert memory.metadata == {"note": "a\ufffdb"}


def test_delete_collects_garbage_and_reopens_what_it_closed(url: str, clock) -> None:  # noqa: ANN001
    with Kenning(url, clock=clock) as kn:
        first = kn.remember("Alice works at Acme. Alice likes chess.").memory_ids[0]
        clock.set("2024-06-01")
        second = kn.remember("Alice works at Globex.").memory_ids[0]
        store = _store(kn)
        with store.transaction() as txn:
            entities, facts = txn.unlink_memory(second)
            txn.delete_memory(second)
        assert len(facts) == 1 and [e.name for e in store.get_entities(entities)] == []
        assert [kn.get(first).id] == [first]
        live = {f.description: f for f in kn.timeline("Alice").facts}
        assert set(live) == {"Alice works at Acme.", "Alice likes chess."}
        assert live["Alice works at Acme."].invalid_at is None
        assert live["Alice works at Acme."].superseded_by is None
        assert kn.stats().entities == 3  # Alice, Acme, chess: Globex went with its memory
        with store.transaction() as txn:
            txn.unlink_memory(first)
            txn.delete_memory(first)
        stats = kn.stats()
        assert (stats.memories, stats.chunks, stats.entities, stats.facts) == (0, 0, 0, 0)


def test_concurrent_opens_migrate_once(url: str) -> None:
    from kenning.store.postgres.store import PostgresStore

    stores, errors = [], []

    def open_one() -> None:
        try:
            store = PostgresStore(url, pool_size=2)
            store.check_embedder("hashing-v1-256", 256)
            stores.append(store)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with stores[0]._conn() as conn:
        versions = [r["version"] for r in conn.execute("SELECT version FROM kenning_schema ORDER BY version")]
        indexes = {r["i"] for r in conn.execute("SELECT indexname AS i FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%hnsw'")}
    assert versions == list(range(1, len(PG_MIGRATIONS) + 1))  # each applied once
    assert indexes == {"chunks_embedding_hnsw", "facts_embedding_hnsw", "entities_embedding_hnsw"}
    for store in stores:
        store.close()


def test_claim_gives_each_memory_to_one_worker(url: str) -> None:
    with Kenning(url) as kn:
        ids = kn.add([f"Note number {i}." for i in range(40)])
        store = _store(kn)
        now = dt.datetime.now(UTC)
        got: list[list[str]] = []
        barrier = threading.Barrier(4)

        def worker() -> None:
            barrier.wait()
            got.append([m.id for m in store.claim("w", now, ClaimFilter(["pending"], now - dt.timedelta(minutes=10)))])

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        claimed = [i for batch in got for i in batch]
        assert sorted(claimed) == sorted(ids)
        assert len(store.list_memories(MemoryFilter(status="processing"))) == 40
        # A stale claim is taken again; a fresh one is not.
        assert store.claim("w", now, ClaimFilter(["pending"], now - dt.timedelta(minutes=10))) == []
        later = now + dt.timedelta(hours=1)
        assert len(store.claim("w", later, ClaimFilter(["pending"], later - dt.timedelta(minutes=10)))) == 40


def test_cognify_workers_in_parallel_process_everything_once(url: str) -> None:
    with Kenning(url) as kn:
        kn.add([f"Person{i} works at Company{i % 5}." for i in range(30)])
    results = []

    def worker() -> None:
        with Kenning(url) as kn:
            results.append(kn.cognify())

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    processed = [m for r in results for m in r.processed]
    assert len(processed) == len(set(processed)) == 30
    with Kenning(url) as kn:
        stats = kn.stats()
        assert (stats.pending, stats.facts, stats.entities) == (0, 30, 35)


def test_another_embedder_is_a_clear_error(url: str) -> None:
    Kenning(url).close()
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        _open_with_dimension(url, 64)


def _open_with_dimension(url: str, dimension: int) -> None:
    from kenning.providers.hashing import HashingEmbedder

    Kenning(url, embedder=HashingEmbedder(dimension)).close()


def test_reembedding_to_another_dimension_rebuilds_the_index(url: str) -> None:
    with Kenning(url) as kn:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris."])
        store = _store(kn)
        for kind in ("chunk", "fact", "entity"):
            rows = store.texts_to_embed(kind, None, 100)
            store.set_embeddings(kind, [(i, np.ones(64, dtype=np.float32) / 8) for i, _ in rows])
        store.set_embedder("hashing-v1-64", 64)
        with store._conn() as conn:
            typed = conn.execute("SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute"
                                 " WHERE attrelid = 'facts'::regclass AND attname = 'embedding'").fetchone()
            indexed = conn.execute("SELECT count(*) AS n FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%hnsw'").fetchone()
        assert (typed["t"], indexed["n"]) == ("vector(64)", 3)
    _open_with_dimension(url, 64)


def test_vector_lane_uses_the_hnsw_index_and_scores_cosine(url: str) -> None:
    with Kenning(url) as kn:
        kn.remember([f"Person{i} works at Company{i}." for i in range(50)])
        store = _store(kn)
        query = kn._engine.embedder.embed(["Person7 works at Company7."])[0]
        hits = store.vector("main", "fact", query, 5)
        assert store.get_facts([hits[0].id])[0].description == "Person7 works at Company7."
        assert 0.99 < hits[0].score <= 1.0001 and hits == sorted(hits, key=lambda h: -h.score)
        assert store.vector("other", "fact", query, 5) == []
        with store._conn() as conn, conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = conn.execute("EXPLAIN SELECT id FROM facts WHERE dataset = 'main'"
                                " ORDER BY embedding <=> %s::vector LIMIT 5",
                                ("[" + ",".join(["0.1"] * 256) + "]",)).fetchall()
        assert "facts_embedding_hnsw" in " ".join(str(r) for r in plan)


def test_datasets_are_separate(url: str) -> None:
    with Kenning(url) as kn:
        kn.remember("Alice works at Acme.", dataset="a")
        kn.remember("Alice works at Globex.", dataset="b")
        assert kn.datasets() == ["a", "b"]
        assert [h.text for h in kn.recall("Alice", dataset="a", search_type="facts").hits] == ["Alice works at Acme."]
        assert kn.stats("b").facts == 1


def test_async_facade_shares_the_pool_across_threads(url: str) -> None:
    async def main() -> list[int]:
        async with AsyncKenning(url, pool_size=2) as kn:
            await kn.remember([f"Person{i} works at Company{i}." for i in range(10)])
            results = await asyncio.gather(*(kn.recall(f"Where does Person{i % 10} work?") for i in range(16)))
            return [(r.hits[0].source, r.hits[0].target) for r in results]

    # every concurrent recall answers its own question: person i works at company i
    assert asyncio.run(main()) == [(f"Person{i % 10}", f"Company{i % 10}") for i in range(16)]


def test_same_answers_as_sqlite(url: str, tmp_path, clock) -> None:  # noqa: ANN001
    texts = ["Alice works at Acme.", "Bob lives in Paris. Bob works at Globex.", "Carol likes chess.",
             "Dana works at Acme since 2019.", "Alice moved to Berlin in March 2021."]
    outcomes = []
    for target in (f"sqlite:///{tmp_path / 'k.db'}", url):
        clock.set("2024-01-01")
        with Kenning(target, clock=clock) as kn:
            kn.remember(texts)
            clock.set("2024-06-01")
            kn.remember("Alice works at Globex.")
            stats = kn.stats().model_dump(exclude={"last_processed_at", "usage"})
            facts = sorted((f.description, f.valid_at, f.invalid_at) for f in kn.timeline("Alice").facts)
            top = [h.text for h in kn.recall("Who works at Acme?").hits[:3]]
            outcomes.append((stats, facts, sorted(top)))
    assert outcomes[0] == outcomes[1]


def _lexical_stats(store) -> tuple[list[tuple], list[tuple]]:  # noqa: ANN001
    """The full-text statistics kept by triggers (rows and tokens per table and dataset, then
    rows per lexeme), and the same counted from the rows."""
    with store._conn() as conn:
        kept = [tuple(r.values()) for r in conn.execute(
            "SELECT tbl, dataset, rows, tokens FROM lexical_stats WHERE rows > 0 ORDER BY tbl, dataset")]
        counted = [tuple(r.values()) for r in conn.execute(
            "SELECT t, dataset, count(*) AS n, sum(kenning_tsv_length(tsv)) AS s FROM ("
            " SELECT 'chunks' AS t, dataset, tsv FROM chunks UNION ALL SELECT 'entities', dataset, tsv FROM entities"
            " UNION ALL SELECT 'facts', dataset, tsv FROM facts) x GROUP BY t, dataset ORDER BY t, dataset")]
        kept += [tuple(r.values()) for r in conn.execute(
            "SELECT tbl, dataset, lexeme, rows FROM lexeme_stats WHERE rows > 0 ORDER BY tbl, dataset, lexeme")]
        counted += [tuple(r.values()) for r in conn.execute(
            "SELECT t, dataset, l, count(*) FROM (SELECT 'chunks' AS t, dataset, tsv FROM chunks"
            " UNION ALL SELECT 'entities', dataset, tsv FROM entities UNION ALL SELECT 'facts', dataset, tsv FROM facts)"
            " x, unnest(tsvector_to_array(tsv)) AS l GROUP BY t, dataset, l ORDER BY t, dataset, l")]
    return kept, counted


def test_lexical_statistics_follow_every_write(url: str, clock) -> None:  # noqa: ANN001
    with Kenning(url, clock=clock) as kn:
        store = _store(kn)
        first = kn.remember(["Alice works at Acme.", "Bob lives in Paris. Bob works at Globex."]).memory_ids[0]
        kn.remember(["Carol likes chess.", "Alice Novak moved to Berlin."], dataset="other")
        kept, counted = _lexical_stats(store)
        assert kept == counted and {t for t, *_ in kept} == {"chunks", "entities", "facts"}
        entities = {e.name: e.id for e in store.get_entities(
            [r.id for r in store.entity_rows("main", None, 100)])}
        with store.transaction() as txn:
            txn.update_entity(entities["Alice"], {"description": "an engineer who works on compilers"})
            txn.merge_entities(entities["Acme"], entities["Globex"])  # renames, deletes one entity
        assert _lexical_stats(store)[0] == _lexical_stats(store)[1]
        kn.recall("Alice Acme")  # bumps access counters (buffered: written by the flush): no change to the statistics
        store.flush_access()
        assert _lexical_stats(store)[0] == _lexical_stats(store)[1]
        kn.delete(first)
        assert _lexical_stats(store)[0] == _lexical_stats(store)[1]
        kn.forget(dataset="other")
        kept, counted = _lexical_stats(store)
        assert kept == counted and {d for _, d, *_ in kept} == {"main"}


def test_a_store_of_schema_version_1_is_ranked_by_bm25_after_migrating(url: str) -> None:
    import psycopg

    from kenning.store.postgres.store import PostgresStore
    from kenning.store.postgres.schema import BOOTSTRAP, PG_MIGRATIONS
    from tests.test_lexical_bm25 import expected

    corpus = {"main": ["Alice moved to Berlin.", "Bob moves boxes and Bob moves chairs.", "Carol keeps bees.",
                       "Dana plays chess.", "Evan is moving the well-known piano to a new flat."]}
    with psycopg.connect(url, autocommit=True) as conn:  # what kenning 1 created and wrote
        conn.execute(BOOTSTRAP)
        for statement in PG_MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("INSERT INTO kenning_schema (version) VALUES (1)")
        for i, text in enumerate(corpus["main"]):
            conn.execute("INSERT INTO memories (id, dataset, kind, content, content_hash, valid_at, status,"
                         " created_at, updated_at) VALUES (%s, 'main', 'knowledge', %s, %s, now(), 'active',"
                         " now(), now())", (f"mem_{i}", text, str(i)))
            conn.execute("INSERT INTO chunks (id, memory_id, dataset, position, text, token_count)"
                         " VALUES (%s, %s, 'main', 0, %s, 5)", (f"chk_{i}", f"mem_{i}", text))
    store = PostgresStore(url)
    try:
        hits = store.lexical("main", "chunk", ["moving"], 10)
        texts = {c.id: c.text for c in store.get_chunks([h.id for h in hits])}
        want = expected("main", ["moving"], corpus)
        assert [texts[h.id] for h in hits] == [t for t, _ in want]
        assert [h.score for h in hits] == pytest.approx([s for _, s in want], rel=1e-9)
    finally:
        store.close()


def test_hnsw_ef_search_comes_from_the_settings(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def ef_search(kn: Kenning) -> str:
        with _store(kn)._conn() as conn:
            return conn.execute("SHOW hnsw.ef_search").fetchone()["hnsw.ef_search"]

    with Kenning(url) as kn:
        assert ef_search(kn) == "100"
    with Kenning(url, hnsw_ef_search=40) as kn:
        assert ef_search(kn) == "40"
        assert kn.recall("anything").hits == []
    monkeypatch.setenv("KENNING_HNSW_EF_SEARCH", "400")
    with Kenning(url) as kn:
        assert ef_search(kn) == "400"


def _indexed(store) -> dict[str, bool]:  # noqa: ANN001
    with store._conn() as conn:
        return {table: indexed for table, (_, indexed) in store._vector_columns(conn).items()}


def test_a_bulk_load_builds_the_vector_index_after_and_recall_sees_every_row_meanwhile(url: str) -> None:
    from kenning.store.postgres.store import _BULK_MIN

    with Kenning(url) as kn:
        store = _store(kn)
        kn.remember("Alice works at Acme.")  # the vector columns are typed and indexed
        assert _indexed(store) == {"chunks": True, "facts": True, "entities": True}
        with store.bulk_load(_BULK_MIN):
            # a small table's index is left out while the load runs (entities keep theirs)
            assert _indexed(store) == {"chunks": False, "facts": False, "entities": True}
            kn.remember("Dana works at Initech.")
            # committed rows are found by the vector lane at once: an exact scan
            query = kn._engine.embedder.embed_query(["Dana works at Initech."])[0]
            chunk = store.vector("main", "chunk", query, 1)
            assert [store.get_chunks([s.id])[0].text for s in chunk] == ["Dana works at Initech."]
            assert store.vector("main", "fact", query, 5)
        assert _indexed(store) == {"chunks": True, "facts": True, "entities": True}
        # remember of a long list goes through a bulk load: every row is found right after
        texts = [f"Worker {i} lives in town {i}." for i in range(_BULK_MIN + 10)]
        result = kn.remember(texts, dataset="bulk")
        assert result.errors == [] and result.facts_created == len(texts)
        assert _indexed(store) == {"chunks": True, "facts": True, "entities": True}
        for i in (0, 77, len(texts) - 1):
            query = kn._engine.embedder.embed_query([texts[i]])[0]
            hits = store.vector("bulk", "chunk", query, 1)
            assert [store.get_chunks([s.id])[0].text for s in hits] == [texts[i]]


def test_a_bulk_load_into_a_large_table_keeps_its_index(url: str) -> None:
    with Kenning(url) as kn:
        store = _store(kn)
        kn.remember([f"Worker {i} lives in town {i}." for i in range(30)])
        with store.bulk_load(10):  # below the bulk size: nothing changes
            assert all(_indexed(store).values())
        with store.bulk_load(10_000):
            assert not _indexed(store)["chunks"]
        assert all(_indexed(store).values())


def test_recall_reads_at_once_give_the_answers_of_reads_in_turn(clock, monkeypatch) -> None:
    """Recall begins the reads that wait for no other at once on the pool's connections; the
    hits (texts, scores, lanes, explanations) are those of the same reads made one after another
    (two stores of the same memories: a recall counts its accesses, which later scores see)."""
    from kenning.store.postgres.store import PostgresStore

    texts = ["Alice works at Acme.", "Bob lives in Paris. Bob works at Globex.", "Carol likes chess.",
             "Dana works at Acme since 2019.", "Alice moved to Berlin in March 2021.", "Bob moved to Rome."]
    questions = ["Where does Alice work?", "Who works at Acme?", "What does Carol like?", "Where does Bob live now?"]

    def hits(at_once: bool) -> list[list[tuple]]:
        clock.set("2024-01-01")
        with Kenning(pg_url(), clock=clock) as kn:
            kn.remember(texts)
            store = _store(kn)
            assert store.concurrent_reads
            with store.transaction():
                assert not store.concurrent_reads  # a transaction's reads stay on its connection
            if not at_once:
                monkeypatch.setattr(PostgresStore, "concurrent_reads", False)
            return [[(h.kind, h.text, h.score, h.lanes, h.explanation) for h in kn.recall(
                q, search_type=kind, explain=True).hits] for q in questions for kind in ("hybrid", "facts", "graph")]

    at_once = hits(True)
    assert hits(False) == at_once and all(at_once)
