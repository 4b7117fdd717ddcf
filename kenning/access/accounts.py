"""Account administration: datasets (create, adopt, drop), grants, users and API keys.

Every method names its caller and is checked by ``Access``; the HTTP routes, the MCP server
and the ``kenning keys`` / ``kenning datasets`` commands are thin shells over it. The CLI acts
as an admin principal (it holds the store itself).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._identity import check_dataset, check_user_name
from ..client import Kenning
from ..errors import ConflictError, NotFoundError, PermissionDeniedError, ValidationError
from ..models import ForgetResult
from ..store.auth import PERMISSIONS, ApiKey, AuthStore, User, generate_key, hash_key, shown_prefix
from .rules import ALL, Access, Principal

__all__ = ["RESERVED", "Accounts", "DatasetInfo", "DatasetLocks", "GrantInfo", "Permission"]

#: user names that only ``create_key`` makes (``admin`` is always an admin; ``local`` and ``cli``
#: name the no-auth and command-line principals)
RESERVED = frozenset({"admin", "local", "cli"})

Permission = Literal["read", "write", "delete", "share"]


class DatasetInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    owner: str | None = Field(default=None, description="The owner's user name (None: no owner).")
    permissions: list[Permission] = Field(description="What the caller may do with it.")


class GrantInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    user: str
    permissions: list[Permission]


class DatasetLocks:
    """One lock per dataset: writes to a dataset are serialized, datasets run in parallel."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def get(self, dataset: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(dataset, threading.Lock())

    @contextmanager
    def hold(self, datasets: Sequence[str]) -> Iterator[None]:
        # Sorted, so two calls taking several locks never wait on each other in a cycle.
        with ExitStack() as stack:
            for name in sorted(set(datasets)):
                stack.enter_context(self.get(name))
            yield


def ordered(perms: frozenset[str] | set[str]) -> list[Permission]:
    return [p for p in PERMISSIONS if p in perms]  # type: ignore[misc]


