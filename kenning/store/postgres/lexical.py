"""The PostgreSQL lexical lane: Okapi BM25 computed the way SQLite's FTS5 ``bm25()`` computes it,
over a bounded set of candidate rows, in two statements.

PostgreSQL's full-text search matches through a GIN index but cannot rank inside it (``ts_rank``
scores every matching row, and is not BM25). Here:

- each query term is parsed by ``phraseto_tsquery`` (a bound parameter, never query syntax) with
  the store's text search configuration (``schema.TS_CONFIG``), so it is stemmed as the
  rows were; a term that stems to several lexemes is matched as a phrase, as FTS5 does;
- the first statement reads each term's row count n (over every dataset, as FTS5 counts it)
  from ``lexeme_stats``, kept by triggers as FTS5 keeps it in its index (a phrase's rows are
  counted through the GIN index, at most ``COMMON_ROWS`` of them). Terms in ``COMMON_ROWS``
  rows or more are dropped while a rarer one remains (as the SQLite lane does);
- in a table of more than ``BOUNDED_FROM_ROWS`` rows, when the kept terms match more than
  ``SCORED_ROWS`` rows, only rows holding one of the rarest terms are scored (``rarest``: the
  rule the SQLite lane had before it gained a common share of the table and a fill from its
  newest rows): every row that also holds another kept term (up to ``SCORED_ROWS``), and
  the first ``4 × limit`` of the dataset's rows that hold only rare ones (SQLite ranks all of
  those, so a row holding only the rarest terms may be missed here where SQLite lists it), each
  with its full score;
- the second statement scores the dataset's candidate rows: each kept term's frequency in a row
  comes from the row's ``tsv`` (``setweight`` + ``ts_filter`` keep the term's lexemes with their
  positions), the row's length in tokens from its ``tsv_len`` column, the table's size N and
  average length from ``lexical_stats``, kept by triggers;
- score = Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), idf = ln((N − n + 0.5)/(n + 0.5))
  floored at 1e-6, k1 = 1.2, b = 0.75: FTS5's constants and formula, with N, n and the average
  length over the whole table, every dataset, as FTS5 counts them.

When every term of a query is that common, at most ``COMMON_ROWS`` of the dataset's rows holding
each are scored (SQLite scores them all).
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

#: each term's rows (read from ``lexeme_stats`` for a term of one lexeme, counted up to the cap
#: through the index for a phrase), and the table's rows
_COUNTS = """
WITH terms AS MATERIALIZED (
    SELECT u.i, q.q, tsvector_to_array(to_tsvector({cfg}::regconfig, u.term)) AS lexemes
    FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, i),
         LATERAL phraseto_tsquery({cfg}::regconfig, u.term) AS q(q)
    WHERE numnode(q.q) > 0
)
SELECT t.i, CASE WHEN numnode(t.q) = 1
    THEN (SELECT coalesce(sum(s.rows), 0) FROM lexeme_stats s WHERE s.tbl = %(tbl)s AND s.lexeme = t.lexemes[1])
    ELSE (SELECT count(*) FROM (SELECT FROM {table} r WHERE r.tsv @@ t.q LIMIT %(common)s) c) END AS hits,
    (SELECT sum(rows) FROM lexical_stats WHERE tbl = %(tbl)s) AS n
