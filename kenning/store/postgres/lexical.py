"""The PostgreSQL lexical lane: Okapi BM25 computed the way SQLite's FTS5 ``bm25()`` computes it,
over a bounded set of candidate rows.

PostgreSQL's full-text search matches through a GIN index but cannot rank inside it (``ts_rank``
scores every matching row, and is not BM25). Here one statement does what FTS5 does:

- each query term is parsed by ``phraseto_tsquery`` (a bound parameter, never query syntax) with
  the store's text search configuration (``schema.TS_CONFIG``), so it is stemmed as the
  rows were; a term that stems to several lexemes is matched as a phrase, as FTS5 does;
- the rows holding each term are read through the GIN index, at most ``COMMON_ROWS`` of them,
  which gives its row count n; terms in that many rows are dropped while a rarer one remains
  (as the SQLite lane does). A term whose lexeme the planner's statistics put in twice that many
  rows is known to be that common without reading its rows;
- each kept term's frequency in each of the dataset's rows that hold it comes from the row's
  ``tsv`` (``setweight`` + ``ts_filter`` keep the term's lexemes with their positions), the
  row's length in tokens from its ``tsv_len`` column, the table's size N and average length
  from ``lexical_stats``, kept by triggers;
- score = Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), idf = ln((N − n + 0.5)/(n + 0.5))
  floored at 1e-6, k1 = 1.2, b = 0.75: FTS5's constants and formula, with N, n and the average
  length over the whole table, every dataset, as FTS5 counts them.

So the rows scored are bounded by ``COMMON_ROWS`` per kept term. When every term of a query is
that common, each counts as in ``COMMON_ROWS`` rows and only the first ``COMMON_ROWS`` rows the
index returns for each are scored (SQLite scores them all).
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from .schema import TS_CONFIG

__all__ = ["COMMON_ROWS", "bm25"]

#: a search term in this many rows or more is dropped while a rarer term remains
COMMON_ROWS = 5000
#: FTS5's bm25() constants
_K1, _B = 1.2, 0.75
#: SQLite's full-text rows hold one more token, naming their dataset, which its bm25() counts in
#: every row's length; adding it here keeps the two stores' scores equal
_DATASET_TOKENS = 1

_QUERY = """
WITH surely_common AS (
    -- lexemes the planner's statistics put in twice the cap or more: not worth counting
    SELECT e.lexeme FROM pg_stats s, pg_class c,
         unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
    WHERE s.schemaname = current_schema() AND s.tablename = %(tbl)s AND s.attname = 'tsv'
      AND c.oid = to_regclass(%(tbl)s) AND e.freq * c.reltuples >= 2 * %(common)s
), terms AS MATERIALIZED (
    SELECT u.i, q.q, tsvector_to_array(to_tsvector({cfg}::regconfig, u.term)) AS lexemes
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, i),
         LATERAL phraseto_tsquery({cfg}::regconfig, u.term) AS q(q)
    WHERE numnode(q.q) > 0
), scanned AS (
    SELECT t.*, NOT (t.lexemes && ARRAY(SELECT lexeme FROM surely_common)) AS counts FROM terms t
), matches AS MATERIALIZED (
    SELECT t.i, r.id, r.dataset, r.tsv, r.tsv_len FROM scanned t, LATERAL (
        SELECT id, dataset, tsv, tsv_len FROM {table} r WHERE r.tsv @@ t.q LIMIT %(common)s) r
    WHERE t.counts OR NOT EXISTS (SELECT FROM scanned WHERE counts)
), counted AS (
    SELECT t.*, CASE WHEN t.counts THEN coalesce(n.hits, 0) ELSE %(common)s END AS hits
    FROM scanned t LEFT JOIN (SELECT i, count(*) AS hits FROM matches GROUP BY i) n ON n.i = t.i
), totals AS MATERIALIZED (
    SELECT sum(rows)::float8 AS n, sum(tokens)::float8 / nullif(sum(rows), 0) + %(extra)s AS avglen
    FROM lexical_stats WHERE tbl = %(tbl)s
), kept AS MATERIALIZED (
    SELECT c.i, c.lexemes, CASE WHEN idf > 0 THEN idf ELSE 1e-6 END AS idf
    FROM counted c, totals, ln((totals.n - c.hits + 0.5) / (c.hits + 0.5)) AS idf
    WHERE c.hits < %(common)s OR NOT EXISTS (SELECT FROM counted WHERE hits < %(common)s)
), per_term AS (
    -- each kept term's frequency in each of the dataset's rows that hold it: setweight marks
    -- the term's lexemes, ts_filter keeps only them, so a long row is never unnested whole
    SELECT m.id, k.idf, m.tsv_len + %(extra)s AS len, f.tf
    FROM matches m JOIN kept k ON k.i = m.i, LATERAL (
        SELECT min(coalesce(array_length(u.positions, 1), 1)) AS tf
        FROM unnest(ts_filter(setweight(m.tsv, 'A', k.lexemes), '{{a}}')) AS u) AS f
    WHERE m.dataset = %(dataset)s
)
SELECT p.id, sum(p.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.len / totals.avglen))) AS score
FROM per_term p, totals
GROUP BY p.id ORDER BY score DESC, p.id LIMIT %(limit)s
"""


def bm25(conn: psycopg.Connection, table: str, dataset: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
    """(id, score) of the dataset's best rows of ``table`` for the ORed ``terms``, best first."""
    query = sql.SQL(_QUERY).format(cfg=sql.Literal(TS_CONFIG), table=sql.Identifier(table))
    rows = conn.execute(query, {
        "terms": list(terms), "common": COMMON_ROWS, "dataset": dataset,
        "extra": _DATASET_TOKENS, "tbl": table, "k1": _K1, "b": _B, "limit": limit,
    }).fetchall()
    return [(r["id"], float(r["score"])) for r in rows]
