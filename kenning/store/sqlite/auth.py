"""``AuthStore`` for SQLite, as a mixin of ``SQLiteStore`` (it uses the store's ``_db``,
``_lock`` and ``_write()``). Its tables are created on first use by their own idempotent
migration, recorded in ``meta`` under ``auth_schema``, so stores that never serve HTTP carry
no auth tables and the core migrations stay independent.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence

from ..._time import from_text, to_text, utcnow
from ...errors import ConflictError, NotFoundError
from ..auth import ApiKey, AuthStore, DatasetRecord, Grant, User

__all__ = ["SQLiteAuthMixin"]

AUTH_SCHEMA_VERSION = "1"

_TABLES = (
    """CREATE TABLE IF NOT EXISTS auth_users (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        admin INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS auth_keys (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        name TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT)""",
    """CREATE TABLE IF NOT EXISTS auth_datasets (
        name TEXT PRIMARY KEY,
        owner_id TEXT REFERENCES auth_users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS auth_grants (
        dataset TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        permissions TEXT NOT NULL,
        PRIMARY KEY (dataset, user_id)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS auth_grants_user ON auth_grants (user_id)",
)


def _user(row: sqlite3.Row) -> User:
    return User(id=row["id"], name=row["name"], admin=bool(row["admin"]),
                created_at=from_text(row["created_at"]))


def _key(row: sqlite3.Row) -> ApiKey:
    return ApiKey(id=row["id"], user_id=row["user_id"], prefix=row["prefix"], name=row["name"],
                  created_at=from_text(row["created_at"]), revoked_at=from_text(row["revoked_at"]))


def _perms(text: str) -> frozenset[str]:
    return frozenset(p for p in text.split(",") if p)


class SQLiteAuthMixin(AuthStore):
    """Mixed into ``SQLiteStore``; relies on its ``_db``, ``_lock`` and ``_write()``."""

    _auth_ready = False

    def _auth(self) -> sqlite3.Connection:
        """The connection, with the auth tables created if this store has none yet."""
        if not self._auth_ready:
            with self._write():
                row = self._db.execute("SELECT value FROM meta WHERE key = 'auth_schema'").fetchone()
                if row is None:
                    for sql in _TABLES:
                        self._db.execute(sql)
                    self._db.execute(
                        "INSERT INTO meta (key, value) VALUES ('auth_schema', ?)", (AUTH_SCHEMA_VERSION,)
                    )
            self._auth_ready = True
        return self._db

    def _auth_one(self, sql: str, args: Sequence[object] = ()) -> sqlite3.Row | None:
        db = self._auth()
        with self._lock:
            return db.execute(sql, args).fetchone()

    def _auth_all(self, sql: str, args: Sequence[object] = ()) -> list[sqlite3.Row]:
        db = self._auth()
        with self._lock:
            return db.execute(sql, args).fetchall()

    # -- users -------------------------------------------------------------------------------
    def create_user(self, name: str, *, admin: bool = False) -> User:
        user = User(id=f"usr_{uuid.uuid4().hex[:24]}", name=name, admin=admin, created_at=utcnow())
        db = self._auth()
        with self._write():
            if db.execute("SELECT 1 FROM auth_users WHERE name = ?", (name,)).fetchone():
                raise ConflictError(f"user {name!r} already exists")
            db.execute("INSERT INTO auth_users (id, name, admin, created_at) VALUES (?,?,?,?)",
                       (user.id, name, int(admin), to_text(user.created_at)))
        return user

    def find_user(self, name: str) -> User | None:
        row = self._auth_one("SELECT * FROM auth_users WHERE name = ?", (name,))
        return _user(row) if row else None

    def list_users(self) -> list[User]:
        return [_user(r) for r in self._auth_all("SELECT * FROM auth_users ORDER BY name")]

    # -- API keys ----------------------------------------------------------------------------
    def create_key(self, user_id: str, key_hash: str, prefix: str, name: str | None = None) -> ApiKey:
        key = ApiKey(id=f"key_{uuid.uuid4().hex[:16]}", user_id=user_id, prefix=prefix, name=name,
                     created_at=utcnow())
        db = self._auth()
        with self._write():
            db.execute(
                "INSERT INTO auth_keys (id, user_id, key_hash, prefix, name, created_at) VALUES (?,?,?,?,?,?)",
                (key.id, user_id, key_hash, prefix, name, to_text(key.created_at)),
            )
        return key

    def key_owner(self, key_hash: str) -> User | None:
        row = self._auth_one(
            "SELECT u.* FROM auth_keys k JOIN auth_users u ON u.id = k.user_id"
            " WHERE k.key_hash = ? AND k.revoked_at IS NULL",
            (key_hash,),
        )
        return _user(row) if row else None

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        where, args = ("WHERE user_id = ?", (user_id,)) if user_id else ("", ())
        return [_key(r) for r in self._auth_all(f"SELECT * FROM auth_keys {where} ORDER BY created_at", args)]

    def revoke_key(self, key_id_or_prefix: str) -> ApiKey:
        db = self._auth()
        with self._write():
            rows = db.execute("SELECT * FROM auth_keys WHERE id = ? OR prefix = ?",
                              (key_id_or_prefix, key_id_or_prefix)).fetchall()
            if not rows:
                raise NotFoundError(f"no API key {key_id_or_prefix!r}")
            if len(rows) > 1:
                raise ConflictError(f"{key_id_or_prefix!r} matches {len(rows)} keys; revoke by id")
            now = to_text(utcnow())
            db.execute("UPDATE auth_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?",
                       (now, rows[0]["id"]))
            row = db.execute("SELECT * FROM auth_keys WHERE id = ?", (rows[0]["id"],)).fetchone()
        return _key(row)

    # -- datasets ----------------------------------------------------------------------------
    def claim_dataset(self, name: str, owner_id: str | None) -> DatasetRecord:
        db = self._auth()
        with self._write():
            db.execute("INSERT OR IGNORE INTO auth_datasets (name, owner_id, created_at) VALUES (?,?,?)",
                       (name, owner_id, to_text(utcnow())))
            row = db.execute("SELECT * FROM auth_datasets WHERE name = ?", (name,)).fetchone()
        return DatasetRecord(row["name"], row["owner_id"], from_text(row["created_at"]))

    def dataset_records(self, names: Sequence[str] | None = None) -> list[DatasetRecord]:
        if names is None:
            rows = self._auth_all("SELECT * FROM auth_datasets ORDER BY name")
        elif not names:
            return []
        else:
            marks = ",".join("?" * len(names))
            rows = self._auth_all(f"SELECT * FROM auth_datasets WHERE name IN ({marks}) ORDER BY name",
                                  list(names))
        return [DatasetRecord(r["name"], r["owner_id"], from_text(r["created_at"])) for r in rows]

    def drop_dataset(self, name: str) -> None:
        db = self._auth()
        with self._write():
            db.execute("DELETE FROM auth_grants WHERE dataset = ?", (name,))
            db.execute("DELETE FROM auth_datasets WHERE name = ?", (name,))

    def set_grant(self, dataset: str, user_id: str, permissions: Sequence[str]) -> Grant:
        perms = frozenset(permissions)
        db = self._auth()
        with self._write():
            if perms:
                db.execute(
                    "INSERT INTO auth_grants (dataset, user_id, permissions) VALUES (?,?,?)"
                    " ON CONFLICT (dataset, user_id) DO UPDATE SET permissions = excluded.permissions",
                    (dataset, user_id, ",".join(sorted(perms))),
                )
            else:
                db.execute("DELETE FROM auth_grants WHERE dataset = ? AND user_id = ?", (dataset, user_id))
        return Grant(dataset, user_id, perms)

    def grants(self, dataset: str) -> list[Grant]:
        rows = self._auth_all("SELECT * FROM auth_grants WHERE dataset = ? ORDER BY user_id", (dataset,))
        return [Grant(r["dataset"], r["user_id"], _perms(r["permissions"])) for r in rows]

    def user_grants(self, user_id: str) -> dict[str, frozenset[str]]:
        rows = self._auth_all("SELECT dataset, permissions FROM auth_grants WHERE user_id = ?", (user_id,))
        return {r["dataset"]: _perms(r["permissions"]) for r in rows}
