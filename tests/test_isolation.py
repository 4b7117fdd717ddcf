"""Tenant isolation: user B, with and without grants, tries every route on user A's dataset.

Only granted operations succeed; without any grant every answer is the same 404 an unknown
dataset or id gets, and no count or listing includes A's data.
"""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("fastapi")

from tests.server_util import add_user, running

SECRET = "Zebulon works at Quixotic. Zebulon lives in Reykjavik."


@pytest.fixture()
def world(tmp_path):
    with running(str(tmp_path / "iso.db")) as (kn, base):
        keys = {name: add_user(kn, name) for name in ("alice", "bob", "carol")}
        keys["root"] = add_user(kn, "root", admin=True)
        clients = {n: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {k}"}, timeout=30)
                   for n, k in keys.items()}
        a = clients["alice"]
        resp = a.post("/v1/remember", json={"content": SECRET, "dataset": "a-data"})
        assert resp.status_code == 200, resp.text
        clients["memory_id"] = resp.json()["memory_ids"][0]
        resp = a.post("/v1/remember", json={"content": "Zebulon lives in Reykjavik since 2020.", "dataset": "a-data"})
        clients["memory_id2"] = resp.json()["memory_ids"][0]
        clients["keys"] = keys
        clients["kn"] = kn
        yield clients
        for c in clients.values():
            if isinstance(c, httpx.Client):
                c.close()


def _attempts(mid: str, mid2: str = "mem_000000000000000000000001") -> dict[str, tuple[str, str, dict]]:
    """Every route, aimed at alice's dataset ``a-data`` or her memory ``mid``."""
    ds = "a-data"
    return {
        "remember": ("post", "/v1/remember", {"json": {"content": "Bob was here.", "dataset": ds}}),
        "remember_file": ("post", "/v1/remember/file",
                          {"files": {"file": ("b.txt", b"Bob again.")}, "data": {"dataset": ds}}),
        "add": ("post", "/v1/add", {"json": {"content": "Bob adds.", "dataset": ds}}),
        "cognify": ("post", "/v1/cognify", {"json": {"dataset": ds}}),
        "recall": ("post", "/v1/recall", {"json": {"query": "Zebulon merger", "dataset": ds}}),
        "timeline": ("get", "/v1/timeline", {"params": {"entity": "Zebulon", "dataset": ds}}),
        "graph": ("get", "/v1/graph", {"params": {"entity": "Zebulon", "dataset": ds, "depth": 2}}),
        "list": ("get", "/v1/memories", {"params": {"dataset": ds}}),
        "get": ("get", f"/v1/memories/{mid}", {}),
        "update": ("patch", f"/v1/memories/{mid}", {"json": {"metadata": {"by": "bob"}}}),
        "pin": ("post", f"/v1/memories/{mid}/pin", {}),
        "unpin": ("post", f"/v1/memories/{mid}/unpin", {}),
        "chain": ("get", f"/v1/memories/{mid}/chain", {}),
        "provenance": ("get", f"/v1/memories/{mid}/provenance", {}),
        "prune_dry": ("post", "/v1/prune", {"json": {"dataset": ds, "max_age_days": 1000}}),
        "prune": ("post", "/v1/prune", {"json": {"dataset": ds, "max_age_days": 1000, "dry_run": False}}),
        "stats": ("get", "/v1/stats", {"params": {"dataset": ds}}),
        "grants": ("get", f"/v1/datasets/{ds}/grants", {}),
        "grant": ("put", f"/v1/datasets/{ds}/grants/carol", {"json": {"permissions": ["read"]}}),
        "revoke": ("delete", f"/v1/datasets/{ds}/grants/carol", {}),
        "delete": ("delete", f"/v1/memories/{mid}", {}),
        "forget_memory": ("post", "/v1/forget", {"json": {"memory_id": mid2}}),
        "forget_dataset": ("post", "/v1/forget", {"json": {"dataset": ds}}),
        "delete_dataset": ("delete", f"/v1/datasets/{ds}", {}),
    }


NEEDS = {
    "read": {"recall", "timeline", "graph", "list", "get", "chain", "provenance", "prune_dry", "stats"},
    "write": {"remember", "remember_file", "add", "cognify", "update", "pin", "unpin"},
    "delete": {"prune", "delete", "forget_memory", "forget_dataset"},
    "share": {"grants", "grant", "revoke"},
    "owner": {"delete_dataset"},
}
# Destructive routes run last, so the ones before still have something to act on.
ORDER = [n for group in ("read", "write", "share") for n in sorted(NEEDS[group])] + [
    "prune", "delete", "forget_memory", "forget_dataset", "delete_dataset"]


def _send(client: httpx.Client, attempt: tuple[str, str, dict]) -> httpx.Response:
    method, url, kwargs = attempt
    return client.request(method, url, **kwargs)


def _leaks(resp: httpx.Response) -> bool:
    return any(word in resp.text for word in ("Zebulon", "Quixotic", "Reykjavik", "alice"))


