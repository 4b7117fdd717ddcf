"""Stores, chosen by URL: ``sqlite:///path`` (or a plain path, or ``:memory:``) and
``postgresql://…``. The only place that knows which backends exist."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from .base import Store

__all__ = ["Store", "default_path", "open_store"]


def default_path() -> str:
    from platformdirs import user_data_dir

    return str(Path(user_data_dir("kenning", appauthor=False)) / "kenning.db")


def open_store(url: str | None, *, pool_size: int = 4, hnsw_ef_search: int = 100) -> Store:
    """The store at ``url``; ``pool_size`` and ``hnsw_ef_search`` concern PostgreSQL only."""
    url = url or default_path()
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from .._extras import require

        require("psycopg", purpose="PostgreSQL support needs psycopg")
        require("psycopg_pool", purpose="PostgreSQL support needs psycopg-pool")
        from .postgres.store import PostgresStore
        return PostgresStore(url, pool_size=pool_size, hnsw_ef_search=hnsw_ef_search)
    from .sqlite.store import SQLiteStore

    if url.startswith("sqlite://"):
        path = url[len("sqlite://"):]
        path = path[1:] if path.startswith("/") else path  # sqlite:///rel, sqlite:////abs
        if not path:
            raise ConfigurationError(
                f"{url!r} names no database file: use sqlite:///path.db (or :memory: for a "
                "store that is not kept)"
            )
        return SQLiteStore(path)
    if "://" in url:
        raise ConfigurationError(f"unknown store URL scheme in {url.split('://')[0]!r}://…")
    return SQLiteStore(str(Path(url).expanduser()) if url != ":memory:" else url)
