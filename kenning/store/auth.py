"""The ``AuthStore`` interface: users, API keys (stored only as hashes), dataset owners and
per-dataset grants. Both store backends implement it as a mixin (``sqlite.auth``,
``postgres.auth``) over their own connection, in the same database as the memories.

The store only keeps records; the rules (who may do what) live in ``kenning.server.access``.
A key itself never reaches the store: callers pass ``hash_key(key)``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

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


class AuthStore(ABC):
    """Records of who may reach which dataset. Implementations are thread-safe."""

    # -- users -------------------------------------------------------------------------------
    @abstractmethod
    def create_user(self, name: str, *, admin: bool = False) -> User:
        """Raise ConflictError if the name is taken."""

    @abstractmethod
    def find_user(self, name: str) -> User | None: ...

    @abstractmethod
    def list_users(self) -> list[User]: ...

    # -- API keys ----------------------------------------------------------------------------
    @abstractmethod
    def create_key(self, user_id: str, key_hash: str, prefix: str, name: str | None = None) -> ApiKey: ...

    @abstractmethod
    def key_owner(self, key_hash: str) -> User | None:
        """The user of an unrevoked key with this hash, or None."""

    @abstractmethod
    def list_keys(self, user_id: str | None = None) -> list[ApiKey]: ...

    @abstractmethod
    def revoke_key(self, key_id_or_prefix: str) -> ApiKey:
        """Revoke by id or shown prefix; NotFoundError if none matches (ConflictError if a
        prefix matches several keys)."""

    # -- datasets ----------------------------------------------------------------------------
    @abstractmethod
    def claim_dataset(self, name: str, owner_id: str | None) -> DatasetRecord:
        """Record ``owner_id`` as the owner unless the dataset already has a record; return
        the record that holds (the existing one if another caller won)."""

    @abstractmethod
    def dataset_records(self, names: Sequence[str] | None = None) -> list[DatasetRecord]:
        """Records of the given datasets (all if None), by name."""

    @abstractmethod
    def drop_dataset(self, name: str) -> None:
        """Forget a dataset's owner and grants."""

    @abstractmethod
    def set_grant(self, dataset: str, user_id: str, permissions: Sequence[str]) -> Grant:
        """Replace a user's permissions on a dataset; an empty list removes the grant."""

    @abstractmethod
    def grants(self, dataset: str) -> list[Grant]: ...

    @abstractmethod
    def user_grants(self, user_id: str) -> dict[str, frozenset[str]]:
        """Every dataset granted to a user, with the permissions."""