class Accounts:
    """Datasets, grants, users and keys of ``kn``, checked by ``access``."""

    def __init__(self, kn: Kenning, access: Access, locks: DatasetLocks | None = None) -> None:
        self.kn = kn
        self.access = access
        self.locks = locks or DatasetLocks()

    @property
    def _store(self) -> AuthStore:
        if self.access.store is None:
            raise ValidationError("users and keys need auth: this server runs with --no-auth")
        return self.access.store

    # -- datasets ----------------------------------------------------------------------------
    def datasets(self, who: Principal) -> list[DatasetInfo]:
        names = self.access.readable(who)
        owners = self._owner_names(names)
        return [DatasetInfo(name=n, owner=owners.get(n), permissions=ordered(self.access.permissions(who, n)))
                for n in names]

    def create_dataset(self, who: Principal, name: str) -> DatasetInfo:
        check_dataset(name)
        if self.access.exists(name):
            raise ConflictError(f"dataset name {name!r} is taken")
        if self.access.store is not None:
            record = self.access.store.claim_dataset(name, who.user_id)
            if record.owner_id != who.user_id:
                raise ConflictError(f"dataset name {name!r} is taken")
        return DatasetInfo(name=name, owner=None if who.user_id is None else who.name, permissions=ordered(ALL))

    def delete_dataset(self, who: Principal, name: str) -> ForgetResult:
        self._require_owner(who, name)
        result = ForgetResult()
        if name in self.kn.datasets():
            with self.locks.hold([name]):
                result = self.kn.forget(dataset=name)
        if self.access.store is not None:
            self.access.store.drop_dataset(name)
        return result

    def adopt(self, who: Principal, name: str, owner: Principal | None) -> DatasetInfo:
        """Record an owner (or none: admins only, grants apply) for a dataset written before
        auth was on, so that grants on it take effect. Admins only."""
        check_dataset(name)
        store = self.access.store
        if not who.admin or store is None:
            raise PermissionDeniedError("only an admin adopts a dataset")
        if name not in self.kn.datasets():
            raise NotFoundError(f"no dataset {name!r} with memories to adopt")
        if store.dataset_records([name]):
            raise ConflictError(f"dataset {name!r} already has an owner record")
        store.claim_dataset(name, owner.user_id if owner else None)
        return DatasetInfo(name=name, owner=owner.name if owner else None, permissions=ordered(ALL))

    def _require_owner(self, who: Principal, name: str) -> None:
        self.access.require(who, name, "read")
        if who.admin or self.access.store is None:
            return
        records = self.access.store.dataset_records([name])
        if not records or records[0].owner_id != who.user_id:
            raise PermissionDeniedError(f"only the owner of dataset {name!r} may delete it")

    def _owner_names(self, names: Sequence[str]) -> dict[str, str]:
        store = self.access.store
        if store is None:
            return {}
        users = {u.id: u.name for u in store.list_users()}
        return {r.name: users[r.owner_id] for r in store.dataset_records(names) if r.owner_id in users}

    # -- grants ------------------------------------------------------------------------------
    def grants(self, who: Principal, name: str) -> list[GrantInfo]:
        self.access.require(who, name, "share")
        store = self.access.store
        if store is None:
            return []
        users = {u.id: u.name for u in store.list_users()}
        return [GrantInfo(dataset=name, user=users.get(g.user_id, g.user_id), permissions=ordered(g.permissions))
                for g in store.grants(name)]

    def grant(self, who: Principal, name: str, user: str, permissions: Sequence[str]) -> GrantInfo:
        """Set ``user``'s permissions on ``name``. Owners and admins grant anything; a holder of
        ``share`` grants at most the ``read`` / ``write`` they hold, and changes no grant that
        carries ``delete`` or ``share``. A grant names an existing user: granting never creates
        one (an admin does, with ``kenning keys create --user NAME``), so nobody can take a
        name such as ``admin`` before its admin is made. An unknown name is a NotFoundError, a
        reserved one (``RESERVED``) a ValidationError; revoking from an unknown name changes
        nothing and answers as for anyone."""
        check_dataset(name)
        self.access.require(who, name, "share")
        store = self.access.store
        if store is None:
            raise ValidationError("grants need auth: this server runs with --no-auth")
        records = store.dataset_records([name])
        if not records:
            raise ConflictError(
                f"dataset {name!r} was written before auth was on and has no owner record, so a "
                f"grant would not apply: adopt it first with `kenning datasets adopt {name} "
                "[--owner USER]`"
            )
        perms = set(permissions) | {"read"} if permissions else set()
        check_user_name(user)
        target = store.find_user(user)
        if not who.admin and records[0].owner_id != who.user_id:
            held = store.user_grants(target.id).get(name, frozenset()) if target else frozenset()
            self._check_delegation(who, name, perms | set(held))
        if target is None:
            if not perms:  # revoking what nobody holds: nothing to record
                return GrantInfo(dataset=name, user=user, permissions=[])
            if user in RESERVED:
                raise ValidationError(f"user name {user!r} is reserved: only `kenning keys create` makes it")
            raise NotFoundError(f"no user {user!r}: an admin creates users (kenning keys create --user {user})")
        grant = store.set_grant(name, target.id, sorted(perms))
        return GrantInfo(dataset=name, user=user, permissions=ordered(grant.permissions))

    def _check_delegation(self, who: Principal, name: str, perms: set[str]) -> None:
        """A grantor who is neither owner nor admin passes on only what they hold, never
        ``delete`` or ``share``."""
        passable = self.access.permissions(who, name) & {"read", "write"}
        if not perms <= passable:
            extra = ", ".join(ordered(perms - passable))
            raise PermissionDeniedError(
                f"you may grant only the read and write you hold on {name!r}, not {extra}; "
                "only its owner or an admin grants or changes delete and share"
            )

    # -- users and keys (admins) -------------------------------------------------------------
    def user(self, name: str) -> Principal:
        """The user called ``name`` as a principal; NotFoundError if there is none."""
        user = self._store.find_user(name)
        if user is None:
            raise NotFoundError(f"no user {name!r}")
        return Principal(name=user.name, user_id=user.id, admin=user.admin)

    def users(self) -> list[User]:
        return self._store.list_users()

    def create_key(self, user_name: str, *, admin: bool = False, name: str | None = None) -> tuple[str, ApiKey, User]:
        """A new key for ``user_name`` (created if new; ``admin`` makes a new user an admin, and
        the user called ``admin`` always is one). Returns the key (shown once), its record and
        its user."""
        store = self._store
        user = store.find_user(user_name)
        if user is None:
            check_user_name(user_name)
            user = store.create_user(user_name, admin=admin or user_name == "admin")
        elif admin and not user.admin:
            raise ConflictError(f"user {user_name!r} exists and is not an admin")
        key = generate_key()
        return key, store.create_key(user.id, hash_key(key), shown_prefix(key), name), user

    def keys(self, user_name: str | None = None) -> list[ApiKey]:
        return self._store.list_keys(self.user(user_name).user_id if user_name else None)

    def revoke_key(self, key_id_or_prefix: str) -> ApiKey:
        """Revoke by id or shown prefix (a trailing '…' as listings show it is ignored)."""
        return self._store.revoke_key(key_id_or_prefix.rstrip("…"))
