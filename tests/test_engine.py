"""The embedded engine end to end: persistence, content identity, add/cognify, failures,
recall with provenance. Runs on every backend through the ``store_url`` fixture."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from kenning import Kenning, MemoryInput, ValidationError
from kenning.errors import ConfigurationError, EmbedderMismatchError, NotFoundError
from kenning.pipeline.extract import Extraction, Extractor
from kenning.providers.hashing import HashingEmbedder


def test_remember_then_recall_names_the_fact_first(kn: Kenning) -> None:
    result = kn.remember("Alice works at Acme.")
    assert len(result.memory_ids) == 1
    assert result.entities_created == 2 and result.facts_created == 1
    hits = kn.recall("Where does Alice work?").hits
    assert hits[0].kind == "fact"
    assert (hits[0].source, hits[0].relation, hits[0].target) == ("Alice", "works_at", "Acme")
    assert hits[0].memory_ids == result.memory_ids
    assert all(hit.memory_ids for hit in hits)


def test_every_hit_names_its_memories_and_lanes(kn: Kenning) -> None:
    kn.remember(["Alice works at Acme.", "Bob lives in Paris.", "The frontend uses React."])
    result = kn.recall("React frontend", top_k=20)
    assert result.hits
    known = {m.id for m in kn.list(limit=10)}
    for hit in result.hits:
        assert hit.memory_ids and set(hit.memory_ids) <= known
        assert hit.lanes and set(hit.lanes) <= {"lexical", "vector", "graph", "neighbor"}
        assert hit.score > 0
    assert {m.id for m in result.memories} == {m for h in result.hits for m in h.memory_ids}


def test_persistence_across_reopen(store_url: str) -> None:
    with Kenning(store_url) as kn:
        kn.remember("Carol is married to Dan.")
        before = kn.stats()
    with Kenning(store_url) as kn:
        after = kn.stats()
        hits = kn.recall("Who is Carol married to?").hits
    assert after.memories == before.memories == 1
    assert after.facts == before.facts >= 1
    assert after.pending == 0
    assert hits[0].relation == "married_to"


def test_same_text_twice_is_processed_once(kn: Kenning) -> None:
    first = kn.remember("Alice lives in Paris.")
    second = kn.remember("Alice   lives in Paris.")  # whitespace does not change identity
    assert second.memory_ids == first.memory_ids
    assert second.skipped == first.memory_ids
    assert second.facts_created == 0
    stats = kn.stats()
    assert stats.memories == 1 and stats.facts == 1
    forced = kn.remember("Alice lives in Paris.", force=True)
    assert forced.skipped == [] and forced.memory_ids == first.memory_ids
    assert kn.stats().facts == 1  # reprocessing replaced the graph, it did not double it


def test_batch_keeps_input_order_including_duplicates(kn: Kenning) -> None:
    texts = ["Alice works at Acme.", "Bob works at Globex.", "Alice works at Acme."]
    result = kn.remember(texts)
    assert len(result.memory_ids) == 3
    assert result.memory_ids[0] == result.memory_ids[2] != result.memory_ids[1]
    assert kn.stats().memories == 2


def test_content_is_validated_before_anything_is_stored(kn: Kenning) -> None:
    with pytest.raises(ValidationError):
        kn.remember(["Alice works at Acme.", "   "])
    with pytest.raises(ValidationError):
        kn.remember([])
    with pytest.raises(ValidationError):
        kn.remember("x", dataset="no spaces allowed")
    with pytest.raises(ValidationError):
        kn.remember({"topic": ""})
    assert kn.stats().memories == 0


def test_huge_input_is_a_clear_error(store_url: str) -> None:
    with Kenning(store_url, max_content_chars=1000) as kn:
        with pytest.raises(ValidationError, match="limit"):
            kn.remember("word " * 1000)
        assert kn.stats().memories == 0


def _cognify_in_child(url: str, queue) -> None:  # noqa: ANN001
    with Kenning(url) as kn:
        result = kn.cognify()
        queue.put((result.processed, result.facts_created))


def test_add_then_cognify_in_another_process(store_url: str) -> None:
    with Kenning(store_url) as kn:
        ids = kn.add(["Alice works at Acme.", "Eve is Alice's sister."])
        assert kn.stats().pending == 2
        assert kn.recall("Acme", search_type="facts").hits == []
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_cognify_in_child, args=(store_url, queue))
    child.start()
    child.join(120)
    processed, facts = queue.get(timeout=5)
    assert sorted(processed) == sorted(ids) and facts >= 2
    with Kenning(store_url) as kn:
        assert kn.stats().pending == 0
        assert {m.status for m in kn.list()} == {"active"}
        assert kn.recall("Where does Alice work?").hits[0].target == "Acme"


class _Exploding(Extractor):
    def extract(self, chunks, *, reference_time, usage) -> Extraction:  # noqa: ANN001
        raise RuntimeError("extractor fell over")


def test_failed_processing_is_visible_and_writes_nothing(store_url: str) -> None:
    with Kenning(store_url, extractor=_Exploding()) as kn:
        result = kn.remember("Alice works at Acme.")
        assert len(result.errors) == 1 and "extractor fell over" in result.errors[0]
        memory = kn.get(result.memory_ids[0])
        assert memory.status == "failed" and "extractor fell over" in memory.error
        stats = kn.stats()
        assert (stats.memories, stats.failed, stats.chunks, stats.entities, stats.facts) == (1, 1, 0, 0, 0)
    with Kenning(store_url) as kn:  # a working extractor retries it on request
        assert kn.cognify().processed == []
        retried = kn.cognify(retry_failed=True)
        assert retried.processed == result.memory_ids
        assert kn.get(result.memory_ids[0]).status == "active"
        assert kn.stats().facts == 1


def test_a_crash_inside_the_write_transaction_leaves_no_partial_graph(db_path: str) -> None:
    from kenning.store.sqlite.store import SQLiteStore, SQLiteTxn

    class FailingTxn(SQLiteTxn):
        def insert_fact(self, row) -> None:  # noqa: ANN001
            super().insert_fact(row)
            raise OSError("disk vanished")

    class FailingStore(SQLiteStore):
        def transaction(self):  # noqa: ANN202
            from contextlib import contextmanager

            @contextmanager
            def txn():
                with self._write() as db:
                    yield FailingTxn(self, db)

            return txn()

    with Kenning(store=FailingStore(db_path)) as kn:
        result = kn.remember("Alice works at Acme.")
        assert result.errors and "disk vanished" in result.errors[0]
    raw = sqlite3.connect(db_path)
    counts = [raw.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("chunks", "entities", "facts", "fact_memories", "chunks_fts", "facts_fts")]
    status = raw.execute("SELECT status FROM memories").fetchone()[0]
    raw.close()
    assert counts == [0, 0, 0, 0, 0, 0]
    assert status == "failed"


def test_abandoned_processing_is_claimed_again(store_url: str, clock) -> None:  # noqa: ANN001
    with Kenning(store_url, clock=clock) as kn:
        [memory_id] = kn.add("Alice works at Acme.")
        kn._engine.store.update_memory(memory_id, {"status": "processing", "error": None, "updated_at": clock()})  # a worker that died
        assert kn.cognify().processed == []  # still leased
        clock.advance(minutes=11)
        assert kn.cognify().processed == [memory_id]


def test_embedder_mismatch_is_a_clear_error(db_path: str) -> None:
    with Kenning(db_path) as kn:
        kn.remember("Alice works at Acme.")
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        Kenning(db_path, embedder=HashingEmbedder(dimension=64))


def test_structured_memory_is_searchable(kn: Kenning) -> None:
    note = MemoryInput(
        topic="Storage engine choice", context="We need one embedded store.",
        decisions=["We use SQLite for storage"], rationale=["zero setup for users"],
        metadata={"ticket": "ENG-7"},
    )
    result = kn.remember(note)
    memory = kn.get(result.memory_ids[0])
    assert memory.topic == "Storage engine choice" and memory.kind == "note"
    assert memory.decisions == ["We use SQLite for storage"] and memory.metadata == {"ticket": "ENG-7"}
    recalled = kn.recall("which storage engine", search_type="chunks")
    assert recalled.hits and recalled.memories[0].topic == "Storage engine choice"


def test_datasets_are_isolated(kn: Kenning) -> None:
    kn.remember("Alice works at Acme.", dataset="a")
    kn.remember("Alice works at Globex.", dataset="b")
    assert kn.recall("Where does Alice work?", dataset="a").hits[0].target == "Acme"
    assert kn.recall("Where does Alice work?", dataset="b").hits[0].target == "Globex"
    assert kn.stats("a").facts == 1 and kn.stats("a").facts_closed == 0
    with pytest.raises(NotFoundError, match="no dataset 'c'; datasets: a, b"):
        kn.recall("Alice", dataset="c")  # a typo is an error, not "no relevant memories"


@pytest.mark.parametrize(
    "query",
    ['"', "'", '""', "NEAR(alice acme)", "alice*", "*", "alice OR", "AND", "-acme", "(", ")",
     "acme:works", "'; DROP TABLE facts; --", "\x00", "^", "x" * 10_000, "é ü 中文 🙂",
     "works NOT acme", "{alice}", "\\", "a" * 10 + " " + '"' * 50],
)
def test_hostile_queries_neither_crash_nor_change_data(kn: Kenning, query: str) -> None:
    kn.remember("Alice works at Acme.")
    before = kn.stats()
    for search_type in ("hybrid", "chunks_lexical", "graph"):
        kn.recall(query, search_type=search_type)
    after = kn.stats()
    assert (after.memories, after.chunks, after.entities, after.facts) == (
        before.memories, before.chunks, before.entities, before.facts)
    assert kn.recall("Where does Alice work?").hits[0].target == "Acme"


def test_empty_query_and_bad_options_are_validation_errors(kn: Kenning) -> None:
    for kwargs in ({"query": "  "}, {"query": "x", "top_k": 0}, {"query": "x", "search_type": "nope"},
                   {"query": "x", "as_of": "not a date"}, {"query": "x", "depth": 99}):
        with pytest.raises(ValidationError):
            kn.recall(**kwargs)


@pytest.mark.parametrize("search_type", ["hybrid", "chunks", "chunks_lexical", "facts", "entities", "graph", "temporal", "auto"])
def test_every_search_type_finds_the_right_thing_first(kn: Kenning, search_type: str) -> None:
    kn.remember(["Alice works at Acme since 2019.", "The frontend uses React.", "Bob lives in Paris."])
    hits = kn.recall("Alice Acme", search_type=search_type).hits
    assert hits, search_type
    kinds = {h.kind for h in hits}
    # a memory found only as a neighbour of a hit in its episode is shown whole (kind "memory")
    expected = {"chunks": {"chunk", "memory"}, "chunks_lexical": {"chunk"}, "facts": {"fact"},
                "entities": {"entity"}, "graph": {"fact"}}.get(search_type)
    if expected:
        assert kinds <= expected and kinds & expected
    best = hits[0]
    if best.kind == "entity":
        assert best.text.split(":")[0] in {"Alice", "Acme"}, best
    else:
        assert best.text == "Alice works at Acme since 2019.", (search_type, best)
    if best.kind == "fact":
        assert (best.source, best.relation, best.target, best.current) == ("Alice", "works_at", "Acme", True)
    # what the query does not name never outranks what it does
    first_other = next((i for i, h in enumerate(hits) if "React" in h.text or "Paris" in h.text), len(hits))
    assert all("Acme" in h.text or "Alice" in h.text for h in hits[:first_other]) and first_other >= 1


def test_temporal_reads_the_date_in_the_question(kn: Kenning) -> None:
    kn.remember("Alice works at Acme.", valid_at="2019-01-01")
    kn.remember("Alice works at Globex.", valid_at="2022-01-01")
    then = kn.recall("Where did Alice work in 2020?", search_type="temporal")
    assert then.as_of is not None and then.as_of.year == 2020
    current = [h.target for h in then.hits if h.kind == "fact" and h.current]
    assert current == ["Acme"], then.hits
    assert [h.target for h in kn.recall("Where does Alice work?", search_type="auto").hits
            if h.kind == "fact" and h.current] == ["Globex"]


def test_recall_makes_no_model_call_and_needs_a_model_for_answers(kn: Kenning) -> None:
    from kenning.errors import ModelNotConfiguredError

    kn.remember("Alice works at Acme.")
    assert kn.recall("Alice").usage.chat_calls == 0
    with pytest.raises(ModelNotConfiguredError):
        kn.recall("Where does Alice work?", answer=True)


def test_reembed_switches_the_store_to_a_new_embedder(store_url: str) -> None:
    with Kenning(store_url) as kn:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris."])
    small = HashingEmbedder(dimension=64)
    counts = Kenning.reembed(store_url, embedder=small)
    assert counts["chunk"] == 2 and counts["fact"] == 2 and counts["entity"] == 4
    with pytest.raises(EmbedderMismatchError):
        Kenning(store_url)
    reopened = HashingEmbedder(dimension=64)
    reopened.recall_weight = 1.0  # search with its vectors too (recall skips them by default)
    with Kenning(store_url, embedder=reopened) as kn:
        hits = kn.recall("Where does Alice work?", search_type="facts").hits
        assert hits[0].target == "Acme" and "vector" in hits[0].lanes


def test_a_reembedded_store_opens_with_its_own_embedder(db_path: str) -> None:
    from click.testing import CliRunner

    from kenning.cli import cli

    with Kenning(db_path) as kn:
        kn.remember("Alice works at Acme.")
    Kenning.reembed(db_path, embedder="local:all-MiniLM-L6-v2")
    with Kenning(db_path) as kn:  # no KENNING_EMBEDDER: the store says which one
        assert kn._engine.embedder.name == "local:all-MiniLM-L6-v2"
        assert kn.recall("Where does Alice work?", search_type="facts").hits[0].target == "Acme"
    result = CliRunner().invoke(cli, ["--db", db_path, "stats"])
    assert result.exit_code == 0 and "local:all-MiniLM-L6-v2" in result.output, result.output
    with pytest.raises(EmbedderMismatchError, match="reembed"):  # asking for another is still an error
        Kenning(db_path, embedder="hashing")


def test_an_extractor_extends_the_base_class_and_its_batch_methods_loop(store_url: str) -> None:
    class Duck:  # the right method, but not an Extractor: a clear error, not a late AttributeError
        def extract(self, chunks, *, reference_time, usage) -> Extraction:  # noqa: ANN001
            return Extraction()

    with pytest.raises(ConfigurationError, match="Extractor"):
        Kenning(store_url, extractor=Duck())

    class Counting(Extractor):
        calls = 0

        def extract(self, chunks, *, reference_time, usage) -> Extraction:  # noqa: ANN001
            Counting.calls += 1
            return Extraction()

    with Kenning(store_url, extractor=Counting()) as kn:
        result = kn.remember(["Alice works at Acme.", "Bob lives in Paris."])
    assert Counting.calls == 2 and len(result.no_facts) == 2  # one extract per memory, never grouped
