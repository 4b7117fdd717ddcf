"""What one row insert costs a PostgreSQL store, with and without its HNSW index: copies of
``--rows`` stored chunk and fact rows are inserted one statement at a time in a transaction that
is rolled back (so the store is left as it was), first with every index, then with the table's
HNSW index dropped inside that transaction.

    python benchmarks/pg_insert_cost.py --pg postgresql://user@host/db   # a store with data

It reads and writes nothing of kenning but these two tables; run it against a copy or a
benchmark store, not while other writers use the store (the rolled-back DROP INDEX holds the
table's lock until it ends).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_info, print_machine, print_table  # noqa: E402

_COLUMNS = {
    "chunks": "memory_id, dataset, position, text, token_count, embedding",
    "facts": "dataset, source_id, relation, target_id, description, valid_at, created_at, embedding",
}


def per_row_ms(conn, table: str, rows: int, drop_hnsw: bool) -> float:  # noqa: ANN001
    columns = _COLUMNS[table]
    sample = conn.execute(f"SELECT id, {columns} FROM {table} ORDER BY id LIMIT %s", (rows,)).fetchall()
    marks = ", ".join(["%s"] * (columns.count(",") + 2))
    with conn.transaction(force_rollback=True):
        if drop_hnsw:
            conn.execute(f"DROP INDEX {table}_embedding_hnsw")
        started = time.perf_counter()
        for row in sample:
            conn.execute(f"INSERT INTO {table} (id, {columns}) VALUES ({marks})", (row[0] + "-copy", *row[1:]))
        return (time.perf_counter() - started) * 1000 / max(1, len(sample))


def main(argv: list[str] | None = None) -> None:
    import psycopg

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", required=True, help="the URL of a PostgreSQL kenning store with data")
    parser.add_argument("--rows", type=int, default=300)
    args = parser.parse_args(argv)
    print_machine(machine_info())
    out = []
    with psycopg.connect(args.pg) as conn:
        for table in _COLUMNS:
            stored = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            with_index = per_row_ms(conn, table, args.rows, drop_hnsw=False)
            without = per_row_ms(conn, table, args.rows, drop_hnsw=True)
            out.append([table, stored, round(with_index, 2), round(without, 2)])
    print_table(["table", "rows stored", "ms per insert", "ms without HNSW"], out)


if __name__ == "__main__":
    main()
