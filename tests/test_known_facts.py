"""Known facts in, without extraction (issue 26 item 5): records ``{source, relation, target,
valid_at?, invalid_at?, description?}`` given to ``remember``/``add`` are stored as one ``facts``
memory and resolved like extracted facts, on both stores and on every surface."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import httpx
import pytest
from click.testing import CliRunner

from kenning import AsyncKenning, FactInput, Kenning, ValidationError
from kenning.cli import cli

UTC = dt.timezone.utc


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_known_facts_are_resolved_like_extracted_ones(kn: Kenning) -> None:
    extracted = kn.remember("Alice works at Acme.", valid_at="2020-01-01")
    [acme] = kn.timeline("Alice").facts
    result = kn.remember([{"source": "alice", "relation": "Works at", "target": "Globex", "valid_at": "2023-06-01"},
                          FactInput(source="Globex", relation="located_in", target="Berlin")],
                         valid_at="2023-07-01")
    assert result.facts_created == 2 and result.facts_invalidated == [acme.id]  # the temporal rule closed Acme
    assert result.entities_created == 2  # Globex and Berlin; "alice" is the extracted Alice
    [memory_id] = result.memory_ids
    memory = kn.get(memory_id)
    assert memory.kind == "facts" and memory.valid_at == at("2023-07-01")
    assert [json.loads(line) for line in memory.content.splitlines()] == [
        {"source": "alice", "relation": "works_at", "target": "Globex", "valid_at": "2023-06-01T00:00:00+00:00"},
        {"source": "Globex", "relation": "located_in", "target": "Berlin"},
    ]
    timeline = kn.timeline("Alice")
    assert timeline.entity.memory_ids == [extracted.memory_ids[0], memory_id]
    old, new = timeline.facts
    assert (old.target, old.invalid_at, old.superseded_by) == ("Acme", at("2023-06-01"), new.id)
    assert (new.target, new.valid_at, new.invalid_at, new.memory_ids) == ("Globex", at("2023-06-01"), None, [memory_id])
    assert new.description == "alice works at Globex."
    located = kn.timeline("Globex", relation="located_in").facts[0]
    assert located.valid_at == at("2023-07-01")  # no valid_at: the call's
    provenance = kn.provenance(memory_id)
    assert [c.text for c in provenance.chunks] == ["alice works at Globex.", "Globex located in Berlin."]
    assert {f.id for f in provenance.facts} == {new.id, located.id}

    hit = kn.recall("Where does Alice work?", top_k=3).hits[0]
    assert (hit.kind, hit.id, hit.current, hit.memory_ids) == ("fact", new.id, True, [memory_id])

    # the same records again: the same memory, skipped; the same fact in other words: merged
    again = kn.remember([{"source": "alice", "relation": "Works at", "target": "Globex", "valid_at": "2023-06-01"},
                         {"source": "Globex", "relation": "located_in", "target": "Berlin"}], valid_at="2023-07-01")
    assert again.skipped == [memory_id] and again.facts_created == 0
    merged = kn.remember({"source": "Alice", "relation": "works_at", "target": "Globex",
                          "description": "Alice is employed at Globex."})
    assert (merged.facts_created, merged.facts_invalidated) == (0, [])  # one record alone works too
    assert kn.timeline("Alice").facts[1].memory_ids == [memory_id, merged.memory_ids[0]]

    # an older record arriving late is stored already closed where the newer one begins
    late = kn.remember([{"source": "Alice", "relation": "works_at", "target": "Initech", "valid_at": "2010-01-01"}])
    initech = next(f for f in kn.timeline("Alice").facts if f.target == "Initech")
    assert late.facts_created == 1 and initech.invalid_at == at("2023-06-01") and initech.superseded_by == new.id

    # invalid_at alone: the relation ended then, and the open fact closes there
    ended = kn.remember([{"source": "Alice", "relation": "works_at", "target": "Globex", "invalid_at": "2025-01-01"}])
    assert ended.facts_invalidated == [new.id] and ended.facts_created == 0
    assert next(f for f in kn.timeline("Alice").facts if f.id == new.id).invalid_at == at("2025-01-01")


def test_a_bad_record_is_a_validation_error_and_stores_nothing(kn: Kenning) -> None:
    cases = [
        ({"source": "Alice", "relation": "works_at", "target": "Acme", "valid_at": "2024-01-01",
          "invalid_at": "2024-01-01"}, "facts[0].invalid_at (2024-01-01T00:00:00+00:00) is not after its valid_at"),
        ({"source": "Alice", "relation": "works_at", "target": "Acme", "valid_at": "2024-05-01",
          "invalid_at": "2023"}, "is not after its valid_at"),
        ({"source": "Alice", "relation": "knows", "target": " alice "}, "source and target are the same entity"),
        ({"source": "Alice", "relation": "works_at"}, "facts[0] is not a fact: target: Field required"),
        ({"source": "Alice", "relation": "works_at", "target": "Acme", "since": "2020"}, "unknown field 'since'"),
        ({"source": "Alice", "relation": "works_at", "target": "Acme", "valid_at": "someday"}, "facts[0].valid_at"),
        ({"source": "!!", "relation": "works_at", "target": "Acme"}, "names no entity"),
        ({"source": "Alice", "relation": " ", "target": "Acme"}, "facts[0].relation must not be empty"),
    ]
    for record, words in cases:
        with pytest.raises(ValidationError) as info:
            kn.remember([{"source": "Bob", "relation": "lives_in", "target": "Paris"}, record])
        assert words.replace("facts[0]", "facts[1]") in info.value.message, (record, info.value.message)
    with pytest.raises(ValidationError, match="known facts are remembered on their own"):
        kn.remember([{"source": "Bob", "relation": "lives_in", "target": "Paris"}, "Bob likes tea."])
    with pytest.raises(ValidationError, match="kind 'facts' is for known facts"):
        kn.remember("Bob likes tea.", kind="facts")
    assert kn.stats("main").memories == 0


def test_add_then_cognify_update_and_dry_run(kn: Kenning) -> None:
    [memory_id] = kn.add([{"source": "Carol", "relation": "lives_in", "target": "Rome"}])
    assert kn.get(memory_id).status == "pending"
    estimate = kn.remember([{"source": "Carol", "relation": "lives_in", "target": "Oslo"}], dry_run=True)
    assert estimate.dry_run and estimate.usage.chat_calls == 0 and estimate.usage.embedded_texts == 1
    assert kn.cognify().processed == [memory_id]
    assert [f.target for f in kn.timeline("Carol").facts] == ["Rome"]
    kn.update(memory_id, content=json.dumps({"source": "Carol", "relation": "lives_in", "target": "Madrid"}))
    assert [f.target for f in kn.timeline("Carol").facts] == ["Madrid"]  # Rome went with the old version
    with pytest.raises(ValidationError, match="holds known facts"):
        kn.update(memory_id, content="Carol lives in Lisbon.")
    assert [f.target for f in kn.timeline("Carol").facts] == ["Madrid"]
    with pytest.raises(ValidationError, match="kind 'facts' marks a memory of known facts"):
        kn.update(memory_id, kind="note")
    text_id = kn.remember("Carol likes tea.").memory_ids[0]
    with pytest.raises(ValidationError, match="kind 'facts' marks a memory of known facts"):
        kn.update(text_id, kind="facts")
    [pending] = kn.add([{"source": "Carol", "relation": "likes", "target": "jazz"}])
    with pytest.raises(ValidationError, match="holds known facts"):  # checked before it is stored, too
        kn.update(pending, content="Carol likes jazz.")
    assert kn.get(pending).content.startswith("{")


def test_async_facade_takes_known_facts(tmp_path) -> None:  # noqa: ANN001
    async def main() -> None:
        async with AsyncKenning(str(tmp_path / "a.db")) as kn:
            result = await kn.remember([FactInput(source="Dana", relation="works_at", target="Hooli")])
            assert result.facts_created == 1
            assert [f.target for f in (await kn.timeline("Dana")).facts] == ["Hooli"]

    asyncio.run(main())


def test_known_facts_over_http_and_the_remote_client(store_url: str, clock) -> None:  # noqa: ANN001
    pytest.importorskip("fastapi")
    from kenning.server import create_app
    from tests.server_util import add_user, serve

    with Kenning(store_url, clock=clock) as kn:
        key = add_user(kn, "alice")
        headers = {"Authorization": f"Bearer {key}"}
        with serve(create_app(kn, auth=True)) as base:
            resp = httpx.post(f"{base}/v1/remember", headers=headers, json={"content": [
                {"source": "Alice", "relation": "works_at", "target": "Acme", "valid_at": "2020-01-01"}]})
            assert resp.status_code == 200, resp.text
            assert resp.json()["facts_created"] == 1
            resp = httpx.post(f"{base}/v1/remember", headers=headers, json={"content": [
                {"source": "Alice", "relation": "works_at", "target": "Acme", "valid_at": "2021-01-01",
                 "invalid_at": "2020-01-01"}]})
            assert resp.status_code == 422
            assert "facts[0].invalid_at (2020-01-01T00:00:00+00:00) is not after its valid_at" in resp.text
            with Kenning(base, api_key=key, remote_retries=0) as remote:
                result = remote.remember([FactInput(source="Alice", relation="works_at", target="Globex",
                                                    valid_at=dt.date(2023, 6, 1))])
                assert result.facts_created == 1 and len(result.facts_invalidated) == 1
                assert remote.get(result.memory_ids[0]).kind == "facts"
                with pytest.raises(ValidationError, match="source and target are the same entity"):
                    remote.remember([{"source": "Alice", "relation": "knows", "target": "ALICE"}])
                facts = remote.timeline("Alice").facts
                assert [(f.target, f.invalid_at) for f in facts] == [("Acme", at("2023-06-01")), ("Globex", None)]


def test_cli_remembers_a_json_file_of_facts(tmp_path) -> None:  # noqa: ANN001
    db = str(tmp_path / "c.db")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"source": "Erin", "relation": "works_at", "target": "Acme", "valid_at": "2022"},
                                 {"source": "Erin", "relation": "lives_in", "target": "Lyon"}]))
    result = CliRunner().invoke(cli, ["--db", db, "remember", "--facts", str(facts)])
    assert result.exit_code == 0, result.output
    assert "remembered 1 memory: 3 entities and 2 facts created" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"source": "Erin", "relation": "works_at", "target": "Erin"}]))
    result = CliRunner().invoke(cli, ["--db", db, "remember", "--facts", str(bad)])
    assert result.exit_code == 1 and "source and target are the same entity" in result.output
    result = CliRunner().invoke(cli, ["--db", db, "remember", "--facts", str(facts), "more text"])
    assert result.exit_code != 0 and "--facts alone" in result.output


def test_mcp_remember_takes_known_facts(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("mcp")
    import anyio

    from kenning.mcp import build_server

    with Kenning(str(tmp_path / "m.db")) as kn:
        server = build_server(kn, auth=False)

        async def main() -> None:
            await server.call_tool("remember", {"content": [
                {"source": "Frank", "relation": "works_at", "target": "Umbrella", "valid_at": "2021-03-01"}]})

        anyio.run(main)
        [fact] = kn.timeline("Frank").facts
        assert (fact.target, fact.valid_at) == ("Umbrella", at("2021-03-01"))


def test_readme_known_facts_example_prints_what_it_says(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import contextlib
    import io
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Known facts: records in, no extraction", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.+?)\n```", section, re.S)[0]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    first, second = out.getvalue().splitlines()
    assert first == "2 1"
    assert second.startswith("[('Acme', datetime.datetime(2023, 6, 1, 0, 0") and second.endswith("('Globex', None)]")


def test_with_a_model_known_facts_skip_extraction_and_resolve_with_the_model(tmp_path, fake_openai) -> None:  # noqa: ANN001
    """No extraction call for records; a record that may contradict a stored fact it does not
    repeat is judged in the one resolution call an extracted fact would get."""
    from tests.test_llm_pipeline import extraction, fact, open_kn, schema_name

    fake_openai.enqueue_chat(extraction(fact("Alice Smith", "plays_for", "Red Team", "Alice Smith plays for Red Team.",
                                             valid_at="2021-01-01")))
    fake_openai.enqueue_chat({"duplicates": [], "contradictions": [{"new": "n1", "stored": ["c1"]}], "entities": []})
    with open_kn(str(tmp_path / "llm.db"), fake_openai) as kn:
        kn.remember("Alice Smith plays for Red Team since 2021.")
        [red] = kn.timeline("Alice Smith").facts
        result = kn.remember([{"source": "alice smith", "relation": "plays_for", "target": "Blue Team",
                               "valid_at": "2023-05-01"}])
        assert result.errors == [] and result.facts_invalidated == [red.id] and result.usage.chat_calls == 1
        old, new = kn.timeline("Alice Smith").facts
        assert (old.target, old.invalid_at, new.target) == ("Red Team", at("2023-05-01"), "Blue Team")
        # nothing to judge: no call at all
        calls = len(fake_openai.chat_requests)
        assert kn.remember([{"source": "Blue Team", "relation": "based_in", "target": "Leeds"}]).usage.chat_calls == 0
        assert len(fake_openai.chat_requests) == calls
    assert [schema_name(r) for r in fake_openai.chat_requests] == ["extraction", "resolution"]
