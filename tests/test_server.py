"""The HTTP API end to end: a real uvicorn server on 127.0.0.1, spoken to with httpx."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("fastapi")

from tests.server_util import add_user, running


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("srv") / "server.db")
    with running(path, max_body=256 * 1024) as (kn, base):
        key = add_user(kn, "alice")
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
            yield client


def _error(resp: httpx.Response, status: int, code: str | None = None) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    if code:
        assert body["error"]["code"] == code, body
    return body["error"]


def _remember(c: httpx.Client, text: str, dataset: str = "srv", **extra) -> str:
    resp = c.post("/v1/remember", json={"content": text, "dataset": dataset, **extra})
    assert resp.status_code == 200, resp.text
    return resp.json()["memory_ids"][0]


def test_health_needs_no_key(server):
    resp = httpx.get(server.base_url.join("/v1/health"))
    assert resp.json() == {"status": "ok", "version": resp.json()["version"], "auth": True}


def test_every_route_needs_a_key(server):
    bare = httpx.Client(base_url=server.base_url)
    _error(bare.get("/v1/stats"), 401, "authentication_error")
    _error(bare.post("/v1/recall", json={"query": "x"}), 401)
    _error(server.get("/v1/stats", headers={"Authorization": "Bearer kn_wrong"}), 401)
    assert server.get("/v1/me").json() == {"name": "alice", "admin": False, "auth": True}


def test_remember_then_recall_timeline_stats(server):
    mid = _remember(server, "Alice works at Acme since 2020.", dataset="srv-basic")
    _remember(server, "Bob lives in Paris.", dataset="srv-basic")
    body = {"query": "Where does Alice work?", "dataset": "srv-basic"}
    hits = server.post("/v1/recall", json=body).json()["hits"]
    assert (hits[0]["kind"], hits[0]["text"], hits[0]["target"]) == ("fact", "Alice works at Acme since 2020.", "Acme")
    assert hits[0]["memory_ids"] == [mid] and hits[0]["valid_at"].startswith("2020-01-01")
    timeline = server.get("/v1/timeline", params={"entity": "Alice", "dataset": "srv-basic"}).json()
    assert timeline["entity"]["name"] == "Alice"
    assert [(f["relation"], f["target"]) for f in timeline["facts"]] == [("works_at", "Acme")]
    stats = server.get("/v1/stats", params={"dataset": "srv-basic"}).json()
    assert (stats["memories"], stats["facts"], stats["entities"]) == (2, 2, 4)


def test_add_then_cognify(server):
    ids = server.post("/v1/add", json={"content": ["Bob lives in Paris.", "Carol likes tea."],
                                       "dataset": "pending"}).json()["memory_ids"]
    assert len(ids) == 2
    assert server.get(f"/v1/memories/{ids[0]}").json()["status"] == "pending"
    result = server.post("/v1/cognify", json={"dataset": "pending"}).json()
    assert sorted(result["processed"]) == sorted(ids)
    assert server.get(f"/v1/memories/{ids[0]}").json()["status"] == "active"


def test_remember_structured_and_file(server):
    body = {"content": {"topic": "Database choice", "decisions": ["Use PostgreSQL"],
                        "rationale": ["pgvector"]}, "dataset": "srv"}
    resp = server.post("/v1/remember", json=body)
    memory = server.get(f"/v1/memories/{resp.json()['memory_ids'][0]}").json()
    assert memory["topic"] == "Database choice" and memory["decisions"] == ["Use PostgreSQL"]
    files = {"file": ("notes.txt", b"Dave manages the Berlin office.", "text/plain")}
    resp = server.post("/v1/remember/file", files=files, data={"dataset": "srv"})
    assert resp.status_code == 200, resp.text
    memory = server.get(f"/v1/memories/{resp.json()['memory_ids'][0]}").json()
    assert memory["source"] == "notes.txt" and "Berlin" in memory["content"]
    bad = {"file": ("x.bin", bytes(range(256)) * 8, "application/octet-stream")}
    _error(server.post("/v1/remember/file", files=bad, data={"dataset": "srv"}), 422, "file_read_error")


def test_list_paginates_and_filters(server):
    for i in range(5):
        _remember(server, f"Item number {i} is stored in bin {i}.", dataset="pages")
    first = server.get("/v1/memories", params={"dataset": "pages", "limit": 2}).json()
    second = server.get("/v1/memories", params={"dataset": "pages", "limit": 2, "offset": 2}).json()
    assert len(first["items"]) == 2 and first["next_offset"] == 2
    assert {m["id"] for m in first["items"]}.isdisjoint(m["id"] for m in second["items"])
    last = server.get("/v1/memories", params={"dataset": "pages", "limit": 10}).json()
    assert len(last["items"]) == 5 and last["next_offset"] is None
    pinned = server.get("/v1/memories", params={"dataset": "pages", "pinned": True}).json()
    assert pinned["items"] == []


def test_memory_lifecycle_routes(server):
    mid = _remember(server, "Erin works at Acme.")
    pinned = server.post(f"/v1/memories/{mid}/pin", json={"reason": "key fact"}).json()
    assert pinned["pinned"] is True and pinned["pin_reason"] == "key fact"
    assert server.post(f"/v1/memories/{mid}/unpin").json()["pinned"] is False
    prov = server.get(f"/v1/memories/{mid}/provenance").json()
    assert prov["memory_id"] == mid and prov["entities"]
    chain = server.get(f"/v1/memories/{mid}/chain").json()
    assert [m["id"] for m in chain] == [mid]
    updated = server.patch(f"/v1/memories/{mid}", json={"content": "Erin leads the platform team."})
    assert updated.status_code == 200, updated.text
    assert "platform" in updated.json()["content"]
    deleted = server.delete(f"/v1/memories/{mid}").json()
    assert deleted["memory_ids"] == [mid]
    _error(server.get(f"/v1/memories/{mid}"), 404, "not_found")


def test_improve_and_feedback(server):
    _remember(server, "Dora works at Zeta Corp.", dataset="imp")
    _remember(server, "Egon works at Zeta Inc.", dataset="imp")
    improved = server.post("/v1/improve", json={"dataset": "imp"})
    assert improved.status_code == 200 and len(improved.json()["entities_merged"]) == 1
    hit = server.post("/v1/recall", json={"query": "Where does Dora work?", "dataset": "imp"}).json()["hits"][0]
    assert hit["kind"] == "fact"
    weight = server.post("/v1/feedback", json={"fact_id": hit["id"], "helpful": True}).json()["weight"]
    assert weight > 1.0
    _error(server.post("/v1/feedback", json={"fact_id": "fct_nope", "helpful": True}), 404, "not_found")


def test_prune_and_forget(server):
    mid = _remember(server, "Frank visited Oslo.", dataset="gone")
    dry = server.post("/v1/prune", json={"dataset": "gone", "max_age_days": 0}).json()
    assert dry["dry_run"] is True
    assert server.get(f"/v1/memories/{mid}").status_code == 200
    forgot = server.post("/v1/forget", json={"memory_id": mid}).json()
    assert forgot["memory_ids"] == [mid]
    _remember(server, "Grace visited Rome.", dataset="gone")
    server.post("/v1/forget", json={"dataset": "gone"}).raise_for_status()
    assert server.get("/v1/stats", params={"dataset": "gone"}).json()["memories"] == 0
    _error(server.post("/v1/forget", json={}), 422)
    _error(server.post("/v1/forget", json={"everything": True}), 403, "permission_denied")


def test_datasets_routes(server):
    created = server.post("/v1/datasets", json={"name": "made"})
    assert created.status_code == 201 and created.json()["owner"] == "alice"
    _error(server.post("/v1/datasets", json={"name": "made"}), 409, "conflict")
    names = [d["name"] for d in server.get("/v1/datasets").json()]
    assert "made" in names
    assert server.get("/v1/datasets/made/grants").json() == []
    # a grant never creates a user: a name nobody holds is 404
    assert server.put("/v1/datasets/made/grants/nobody", json={"permissions": ["read"]}).status_code == 404
    assert server.get("/v1/datasets/made/grants").json() == []
    server.delete("/v1/datasets/made").raise_for_status()
    assert "made" not in [d["name"] for d in server.get("/v1/datasets").json()]


def test_openapi_lists_every_route(server):
    spec = server.get("/openapi.json").json()
    paths = spec["paths"]
    expected = {
        ("post", "/v1/remember"), ("post", "/v1/remember/file"), ("post", "/v1/add"),
        ("post", "/v1/cognify"), ("post", "/v1/recall"), ("get", "/v1/timeline"), ("get", "/v1/graph"),
        ("get", "/v1/memories"), ("get", "/v1/memories/{memory_id}"),
        ("patch", "/v1/memories/{memory_id}"), ("delete", "/v1/memories/{memory_id}"),
        ("post", "/v1/memories/{memory_id}/pin"), ("post", "/v1/memories/{memory_id}/unpin"),
        ("get", "/v1/memories/{memory_id}/chain"), ("get", "/v1/memories/{memory_id}/provenance"),
        ("post", "/v1/prune"), ("post", "/v1/forget"), ("get", "/v1/stats"),
        ("post", "/v1/improve"), ("post", "/v1/feedback"),
        ("get", "/v1/datasets"), ("post", "/v1/datasets"), ("delete", "/v1/datasets/{name}"),
        ("get", "/v1/datasets/{name}/grants"), ("put", "/v1/datasets/{name}/grants/{user}"),
        ("delete", "/v1/datasets/{name}/grants/{user}"), ("get", "/v1/health"), ("get", "/v1/me"),
    }
    listed = {(method, path) for path, ops in paths.items() for method in ops}
    assert expected <= listed, expected - listed
    served = {(m.lower(), r.path) for r in server_routes(spec) for m in [r.method]}
    assert served == listed
    assert "ErrorResponse" in spec["components"]["schemas"]
    assert "RememberResult" in spec["components"]["schemas"]


def server_routes(spec):
    from types import SimpleNamespace

    return [SimpleNamespace(method=m, path=p) for p, ops in spec["paths"].items() for m in ops]


@pytest.mark.parametrize(
    ("method", "url", "kwargs", "status"),
    [
        ("post", "/v1/remember", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400),
        ("post", "/v1/remember", {"json": {"content": 42}}, 422),
        ("post", "/v1/remember", {"json": {"content": "x", "dataset": "bad name!"}}, 422),
        ("post", "/v1/remember", {"json": {"content": "x", "extra": 1}}, 422),
        ("post", "/v1/recall", {"json": {"query": "x", "top_k": "many"}}, 422),
        ("post", "/v1/recall", {"json": {"query": "x", "dataset": "srv", "search_type": "psychic"}}, 422),
        ("post", "/v1/recall", {"json": {"query": "x", "dataset": "srv", "as_of": "not a date at all"}}, 422),
        ("get", "/v1/memories", {"params": {"limit": -1}}, 422),
        ("get", "/v1/memories/mem_doesnotexist", {}, 404),
        ("patch", "/v1/memories/mem_doesnotexist", {"json": {"content": "y"}}, 404),
        ("delete", "/v1/memories/mem_doesnotexist", {}, 404),
        ("post", "/v1/memories/mem_doesnotexist/pin", {}, 404),
        ("get", "/v1/memories/mem_doesnotexist/chain", {}, 404),
        ("get", "/v1/timeline", {"params": {"entity": "Nobody", "dataset": "srv"}}, 404),
        ("get", "/v1/stats", {"params": {"dataset": "never-made"}}, 404),
        ("get", "/v1/no-such-route", {}, 404),
        ("put", "/v1/recall", {}, 405),
        ("post", "/v1/remember", {"json": {"content": "x" * 300_000}}, 413),
        ("post", "/v1/remember", {"content": (b"x" * 1024 for _ in range(400)),
                                  "headers": {"content-type": "application/json"}}, 413),
    ],
)
def test_bad_requests_get_4xx_in_the_error_shape(server, method, url, kwargs, status):
    _error(server.request(method, url, **kwargs), status)
