"""``AuthStore``: users, API keys (stored only as hashes), dataset owners and per-dataset
grants, in the same database as the memories, written once for both backends.

The tables are created on first use by their own idempotent migration, recorded in ``meta``
under ``auth_schema``, so stores that never serve HTTP carry no auth tables and the core
migrations stay independent.

The store only keeps records; the rules (who may do what) live in ``kenning.access``.
A key itself never reaches the store: callers pass ``hash_key(key)``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .._time import utcnow
from ..errors import ConflictError, NotFoundError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from .sql import Dialect

__all__ = [
    "KEY_PREFIX",
    "PERMISSIONS",
    "ApiKey",
    "AuthStore",
    "DatasetRecord",
    "Grant",
    "User",
    "generate_key",
    "hash_key",
]

#: every permission a user can hold on a dataset; owners and admins hold all of them
PERMISSIONS: tuple[str, ...] = ("read", "write", "delete", "share")
KEY_PREFIX = "kn_"
#: how many leading characters of a key are kept in clear to recognize it in listings
SHOWN_CHARS = 11


@dataclass(frozen=True)
class User:
    id: str
    name: str
    admin: bool
    created_at: dt.datetime


@dataclass(frozen=True)
class ApiKey:
    id: str
    user_id: str
    prefix: str
    name: str | None
    created_at: dt.datetime
    revoked_at: dt.datetime | None = None


@dataclass(frozen=True)
class DatasetRecord:
    name: str
    owner_id: str | None
    created_at: dt.datetime


@dataclass(frozen=True)
class Grant:
    dataset: str
    user_id: str
    permissions: frozenset[str] = field(default_factory=frozenset)


def generate_key() -> str:
    """A new API key: ``kn_`` and 256 random bits, URL-safe. Shown once, never stored."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """What the store keeps: sha-256 of the key. The key has 256 bits of entropy, so a plain
    fast hash is enough (no salt or stretching needed, unlike a password)."""
    return hashlib.sha256(key.encode()).hexdigest()


def shown_prefix(key: str) -> str:
    return key[:SHOWN_CHARS]


AUTH_SCHEMA_VERSION = "1"
T = TypeVar("T", bound="DataclassInstance")


# {bool}, {false}, {time}, {perms}, {table_options}: spelled by the dialect
_TABLES = (
    """CREATE TABLE IF NOT EXISTS auth_users (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        admin {bool} NOT NULL DEFAULT {false},
        created_at {time} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS auth_keys (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        name TEXT,
        created_at {time} NOT NULL,
        revoked_at {time})""",
    """CREATE TABLE IF NOT EXISTS auth_datasets (
        name TEXT PRIMARY KEY,
        owner_id TEXT REFERENCES auth_users(id) ON DELETE SET NULL,
        created_at {time} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS auth_grants (
        dataset TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        permissions {perms} NOT NULL,
        PRIMARY KEY (dataset, user_id)){table_options}""",
    "CREATE INDEX IF NOT EXISTS auth_grants_user ON auth_grants (user_id)",
)


class AuthStore(ABC):
    """Records of who may reach which dataset; thread-safe. A host store sets ``dialect`` (a
    :class:`kenning.store.sql.Dialect`: marks, column types, value spelling, a cross-process
    lock) and gives connections (rows readable by column name) through ``_read`` and ``_write``."""

    dialect: Dialect
    _auth_ready = False

    @abstractmethod
    def _read(self) -> AbstractContextManager[Any]:
        """A connection for reads."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Any]:
        """A connection inside a write transaction, committed when the block ends."""

    def _auth_migrate(self) -> None:
        """Create the auth tables if this store has none yet."""
        if self._auth_ready:
            return
        with self._write() as conn:
            if self.dialect.auth_lock:
                conn.execute(self.dialect.auth_lock)
            if conn.execute("SELECT value FROM meta WHERE key = 'auth_schema'").fetchone() is None:
                for sql in _TABLES:
                    conn.execute(sql.format(**self.dialect.types))
                conn.execute(self.dialect.sql("INSERT INTO meta (key, value) VALUES ('auth_schema', ?)"),
                             (AUTH_SCHEMA_VERSION,))
        self._auth_ready = True

    def _records(self, record: type[T], sql: str, args: Sequence[Any] = ()) -> list[T]:
        """The rows of a read of the auth tables as records (times, flags and permissions read back)."""
        self._auth_migrate()
        with self._read() as conn:
            rows = conn.execute(self.dialect.sql(sql), tuple(args)).fetchall()
        return [self.dialect.record(record, row) for row in rows]

    @contextmanager
    def _auth_write(self) -> Iterator[Callable[..., list[Any]]]:
        """One write transaction on the auth tables: ``run(sql, args)`` gives the rows a
        statement returns, if any."""
        self._auth_migrate()
        with self._write() as conn:
            def run(sql: str, args: Sequence[Any] = ()) -> list[Any]:
                cursor = conn.execute(self.dialect.sql(sql), tuple(args))
                return list(cursor.fetchall()) if cursor.description else []

            yield run

    # -- users -------------------------------------------------------------------------------
    def create_user(self, name: str, *, admin: bool = False) -> User:
        """Raise ConflictError if the name is taken."""
        user = User(id=f"usr_{uuid.uuid4().hex[:24]}", name=name, admin=admin, created_at=utcnow())
        with self._auth_write() as run:
            done = run("INSERT INTO auth_users (id, name, admin, created_at) VALUES (?,?,?,?)"
                       " ON CONFLICT (name) DO NOTHING RETURNING id",
                       (user.id, name, admin, self.dialect.time_in(user.created_at)))
        if not done:
            raise ConflictError(f"user {name!r} already exists")
        return user

    def find_user(self, name: str) -> User | None:
        return next(iter(self._records(User, "SELECT * FROM auth_users WHERE name = ?", (name,))), None)

    def list_users(self) -> list[User]:
        return self._records(User, "SELECT * FROM auth_users ORDER BY name")

    # -- API keys ----------------------------------------------------------------------------
    def create_key(self, user_id: str, key_hash: str, prefix: str, name: str | None = None) -> ApiKey:
        key = ApiKey(id=f"key_{uuid.uuid4().hex[:16]}", user_id=user_id, prefix=prefix, name=name,
                     created_at=utcnow())
        with self._auth_write() as run:
            run("INSERT INTO auth_keys (id, user_id, key_hash, prefix, name, created_at) VALUES (?,?,?,?,?,?)",
                (key.id, user_id, key_hash, prefix, name, self.dialect.time_in(key.created_at)))
        return key

    def key_owner(self, key_hash: str) -> User | None:
        """The user of an unrevoked key with this hash, or None."""
        return next(iter(self._records(User, "SELECT u.* FROM auth_keys k JOIN auth_users u ON u.id = k.user_id"
                                            " WHERE k.key_hash = ? AND k.revoked_at IS NULL", (key_hash,))), None)

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        where, args = ("WHERE user_id = ?", (user_id,)) if user_id else ("", ())
        return self._records(ApiKey, f"SELECT * FROM auth_keys {where} ORDER BY created_at", args)

    def revoke_key(self, key_id_or_prefix: str) -> ApiKey:
        """Revoke by id or shown prefix; NotFoundError if none matches (ConflictError if a
        prefix matches several keys)."""
        with self._auth_write() as run:
            rows = run("SELECT id FROM auth_keys WHERE id = ? OR prefix = ?", (key_id_or_prefix, key_id_or_prefix))
            if not rows:
                raise NotFoundError(f"no API key {key_id_or_prefix!r}")
            if len(rows) > 1:
                raise ConflictError(f"{key_id_or_prefix!r} matches {len(rows)} keys; revoke by id")
            row = run("UPDATE auth_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING *",
                      (self.dialect.time_in(utcnow()), rows[0]["id"]))[0]
        return self.dialect.record(ApiKey, row)

    # -- datasets ----------------------------------------------------------------------------
    def claim_dataset(self, name: str, owner_id: str | None) -> DatasetRecord:
        """Record ``owner_id`` as the owner unless the dataset already has a record; return
        the record that holds (the existing one if another caller won)."""
        with self._auth_write() as run:
            run("INSERT INTO auth_datasets (name, owner_id, created_at) VALUES (?,?,?) ON CONFLICT (name) DO NOTHING",
                (name, owner_id, self.dialect.time_in(utcnow())))
            row = run("SELECT * FROM auth_datasets WHERE name = ?", (name,))[0]
        return self.dialect.record(DatasetRecord, row)

    def dataset_records(self, names: Sequence[str] | None = None) -> list[DatasetRecord]:
        """Records of the given datasets (all if None), by name."""
        if names is not None and not names:
            return []
        where = "" if names is None else f"WHERE name IN ({','.join('?' * len(names))})"
        return self._records(DatasetRecord, f"SELECT * FROM auth_datasets {where} ORDER BY name", names or ())

    def drop_dataset(self, name: str) -> None:
        """Forget a dataset's owner and grants."""
        with self._auth_write() as run:
            run("DELETE FROM auth_grants WHERE dataset = ?", (name,))
            run("DELETE FROM auth_datasets WHERE name = ?", (name,))

    def set_grant(self, dataset: str, user_id: str, permissions: Sequence[str]) -> Grant:
        """Replace a user's permissions on a dataset; an empty list removes the grant."""
        perms = frozenset(permissions)
        with self._auth_write() as run:
            if perms:
                run("INSERT INTO auth_grants (dataset, user_id, permissions) VALUES (?,?,?)"
                    " ON CONFLICT (dataset, user_id) DO UPDATE SET permissions = excluded.permissions",
                    (dataset, user_id, self.dialect.perms_in(sorted(perms))))
            else:
                run("DELETE FROM auth_grants WHERE dataset = ? AND user_id = ?", (dataset, user_id))
        return Grant(dataset, user_id, perms)

    def grants(self, dataset: str) -> list[Grant]:
        return self._records(Grant, "SELECT * FROM auth_grants WHERE dataset = ? ORDER BY user_id", (dataset,))

    def user_grants(self, user_id: str) -> dict[str, frozenset[str]]:
        """Every dataset granted to a user, with the permissions."""
        return {g.dataset: g.permissions for g in self._records(Grant, "SELECT * FROM auth_grants WHERE user_id = ?", (user_id,))}
