"""The server against a hostile web page and hostile users: Host and Origin checks in both auth
modes, bounded metadata on every surface, delegation limits of ``share``, grants on datasets
written before auth, no user enumeration, and rate limits. Real servers on 127.0.0.1."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("fastapi")

from click.testing import CliRunner

from kenning import Kenning, RateLimitedError
from kenning.cli import cli
from kenning.server import create_app
from kenning.access import Limiter
from tests.server_util import add_user, running, serve


def nested(levels: int) -> dict:
    root: dict = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return root


def _client(base: str, key: str | None = None, **headers: str) -> httpx.Client:
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=base, headers=headers, timeout=30)


@pytest.fixture(params=[True, False], ids=["auth", "no-auth"])
def both_modes(request, tmp_path):
    with running(str(tmp_path / "guard.db"), auth=request.param) as (kn, base):
        key = add_user(kn, "alice", admin=True) if request.param else None
        yield kn, base, key


# -- Host and Origin ---------------------------------------------------------------------------
def test_a_foreign_host_is_refused_in_both_modes(both_modes):
    kn, base, key = both_modes
    port = base.rsplit(":", 1)[1]
    with _client(base, key) as c:
        for host in ("evil.example", f"evil.example:{port}", f"rebind.attacker.test:{port}", ""):
            resp = c.get("/v1/memories", headers={"Host": host})
            assert resp.status_code == 421, (host, resp.text)
            assert resp.json()["error"]["code"] == "host_not_allowed"
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
            assert c.get("/v1/memories", headers={"Host": host}).status_code == 200, host


def test_cross_origin_writes_are_refused_in_both_modes(both_modes):
    kn, base, key = both_modes
    port = base.rsplit(":", 1)[1]
    forged = [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": f"http://localhost:{int(port) + 1}"},  # same site, another origin
        {"Origin": f"https://127.0.0.1:{port}"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ]
    with _client(base, key) as c:
        for headers in forged:
            resp = c.post("/v1/remember/file", files={"file": ("a.txt", b"Mallory was here.")},
                          headers=headers)
            assert resp.status_code == 403 and resp.json()["error"]["code"] == "cross_origin", headers
            resp = c.post("/v1/remember", json={"content": "Mallory was here."}, headers=headers)
            assert resp.status_code == 403, headers
        assert kn.stats().memories == 0
        # reads stay readable to the same page; the browser's own same-origin writes pass
        assert c.get("/v1/memories", headers={"Origin": "http://evil.example"}).status_code == 200
        same = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
        assert c.post("/v1/remember", json={"content": "Alice works at Acme."}, headers=same).status_code == 200
        assert c.post("/v1/remember", json={"content": "Bob lives in Paris."},
                      headers={"Sec-Fetch-Site": "none"}).status_code == 200
    assert kn.stats().memories == 2


def test_hosts_follow_the_bound_address_and_allowed_names(tmp_path):
    with Kenning(str(tmp_path / "h.db")) as kn:
        cases = [
            ("0.0.0.0", (), {"10.1.2.3:80": 200, "memory.internal": 421}),
            ("10.1.2.3", (), {"10.1.2.3": 200, "10.9.9.9": 421, "localhost": 200}),
            ("0.0.0.0", ("memory.internal",), {"memory.internal:8000": 200, "MEMORY.internal.": 200,
                                               "other.internal": 421}),
            ("127.0.0.1", ("*",), {"anything.example": 200}),
            ("::1", (), {"[::1]:80": 200, "10.0.0.1": 421, "localhost@evil.example": 421}),
            ("::", (), {"[fd00::5]:80": 200, "10.0.0.1": 200, "evil.example@10.0.0.1": 421}),
        ]
        for bind, names, expected in cases:
            with serve(create_app(kn, auth=False, bind=bind, allowed_hosts=names)) as base:
                for host, status in expected.items():
                    resp = httpx.get(f"{base}/v1/health", headers={"Host": host})
                    assert resp.status_code == status, (bind, names, host)


# -- metadata on every surface -----------------------------------------------------------------
def test_http_refuses_deep_or_non_finite_metadata_and_readers_are_unharmed(tmp_path):
    with running(str(tmp_path / "m.db")) as (kn, base):
        with _client(base, add_user(kn, "alice"), **{"content-type": "application/json"}) as c:
            bodies = [
                '{"content": "Alice works at Acme.", "metadata": ' + '{"a":' * 600 + "1" + "}" * 600 + "}",
                '{"content": "Alice works at Acme.", "metadata": {"x": NaN}}',
                '{"content": "Alice works at Acme.", "metadata": {"x": [Infinity]}}',
                '{"content": "Alice works at Acme.", "metadata": {"x": -Infinity}}',
                '{"content": "Alice works at Acme.", "metadata": {"\\ud800": 1}}',
                '{"content": "Alice \\ud800 works at Acme."}',
            ]
            for body in bodies:
                for route in ("/v1/remember", "/v1/add"):
                    resp = c.post(route, content=body)
                    assert resp.status_code == 422, resp.text
                    assert resp.json()["error"]["code"] == "validation_error"
            mid = c.post("/v1/remember", json={"content": "Bob lives in Paris.", "metadata": {"ok": 1}}).json()["memory_ids"][0]
            resp = c.patch(f"/v1/memories/{mid}", content='{"metadata": {"x": NaN}}')
            assert resp.status_code == 422
            assert c.post("/v1/recall", json={"query": "Bob"}).status_code == 200
            assert c.get("/v1/memories").json()["items"][0]["metadata"] == {"ok": 1}


def test_mcp_and_cli_refuse_bad_metadata(tmp_path):
    pytest.importorskip("mcp")
    import anyio

    from kenning.mcp.server import build_server

    path = str(tmp_path / "c.db")
    with Kenning(path) as kn:
        mid = kn.remember("Alice works at Acme.").memory_ids[0]
        server = build_server(kn, auth=False, tools="all")

        async def call() -> str:
            try:
                await server.call_tool("update", {"memory_id": mid, "metadata": nested(600)})
            except Exception as exc:  # noqa: BLE001 - the tool error is what we check
                return str(exc)
            return "accepted"

        assert "validation_error" in anyio.run(call)
    result = CliRunner().invoke(cli, ["--db", path, "memories", "update", mid, "--metadata", '{"x": NaN}'])
    assert result.exit_code == 1 and result.output.startswith("error: metadata holds nan")
    with Kenning(path) as kn:
        assert kn.get(mid).metadata == {}


# -- share, grants and users -------------------------------------------------------------------
@pytest.fixture()
def shared(tmp_path):
    with running(str(tmp_path / "share.db")) as (kn, base):
        keys = {n: add_user(kn, n) for n in ("alice", "bob", "carol")}
        keys["root"] = add_user(kn, "root", admin=True)
        clients = {n: _client(base, k) for n, k in keys.items()}
        assert clients["alice"].post("/v1/remember", json={"content": "Alice works at Acme.",
                                                           "dataset": "a-data"}).status_code == 200
        yield kn, clients
        for c in clients.values():
            c.close()


def test_share_cannot_escalate(shared):
    kn, c = shared
    alice, bob, carol = c["alice"], c["bob"], c["carol"]
    assert alice.put("/v1/datasets/a-data/grants/bob", json={"permissions": ["share"]}).status_code == 200
    for user, perms in (("bob", ["read", "write"]), ("bob", ["delete"]), ("bob", ["share"]),
                        ("carol", ["share"]), ("carol", ["delete"]), ("carol", ["write"])):
        resp = bob.put(f"/v1/datasets/a-data/grants/{user}", json={"permissions": perms})
        assert resp.status_code == 403, (user, perms, resp.text)
    assert bob.post("/v1/forget", json={"dataset": "a-data"}).status_code == 403
    assert kn.stats("a-data").memories == 1
    # what bob holds he may pass on
    assert bob.put("/v1/datasets/a-data/grants/carol", json={"permissions": ["read"]}).status_code == 200
    assert carol.get("/v1/memories", params={"dataset": "a-data"}).status_code == 200
    # a grant that carries delete is the owner's to change
    assert alice.put("/v1/datasets/a-data/grants/carol", json={"permissions": ["delete"]}).status_code == 200
    assert bob.delete("/v1/datasets/a-data/grants/carol").status_code == 403
    assert bob.put("/v1/datasets/a-data/grants/carol", json={"permissions": ["read"]}).status_code == 403
    # with write too, bob may grant write, and revoke what he granted
    assert alice.put("/v1/datasets/a-data/grants/bob", json={"permissions": ["write", "share"]}).status_code == 200
    assert bob.put("/v1/datasets/a-data/grants/root", json={"permissions": ["write"]}).status_code == 200
    assert bob.delete("/v1/datasets/a-data/grants/root").status_code == 200
    # the owner and an admin grant anything
    assert alice.put("/v1/datasets/a-data/grants/carol", json={"permissions": ["share", "delete"]}).status_code == 200
    assert c["root"].put("/v1/datasets/a-data/grants/bob", json={"permissions": ["delete"]}).status_code == 200


def test_grants_never_create_users(shared):
    """A grant names an existing user: granting to a name nobody holds is 404 and creates
    nobody (so nobody can take ``admin`` before its admin is made: issue 24); a reserved name is
    422; revoking from an unknown name answers as for anyone."""
    kn, c = shared
    alice = c["alice"]
    from kenning.access import auth_store

    store = auth_store(kn)
    assert alice.put("/v1/datasets/a-data/grants/carol", json={"permissions": ["read"]}).status_code == 200
    unknown = alice.put("/v1/datasets/a-data/grants/zed", json={"permissions": ["read"]})
    assert unknown.status_code == 404 and "keys create --user zed" in unknown.json()["error"]["message"]
    assert store.find_user("zed") is None
    for name in ("admin", "local"):
        resp = alice.put(f"/v1/datasets/a-data/grants/{name}", json={"permissions": ["read"]})
        assert resp.status_code == 422 and "reserved" in resp.json()["error"]["message"]
        assert store.find_user(name) is None
    # so the admin is still made as one
    result = CliRunner().invoke(cli, ["--db", kn.settings.db, "keys", "create", "--admin"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("kn_") and store.find_user("admin").admin
    # a key made for a new user later, then a grant: that works as before
    zed = _client(str(alice.base_url), add_user(kn, "zed"))
    assert alice.put("/v1/datasets/a-data/grants/zed", json={"permissions": ["read"]}).status_code == 200
    assert zed.get("/v1/memories", params={"dataset": "a-data"}).status_code == 200
    zed.close()
    resp = alice.put("/v1/datasets/a-data/grants/bad%20name", json={"permissions": ["read"]})
    assert resp.status_code == 422
    gone = alice.delete("/v1/datasets/a-data/grants/yvonne")
    assert gone.status_code == 200 and gone.json()["permissions"] == []
    assert store.find_user("yvonne") is None
    assert c["root"].put("/v1/datasets/a-data/grants/nobody", json={"permissions": ["read"]}).status_code == 404


def test_grants_on_a_dataset_from_before_auth_are_refused_until_adopted(tmp_path):
    path = str(tmp_path / "old.db")
    with Kenning(path) as kn:
        kn.remember("Alice works at Acme.", dataset="old")
    runner = CliRunner()
    with running(path) as (kn, base):
        bob = _client(base, add_user(kn, "bob"))
        add_user(kn, "alice")
        root = _client(base, add_user(kn, "root", admin=True))
        resp = root.put("/v1/datasets/old/grants/bob", json={"permissions": ["read"]})
        assert resp.status_code == 409 and "datasets adopt old" in resp.json()["error"]["message"]
        assert bob.get("/v1/memories", params={"dataset": "old"}).status_code == 404
        result = runner.invoke(cli, ["--db", path, "datasets", "grant", "old", "bob", "read"])
        assert result.exit_code == 1 and "adopt" in result.output
        result = runner.invoke(cli, ["--db", path, "datasets", "adopt", "old", "--owner", "alice"])
        assert result.exit_code == 0, result.output
        result = runner.invoke(cli, ["--db", path, "datasets", "adopt", "old"])
        assert result.exit_code == 1 and "already has an owner" in result.output
        assert runner.invoke(cli, ["--db", path, "datasets", "adopt", "never"]).exit_code == 1
        assert root.put("/v1/datasets/old/grants/bob", json={"permissions": ["read"]}).status_code == 200
        assert bob.get("/v1/memories", params={"dataset": "old"}).json()["items"][0]["content"] == "Alice works at Acme."
        bob.close()
        root.close()


def test_admin_cli_refuses_bad_names(tmp_path):
    path = str(tmp_path / "names.db")
    runner = CliRunner()
    for args in (["keys", "create", "--user", ""], ["keys", "create", "--user", "a b"],
                 ["datasets", "create", "../x"], ["datasets", "create", "x\n"]):
        result = runner.invoke(cli, ["--db", path, *args])
        assert result.exit_code == 1 and result.output.startswith("error: invalid"), (args, result.output)
    with Kenning(path) as kn:
        from kenning.access import auth_store

        assert auth_store(kn).list_users() == []


# -- rate limits -------------------------------------------------------------------------------
def test_failed_keys_are_throttled_per_client(tmp_path):
    with Kenning(str(tmp_path / "rl.db"), auth_failures_per_minute=3) as kn:
        good = add_user(kn, "alice")
        with serve(create_app(kn)) as base:
            for _ in range(3):
                assert _client(base, "kn_wrong").get("/v1/me").status_code == 401
            refused = _client(base, "kn_wrong").get("/v1/me")
            assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
            assert refused.json()["error"]["code"] == "rate_limited"
            assert _client(base, good).get("/v1/me").status_code == 429  # even the right key
            assert httpx.get(f"{base}/v1/health", timeout=60).status_code == 200


def test_writes_are_limited_per_caller(tmp_path):
    with Kenning(str(tmp_path / "wl.db"), write_chars_per_minute=100) as kn:
        alice, bob = add_user(kn, "alice"), add_user(kn, "bob")
        with serve(create_app(kn)) as base:
            a, b = _client(base, alice), _client(base, bob)
            text = "Alice works at Acme and lives in Paris since the year 2020 or so, she said."
            assert a.post("/v1/remember", json={"content": text}).status_code == 200
            resp = a.post("/v1/add", json={"content": text, "dataset": "a2"})
            assert resp.status_code == 429 and "Retry-After" in resp.headers
            assert a.post("/v1/remember", json={"content": "x" * 101, "dataset": "a3"}).status_code == 429
            assert b.post("/v1/remember", json={"content": text, "dataset": "b"}).status_code == 200
            assert kn.stats().memories == 2


def test_limiter_refills_at_its_rate():
    now = [0.0]
    limiter = Limiter(60, "things", clock=lambda: now[0])
    limiter.spend("k", 60)
    with pytest.raises(RateLimitedError) as caught:
        limiter.spend("k", 2)
    assert caught.value.details["retry_after"] == 2
    now[0] += 2
    limiter.spend("k", 2)
    limiter.spend("other", 60)
    with pytest.raises(RateLimitedError):
        limiter.spend("k", 61)  # more than a minute's worth never passes
    limiter.spend("k", 5, strict=False)
    with pytest.raises(RateLimitedError):
        limiter.check("k")
    assert Limiter(0, "off").enabled is False


def test_mcp_over_http_has_the_same_host_and_origin_checks(tmp_path):
    pytest.importorskip("mcp")
    from kenning.mcp.server import http_app

    with Kenning(str(tmp_path / "mcp.db")) as kn:
        with serve(http_app(kn, auth=False, bind="0.0.0.0")) as base:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            accept = {"Accept": "application/json, text/event-stream"}
            assert httpx.post(f"{base}/mcp", json=hello, headers={**accept, "Host": "evil.example"}).status_code == 421
            resp = httpx.post(f"{base}/mcp", json=hello, headers={**accept, "Origin": "http://evil.example"})
            assert resp.status_code == 403
            resp = httpx.post(f"{base}/mcp", json=hello, headers={**accept, "Host": "10.0.0.7:8765"})
            assert resp.status_code not in (403, 421)
