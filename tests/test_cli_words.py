"""What the command line says to a new user (issue 15): labels, counts, choices, questions and
hints are exact, and a wrong value is an error, never a silent success."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli


def run(db: str, *args: str, input: str | None = None, code: int = 0):
    result = CliRunner().invoke(cli, ["--db", db, *args], input=input)
    assert result.exit_code == code, result.output
    return result


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "words.db")


def test_a_fact_that_starts_after_as_of_is_not_yet_true_not_history(db):
    run(db, "remember", "Alice works at Acme.", "--valid-at", "2024-01-01")
    run(db, "remember", "Bob lives in Paris.", "--valid-at", "2019-01-01")
    run(db, "remember", "Bob lives in Berlin.", "--valid-at", "2021-01-01")
    out = run(db, "recall", "Alice Acme", "--type", "facts", "--as-of", "2023-01-01").output
    assert "Alice works at Acme.  (2024-01-01 → …) [not yet true]" in out
    out = run(db, "recall", "Bob Paris", "--type", "facts", "--as-of", "2022-01-01").output
    assert "Bob lives in Paris.  (2019-01-01 → 2021-01-01) [history]" in out


def test_force_with_a_source_keeps_the_source(db):
    run(db, "remember", "Alice works at Acme.")
    run(db, "remember", "Alice works at Acme.", "--source", "note.txt", "--force")
    memories = json.loads(run(db, "memories", "list", "--json").output)
    assert [m["source"] for m in memories] == ["note.txt"]


@pytest.mark.parametrize("args", [
    ["remember", "Alice works at Acme.", "--kind", "bogus"],
    ["memories", "list", "--status", "bogus"],
    ["memories", "list", "--kind", "bogus"],
])
def test_unknown_choices_are_usage_errors(db, args):
    result = run(db, *args, code=2)
    assert "bogus" in result.output and "Traceback" not in result.output


def test_unknown_dataset_on_a_read_names_the_datasets(db):
    run(db, "remember", "Alice works at Acme.", "-d", "work")
    for args in (["recall", "Alice", "-d", "nosuch"], ["stats", "-d", "nosuch"],
                 ["memories", "list", "-d", "nosuch"], ["timeline", "Alice", "-d", "nosuch"]):
        out = run(db, *args, code=1).output
        assert "no dataset 'nosuch'" in out and "work" in out, args
    assert "no relevant memories" in run(db, "recall", "Alice").output  # main always exists


def test_forget_one_memory_asks_first(db):
    mid = json.loads(run(db, "remember", "Alice works at Acme.", "--json").output)["memory_ids"][0]
    refused = run(db, "forget", mid, input="n\n", code=1)
    assert "Forget memory" in refused.output
    assert run(db, "stats", "--json").output and json.loads(run(db, "stats", "--json").output)["memories"] == 1
    assert "forgot 1 memory, " in run(db, "forget", mid, input="y\n").output


def test_counts_are_worded_for_their_number(db):
    out = run(db, "remember", "Alice works at Acme.").output
    assert out.startswith("remembered 1 memory: 2 entities and 1 fact created, 0 facts closed"), out
    assert run(db, "remember", "Alice works at Acme.").output.startswith("nothing new: 1 memory already known")
    out = run(db, "remember", "Alice works at Acme.", "Bob lives in Paris.").output
    assert "remembered 1 memory (1 already known): 2 entities and 1 fact created" in out
    out = run(db, "reembed").output
    assert "entitys" not in out and "4 entities" in out and "2 facts" in out


def test_a_memory_without_facts_is_reported(db):
    result = CliRunner().invoke(cli, ["--db", db, "remember", "Quarterly numbers look fine overall.", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["no_facts"] == body["memory_ids"]
    result = run(db, "remember", "The weather was nice, honestly.")
    assert "note: no fact extracted from mem_" in result.stderr and "KENNING_LLM" in result.stderr
    with Kenning(db) as kn:
        assert kn.remember("Alice works at Acme.").no_facts == []
        pending = kn.add("Nothing to see here, really.")[0]
        assert kn.cognify().no_facts == [pending]


def test_timeline_accepts_an_unambiguous_start_and_suggests_near_names(db):
    run(db, "remember", "Bob Stone is the CEO of Acme.")
    assert run(db, "timeline", "Bob").output.startswith("Bob Stone (person)")
    run(db, "remember", "Bob Marley lives in Kingston.")
    out = run(db, "timeline", "Bob", code=1).output
    assert "no entity 'Bob'" in out and "did you mean: " in out and "Bob Stone" in out and "Bob Marley" in out


def test_the_python_api_checks_the_same_choices(db):
    from kenning.errors import NotFoundError, ValidationError

    with Kenning(db) as kn:
        mid = kn.remember("Alice works at Acme.", dataset="work").memory_ids[0]
        for call in (lambda: kn.remember("x y", kind="bogus"), lambda: kn.list(status="bogus"),
                     lambda: kn.list(kind="bogus"), lambda: kn.update(mid, kind="bogus")):
            with pytest.raises(ValidationError, match="bogus"):
                call()
        for call in (lambda: kn.recall("Alice", dataset="nosuch"), lambda: kn.stats("nosuch"),
                     lambda: kn.timeline("Alice", dataset="nosuch")):
            with pytest.raises(NotFoundError, match="datasets: main, work|datasets: work"):
                call()
        assert kn.stats().memories == 1


def test_a_mistyped_db_path_creates_nothing(tmp_path):
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    for args in (["stats"], ["recall", "Alice"], ["timeline", "Alice"], ["memories", "list"]):
        out = run(str(missing), *args, code=1).output
        assert f"error: no store at {missing}" in out, args
    out = run(str(missing), "remember", "Alice works at Acme.", code=1).output
    assert f"error: directory {missing.parent} does not exist" in out
    assert not (tmp_path / "nonexistent").exists()
    fresh = tmp_path / "fresh.db"
    run(str(fresh), "remember", "Alice works at Acme.")  # a write creates the file itself
    assert json.loads(run(str(fresh), "stats", "--json").output)["memories"] == 1


def test_db_is_accepted_after_the_command(tmp_path):
    db = str(tmp_path / "after.db")
    assert CliRunner().invoke(cli, ["remember", "Alice works at Acme.", "--db", db]).exit_code == 0
    result = CliRunner().invoke(cli, ["stats", f"--db={db}", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["memories"] == 1
    result = CliRunner().invoke(cli, ["--db", db, "remember", "--", "--db"])  # after --, it is text
    assert result.exit_code == 0, result.output
    assert CliRunner().invoke(cli, ["stats", "--db"]).exit_code == 2  # no value: a usage error, not the default store


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"[1, 2]", b'[{"conversation": 5}]',
                                     b'[{"conversation": {"session_1": [{"text": "hi"}]}}]'])
@pytest.mark.parametrize("kind", ["locomo", "hotpotqa", "musique"])
def test_eval_on_a_bad_file_is_one_clean_error(tmp_path, content, kind):
    bad = tmp_path / f"{kind}_bad.json"
    bad.write_bytes(content)
    result = CliRunner().invoke(cli, ["eval", kind, str(bad)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_an_unreachable_postgres_is_one_line_at_once():
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("psycopg_pool")
    from tests.server_util import free_port

    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-m", "kenning", "--db", f"postgresql://u:secret@127.0.0.1:{free_port()}/x",
                           "stats"], capture_output=True, text=True, timeout=60, env={"PYTHONPATH": root, "PATH": ""})
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: cannot connect to PostgreSQL"), done.stderr
    # the one direct probe answered (with the server's reason), not the pool after its retries
    assert "refused" in done.stderr.lower(), done.stderr
    assert "secret" not in done.stderr


def test_every_command_that_prints_a_result_has_json(db):
    import click

    run(db, "remember", "Alice works at Acme.")
    fact = json.loads(run(db, "recall", "Alice", "--type", "facts", "--json").output)["hits"][0]["id"]
    assert json.loads(run(db, "feedback", fact, "--json").output)["weight"] > 1.0
    assert json.loads(run(db, "reembed", "--json").output) == {"chunk": 1, "entity": 2, "fact": 1}

    def leaves(group: click.Group, prefix: tuple[str, ...] = ()):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from leaves(command, (*prefix, name))
            else:
                yield " ".join((*prefix, name)), command

    without = {name for name, command in leaves(cli) if not any(p.name == "as_json" for p in command.params)
               and not name.startswith(("keys ", "datasets "))}  # the admin commands
    # the README names these as the only commands without --json
    assert without <= {"demo", "serve", "mcp", "ui", "migrate"}, without
