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
    """Past 1,000 matching rows in a table of more than 5,000, the SQLite lane ranks only the
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


def _chunks(kn: Kenning, dataset: str, texts: list[str], start: int = 0) -> None:
    from kenning.store.base import ChunkRow

    store = kn._engine.store
    (memory,) = kn.add(f"owner of {dataset}", dataset=dataset)
    with store.transaction() as txn:
        txn.insert_chunks([ChunkRow(f"{dataset}{start + i}", memory, dataset, i, t, 3) for i, t in enumerate(texts)])


def _traced(kn: Kenning, dataset: str, terms: list[str]) -> tuple[list[tuple[str, float]], list[str]]:
    store = kn._engine.store
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        got = _lane(kn, dataset, terms)
    finally:
        store._db.set_trace_callback(None)
    return got, [s for s in statements if "_fts MATCH" in s and "count(*)" not in s]


def _fts5(kn: Kenning, dataset: str, match: str) -> list[tuple[str, float]]:
    """FTS5 ranking every row of the dataset (its token in the query), as the lane must give."""
    from kenning.store.sqlite.dialect import dataset_token

    rows = kn._engine.store._db.execute(
        "SELECT c.text, f.rank FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid WHERE chunks_fts MATCH ?"
        " ORDER BY f.rank LIMIT 20", (f'ds : "{dataset_token(dataset)}" AND text : ({match})',))
    return sorted(((t, round(-r, 9)) for t, r in rows), key=lambda r: (-r[1], r[0]))


def test_sqlite_searches_a_large_dataset_without_its_token_and_a_small_one_with_it(tmp_path):
    """A dataset's token in a full-text query walks all of that dataset's rows: a large dataset
    is searched without it (fetching more rows, then keeping its own), a small one with it;
    both rank exactly as FTS5 does with the token."""
    with Kenning(str(tmp_path / "d.db")) as kn:
        _chunks(kn, "big", [f"harbor crane {i}" if i % 7 == 0 else f"filler line {i}" for i in range(6000)])
        _chunks(kn, "small", [f"harbor boat {i}" for i in range(40)])
        big, big_sql = _traced(kn, "big", ["harbor", "crane"])
        small, small_sql = _traced(kn, "small", ["harbor", "boat"])
        assert [(t, round(s, 9)) for t, s in big] == _fts5(kn, "big", '"harbor" OR "crane"')
        assert [(t, round(s, 9)) for t, s in small] == _fts5(kn, "small", '"harbor" OR "boat"')
    assert big and small
    assert big_sql and not any("ds :" in s for s in big_sql), big_sql
    assert small_sql and all("ds :" in s for s in small_sql), small_sql


def test_sqlite_asks_again_with_the_token_when_other_datasets_fill_the_fetched_rows(tmp_path):
    """When the rows fetched without the token are mostly another dataset's, the query runs
    again with it: the large dataset still gets its own best rows, none of the other's."""
    with Kenning(str(tmp_path / "d.db")) as kn:
        _chunks(kn, "big", [f"filler line {i}" for i in range(5990)] + [f"harbor line {i}" for i in range(10)])
        _chunks(kn, "loud", [f"harbor harbor {i}" for i in range(900)])
        got, sql = _traced(kn, "big", ["harbor"])
        want = _fts5(kn, "big", '"harbor"')
    assert [(t, round(s, 9)) for t, s in got] == want
    assert len(got) == 10 and all(t.startswith("harbor line") for t, _ in got)
    assert [("ds :" in s) for s in sql] == [False, True], sql


def test_sqlite_drops_a_term_in_a_fifth_of_a_large_tables_rows(tmp_path):
    """In a table past 5,000 rows a term in more than a fifth of them is left out while a
    rarer one remains (its idf is small and ranking its rows is most of the cost)."""
    with Kenning(str(tmp_path / "c.db")) as kn:
        _chunks(kn, "main", [f"works at the port {i}" if i % 3 else f"idle row {i}" for i in range(6000)]
                + ["Rosa works at the port", "Rosa sings"])
        got, sql = _traced(kn, "main", ["rosa", "works"])
    assert {t for t, _ in got} == {"Rosa sings", "Rosa works at the port"}
    assert sql and all('"works"' not in s for s in sql), sql


