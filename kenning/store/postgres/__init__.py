"""The PostgreSQL backend: pgvector, BM25 over tsvector, many processes and machines."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
