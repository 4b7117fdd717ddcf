"""The lexical lane ranks alike on both stores: Okapi BM25 as SQLite's FTS5 ``bm25()`` computes it
(k1 1.2, b 0.75, idf ln((N − n + 0.5)/(n + 0.5)) floored at 1e-6, every token of a row in its
length, stop words too), checked on each backend against the formula written out below.

SQLite stems with Porter, PostgreSQL with Snowball english (docs/postgres.md); the corpus uses
words both stem alike."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from kenning import Kenning
from tests.pg import pg_url

CORPUS = {
    "main": [
        "Alice moved to Berlin in the spring.",
        "Bob moves boxes every morning and Bob moves chairs.",
        "The well-known chess club meets in Berlin on Sundays.",
        "Carol is moving her chess set and her old piano to the new flat.",
        "Dana plays chess.",
        "Evan likes quiet mornings.",
        "Fiona writes about music, chess openings, endgames, travel and old maps of Berlin.",
        "George sold the piano.",
        "Hana keeps bees.",
        "Ivan drives a taxi at night.",
        "Julia paints boats.",
        "Karl bakes bread.",
    ],
    "other": ["Berlin chess night.", "Lena moved the piano."],
}
QUERIES = [["moving"], ["chess", "berlin"], ["piano", "chess"], ["alice", "moved", "berlin"], ["night"]]
#: both stemmers agree on every word above; these are the query's words that they change
STEM = {"moved": "move", "moves": "move", "moving": "move"}


def _tokens(text: str) -> list[str]:
    return [STEM.get(w, w) for w in re.findall(r"[a-z0-9]+", text.lower())]


def expected(dataset: str, terms: list[str], corpus: dict[str, list[str]]) -> list[tuple[str, float]]:
    """FTS5's bm25() over the whole table (every dataset); a row's length counts the one token
    that names its dataset in SQLite's full-text row."""
    rows = [(ds, text, Counter(_tokens(text))) for ds, texts in corpus.items() for text in texts]
    total = len(rows)
    average = sum(sum(c.values()) + 1 for _, _, c in rows) / total
    out = []
    for ds, text, counts in rows:
        length = sum(counts.values()) + 1
        score = 0.0
        for term in terms:
            stem = _tokens(term)[0]
            hits = sum(1 for _, _, c in rows if stem in c)
            idf = math.log((total - hits + 0.5) / (hits + 0.5))
            idf = idf if idf > 0 else 1e-6
            tf = counts[stem]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if ds == dataset and score > 0:
            out.append((text, score))
    return sorted(out, key=lambda r: -r[1])


def _lane(kn: Kenning, dataset: str, terms: list[str], kind: str = "chunk") -> list[tuple[str, float]]:
    store = kn._engine.store
    hits = store.lexical(dataset, kind, terms, 20)
    ids = [h.id for h in hits]
    if kind == "chunk":
        texts = {c.id: c.text for c in store.get_chunks(ids)}
    elif kind == "fact":
        texts = {f.id: f.description for f in store.get_facts(ids)}
    else:
        texts = {e.id: " ".join([e.name, *e.aliases, e.description]) for e in store.get_entities(ids)}
    # Rows of equal score may come in any order: ties are listed by text.
    return sorted(((texts[h.id], h.score) for h in hits), key=lambda r: (-round(r[1], 9), r[0]))


def _fill(kn: Kenning) -> None:
    for dataset, texts in CORPUS.items():
        kn.remember(texts, dataset=dataset)