def test_sqlite_fills_from_the_newest_rows_when_the_rare_terms_hold_too_few(tmp_path):
    """When the rows of the rarest terms are fewer than asked for and the other terms match
    more than 1,000 rows, the rest of the list comes from the newest 400 of those rows, ranked
    by BM25, after every rare row: not from ranking all of them."""
    with Kenning(str(tmp_path / "f.db")) as kn:
        _chunks(kn, "main", [f"filler line {i}" for i in range(7000)]
                + [f"{'short ' if i % 2 else ''}petrov note {i}" for i in range(1500)]
                + [f"petrov revtri {i}" for i in range(5)])
        got, sql = _traced(kn, "main", ["revtri", "petrov"])
    texts = [t for t, _ in got]
    assert texts[:5] == sorted(texts[:5]) and all("revtri" in t for t in texts[:5])
    assert len(got) == 20 and not any("revtri" in t for t in texts[5:])
    newest = {f"{'short ' if i % 2 else ''}petrov note {i}" for i in range(1100, 1500)}
    assert set(texts[5:]) <= newest
    assert all("short" not in t for t in texts[5:]), texts  # the best of them: the shorter rows
    assert not any("ORDER BY rank" in q and '("petrov")' in q and "revtri" not in q for q in sql), sql
    assert any("ORDER BY rowid DESC" in q for q in sql), sql


def test_sqlite_reads_a_file_store_through_a_memory_map(tmp_path):
    """A file store maps the database for reads (a fifth less CPU per recall at 100k)."""
    with Kenning(str(tmp_path / "m.db")) as kn:
        assert kn._engine.store._db.execute("PRAGMA mmap_size").fetchone()[0] >= 1 << 30


def test_sqlite_fills_first_with_the_rows_holding_all_the_other_terms(tmp_path):
    """Where the rare rows are too few, the rows holding every other term come next (a
    person's first and last name), before any newest row that holds only one of them."""
    with Kenning(str(tmp_path / "g.db")) as kn:
        _chunks(kn, "main", [f"mila varga note {i}" for i in range(300)] + [f"filler line {i}" for i in range(7000)]
                + [f"mila other {i}" for i in range(700)] + [f"varga other {i}" for i in range(700)]
                + [f"polfal mila varga {i}" for i in range(5)])
        got, sql = _traced(kn, "main", ["polfal", "mila", "varga"])
    texts = [t for t, _ in got]
    assert len(texts) == 20 and all(t.startswith("polfal") for t in texts[:5])
    assert all(t.startswith("mila varga note") for t in texts[5:]), texts
    assert any('"mila" AND "varga"' in q for q in sql), sql


def test_sqlite_fetches_by_the_share_of_the_dataset_it_saw_last(tmp_path):
    """Without the token, a query fetches a quarter more rows than asked when the dataset held
    every row fetched last time, more when it held fewer; the list is FTS5's either way."""
    import re as _re

    with Kenning(str(tmp_path / "s.db")) as kn:
        for name, pad in (("big", "x x x "), ("twin", "")):  # the twin's rows rank first
            _chunks(kn, name, [f"harbor {pad}{i}" if i % 20 == 0 else f"filler {i}" for i in range(6000)])
        first, sql1 = _traced(kn, "big", ["harbor"])
        second, sql2 = _traced(kn, "big", ["harbor"])
        want = _fts5(kn, "big", '"harbor"')
    assert [(t, round(s, 9)) for t, s in first] == want == [(t, round(s, 9)) for t, s in second]
    limits = [int(_re.search(r"LIMIT (\d+)\)", q)[1]) for q in (sql1[0], sql2[0])]
    assert limits == [25, 80], limits  # a quarter more, then four times: none were big's


def test_sqlite_a_common_name_still_scores_the_rows_of_a_rare_one(tmp_path, monkeypatch):
    """A term too common to rank by (a first name among a million rows) is not forgotten: the
    rows holding a kept term and it are ranked with its score, so the person asked about leads
    the namesakes who share only the rare middle name. (Thresholds made small: the common cap
    is 5,000 rows, and joining starts past 100,000.)"""
    import kenning.store.sqlite.store as sqlite_store

    monkeypatch.setattr(sqlite_store, "_COMMON_ROWS", 50)
    with Kenning(str(tmp_path / "n.db")) as kn:
        _chunks(kn, "main", [f"samir other {i}" for i in range(300)] + [f"tanaka other {i}" for i in range(300)]
                + [f"grixan {i}" for i in range(40)] + ["Samir Grixan Tanaka likes gardening"]
                + [f"filler line {i}" for i in range(7400)])
        got, sql = _traced(kn, "main", ["samir", "grixan", "tanaka"])
    assert got[0][0] == "Samir Grixan Tanaka likes gardening", got[:3]
    assert any('("grixan") AND ("samir" OR "tanaka")' in q for q in sql), sql


