"""The PostgreSQL lexical lane: Okapi BM25 computed the way SQLite's FTS5 ``bm25()`` computes it,
over a bounded set of candidate rows, in one statement (one round trip a lane).

PostgreSQL's full-text search matches through a GIN index but cannot rank inside it (``ts_rank``
scores every matching row, and is not BM25). Here:

- each query term is parsed by ``phraseto_tsquery`` (a bound parameter, never query syntax) with
  the store's text search configuration (``schema.TS_CONFIG``), so it is stemmed as the
  rows were; a term that stems to several lexemes is matched as a phrase, as FTS5 does;
- each term's row count n is read (over every dataset, as FTS5 counts it)
  from ``lexeme_stats``, kept by triggers as FTS5 keeps it in its index (a phrase's rows are
  counted through the GIN index, at most ``COMMON_ROWS`` of them). Terms in ``COMMON_ROWS``
  rows or more are dropped while a rarer one remains (as the SQLite lane does);
- in a table of more than ``BOUNDED_FROM_ROWS`` rows, when the kept terms match more than
  ``SCORED_ROWS`` rows, only rows holding one of the rarest terms are scored (``rarest``, which
  the statement applies in window sums over the kept terms ordered by count: the rule the SQLite
  lane had before it gained a common share of the table and a fill from its
  newest rows): every row that also holds another kept term (up to ``SCORED_ROWS``), and
  the first ``4 × limit`` of the dataset's rows that hold only rare ones (SQLite ranks all of
  those, so a row holding only the rarest terms may be missed here where SQLite lists it), each
  with its full score;
- the dataset's candidate rows are scored: each kept term's frequency in a row comes from the
  row's ``tsv`` in one pass for all terms (``setweight`` + ``ts_filter`` keep the terms' lexemes
  with their positions, joined to their terms by lexeme), the row's length in tokens from its
  ``tsv_len`` column, the table's size N and average length from ``lexical_stats``, kept by
  triggers;
- score = Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), idf = ln((N − n + 0.5)/(n + 0.5))
  floored at 1e-6, k1 = 1.2, b = 0.75: FTS5's constants and formula, with N, n and the average
  length over the whole table, every dataset, as FTS5 counts them.

When every term of a query is that common, at most ``COMMON_ROWS`` of the dataset's rows holding
each are scored (SQLite scores them all).

Where every matching row is to be scored, the rows holding only the most common term are read
only if they could enter the list (MaxScore: such a row scores below that term's idf × (k1 + 1));
the list is the same, and a common word beside a name no longer costs a read of its thousands
of rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql
from psycopg.rows import DictRow

from .schema import TS_CONFIG

__all__ = ["BOUNDED_FROM_ROWS", "COMMON_ROWS", "SCORED_ROWS", "bm25", "rarest"]

#: a search term in this many rows or more is dropped while a rarer term remains
COMMON_ROWS = 5000
#: past this many matching rows, only rows holding one of the rarest terms are scored...
SCORED_ROWS = 1000
#: ...in a table of more rows than this (a smaller one scores every row it matches)
BOUNDED_FROM_ROWS = 20_000
#: FTS5's bm25() constants
_K1, _B = 1.2, 0.75
#: SQLite's full-text rows hold one more token, naming their dataset, which its bm25() counts in
#: every row's length; adding it here keeps the two stores' scores equal
_DATASET_TOKENS = 1

#: the kept terms of a query (``scoring``: each with its idf and whether it is one of the rarest
#: that bound the candidates): each term's row count (read from ``lexeme_stats`` for a term of
#: one lexeme, counted up to the cap through the index for a phrase), the terms kept, and
#: ``rarest``'s rule in window sums over the kept terms ordered by count
_TERMS = """
WITH totals AS MATERIALIZED (
    SELECT coalesce(sum(rows), 0)::float8 AS n,
           sum(tokens)::float8 / nullif(sum(rows), 0) + %(extra)s AS avglen
    FROM lexical_stats WHERE tbl = %(tbl)s
), terms AS MATERIALIZED (
    SELECT u.i, q.q, l.lexemes, numnode(q.q) = 1 AND cardinality(l.lexemes) = 1 AS single,
           (CASE WHEN numnode(q.q) = 1
            THEN (SELECT coalesce(sum(s.rows), 0) FROM lexeme_stats s WHERE s.tbl = %(tbl)s AND s.lexeme = l.lexemes[1])
            ELSE (SELECT count(*) FROM (SELECT FROM {table} r WHERE r.tsv @@ q.q LIMIT %(common)s) c) END)::float8 AS hits
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, i),
         LATERAL phraseto_tsquery({cfg}::regconfig, u.term) AS q(q),
         LATERAL (SELECT tsvector_to_array(to_tsvector({cfg}::regconfig, u.term)) AS lexemes) l
    WHERE numnode(q.q) > 0
), kept AS MATERIALIZED (
    SELECT t.* FROM terms t
    WHERE t.hits < %(common)s OR NOT EXISTS (SELECT FROM terms WHERE hits < %(common)s)
), ranked AS (
    SELECT i, hits, coalesce(sum(hits) OVER before, 0) AS rows_before,
           row_number() OVER (ORDER BY hits, i) AS rank, count(*) OVER () AS present, sum(hits) OVER () AS total
    FROM kept WHERE hits > 0
    WINDOW before AS (ORDER BY hits, i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
), picked AS (
    SELECT i, hits, total, rank < present AND bool_and(NOT (
               (rows_before >= %(limit)s AND rows_before + hits > %(scored)s) OR rows_before >= 4 * %(limit)s))
           OVER (ORDER BY hits, i ROWS UNBOUNDED PRECEDING) AS pick
    FROM ranked
), bound AS MATERIALIZED (
    SELECT coalesce((SELECT n FROM totals) > %(bounded)s AND max(total) > %(scored)s
                    AND coalesce(sum(hits) FILTER (WHERE pick), 0) >= %(limit)s, false) AS on,
           -- the most common of two or more matching terms, none in COMMON_ROWS rows
           CASE WHEN count(*) >= 2 AND NOT EXISTS (SELECT FROM kept WHERE hits >= %(common)s)
                THEN (SELECT i FROM picked ORDER BY hits DESC, i DESC LIMIT 1) END AS tail
    FROM picked
), scoring AS MATERIALIZED (
    SELECT k.i, k.q, k.lexemes, k.single, coalesce(p.pick AND b.on, false) AS rare,
           NOT b.on AND k.i IS NOT DISTINCT FROM b.tail AS tail,
           CASE WHEN idf > 0 THEN idf ELSE 1e-6 END AS idf
    FROM kept k LEFT JOIN picked p ON p.i = k.i, bound b, totals,
         ln(greatest(totals.n - k.hits + 0.5, 0.5) / (k.hits + 0.5)) AS idf
)
"""

#: the score of each row of a candidate set ``{rows}``: each term's frequency in the row, from
#: one pass over the row's lexemes of every term (setweight marks them, ts_filter keeps only
#: them, so a long row is never unnested whole; a term of several lexemes counts its rarest
#: one, where the row holds its phrase), summed in the terms' order as FTS5 sums them
_SCORES = """
    SELECT f.id, sum(f.idf * f.tf * (%(k1)s + 1)
                     / (f.tf + %(k1)s * (1 - %(b)s + %(b)s * (f.len + %(extra)s) / totals.avglen)) ORDER BY f.i) AS score
    FROM totals, (
        SELECT c.id, k.i, min(c.tsv_len) AS len, min(k.idf) AS idf, min(coalesce(array_length(u.positions, 1), 1)) AS tf
        FROM {rows} c, queries, LATERAL unnest(ts_filter(setweight(c.tsv, 'A', queries.lexemes), '{{a}}')) AS u
        JOIN words w ON w.lexeme = u.lexeme JOIN scoring k ON k.i = w.i
        GROUP BY c.id, k.i
        HAVING count(*) = max(cardinality(k.lexemes))
           AND (bool_and(k.single) OR bool_or(NOT k.single AND c.tsv @@ k.q))) AS f
    GROUP BY f.id
"""

#: the dataset's best rows for the ORed terms, in one statement. The rows holding only the
#: ``tail`` term (the most common, when every matching row is to be scored) are read only when
#: they could enter the list: each scores below that term's idf × (k1 + 1), so when the rows
#: holding the other terms fill the list with scores at least that high, the list is the one
#: scoring every row gives, without reading them (MaxScore)
_BM25 = _TERMS + """, words AS MATERIALIZED (
    SELECT x AS lexeme, i FROM scoring, unnest(lexemes) AS x
), queries AS MATERIALIZED (
    SELECT (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery FROM scoring WHERE rare) AS rare,
           (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery FROM scoring WHERE NOT rare AND NOT tail) AS other,
           (SELECT q FROM scoring WHERE tail) AS tail,
           (SELECT idf * (%(k1)s + 1) FROM scoring WHERE tail) AS tail_bound,
           (SELECT array_agg(DISTINCT lexeme) FROM words) AS lexemes,
           -- no kept term is in COMMON_ROWS rows, so none fills its limit: their rows in one scan
           NOT EXISTS (SELECT FROM kept WHERE hits >= %(common)s) AS uncapped
), candidates AS MATERIALIZED (
    SELECT DISTINCT ON (id) id, tsv, tsv_len FROM (
        (SELECT r.id, r.tsv, r.tsv_len FROM {table} r, queries q
         WHERE q.rare IS NULL AND q.uncapped AND r.tsv @@ q.other AND r.dataset = %(dataset)s)
        UNION ALL
        (SELECT r.id, r.tsv, r.tsv_len FROM scoring k, queries q, LATERAL (
            SELECT id, tsv, tsv_len FROM {table} r WHERE r.tsv @@ k.q AND r.dataset = %(dataset)s LIMIT %(common)s) r
         WHERE q.rare IS NULL AND NOT q.uncapped)
        UNION ALL
        (SELECT r.id, r.tsv, r.tsv_len FROM {table} r, queries q
         WHERE q.rare IS NOT NULL AND r.tsv @@ (q.rare && q.other) AND r.dataset = %(dataset)s LIMIT %(scored)s)
        UNION ALL
        (SELECT r.id, r.tsv, r.tsv_len FROM {table} r, queries q
         WHERE q.rare IS NOT NULL AND r.tsv @@ q.rare AND r.dataset = %(dataset)s LIMIT %(alone)s)) AS found
    ORDER BY id
), scores AS MATERIALIZED (""" + _SCORES.replace("{rows}", "candidates") + """), threshold AS MATERIALIZED (
    SELECT CASE WHEN count(*) >= %(limit)s THEN min(score) END AS score
    FROM (SELECT score FROM scores ORDER BY score DESC LIMIT %(limit)s) s
), tail_rows AS MATERIALIZED (
    SELECT r.id, r.tsv, r.tsv_len FROM {table} r, queries q, threshold t
    WHERE q.tail IS NOT NULL AND (t.score IS NULL OR q.tail_bound * (1 + 1e-9) > t.score)
      AND r.tsv @@ q.tail AND NOT r.tsv @@ q.other AND r.dataset = %(dataset)s
)
SELECT id, score FROM (SELECT * FROM scores UNION ALL""" + _SCORES.replace("{rows}", "tail_rows") + """) s
ORDER BY score DESC, id LIMIT %(limit)s
"""


def rarest(terms: list[str], counts: dict[str, int], limit: int) -> list[str] | None:
    """When the terms match more than ``SCORED_ROWS`` rows: the rarest ones, leaving at least
    one, up to four times ``limit`` rows (or fewer, where the next term would pass
    ``SCORED_ROWS``) and at least ``limit``; None when every matching row is scored. The
    SQLite store's earlier rule, which ``bm25``'s statement applies (``_TERMS``)."""
    present = sorted((t for t in terms if counts[t]), key=lambda t: counts[t])
    if sum(counts[t] for t in present) <= SCORED_ROWS:
        return None
    rare, rows = [], 0
    for term in present[:-1]:
        if rows >= limit and rows + counts[term] > SCORED_ROWS:
            break
        rare.append(term)
        rows += counts[term]
        if rows >= 4 * limit:
            break
    return rare if rows >= limit else None


def bm25(conn: psycopg.Connection[DictRow], table: str, dataset: str, terms: Sequence[str],
         limit: int) -> list[tuple[str, float]]:
    """(id, score) of the dataset's best rows of ``table`` for the ORed ``terms``, best first."""
    query = sql.SQL(_BM25).format(cfg=sql.Literal(TS_CONFIG), table=sql.Identifier(table))
    rows = conn.execute(query, {
        "terms": list(dict.fromkeys(terms)), "dataset": dataset, "common": COMMON_ROWS, "scored": SCORED_ROWS,
        "bounded": BOUNDED_FROM_ROWS, "alone": 4 * limit, "extra": _DATASET_TOKENS, "tbl": table, "k1": _K1,
        "b": _B, "limit": limit,
    }).fetchall()
    return [(r["id"], float(r["score"])) for r in rows]
