"""``AuthStore`` for PostgreSQL, as a mixin of ``PostgresStore`` (it uses the store's
``_conn()`` and ``_write()``, whose connections return rows as dicts). Its tables are created
on first use by their own idempotent migration, recorded in ``meta`` under ``auth_schema`` and
serialized across processes by an advisory lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ..._time import utcnow
from ...errors import ConflictError, NotFoundError
from ..auth import ApiKey, AuthStore, DatasetRecord, Grant, User

__all__ = ["PostgresAuthMixin"]

AUTH_SCHEMA_VERSION = "1"

_TABLES = (
    """CREATE TABLE IF NOT EXISTS auth_users (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        admin BOOLEAN NOT NULL DEFAULT FALSE,
        created_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS auth_keys (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        name TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        revoked_at TIMESTAMPTZ)""",
    """CREATE TABLE IF NOT EXISTS auth_datasets (
        name TEXT PRIMARY KEY,
        owner_id TEXT REFERENCES auth_users(id) ON DELETE SET NULL,
        created_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS auth_grants (
        dataset TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        permissions TEXT[] NOT NULL,
        PRIMARY KEY (dataset, user_id))""",
    "CREATE INDEX IF NOT EXISTS auth_grants_user ON auth_grants (user_id)",
)


def _user(row: dict[str, Any]) -> User:
    return User(id=row["id"], name=row["name"], admin=row["admin"], created_at=row["created_at"])


def _key(row: dict[str, Any]) -> ApiKey:
    return ApiKey(id=row["id"], user_id=row["user_id"], prefix=row["prefix"], name=row["name"],
                  created_at=row["created_at"], revoked_at=row["revoked_at"])


def _record(row: dict[str, Any]) -> DatasetRecord:
    return DatasetRecord(row["name"], row["owner_id"], row["created_at"])


class PostgresAuthMixin(AuthStore):
    """Mixed into ``PostgresStore``; relies on its ``_conn()`` and ``_write()``."""

    _auth_ready = False

    def _auth_migrate(self) -> None:
        if self._auth_ready:
            return
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('kenning_auth_schema'))")
            row = conn.execute("SELECT value FROM meta WHERE key = 'auth_schema'").fetchone()
            if row is None:
                for sql in _TABLES:
                    conn.execute(sql)
                conn.execute("INSERT INTO meta (key, value) VALUES ('auth_schema', %s)", (AUTH_SCHEMA_VERSION,))
        self._auth_ready = True

    def _auth_rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        self._auth_migrate()
        with self._conn() as conn:
            return conn.execute(sql, args).fetchall()

    # -- users -------------------------------------------------------------------------------
    def create_user(self, name: str, *, admin: bool = False) -> User:
        self._auth_migrate()
        user = User(id=f"usr_{uuid.uuid4().hex[:24]}", name=name, admin=admin, created_at=utcnow())
        with self._write() as conn:
            done = conn.execute(
                "INSERT INTO auth_users (id, name, admin, created_at) VALUES (%s,%s,%s,%s)"
                " ON CONFLICT (name) DO NOTHING RETURNING id",
                (user.id, name, admin, user.created_at),
            ).fetchone()
        if done is None:
            raise ConflictError(f"user {name!r} already exists")
        return user

    def find_user(self, name: str) -> User | None:
        rows = self._auth_rows("SELECT * FROM auth_users WHERE name = %s", (name,))
        return _user(rows[0]) if rows else None

    def list_users(self) -> list[User]:
        return [_user(r) for r in self._auth_rows("SELECT * FROM auth_users ORDER BY name")]

    # -- API keys ----------------------------------------------------------------------------
    def create_key(self, user_id: str, key_hash: str, prefix: str, name: str | None = None) -> ApiKey:
        self._auth_migrate()
        key = ApiKey(id=f"key_{uuid.uuid4().hex[:16]}", user_id=user_id, prefix=prefix, name=name,
                     created_at=utcnow())
        with self._write() as conn:
            conn.execute(
                "INSERT INTO auth_keys (id, user_id, key_hash, prefix, name, created_at)"
                " VALUES (%s,%s,%s,%s,%s,%s)",
                (key.id, user_id, key_hash, prefix, name, key.created_at),
            )
        return key

    def key_owner(self, key_hash: str) -> User | None:
        rows = self._auth_rows(
            "SELECT u.* FROM auth_keys k JOIN auth_users u ON u.id = k.user_id"
            " WHERE k.key_hash = %s AND k.revoked_at IS NULL",
            (key_hash,),
        )
        return _user(rows[0]) if rows else None

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        if user_id:
            rows = self._auth_rows("SELECT * FROM auth_keys WHERE user_id = %s ORDER BY created_at", (user_id,))
        else:
            rows = self._auth_rows("SELECT * FROM auth_keys ORDER BY created_at")
        return [_key(r) for r in rows]

    def revoke_key(self, key_id_or_prefix: str) -> ApiKey:
        self._auth_migrate()
        with self._write() as conn:
            rows = conn.execute("SELECT id FROM auth_keys WHERE id = %s OR prefix = %s FOR UPDATE",
                                (key_id_or_prefix, key_id_or_prefix)).fetchall()
            if not rows:
                raise NotFoundError(f"no API key {key_id_or_prefix!r}")
            if len(rows) > 1:
                raise ConflictError(f"{key_id_or_prefix!r} matches {len(rows)} keys; revoke by id")
            row = conn.execute(
                "UPDATE auth_keys SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s RETURNING *",
                (utcnow(), rows[0]["id"]),
            ).fetchone()
        return _key(row)

    # -- datasets ----------------------------------------------------------------------------
    def claim_dataset(self, name: str, owner_id: str | None) -> DatasetRecord:
        self._auth_migrate()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO auth_datasets (name, owner_id, created_at) VALUES (%s,%s,%s)"
                " ON CONFLICT (name) DO NOTHING",
                (name, owner_id, utcnow()),
            )
            row = conn.execute("SELECT * FROM auth_datasets WHERE name = %s", (name,)).fetchone()
        return _record(row)

    def dataset_records(self, names: Sequence[str] | None = None) -> list[DatasetRecord]:
        if names is None:
            rows = self._auth_rows("SELECT * FROM auth_datasets ORDER BY name")
        elif not names:
            return []
        else:
            rows = self._auth_rows("SELECT * FROM auth_datasets WHERE name = ANY(%s) ORDER BY name",
                                   (list(names),))
        return [_record(r) for r in rows]

    def drop_dataset(self, name: str) -> None:
        self._auth_migrate()
        with self._write() as conn:
            conn.execute("DELETE FROM auth_grants WHERE dataset = %s", (name,))
            conn.execute("DELETE FROM auth_datasets WHERE name = %s", (name,))

    def set_grant(self, dataset: str, user_id: str, permissions: Sequence[str]) -> Grant:
        self._auth_migrate()
        perms = frozenset(permissions)
        with self._write() as conn:
            if perms:
                conn.execute(
                    "INSERT INTO auth_grants (dataset, user_id, permissions) VALUES (%s,%s,%s)"
                    " ON CONFLICT (dataset, user_id) DO UPDATE SET permissions = excluded.permissions",
                    (dataset, user_id, sorted(perms)),
                )
            else:
                conn.execute("DELETE FROM auth_grants WHERE dataset = %s AND user_id = %s", (dataset, user_id))
        return Grant(dataset, user_id, perms)

    def grants(self, dataset: str) -> list[Grant]:
        rows = self._auth_rows("SELECT * FROM auth_grants WHERE dataset = %s ORDER BY user_id", (dataset,))
        return [Grant(r["dataset"], r["user_id"], frozenset(r["permissions"])) for r in rows]

    def user_grants(self, user_id: str) -> dict[str, frozenset[str]]:
        rows = self._auth_rows("SELECT dataset, permissions FROM auth_grants WHERE user_id = %s", (user_id,))
        return {r["dataset"]: frozenset(r["permissions"]) for r in rows}
