"""The PostgreSQL lexical lane: Okapi BM25 computed the way SQLite's FTS5 ``bm25()`` computes it,
over a bounded set of candidate rows.

PostgreSQL's full-text search matches through a GIN index but cannot rank inside it: ``ts_rank``
scores every matching row. Here one statement does what FTS5 does, in SQL:

- each query term is parsed by ``phraseto_tsquery`` (a bound parameter, never query syntax) with
  the store's text search configuration (``postgres_schema.TS_CONFIG``), so it is stemmed as the
  rows were; a term that stems to several lexemes is matched as a phrase, as FTS5 does;
- the rows holding each term are counted through the GIN index, up to ``_COMMON_ROWS``; terms
  in that many rows are dropped while a rarer one remains (as the SQLite lane does);
- the candidates are the dataset's rows that hold any kept term, at most ``_CANDIDATES`` of them
  (then those holding every kept term come first);
- each candidate's term frequencies and length come from its ``tsvector`` (``unnest`` gives
  each lexeme with its positions), the collection's size and average length from the
  ``lexical_stats`` table kept by triggers;
- score = Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), idf = ln((N − n + 0.5)/(n + 0.5))
  floored at 1e-6, with k1 = 1.2, b = 0.75: FTS5's constants and formula. N, n and the average
  length are taken over the whole table, every dataset, as FTS5 does.

A term in more than ``_COMMON_ROWS`` rows, kept because every term is that common, counts as
in ``_COMMON_ROWS`` rows for its idf (counting further would read them all).
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from .postgres_schema import TS_CONFIG

__all__ = ["COMMON_ROWS", "bm25"]

#: a search term in this many rows or more is dropped while a rarer term remains
COMMON_ROWS = 5000
#: at most this many rows of the dataset are scored
_CANDIDATES = 20000
#: FTS5's bm25() constants
_K1, _B = 1.2, 0.75
#: SQLite's full-text rows hold one more token, naming their dataset, which its bm25() counts in
#: every row's length; adding it here keeps the two stores' scores equal
_DATASET_TOKENS = 1

_QUERY = """
WITH terms AS (
    SELECT u.i, q.q, tsvector_to_array(to_tsvector({cfg}::regconfig, u.term)) AS lexemes
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, i),
         LATERAL phraseto_tsquery({cfg}::regconfig, u.term) AS q(q)
    WHERE numnode(q.q) > 0
), counted AS (
    SELECT t.*, (SELECT count(*) FROM (SELECT FROM {table} r WHERE r.tsv @@ t.q LIMIT %(common)s) c) AS hits
    FROM terms t
), kept AS (
    SELECT * FROM counted
    WHERE hits < %(common)s OR NOT EXISTS (SELECT FROM counted WHERE hits < %(common)s)
), queries AS (
    SELECT string_agg('(' || q::text || ')', ' | ')::tsquery AS any_term,
           string_agg('(' || q::text || ')', ' & ')::tsquery AS every_term
    FROM kept
), candidates AS (
    (SELECT r.id, r.tsv FROM {table} r, queries
     WHERE r.tsv @@ queries.every_term AND r.dataset = %(dataset)s LIMIT %(candidates)s)
    UNION
    (SELECT r.id, r.tsv FROM {table} r, queries
     WHERE r.tsv @@ queries.any_term AND r.dataset = %(dataset)s LIMIT %(candidates)s)
), lexemes AS (
    SELECT c.id, u.lexeme, u.tf, u.len FROM candidates c, LATERAL (
        SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf,
               sum(coalesce(array_length(positions, 1), 1)) OVER () + %(extra)s AS len
        FROM unnest(c.tsv)) u
    WHERE u.lexeme = ANY(ARRAY(SELECT unnest(lexemes) FROM kept))
), per_term AS (
    SELECT x.id, k.i, min(k.hits) AS hits, min(x.tf) AS tf, min(x.len) AS len
    FROM lexemes x JOIN kept k ON x.lexeme = ANY(k.lexemes)
    GROUP BY x.id, k.i HAVING count(*) = min(cardinality(k.lexemes))
), totals AS (
    SELECT sum(rows)::float8 AS n, (sum(tokens)::float8 / nullif(sum(rows), 0)) + %(extra)s AS avglen
    FROM lexical_stats WHERE tbl = %(tbl)s
)
SELECT p.id, sum(
    (SELECT CASE WHEN idf > 0 THEN idf ELSE 1e-6 END FROM ln((totals.n - p.hits + 0.5) / (p.hits + 0.5)) idf)
    * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.len / totals.avglen))
) AS score
FROM per_term p, totals
GROUP BY p.id ORDER BY score DESC, p.id LIMIT %(limit)s
"""


def bm25(conn: psycopg.Connection, table: str, dataset: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
    """(id, score) of the dataset's best rows of ``table`` for the ORed ``terms``, best first."""
    query = sql.SQL(_QUERY).format(cfg=sql.Literal(TS_CONFIG), table=sql.Identifier(table))
    rows = conn.execute(query, {
        "terms": list(terms), "common": COMMON_ROWS, "candidates": _CANDIDATES, "dataset": dataset,
        "extra": _DATASET_TOKENS, "tbl": table, "k1": _K1, "b": _B, "limit": limit,
    }).fetchall()
    return [(r["id"], float(r["score"])) for r in rows]
