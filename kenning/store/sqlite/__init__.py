"""The embedded SQLite backend: one file, WAL, FTS5, and the ANN index beside it."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