def test_without_grants_everything_is_404(world):
    bob, mid = world["bob"], world["memory_id"]
    unknown = _send(bob, ("get", "/v1/memories/mem_000000000000000000000000", {})).json()
    for name in ORDER:
        resp = _send(bob, _attempts(mid)[name])
        assert resp.status_code == 404, (name, resp.text)
        assert set(resp.json()) == {"error"} and not _leaks(resp), (name, resp.text)
    # A's memory id answers exactly like an id that never existed (apart from the id itself).
    same = _send(bob, ("get", f"/v1/memories/{mid}", {})).json()
    assert same["error"]["code"] == unknown["error"]["code"]
    assert same["error"]["message"].replace(mid, "ID") == unknown["error"]["message"].replace(
        "mem_000000000000000000000000", "ID")
    # Alice's data is untouched by all of that.
    a = world["alice"]
    assert a.get(f"/v1/memories/{mid}").status_code == 200
    assert a.get("/v1/stats", params={"dataset": "a-data"}).json()["memories"] == 2


def test_counts_and_listings_exclude_others(world):
    bob, alice = world["bob"], world["alice"]
    bob.post("/v1/remember", json={"content": "Bob owns a red bicycle.", "dataset": "b-data"}).raise_for_status()
    stats = bob.get("/v1/stats").json()
    assert stats["memories"] == 1 and stats["datasets"] == ["b-data"]
    assert [d["name"] for d in bob.get("/v1/datasets").json()] == ["b-data"]
    assert alice.get("/v1/stats").json()["memories"] == 2
    root = world["root"].get("/v1/stats").json()
    assert root["memories"] == 3 and set(root["datasets"]) >= {"a-data", "b-data"}
    # cognify without a dataset touches only bob's datasets
    assert world["bob"].post("/v1/cognify", json={}).status_code == 200
    # recall in bob's dataset never returns alice's facts
    hits = bob.post("/v1/recall", json={"query": "Zebulon merger Reykjavik", "dataset": "b-data"}).json()
    assert hits["hits"] == [] or not any("Zebulon" in h["text"] for h in hits["hits"])
    assert hits["memories"] == [] or all(m["dataset"] == "b-data" for m in hits["memories"])


def test_the_name_is_taken_but_nothing_else_is_told(world):
    resp = world["bob"].post("/v1/datasets", json={"name": "a-data"})
    assert resp.status_code == 409 and not _leaks(resp)
    assert world["bob"].post("/v1/forget", json={"everything": True}).status_code == 403


@pytest.mark.parametrize("granted", [["read"], ["read", "write"], ["delete"], ["share"],
                                     ["read", "write", "delete", "share"]])
def test_only_granted_operations_succeed(world, granted):
    alice, bob, mid = world["alice"], world["bob"], world["memory_id"]
    resp = alice.put("/v1/datasets/a-data/grants/bob", json={"permissions": granted})
    assert resp.status_code == 200, resp.text
    held = set(granted) | {"read"}
    attempts = _attempts(mid, world["memory_id2"])
    for name in ORDER:
        need = next(p for p, names in NEEDS.items() if name in names)
        resp = _send(bob, attempts[name])
        if need in held:
            assert resp.status_code < 300, (granted, name, resp.text)
        else:
            assert resp.status_code == 403, (granted, name, resp.text)
            assert resp.json()["error"]["code"] == "permission_denied"


def test_revoked_grant_and_revoked_key(world):
    alice, bob, mid = world["alice"], world["bob"], world["memory_id"]
    alice.put("/v1/datasets/a-data/grants/bob", json={"permissions": ["read"]}).raise_for_status()
    assert bob.get(f"/v1/memories/{mid}").status_code == 200
    assert [g["user"] for g in alice.get("/v1/datasets/a-data/grants").json()] == ["bob"]
    alice.delete("/v1/datasets/a-data/grants/bob").raise_for_status()
    assert bob.get(f"/v1/memories/{mid}").status_code == 404
    from kenning.access import auth_store
    from kenning.store.auth import shown_prefix

    auth_store(world["kn"]).revoke_key(shown_prefix(world["keys"]["alice"]))
    assert alice.get(f"/v1/memories/{mid}").json()["error"]["code"] == "authentication_error"


def test_admin_sees_and_does_everything(world):
    root, mid = world["root"], world["memory_id"]
    assert root.get(f"/v1/memories/{mid}").status_code == 200
    assert "a-data" in [d["name"] for d in root.get("/v1/datasets").json()]
    assert root.put("/v1/datasets/a-data/grants/carol", json={"permissions": ["read"]}).status_code == 200
    assert world["carol"].get(f"/v1/memories/{mid}").status_code == 200
    assert root.delete("/v1/datasets/a-data").status_code == 200
    assert world["alice"].get(f"/v1/memories/{mid}").status_code == 404
