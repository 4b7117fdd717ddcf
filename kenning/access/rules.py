"""Who may do what: principals, API-key authentication and per-dataset permissions.

Rules, written once for HTTP and MCP:

- an admin (and the local ``--no-auth`` principal) holds every permission on every dataset;
- a dataset's owner (its creator) holds every permission on it;
- other users hold what was granted to them; any grant includes ``read``;
- a caller without any permission on a dataset is told it does not exist (404), so nobody
  learns of another user's dataset; with ``read`` but not the needed permission, 403;
- writing to a dataset nobody has created yet creates it, owned by the writer.

No web framework here: the HTTP server, the MCP server and the CLI all use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..client import Kenning
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    NotFoundError,
    PermissionDeniedError,
)
from ..store.auth import PERMISSIONS, AuthStore, hash_key
from .limits import Limiter

__all__ = ["ALL", "LOCAL", "Access", "Principal", "auth_store"]

ALL = frozenset(PERMISSIONS)


@dataclass(frozen=True)
class Principal:
    """The caller of one request."""

    name: str
    user_id: str | None = None
    admin: bool = False


#: the single user of a server started with ``--no-auth`` (loopback only)
LOCAL = Principal(name="local", admin=True)


def auth_store(kn: Kenning) -> AuthStore:
    """The facade's store as an ``AuthStore`` (both built-in stores are)."""
    store = kn.store
    if not isinstance(store, AuthStore):
        raise ConfigurationError(
            f"the store {type(store).__name__} keeps no users or keys; serve it with --no-auth"
        )
    return store


def not_found(dataset: str) -> NotFoundError:
    return NotFoundError(f"no dataset {dataset!r}")


class Access:
    """Permission checks over an ``AuthStore``; ``store=None`` means no-auth (all allowed).

    ``existing`` lists the datasets the memory store holds, so that data written before auth
    was on (no owner record) is treated as existing and left to admins.
    """

    def __init__(self, store: AuthStore | None, existing: Callable[[], Sequence[str]],
                 failures: Limiter | None = None) -> None:
        self.store = store
        self._existing = existing
        self.failures = failures or Limiter(0, "failed API keys")

    @classmethod
    def of(cls, kn: Kenning, *, auth: bool = True) -> Access:
        """The checks over ``kn``'s store (``auth=False``: everything allowed), with the limit
        on failed keys from its settings."""
        failures = Limiter(kn.settings.auth_failures_per_minute, "failed API keys")
        return cls(auth_store(kn) if auth else None, kn.datasets, failures)

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def authenticate(self, key: str | None, client: str = "") -> Principal:
        """The key's user. A client (address) that sent too many wrong keys is refused with
        RateLimitedError, whatever key it sends, until its allowance refills."""
        if self.store is None:
            return LOCAL
        if not key:
            raise AuthenticationError("missing API key: send 'Authorization: Bearer kn_…'")
        self.failures.check(client)
        user = self.store.key_owner(hash_key(key))
        if user is None:
            self.failures.spend(client, strict=False)
            raise AuthenticationError("invalid or revoked API key")
        return Principal(name=user.name, user_id=user.id, admin=user.admin)

    # -- permissions -------------------------------------------------------------------------
    def permissions(self, who: Principal, dataset: str) -> frozenset[str]:
        if who.admin or self.store is None:
            return ALL
        records = self.store.dataset_records([dataset])
        if not records:
            return frozenset()
        if records[0].owner_id == who.user_id:
            return ALL
        return self.store.user_grants(who.user_id or "").get(dataset, frozenset())

    def require(self, who: Principal, dataset: str, permission: str) -> None:
        """Raise NotFoundError if the caller cannot see the dataset, PermissionDeniedError if
        it can but lacks ``permission``."""
        perms = self.permissions(who, dataset)
        if not perms:
            raise not_found(dataset)
        if permission not in perms:
            raise PermissionDeniedError(f"no {permission!r} permission on dataset {dataset!r}")

    def require_write(self, who: Principal, dataset: str) -> None:
        """Like ``require(…, 'write')``, creating the dataset for the caller if it is new."""
        if self.store is not None and not self.exists(dataset):
            self.store.claim_dataset(dataset, who.user_id)
        self.require(who, dataset, "write")

    def can_read(self, who: Principal, dataset: str) -> bool:
        return "read" in self.permissions(who, dataset)

    def exists(self, dataset: str) -> bool:
        if self.store is not None and self.store.dataset_records([dataset]):
            return True
        return dataset in self._existing()

    def readable(self, who: Principal) -> list[str]:
        """Every dataset the caller may read, by name."""
        names = set(self._existing())
        if self.store is not None:
            names.update(r.name for r in self.store.dataset_records())
        if who.admin or self.store is None:
            return sorted(names)
        owned = {r.name for r in self.store.dataset_records() if r.owner_id == who.user_id}
        granted = set(self.store.user_grants(who.user_id or ""))
        return sorted(owned | granted)