def test_postgresql_picks_the_rarest_terms_by_rarest_s_rule() -> None:
    """The lane picks the terms that bound the candidates as ``rarest`` does, from the row counts
    its statement reads (set in ``lexeme_stats`` inside a transaction that is rolled back) around
    each of rarest's limits, and only in a table past ``BOUNDED_FROM_ROWS``."""
    import itertools

    from kenning.store.postgres import lexical

    words = ["zqa", "zqb", "zqc", "zqd"]
    sizes = (0, 7, 20, 40, 90, 300, 700, 999, 1500)
    with Kenning(pg_url()) as kn, kn._engine.store._conn() as conn:
        query = lexical._statement(conn, "chunks", lexical._TERMS)
        checked = picked = 0
        for counts in itertools.islice(itertools.product(sizes, repeat=len(words)), 0, None, 7):
            for table_rows in (lexical.BOUNDED_FROM_ROWS, lexical.BOUNDED_FROM_ROWS + 1):
                with conn.transaction(force_rollback=True):
                    conn.execute("INSERT INTO lexical_stats (tbl, dataset, rows, tokens) VALUES ('chunks', 'main', %s, %s)",
                                 (table_rows, 5 * table_rows))
                    conn.execute("INSERT INTO lexeme_stats (tbl, lexeme, dataset, rows)"
                                 " SELECT 'chunks', w, 'main', n FROM unnest(%s::text[], %s::int[]) AS u(w, n)",
                                 (words, list(counts)))
                    stats = conn.execute(query, {"terms": words, "common": lexical.COMMON_ROWS, "tbl": "chunks",
                                                 "extra": 1}).fetchall()
                case, kept, rare, _ = lexical.plan(stats, 30)
                got = [t["term"] for t in rare]
                rule = lexical.rarest(words, dict(zip(words, counts)), 30)
                expected = sorted(rule or [], key=words.index) if table_rows > lexical.BOUNDED_FROM_ROWS else []
                assert got == expected, (counts, table_rows)
                assert case == ("rare" if expected else "other")
                assert [t["term"] for t in kept] == words  # no term is common: all kept
                checked += 1
                picked += bool(got)
    assert checked > 1000 and picked > 100


def test_postgresql_counts_a_terms_positions_as_its_frequency() -> None:
    """A term's frequency in a row is the number of its lexeme's positions (ts_rank_cd with
    every weight 1 counts them), up to PostgreSQL's 256 positions a lexeme; lexemes holding
    quotes and backslashes are matched as themselves."""
    import random

    from kenning.store.postgres import lexical

    rng = random.Random(5)
    words = ["alpha", "beta", "run", "running", "http://a.com/it's", "x-ray", "café"]
    texts = [" ".join(rng.choice(words[:rng.randint(1, len(words))]) for _ in range(n))
             for n in (1, 3, 40, 300, 2000) for _ in range(4)]
    with Kenning(pg_url()) as kn, kn._engine.store._conn() as conn:
        rows = conn.execute(
            "SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS n, t.tsv"
            " FROM (SELECT to_tsvector('kenning_english', x) AS tsv FROM unnest(%s::text[]) AS x) t, unnest(t.tsv) AS u",
            (texts,)).fetchall()
        counted = conn.execute(
            "SELECT array_agg(ts_rank_cd(ARRAY[1, 1, 1, 1]::real[], u.tsv, u.q::tsquery, 0) ORDER BY u.i) AS n"
            " FROM unnest(%s::tsvector[], %s::text[]) WITH ORDINALITY AS u(tsv, q, i)",
            ([r["tsv"] for r in rows], [lexical._quoted(r["lexeme"]) for r in rows])).fetchone()["n"]
        odd = ["it's", "back\\slash", "a:*b", "two words", "'", "\\"]
        matched = conn.execute("SELECT array_agg(array_to_tsvector(ARRAY[x]) @@ q::tsquery) AS m"
                               " FROM unnest(%s::text[], %s::text[]) AS u(x, q)",
                               (odd, [lexical._quoted(x) for x in odd])).fetchone()["m"]
    assert {"/it's", "café", "run"} <= {r["lexeme"] for r in rows}
    assert counted == [r["n"] for r in rows]
    assert max(counted) > 200
    assert matched == [True] * len(odd)


