"""The PostgreSQL lexical lane: Okapi BM25 computed the way SQLite's FTS5 ``bm25()`` computes it,
over a bounded set of candidate rows: a statement reads the terms' statistics, ``plan`` picks the
candidates, a second statement scores them (and a third the tail term's rows, when they may
enter the list).

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
  ``SCORED_ROWS`` rows, only rows holding one of the rarest terms are scored (``rarest``: the
  rule the SQLite lane had before it gained a common share of the table and a fill from its
  newest rows): every row that also holds another kept term (up to ``SCORED_ROWS``), and
  the first ``4 × limit`` of the dataset's rows that hold only rare ones (SQLite ranks all of
  those, so a row holding only the rarest terms may be missed here where SQLite lists it), each
  with its full score;
- the dataset's candidate rows are scored: a kept term's frequency in a row is its lexeme's
  number of positions in the row's ``tsv``, counted only where the row matches the term; the
  row's length in tokens comes from its ``tsv_len`` column, the table's size N and average
  length from ``lexical_stats``, kept by triggers;
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

import math
from collections.abc import Sequence

import psycopg
from psycopg import sql
from psycopg.rows import DictRow

from .schema import TS_CONFIG

__all__ = ["BOUNDED_FROM_ROWS", "COMMON_ROWS", "SCORED_ROWS", "bm25", "plan", "rarest"]

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

#: each term's lexemes, its row count n (read from ``lexeme_stats`` for a term of one lexeme, counted
#: up to the cap through the index for a phrase) and the table's size and average length
_TERMS = """
SELECT u.term, q.q::text AS q, l.lexemes, numnode(q.q) = 1 AND cardinality(l.lexemes) = 1 AS single, t.n, t.avglen,
       (CASE WHEN numnode(q.q) = 1
        THEN (SELECT coalesce(sum(s.rows), 0) FROM lexeme_stats s WHERE s.tbl = %(tbl)s AND s.lexeme = l.lexemes[1])
        ELSE (SELECT count(*) FROM (SELECT FROM {table} r WHERE r.tsv @@ q.q LIMIT %(common)s) c) END)::float8 AS hits
FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, i),
     LATERAL phraseto_tsquery({cfg}::regconfig, u.term) AS q(q),
     LATERAL (SELECT tsvector_to_array(to_tsvector({cfg}::regconfig, u.term)) AS lexemes) l,
     (SELECT coalesce(sum(rows), 0)::float8 AS n, sum(tokens)::float8 / nullif(sum(rows), 0) + %(extra)s AS avglen
      FROM lexical_stats WHERE tbl = %(tbl)s) t
WHERE numnode(q.q) > 0 ORDER BY u.i
"""

#: the candidate rows of each case (``plan``): the rows holding the other terms; each term's
#: rows, at most ``COMMON_ROWS`` of them, where every term is that common; the rows holding a
#: rare and another term, and the first rows holding a rare one; the tail term's rows alone
_ROWS = {
    "other": "SELECT id, tsv, tsv_len FROM {table} WHERE tsv @@ %(other)s::tsquery AND dataset = %(dataset)s",
    "capped": "SELECT DISTINCT ON (r.id) r.* FROM unnest(%(each)s::tsquery[]) AS k(q), LATERAL (SELECT id, tsv, tsv_len"
              " FROM {table} WHERE tsv @@ k.q AND dataset = %(dataset)s LIMIT %(common)s) r ORDER BY r.id",
    "rare": "SELECT DISTINCT ON (id) * FROM ((SELECT id, tsv, tsv_len FROM {table} WHERE tsv @@ (%(rare)s::tsquery"
            " && %(other)s::tsquery) AND dataset = %(dataset)s LIMIT %(scored)s) UNION ALL (SELECT id, tsv, tsv_len"
            " FROM {table} WHERE tsv @@ %(rare)s::tsquery AND dataset = %(dataset)s LIMIT %(alone)s)) r ORDER BY id",
    "tail": "SELECT id, tsv, tsv_len FROM {table} WHERE tsv @@ %(tail)s::tsquery AND NOT tsv @@ %(other)s::tsquery"
            " AND dataset = %(dataset)s",
}
#: the best of those rows: each term's frequency in a row is its lexeme's number of positions
#: (``ts_rank_cd`` with every weight 1 and no normalization counts them; a term of several
#: lexemes counts its rarest one, where the row holds its phrase), read only where the row
#: matches the term; the terms' BM25 summed in their order, as FTS5 sums them
_SCORED = """
SELECT id, {score} AS score FROM (SELECT id, tsv_len, {tfs} FROM ({rows}) c OFFSET 0) c
ORDER BY score DESC, id LIMIT %(limit)s
"""
_TF = "CASE WHEN c.tsv @@ %(q{j})s::tsquery THEN {count} ELSE 0 END AS t{j}"
_COUNT = "ts_rank_cd(ARRAY[1, 1, 1, 1]::real[], c.tsv, %({})s::tsquery, 0)"
_TERM = "%(idf{j})s * t{j} * (%(k1)s + 1) / (t{j} + %(k1)s * (1 - %(b)s + %(b)s * (tsv_len + %(extra)s) / %(avglen)s))"


def rarest(terms: list[str], counts: dict[str, int], limit: int) -> list[str] | None:
    """When the terms match more than ``SCORED_ROWS`` rows: the rarest ones, leaving at least
    one, up to four times ``limit`` rows (or fewer, where the next term would pass
    ``SCORED_ROWS``) and at least ``limit``; None when every matching row is scored. The
    SQLite store's earlier rule, which ``plan`` applies."""
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


