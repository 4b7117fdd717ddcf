"""What an import may change (issue 24, item 2): only the datasets its header declares, only
with references inside them, and the file's users, admin flags, owners and grants only when
asked (``accounts=True`` / ``kenning import --accounts``); the summary says what was done."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli
from kenning.errors import ValidationError


def _target(path: Path) -> str:
    """A store where alice owns dataset ``alice`` (one memory) and bob holds nothing."""
    url = f"sqlite:///{path}"
    with Kenning(url) as kn:
        store = kn.store
        alice = store.create_user("alice")
        store.create_user("bob")
        store.claim_dataset("alice", alice.id)
        kn.remember("Alice keeps her diary here.", dataset="alice")
    return url


def _gift(tmp_path: Path) -> list[dict]:
    """An honest export of dataset ``gift`` (owned by carol, who granted dave read)."""
    url = f"sqlite:///{tmp_path / 'gift.db'}"
    if (tmp_path / "gift.jsonl").exists():
        return [json.loads(line) for line in (tmp_path / "gift.jsonl").read_text().splitlines()]
    with Kenning(url) as kn:
        store = kn.store
        carol, dave = store.create_user("carol"), store.create_user("dave")
        store.claim_dataset("gift", carol.id)
        store.set_grant("gift", dave.id, ["read"])
        kn.remember("A gift: Erin likes tea.", dataset="gift")
        kn.export(tmp_path / "gift.jsonl", datasets=["gift"])
    return [json.loads(line) for line in (tmp_path / "gift.jsonl").read_text().splitlines()]


def _write(path: Path, lines: list[dict]) -> Path:
    rows: dict[str, int] = {}
    body = [line for line in lines[1:] if "end" not in line]
    for line in body:
        rows[line["table"]] = rows.get(line["table"], 0) + 1
    path.write_text("".join(json.dumps(x) + "\n" for x in [lines[0], *body, {"end": {"rows": rows}}]))
    return path


def _state(url: str) -> tuple:
    with Kenning(url) as kn:
        store = kn.store
        users = sorted((u.name, u.admin) for u in store.list_users())
        grants = {d: sorted(g.permissions for g in store.grants(d)) for d in ("alice", "gift")}
        return (users, grants, sorted(m.content for m in kn.list(dataset=None)),
                sorted(r.name for r in store.dataset_records()))


def _bob_id(url: str) -> str:
    with Kenning(url) as kn:
        return kn.store.find_user("bob").id


def _crafted(tmp_path: Path, url: str) -> list[dict]:
    """The probe's file: header names only ``gift``; rows give bob every right on alice's
    dataset, put a memory there, and make an admin ``mallory``."""
    lines = _gift(tmp_path)
    memory = next(x["row"] for x in lines if x.get("table") == "memories")
    mallory = {"id": "usr_mallory", "name": "mallory", "admin": True, "created_at": memory["created_at"]}
    return lines[:-1] + [
        {"table": "memories", "row": {**memory, "id": "mem_planted", "dataset": "alice",
                                      "content": "planted", "content_hash": "p" * 64}},
        {"table": "auth_users", "row": mallory},
        {"table": "auth_grants", "row": {"dataset": "alice", "user_id": _bob_id(url),
                                         "permissions": ["delete", "read", "share", "write"]}},
        {"table": "auth_grants", "row": {"dataset": "gift", "user_id": "usr_mallory", "permissions": ["read"]}},
    ]


@pytest.mark.parametrize("accounts", [False, True])
def test_a_row_of_an_undeclared_dataset_is_refused_and_nothing_is_written(tmp_path, accounts) -> None:  # noqa: ANN001
    url = _target(tmp_path / "t.db")
    before = _state(url)
    path = _write(tmp_path / "crafted.jsonl", _crafted(tmp_path, url))
    with Kenning(url) as kn, pytest.raises(ValidationError, match="dataset 'alice'.*does not declare"):
        kn.import_(path, accounts=accounts)
    assert _state(url) == before


def test_account_rows_are_left_out_unless_asked_and_the_summary_says_so(tmp_path) -> None:  # noqa: ANN001
    url = _target(tmp_path / "t.db")
    lines = [x for x in _crafted(tmp_path, url)
             if x.get("row", {}).get("dataset") != "alice"]  # the planted memory and alice grant out
    path = _write(tmp_path / "crafted.jsonl", lines)
    with Kenning(url) as kn:
        report = kn.import_(path)
    users, grants, contents, records = _state(url)
    assert users == [("alice", False), ("bob", False)]  # no mallory, nobody became an admin
    assert grants == {"alice": [], "gift": []} and "gift" not in records
    assert contents == ["A gift: Erin likes tea.", "Alice keeps her diary here."]
    assert report.ignored == {"auth_datasets": 1, "auth_grants": 2, "auth_users": 3}
    assert report.users == [] and "auth_users" not in report.rows and not report.accounts
    # the command line tells the same truth, and --accounts applies them, naming the admin
    result = CliRunner().invoke(cli, ["--db", url, "import", str(path)])
    assert result.exit_code == 0, result.output
    assert "not applied: 6 account rows" in result.stdout and "--accounts" in result.stdout
    result = CliRunner().invoke(cli, ["--db", url, "import", str(path), "--accounts"])
    assert result.exit_code == 0, result.output
    assert "users created: carol, dave, mallory (admin)" in result.stdout
    users, grants, _, records = _state(url)
    assert ("mallory", True) in users and grants["alice"] == [] and "gift" in records


def test_with_accounts_a_grant_on_an_undeclared_dataset_is_still_refused(tmp_path) -> None:  # noqa: ANN001
    url = _target(tmp_path / "t.db")
    lines = [x for x in _crafted(tmp_path, url) if x.get("row", {}).get("id") != "mem_planted"]
    path = _write(tmp_path / "crafted.jsonl", lines)
    before = _state(url)
    with Kenning(url) as kn:
        report = kn.import_(path)  # without accounts the grant on alice's dataset is not applied
        assert report.ignored["auth_grants"] == 3
    with Kenning(url) as kn, pytest.raises(ValidationError, match="auth_grants.*'alice'"):
        kn.import_(path, accounts=True)
    assert _state(url)[:2] == before[:2]


def test_a_reference_into_another_dataset_is_refused(tmp_path) -> None:  # noqa: ANN001
    url = _target(tmp_path / "t.db")
    with Kenning(url) as kn:
        alice_memory = kn.list(dataset="alice")[0].id
    lines = _gift(tmp_path)
    for line in lines:
        if line.get("table") == "chunks":
            line["row"]["memory_id"] = alice_memory  # a gift chunk of alice's memory
    path = _write(tmp_path / "crafted.jsonl", lines)
    before = _state(url)
    with Kenning(url) as kn, pytest.raises(ValidationError, match="chunks.*refers to memories.*'alice'"):
        kn.import_(path)
    assert _state(url) == before
    lines = _gift(tmp_path)
    lines.insert(1, {"table": "fact_memories", "row": {"fact_id": "fct_x", "memory_id": alice_memory}})
    with Kenning(url) as kn, pytest.raises(ValidationError, match="fact_memories"):
        kn.import_(_write(tmp_path / "link.jsonl", lines))


def test_a_table_an_export_never_writes_is_refused(tmp_path) -> None:  # noqa: ANN001
    url = _target(tmp_path / "t.db")
    lines = _gift(tmp_path)
    lines.insert(1, {"table": "meta", "row": {"key": "embedder", "value": "evil"}})
    with Kenning(url) as kn, pytest.raises(ValidationError, match="'meta'"):
        kn.import_(_write(tmp_path / "meta.jsonl", lines))


def test_export_and_import_of_no_path_are_validation_errors(tmp_path) -> None:  # noqa: ANN001
    with Kenning(f"sqlite:///{tmp_path / 'a.db'}") as kn:
        for call in (kn.export, kn.import_):
            with pytest.raises(ValidationError, match="path"):
                call(None)
        with pytest.raises(ValidationError, match="accounts"):
            kn.import_(tmp_path / "x.jsonl", accounts="yes")