FROM terms t ORDER BY t.i
"""

#: the dataset's candidate rows (``rare`` marks the terms that bound them; none: every kept
#: term's rows) scored with every kept term, whose row counts are ``hits``
_SCORE = """
WITH totals AS MATERIALIZED (
    SELECT sum(rows)::float8 AS n, sum(tokens)::float8 / nullif(sum(rows), 0) + %(extra)s AS avglen
    FROM lexical_stats WHERE tbl = %(tbl)s
), kept AS MATERIALIZED (
    SELECT k.rare, q.q, tsvector_to_array(to_tsvector({cfg}::regconfig, k.term)) AS lexemes,
           CASE WHEN idf > 0 THEN idf ELSE 1e-6 END AS idf
    FROM unnest(%(terms)s::text[], %(hits)s::float8[], %(rare)s::bool[]) AS k(term, hits, rare), totals,
         LATERAL phraseto_tsquery({cfg}::regconfig, k.term) AS q(q),
         ln(greatest(totals.n - k.hits + 0.5, 0.5) / (k.hits + 0.5)) AS idf
), queries AS MATERIALIZED (
    SELECT (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery FROM kept WHERE rare) AS rare,
           (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery FROM kept WHERE NOT rare) AS other
), candidates AS MATERIALIZED (
    SELECT DISTINCT ON (id) id, tsv, tsv_len FROM (
        (SELECT r.id, r.tsv, r.tsv_len FROM kept k, LATERAL (
            SELECT id, tsv, tsv_len FROM {table} r WHERE r.tsv @@ k.q AND r.dataset = %(dataset)s LIMIT %(common)s) r
         WHERE NOT EXISTS (SELECT FROM kept WHERE rare))
        UNION ALL
        (SELECT r.id, r.tsv, r.tsv_len FROM {table} r, queries q
         WHERE q.rare IS NOT NULL AND r.tsv @@ (q.rare && q.other) AND r.dataset = %(dataset)s LIMIT %(scored)s)
        UNION ALL
        (SELECT r.id, r.tsv, r.tsv_len FROM {table} r, queries q
         WHERE q.rare IS NOT NULL AND r.tsv @@ q.rare AND r.dataset = %(dataset)s LIMIT %(alone)s)) AS found
    ORDER BY id
)
SELECT c.id, sum(k.idf * f.tf * (%(k1)s + 1)
                 / (f.tf + %(k1)s * (1 - %(b)s + %(b)s * (c.tsv_len + %(extra)s) / totals.avglen))) AS score
FROM totals, candidates c JOIN kept k ON c.tsv @@ k.q, LATERAL (
    -- the term's frequency: setweight marks its lexemes, ts_filter keeps only them, so a long
    -- row is never unnested whole
    SELECT min(coalesce(array_length(u.positions, 1), 1)) AS tf
    FROM unnest(ts_filter(setweight(c.tsv, 'A', k.lexemes), '{{a}}')) AS u) AS f
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %(limit)s
"""


def rarest(terms: list[str], counts: dict[str, int], limit: int) -> list[str] | None:
    """When the terms match more than ``SCORED_ROWS`` rows: the rarest ones, leaving at least
    one, up to four times ``limit`` rows (or fewer, where the next term would pass
    ``SCORED_ROWS``) and at least ``limit``; None when every matching row is scored. The
    SQLite store's earlier rule."""
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


def _counts(conn: psycopg.Connection[DictRow], table: str, terms: Sequence[str]) -> tuple[int, dict[str, int | None]]:
    """The table's rows, and each term's (None: it has no lexeme; a phrase's counted up to
    ``COMMON_ROWS``)."""
    query = sql.SQL(_COUNTS).format(cfg=sql.Literal(TS_CONFIG), table=sql.Identifier(table))
    found = conn.execute(query, {"terms": list(terms), "common": COMMON_ROWS, "tbl": table}).fetchall()
    hits = {terms[r["i"] - 1]: r["hits"] for r in found}
    return int(found[0]["n"] or 0) if found else 0, {t: hits.get(t) for t in terms}


def bm25(conn: psycopg.Connection[DictRow], table: str, dataset: str, terms: Sequence[str],
         limit: int) -> list[tuple[str, float]]:
    """(id, score) of the dataset's best rows of ``table`` for the ORed ``terms``, best first."""
    terms = list(dict.fromkeys(terms))
    table_rows, counts = _counts(conn, table, terms)
    bounded = table_rows > BOUNDED_FROM_ROWS
    present = {t: n for t, n in counts.items() if n is not None}
    kept = [t for t in present if present[t] < COMMON_ROWS] or list(present)
    if not kept:
        return []
    rare = set(rarest(kept, present, limit) or ()) if bounded else set()
    rows = conn.execute(sql.SQL(_SCORE).format(cfg=sql.Literal(TS_CONFIG), table=sql.Identifier(table)), {
        "terms": kept, "hits": [present[t] for t in kept], "rare": [t in rare for t in kept],
        "dataset": dataset, "common": COMMON_ROWS, "scored": SCORED_ROWS, "alone": 4 * limit,
        "extra": _DATASET_TOKENS, "tbl": table, "k1": _K1, "b": _B, "limit": limit,
    }).fetchall()
    return [(r["id"], float(r["score"])) for r in rows]