@pytest.mark.parametrize("terms", QUERIES, ids=" ".join)
def test_chunks_rank_by_fts5_bm25(store_url: str, terms: list[str]) -> None:
    with Kenning(store_url) as kn:
        _fill(kn)
        got = _lane(kn, "main", terms)
    want = expected("main", terms, CORPUS)
    assert [t for t, _ in got] == [t for t, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_statistics_follow_deletes(store_url: str) -> None:
    with Kenning(store_url) as kn:
        _fill(kn)
        piano = kn.recall("George sold the piano", search_type="chunks_lexical").hits[0]
        kn.delete(piano.memory_ids[0])
        got = _lane(kn, "main", ["piano", "chess"])
    corpus = {**CORPUS, "main": [t for t in CORPUS["main"] if t != "George sold the piano."]}
    want = expected("main", ["piano", "chess"], corpus)
    assert [t for t, _ in got] == [t for t, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_both_stores_give_the_same_order_and_scores(tmp_path) -> None:  # noqa: ANN001
    results = []
    for url in (f"sqlite:///{tmp_path / 'k.db'}", pg_url()):
        with Kenning(url) as kn:
            _fill(kn)
            results.append([_lane(kn, dataset, terms, kind) for dataset in CORPUS for terms in QUERIES
                            for kind in ("chunk", "fact", "entity")])
    sqlite, postgres = results
    assert sum(map(len, sqlite)) > 30
    assert [[t for t, _ in r] for r in postgres] == [[t for t, _ in r] for r in sqlite]
    for a, b in zip(sqlite, postgres):
        assert [s for _, s in b] == pytest.approx([s for _, s in a], rel=1e-9)


def test_a_store_copied_to_postgresql_ranks_as_before(tmp_path) -> None:  # noqa: ANN001
    from kenning.store import open_store
    from kenning.store.copy import copy_store

    source, target = f"sqlite:///{tmp_path / 'k.db'}", pg_url()
    with Kenning(source) as kn:
        _fill(kn)
        before = [_lane(kn, "main", terms) for terms in QUERIES]
    a, b = open_store(source), open_store(target)
    try:
        assert copy_store(a, b, batch=5).ok  # several batches: the statistics add up
    finally:
        a.close()
        b.close()
    with Kenning(target) as kn:
        after = [_lane(kn, "main", terms) for terms in QUERIES]
    assert [[t for t, _ in r] for r in after] == [[t for t, _ in r] for r in before]
    for x, y in zip(before, after):
        assert [s for _, s in y] == pytest.approx([s for _, s in x], rel=1e-9)


def test_sqlite_ranks_only_the_rarest_terms_rows_in_a_large_table(tmp_path):
    """Past 1,000 matching rows in a table of more than 20,000, the SQLite lane ranks only the
    rows that hold the rarest terms, each with its full BM25 score: the same list as FTS5
    ranking every row, where those rows lead."""
    from kenning.store.base import ChunkRow

    texts = ([f"common filler row {i}" for i in range(1100)] + [f"rare common row {i}" for i in range(25)]
             + [f"rare alone row {i}" for i in range(25)] + [f"other text {i}" for i in range(19_000)])
    with Kenning(str(tmp_path / "m.db")) as kn:
        store = kn._engine.store
        (memory,) = kn.add("one memory owns every chunk")
        with store.transaction() as txn:
            txn.insert_chunks([ChunkRow(f"c{i}", memory, "main", i, t, 3) for i, t in enumerate(texts)])
        match = 'text : ("common" OR "rare")'
        every = [(r[0], round(-r[1], 9)) for r in store._db.execute(
            "SELECT c.text, f.rank FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid"
            " WHERE chunks_fts MATCH ? ORDER BY f.rank LIMIT 20", (match,))]
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        got = _lane(kn, "main", ["common", "rare"])
        store._db.set_trace_callback(None)
    assert [(t, round(s, 9)) for t, s in got] == sorted(every, key=lambda r: (-r[1], r[0]))
    assert all(t.startswith("rare common") for t, _ in got)
    assert any('("rare") AND ("common")' in sql for sql in statements), statements


def test_postgresql_scores_only_the_rarest_terms_rows_past_the_bound(monkeypatch):  # noqa: ANN001
    """Past ``SCORED_ROWS`` matching rows in a table of more than ``BOUNDED_FROM_ROWS`` (made
    small here), the PostgreSQL lane scores only rows holding the rarest term, each with its
    full BM25 score: the same list as scoring every matching row, where those rows lead."""
    from kenning.store.base import ChunkRow
    from kenning.store.postgres import lexical

    texts = ([f"common filler row {i}" for i in range(110)] + [f"rare common row {i}" for i in range(25)]
             + [f"rare alone row {i}" for i in range(25)] + [f"other text {i}" for i in range(200)])
    with Kenning(pg_url()) as kn:
        store = kn._engine.store
        (memory,) = kn.add("one memory owns every chunk")
        with store.transaction() as txn:
            txn.insert_chunks([ChunkRow(f"c{i:03d}", memory, "main", i, t, 3) for i, t in enumerate(texts)])
        every = _lane(kn, "main", ["common", "rare"])  # 361 rows: below the bound, all scored
        monkeypatch.setattr(lexical, "BOUNDED_FROM_ROWS", 300)
        monkeypatch.setattr(lexical, "SCORED_ROWS", 100)
        with store._conn() as conn:
            counts = dict(tuple(r.values()) for r in conn.execute(
                "SELECT lexeme, rows FROM lexeme_stats WHERE tbl = 'chunks' AND lexeme IN ('common', 'rare')"))
        assert counts == {"common": 135, "rare": 50}
        assert lexical.rarest(["common", "rare"], counts, 20) == ["rare"]  # so the bound applies
        bounded = _lane(kn, "main", ["common", "rare"])
    assert len(every) == 20 and all(t.startswith("rare common") for t, _ in every)
    assert [t for t, _ in bounded] == [t for t, _ in every]
    assert [s for _, s in bounded] == pytest.approx([s for _, s in every], rel=1e-9)