def test_a_term_of_several_lexemes_is_matched_and_counted_as_a_phrase(tmp_path) -> None:
    """A hyphenated term is a phrase on both stores: the rows holding its words apart do not
    match it, and both stores score the rows that hold it alike (beside a term of one word)."""
    corpus = {"main": ["The well-known chess club meets in Berlin.", "A well-known well-known chess player.",
                       "Known well for chess, not for piano.", "Dana plays chess.", "Evan keeps bees."]}
    results = []
    for url in (f"sqlite:///{tmp_path / 'k.db'}", pg_url()):
        with Kenning(url) as kn:
            kn.remember(corpus["main"], dataset="main")
            results.append((_lane(kn, "main", ["well-known"]), _lane(kn, "main", ["well-known", "chess"])))
    (phrase, both), (pg_phrase, pg_both) = results
    assert sorted(t for t, _ in pg_phrase) == ["A well-known well-known chess player.",
                                               "The well-known chess club meets in Berlin."]
    assert [t for t, _ in pg_phrase] == [t for t, _ in phrase]
    assert [t for t, _ in pg_both] == [t for t, _ in both] and len(both) == 4
    assert [s for _, s in pg_both] == pytest.approx([s for _, s in both], rel=1e-9)


@pytest.mark.parametrize("apples", [30, 70], ids=["tail-rows-enter-the-list", "tail-rows-cannot"])
def test_rows_of_the_most_common_term_alone_are_ranked_as_if_all_were_scored(store_url: str, apples: int) -> None:
    """With 30 "apple" rows and long "zebra" rows, the zebra rows score below what a row holding
    only "apple" may reach, so those rows must be read and lead the list; with 70 and short
    zebra rows the common term's rows cannot reach the 20th best (PostgreSQL then leaves them
    unread). Either way the list is the one scoring every matching row gives."""
    long = apples == 30
    zebras = [f"zebra {' '.join(f'w{j}' for j in range(12 + i))}" if long else f"zebra w{i}" for i in range(22)]
    zebras += [f"zebra apple row {i}" for i in range(3)]
    corpus = {"main": zebras + [f"{'apple ' * (1 + i % 3)}fruit {i}" for i in range(apples - 3)]
              + [f"other text {i}" for i in range(100)]}
    with Kenning(store_url) as kn:
        kn.remember(corpus["main"], dataset="main")
        got = _lane(kn, "main", ["zebra", "apple"])
    want = expected("main", ["zebra", "apple"], corpus)[:20]
    assert [t for t, _ in got] == [t for t, _ in sorted(want, key=lambda r: (-round(r[1], 9), r[0]))]
    assert [s for _, s in got] == pytest.approx(sorted((s for _, s in want), reverse=True), rel=1e-9)
    if long:
        assert sum(t.startswith("apple") for t, _ in got) > 10
    else:
        assert all(t.startswith("zebra") for t, _ in got)


def test_postgresql_scores_nothing_where_its_statistics_saw_no_rows() -> None:
    """The lane reads the terms' statistics, then scores rows, in two statements: a row committed
    between them (statistics of an empty table: no average length) is left to the next recall,
    not scored against them (which failed on a missing score)."""
    from kenning.store.postgres import lexical

    with Kenning(pg_url()) as kn:
        kn.remember(["Hana keeps bees.", "Ivan keeps a taxi."], dataset="main")
        with kn._engine.store._conn() as conn:
            assert [t for t, _ in _lane(kn, "main", ["keeps"])]
            with conn.transaction(force_rollback=True):
                conn.execute("DELETE FROM lexical_stats")  # as the first statement saw it
                conn.execute("DELETE FROM lexeme_stats")
                assert lexical.bm25(conn, "chunks", "main", ["keeps", "bees"], 10) == []
