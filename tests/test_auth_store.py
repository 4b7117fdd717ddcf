"""The one ``AuthStore`` implementation, run on both backends through their dialects: users,
keys, dataset records and grants keep the same contract whatever the SQL spelling."""

from __future__ import annotations

import pytest

from kenning import Kenning
from kenning.errors import ConflictError, NotFoundError
from kenning.store.auth import AuthStore, hash_key


@pytest.fixture
def store(store_url: str):  # noqa: ANN201
    with Kenning(store_url) as kn:
        assert isinstance(kn.store, AuthStore)
        yield kn.store


def test_users_are_unique_by_name(store: AuthStore) -> None:
    ann = store.create_user("ann", admin=True)
    with pytest.raises(ConflictError):
        store.create_user("ann")
    found = store.find_user("ann")
    assert found is not None and found.id == ann.id and found.admin is True
    assert found.created_at.tzinfo is not None
    assert store.find_user("bob") is None
    store.create_user("bob")
    assert [u.name for u in store.list_users()] == ["ann", "bob"]


def test_keys_authenticate_until_revoked(store: AuthStore) -> None:
    ann, bob = store.create_user("ann"), store.create_user("bob")
    first = store.create_key(ann.id, hash_key("kn_one"), "kn_shared", "laptop")
    store.create_key(bob.id, hash_key("kn_two"), "kn_shared")
    assert store.key_owner(hash_key("kn_one")).name == "ann"
    assert [k.id for k in store.list_keys(ann.id)] == [first.id]
    assert len(store.list_keys()) == 2
    with pytest.raises(ConflictError):
        store.revoke_key("kn_shared")
    with pytest.raises(NotFoundError):
        store.revoke_key("kn_nothing")
    revoked = store.revoke_key(first.id)
    assert revoked.revoked_at is not None and revoked.name == "laptop"
    assert store.revoke_key(first.id).revoked_at == revoked.revoked_at  # the first time holds
    assert store.key_owner(hash_key("kn_one")) is None
    assert store.key_owner(hash_key("kn_two")).name == "bob"


def test_datasets_and_grants(store: AuthStore) -> None:
    ann, bob = store.create_user("ann"), store.create_user("bob")
    assert store.claim_dataset("notes", ann.id).owner_id == ann.id
    assert store.claim_dataset("notes", bob.id).owner_id == ann.id  # the first claim holds
    store.claim_dataset("attic", None)
    assert [r.name for r in store.dataset_records()] == ["attic", "notes"]
    assert [r.name for r in store.dataset_records(["notes", "none"])] == ["notes"]
    assert store.dataset_records([]) == []
    store.set_grant("notes", bob.id, ["write", "read"])
    store.set_grant("notes", bob.id, ["read"])
    assert store.user_grants(bob.id) == {"notes": frozenset({"read"})}
    assert [(g.user_id, g.permissions) for g in store.grants("notes")] == [(bob.id, frozenset({"read"}))]
    store.set_grant("attic", bob.id, [])
    assert store.grants("attic") == []
    store.drop_dataset("notes")
    assert store.grants("notes") == [] and store.user_grants(bob.id) == {}
    assert [r.name for r in store.dataset_records()] == ["attic"]