def _quoted(lexeme: str) -> str:
    """A lexeme as a tsquery of it alone (its quotes and backslashes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _any(terms: list[DictRow]) -> str | None:
    """The terms ORed in one tsquery (None for none)."""
    return " | ".join(f"({t['q']})" for t in terms) or None


def plan(stats: list[DictRow], limit: int) -> tuple[str, list[DictRow], list[DictRow], DictRow | None]:
    """From the terms' statistics (``_TERMS``): which candidates to score (a key of ``_ROWS``),
    the kept terms, the rare ones that bound the candidates (``rarest``, in a table of more than
    ``BOUNDED_FROM_ROWS`` rows) and the tail term (the most common of two or more matching
    terms, none in ``COMMON_ROWS`` rows, where every matching row is to be scored)."""
    uncapped = [t for t in stats if t["hits"] < COMMON_ROWS]
    kept = uncapped or stats
    present = [t for t in kept if t["hits"]]
    picked = rarest([t["term"] for t in kept], {t["term"]: t["hits"] for t in kept}, limit) \
        if kept and kept[0]["n"] > BOUNDED_FROM_ROWS else None
    if picked is not None:
        return "rare", kept, [t for t in kept if t["term"] in picked], None
    tail = max(present[::-1], key=lambda t: t["hits"]) if uncapped and len(present) >= 2 else None
    return "other" if uncapped else "capped", kept, [], tail


_statements: dict[tuple[str, ...], str] = {}


def _statement(conn: psycopg.Connection[DictRow], table: str, text: str, *key: str) -> str:
    """``text`` for ``table``, composed once: the same text each time, which psycopg parses once
    and the server plans once."""
    composed = _statements.get((table, *key))
    if composed is None:
        composed = sql.SQL(text).format(cfg=sql.Literal(TS_CONFIG), table=sql.Identifier(table)).as_string(conn)
        if len(_statements) < 4096:  # shapes are few; a bound all the same
            _statements[(table, *key)] = composed
    return composed


def bm25(conn: psycopg.Connection[DictRow], table: str, dataset: str, terms: Sequence[str],
         limit: int) -> list[tuple[str, float]]:
    """(id, score) of the dataset's best rows of ``table`` for the ORed ``terms``, best first."""
    stats = conn.execute(_statement(conn, table, _TERMS), {
        "terms": list(dict.fromkeys(terms)), "tbl": table, "common": COMMON_ROWS, "extra": _DATASET_TOKENS}).fetchall()
    case, kept, rare, tail = plan(stats, limit)
    if not any(t["hits"] for t in kept):
        return []  # no row holds a term (nor, a write later, is scored against an empty table's statistics)
    params: dict[str, object] = {
        "dataset": dataset, "limit": limit, "common": COMMON_ROWS, "scored": SCORED_ROWS, "alone": 4 * limit,
        "k1": _K1, "b": _B, "extra": _DATASET_TOKENS, "avglen": kept[0]["avglen"], "each": [t["q"] for t in kept],
        "rare": _any(rare), "other": _any([t for t in kept if t not in rare and t is not tail]), "tail": tail and tail["q"]}
    tfs, shape, idfs = [], [], []
    for j, t in enumerate(kept):
        idf = math.log(max(t["n"] - t["hits"] + 0.5, 0.5) / (t["hits"] + 0.5))
        idfs.append(idf if idf > 0 else 1e-6)
        params |= {f"q{j}": t["q"], f"idf{j}": idfs[j]}
        params |= {f"l{j}_{x}": _quoted(lexeme) for x, lexeme in enumerate(t["lexemes"])}
        counts = [_COUNT.format(f"q{j}")] if t["single"] else [_COUNT.format(f"l{j}_{x}") for x in range(len(t["lexemes"]))]
        tfs.append(_TF.format(j=j, count=counts[0] if t["single"] else f"least({', '.join(counts)})"))
        shape.append(str(len(counts)))
    text = _SCORED.format(score=" + ".join(_TERM.format(j=j) for j in range(len(kept))), tfs=", ".join(tfs), rows="{rows}")

    def scored(rows: str) -> list[tuple[str, float]]:
        query = _statement(conn, table, text.replace("{rows}", _ROWS[rows]), rows, *shape)
        return [(r["id"], float(r["score"])) for r in conn.execute(query, params).fetchall()]

    best = scored(case)
    # a row holding the tail term alone scores below its idf × (k1 + 1): those rows are read
    # only if that could enter the list (MaxScore)
    if tail is not None and (len(best) < limit or idfs[kept.index(tail)] * (_K1 + 1) * 1.000000001 > best[-1][1]):
        best = sorted(best + scored("tail"), key=lambda r: (-r[1], r[0]))[:limit]
    return best
