"""The model path end to end: the public ``Kenning`` facade against the fake OpenAI-compatible
server over real HTTP. Every test asserts the stored state afterwards, and what was sent."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import sqlite3

import pytest

from kenning import Kenning
from kenning.models import Usage
from tests.fakeopenai import FakeOpenAI

SECRET = "sk-test-SECRET-0123456789abcdef"
UTC = dt.UTC


def open_kn(db_path: str, fake: FakeOpenAI, **settings) -> Kenning:
    options = {
        "llm": "gpt-4o-mini", "llm_base_url": fake.base_url, "llm_api_key": SECRET,
        "embedder": "openai:text-embedding-3-small", "embedding_dimensions": 256, "llm_max_retries": 2,
    }
    options.update(settings)
    return Kenning(db_path, **options)


def fact(source: str, relation: str, target: str, sentence: str, **extra) -> dict:
    return {"source": source, "relation": relation, "target": target, "sentence": sentence,
            "valid_at": extra.pop("valid_at", None), "invalid_at": None, "ends": False, **extra}


def extraction(*facts: dict, entities: list[dict] | None = None) -> dict:
    return {"entities": entities or [], "facts": list(facts)}


ALICE_ACME = extraction(
    fact("Alice Smith", "works_at", "Acme", "Alice Smith works at Acme.", valid_at="2020-03-01"),
    entities=[{"name": "Alice Smith", "type": "person", "description": "an engineer"},
              {"name": "Acme", "type": "organization", "description": "a company"}],
)


def memory_usage(db_path: str, memory_id: str) -> Usage:
    """A memory's recorded spend, read from the store file (checks what ``Memory.usage`` shows)."""
    with sqlite3.connect(db_path) as db:
        (raw,) = db.execute("SELECT usage FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return Usage(**json.loads(raw or "{}"))


def schema_name(record) -> str:
    return record.json.get("response_format", {}).get("json_schema", {}).get("name", "")


def raw_counts(db_path: str) -> dict[str, int]:
    with sqlite3.connect(db_path) as db:
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("chunks", "entities", "facts", "fact_memories", "entity_memories")}


# -- extraction and resolution ----------------------------------------------------------------


def test_extraction_stores_the_entities_and_facts_of_the_answer(db_path, fake_openai):
    fake_openai.enqueue_chat(ALICE_ACME)
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020 as an engineer.")
        assert result.errors == [] and result.facts_created == 1 and result.entities_created == 2
        timeline = kn.timeline("Alice Smith")
        assert timeline.entity.type == "person" and timeline.entity.description == "an engineer"
        [stored] = timeline.facts
        assert (stored.source, stored.relation, stored.target) == ("Alice Smith", "works_at", "Acme")
        assert stored.valid_at == dt.datetime(2020, 3, 1, tzinfo=UTC)
        assert stored.memory_ids == result.memory_ids
    # the empty store had no candidates: one extraction call, no resolution call
    assert [schema_name(r) for r in fake_openai.chat_requests] == ["extraction"]
    sent = fake_openai.chat_requests[0].json
    assert "Alice Smith joined Acme" in sent["messages"][1]["content"]
    assert "same_as" not in json.dumps(sent["response_format"])  # no stored facts, no verdict fields


def test_a_contradiction_the_model_flags_closes_the_old_fact(db_path, fake_openai, clock):
    # plays_for is not single-valued: only the model's verdict can close the old fact
    fake_openai.enqueue_chat(extraction(fact("Alice Smith", "plays_for", "Red Team", "Alice Smith plays for Red Team.",
                                             valid_at="2021-01-01")))
    fake_openai.enqueue_chat(extraction(fact("Alice Smith", "plays_for", "Blue Team", "Alice Smith plays for Blue Team.",
                                             valid_at="2023-05-01", same_as=None, replaces=["c1"])))
    with open_kn(db_path, fake_openai, clock=clock) as kn:
        kn.remember("Alice Smith plays for Red Team since 2021.")
        clock.advance(days=1)
        result = kn.remember("In May 2023 Alice Smith moved to Blue Team.")
        assert result.errors == [] and len(result.facts_invalidated) == 1
        old, new = sorted(kn.timeline("Alice Smith").facts, key=lambda f: f.valid_at)
    assert old.target == "Red Team" and new.target == "Blue Team"
    assert old.invalid_at == dt.datetime(2023, 5, 1, tzinfo=UTC)  # closed at the new start
    assert old.expired_at == clock.now and old.superseded_by == new.id
    assert new.invalid_at is None and new.expired_at is None
    # the stored fact was shown inside the extraction call: still one call per memory
    second = fake_openai.chat_requests[1].json
    assert [schema_name(r) for r in fake_openai.chat_requests] == ["extraction", "extraction"]
    assert "c1 [plays_for] Alice Smith plays for Red Team." in second["messages"][1]["content"]
    assert "replaces" in json.dumps(second["response_format"])


def test_a_duplicate_verdict_merges_provenance_instead_of_a_new_fact(db_path, fake_openai):
    fake_openai.enqueue_chat(ALICE_ACME)
    fake_openai.enqueue_chat(extraction(fact("Alice Smith", "employed_by", "Acme", "Acme employs Alice Smith.",
                                             same_as="c1", replaces=[])))
    with open_kn(db_path, fake_openai) as kn:
        first = kn.remember("Alice Smith joined Acme in March 2020.")
        second = kn.remember("Acme employs Alice Smith.")
        assert second.facts_created == 0
        [stored] = kn.timeline("Alice Smith").facts
        assert sorted(stored.memory_ids) == sorted(first.memory_ids + second.memory_ids)
        assert kn.stats().facts == 1


def test_names_the_text_does_not_name_are_resolved_in_a_second_call(db_path, fake_openai):
    """The extractor judged only facts of entities the text names; a fact about another known
    entity (here the model wrote the full name for a nickname) costs one resolution call."""
    fake_openai.enqueue_chat(extraction(fact("Alice Smith", "plays_for", "Red Team", "Alice Smith plays for Red Team.",
                                             valid_at="2021-01-01")))
    fake_openai.enqueue_chat(extraction(fact("Alice Smith", "plays_for", "Blue Team", "Alice Smith plays for Blue Team.",
                                             valid_at="2023-05-01")))
    fake_openai.enqueue_chat({"duplicates": [], "contradictions": [{"new": "n1", "stored": ["c1", "c9"]}]})
    with open_kn(db_path, fake_openai) as kn:
        kn.remember("Alice Smith plays for Red Team.")
        result = kn.remember("Ally now plays for Blue Team.")
        assert len(result.facts_invalidated) == 1 and result.usage.chat_calls == 2
        closed = kn.store.get_facts(result.facts_invalidated)[0]
    assert closed.invalid_at == dt.datetime(2023, 5, 1, tzinfo=UTC) and closed.superseded_by
    assert [schema_name(r) for r in fake_openai.chat_requests] == ["extraction", "extraction", "resolution"]


def test_at_most_two_chat_calls_per_memory(db_path, fake_openai):
    people = ["Alice Smith", "Bob Jones", "Carol White"]
    for person in people:
        fake_openai.enqueue_chat(extraction(fact(person, "works_at", "Acme", f"{person} works at Acme.")))
    for _person in people:
        fake_openai.enqueue_chat(extraction(fact("Acme", "based_in", "Paris", "Acme is based in Paris.")))
    fake_openai.chat_responder = lambda body: {"duplicates": [], "contradictions": [], "entities": []}
    with open_kn(db_path, fake_openai) as kn:
        for person in people:
            assert kn.remember(f"{person} works at Acme.").usage.chat_calls == 1
        for person in people:
            usage = kn.remember(f"{person} says Acme is based in Paris.").usage
            assert 1 <= usage.chat_calls <= 2
        per_memory = [m.usage.chat_calls for m in kn.list()]
    assert max(per_memory) <= 2 and min(per_memory) == 1 and len(per_memory) == 6


# -- answers ------------------------------------------------------------------------------


def test_recall_answer_makes_one_call_and_cites_only_given_ids(db_path, fake_openai):
    fake_openai.enqueue_chat(ALICE_ACME)
    with open_kn(db_path, fake_openai) as kn:
        memory_id = kn.remember("Alice Smith joined Acme in March 2020.").memory_ids[0]
        before = len(fake_openai.chat_requests)
        fake_openai.enqueue_chat({"answer": "At Acme.", "citations": ["f1", "m1", "f99", "m7", "fct_forged"]})
        result = kn.recall("Where does Alice Smith work?", answer=True)
    assert len(fake_openai.chat_requests) == before + 1
    assert result.answer == "At Acme." and result.usage.chat_calls == 1
    allowed = {h.id for h in result.hits} | {m for h in result.hits for m in h.memory_ids}
    assert result.citations and set(result.citations) <= allowed
    assert memory_id in result.citations and "fct_forged" not in result.citations
    prompt = fake_openai.chat_requests[-1].json["messages"]
    assert "Where does Alice Smith work?" in prompt[1]["content"] and "true now" in prompt[1]["content"]


def test_recall_without_answer_never_calls_the_chat_model(db_path, fake_openai):
    fake_openai.enqueue_chat(ALICE_ACME)
    with open_kn(db_path, fake_openai) as kn:
        kn.remember("Alice Smith joined Acme in March 2020.")
        calls = len(fake_openai.chat_requests)
        for search_type in ("hybrid", "facts", "entities", "chunks", "graph", "temporal", None):
            kn.recall("Where does Alice Smith work?", search_type=search_type)
    assert len(fake_openai.chat_requests) == calls


# -- failures -------------------------------------------------------------------------------


def test_malformed_json_twice_fails_the_memory_and_writes_nothing(db_path, fake_openai):
    fake_openai.enqueue_chat("this is not JSON")
    fake_openai.enqueue_chat('{"entities": [}')
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020.")
        [memory_id] = result.memory_ids
        memory = kn.get(memory_id)
        assert memory.status == "failed" and "extraction failed twice" in memory.error
        assert result.errors and memory_id in result.errors[0]
        stats = kn.stats()
        assert (stats.chunks, stats.entities, stats.facts, stats.failed) == (0, 0, 0, 1)
        assert set(raw_counts(db_path).values()) == {0}
        # the retry fed the validation error back
        retry = fake_openai.chat_requests[1].json["messages"]
        assert retry[-1]["role"] == "user" and "invalid" in retry[-1]["content"]
        fake_openai.enqueue_chat(ALICE_ACME)
        again = kn.cognify(retry_failed=True)
        assert again.processed == [memory_id] and again.facts_created == 1
        assert kn.get(memory_id).status == "active" and kn.stats().facts == 1


def test_think_blocks_and_code_fences_are_tolerated(db_path, fake_openai):
    fake_openai.enqueue_chat("<think>The user wants JSON {not this}.</think>\n```json\n"
                             + json.dumps(ALICE_ACME) + "\n```")
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020.")
        assert result.errors == [] and result.facts_created == 1 and result.usage.chat_calls == 1


def test_429_with_retry_after_is_retried_and_counted(db_path, fake_openai, caplog):
    fake_openai.enqueue_chat(status=429, headers={"Retry-After": "0"})
    fake_openai.enqueue_chat(ALICE_ACME)
    caplog.set_level(logging.WARNING, logger="kenning.providers.openai_compat")
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020.")
        waits = [r.args[-1] for r in caplog.records if r.name == "kenning.providers.openai_compat"]
        assert waits == [0.0]  # Retry-After 0 honoured: one retry, no backoff
        memory = kn.get(result.memory_ids[0])
        assert memory.status == "active" and result.facts_created == 1
        assert result.usage.chat_calls == 2 and memory_usage(db_path, memory.id).chat_calls == 2
        assert kn.stats().usage.chat_calls == 2


def test_server_errors_exhausted_fail_the_memory_and_write_nothing(db_path, fake_openai):
    for _ in range(3):
        fake_openai.enqueue_chat(status=500, headers={"Retry-After": "0"})
    with open_kn(db_path, fake_openai, llm_max_retries=2) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020.")
        memory = kn.get(result.memory_ids[0])
        assert memory.status == "failed" and "HTTP 500" in memory.error and "3 attempts" in memory.error
        assert result.usage.chat_calls == 3 and memory_usage(db_path, memory.id).chat_calls == 3
        assert kn.stats().usage.chat_calls == 3  # money spent on a failure is still counted
    assert len(fake_openai.chat_requests) == 3
    assert set(raw_counts(db_path).values()) == {0}


def test_a_timeout_fails_the_memory(db_path, fake_openai):
    fake_openai.enqueue_chat(ALICE_ACME, delay=1.0)
    with open_kn(db_path, fake_openai, llm_timeout=0.2, llm_max_retries=0) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020.")
        memory = kn.get(result.memory_ids[0])
        assert memory.status == "failed" and "timed out" in memory.error
        assert kn.stats().facts == 0


def test_a_dropped_connection_is_retried(db_path, fake_openai):
    fake_openai.enqueue_chat(drop_connection=True)
    fake_openai.enqueue_chat(ALICE_ACME)
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember("Alice Smith joined Acme in March 2020.")
        assert kn.get(result.memory_ids[0]).status == "active" and result.facts_created == 1
        assert result.usage.chat_calls == 2
    assert len(fake_openai.chat_requests) == 2


def test_the_api_key_never_reaches_the_store_logs_or_errors(db_path, fake_openai, caplog):
    caplog.set_level(logging.DEBUG)
    fake_openai.enqueue_chat(ALICE_ACME)
    fake_openai.enqueue_chat(status=401, body={"error": {"message": f"Incorrect API key provided: {SECRET}"}})
    fake_openai.enqueue_chat(status=500, headers={"Retry-After": "0"},
                             body={"error": {"message": f"upstream said Bearer {SECRET}"}})
    fake_openai.enqueue_chat(status=500, headers={"Retry-After": "0"})
    fake_openai.enqueue_chat(status=500, headers={"Retry-After": "0"})
    with open_kn(db_path, fake_openai) as kn:
        kn.remember("Alice Smith joined Acme in March 2020.")
        bad = kn.remember("Bob Jones joined Initech.")
        worse = kn.remember("Carol White joined Globex.")
        errors = bad.errors + worse.errors + [kn.get(m).error or "" for m in bad.memory_ids + worse.memory_ids]
        assert len(errors) == 4 and all("HTTP" in e for e in errors)
        assert "gpt-4o-mini" not in repr(kn.settings.llm_api_key)
    sent = {k.lower(): v for k, v in fake_openai.chat_requests[0].headers.items()}
    assert sent["authorization"] == f"Bearer {SECRET}"  # it was sent, and only there
    for text in errors + [r.getMessage() for r in caplog.records] + [str(r.__dict__) for r in caplog.records]:
        assert SECRET not in text and "SECRET" not in text
    for path in (db_path, db_path + "-wal"):
        if not os.path.exists(path):
            continue
        with open(path, "rb") as fh:
            data = fh.read()
        assert SECRET.encode() not in data and b"SECRET" not in data


# -- cost accounting ------------------------------------------------------------------------------


def test_dry_run_calls_nothing_and_estimates(db_path, fake_openai):
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember(["Alice Smith joined Acme in March 2020.", "Bob Jones lives in Paris."], dry_run=True)
        assert result.dry_run and result.memory_ids == [] and kn.stats().memories == 0
    assert fake_openai.requests == []
    assert result.usage.chat_calls == 1  # two short memories share one extraction call
    assert result.usage.prompt_tokens > 100 and result.usage.completion_tokens > 0
    assert result.usage.embedded_texts == 2


def test_usage_is_recorded_per_memory_and_summed_in_stats(db_path, fake_openai):
    fake_openai.enqueue_chat(ALICE_ACME)
    fake_openai.enqueue_chat(extraction(fact("Bob Jones", "lives_in", "Paris", "Bob Jones lives in Paris.")))
    with open_kn(db_path, fake_openai) as kn:
        one = kn.remember("Alice Smith joined Acme in March 2020.")
        two = kn.remember("Bob Jones lives in Paris.")
        usages = [memory_usage(db_path, r.memory_ids[0]) for r in (one, two)]
        stats = kn.stats()
    for usage, result in zip(usages, (one, two)):
        assert usage.chat_calls == 1 and usage.embedding_calls == 1
        assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
        assert usage.prompt_tokens == result.usage.prompt_tokens
    assert stats.usage.chat_calls == 2 and stats.usage.embedding_calls == 2
    assert stats.usage.prompt_tokens == sum(u.prompt_tokens for u in usages)
    sent = sum(json.loads(r.json["messages"][0]["content"] and "1") for r in fake_openai.chat_requests)
    assert sent == 2


# -- throughput -------------------------------------------------------------------------------


_NAMES = ["Ada", "Bea", "Cyd", "Dot", "Eve", "Fay", "Gus", "Hal", "Ivo", "Jon", "Kit", "Lou"]


def _by_document(body: dict) -> dict:
    """A responder for group calls: one fact per document, named after the document's id."""
    text = body["messages"][-1]["content"]
    documents = re.findall(r'<document id="(\d+)"[^>]*>\n\w+ (\d+)', text)
    if not documents:
        number = re.search(r"<document>\n\w+ (\d+)", text).group(1)
        return extraction(fact(f"Person {number}", "works_at", "Solo Corp", f"Person {number} works at Solo Corp."))
    return {"documents": [  # in reverse order: the ids, not the order, say which is which
        {"document": i, **extraction(fact(f"{_NAMES[int(n)]} Person", "works_at", f"{_NAMES[int(n)]} Inc",
                                          f"{_NAMES[int(n)]} Person works there."))}
        for i, n in reversed(documents)
    ]}


def test_short_memories_share_calls_and_keep_their_own_graph(db_path, fake_openai):
    fake_openai.chat_responder = _by_document
    docs = [f"Note {i} says that someone joined some company." for i in range(8)]
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember(docs)
        assert result.errors == [] and result.facts_created == 8  # 2 groups x 4 documents
        memories = [kn.get(m) for m in result.memory_ids]
        # each memory is the provenance of its own document's fact
        graphs = [kn.store.memory_graph(m.id)[1] for m in memories]
        stats = kn.stats()
    # two extraction calls (groups of 4); one embedding call for the whole batch
    assert len(fake_openai.chat_requests) == 2 and len(fake_openai.embedding_requests) == 1
    assert all(m.status == "active" for m in memories)
    assert all(len(g) == 1 for g in graphs) and len({g[0] for g in graphs}) == 8
    assert stats.usage.chat_calls == 2 and stats.usage.embedding_calls == 1  # split, not multiplied
    usages = [memory_usage(db_path, m.id) for m in memories]
    assert sum(u.prompt_tokens for u in usages) == stats.usage.prompt_tokens > 0


def test_a_group_answer_that_cannot_be_read_falls_back_to_one_call_per_memory(db_path, fake_openai):
    fake_openai.enqueue_chat("garbage")
    fake_openai.enqueue_chat("more garbage")
    fake_openai.enqueue_chat(ALICE_ACME)
    fake_openai.enqueue_chat("bad")
    fake_openai.enqueue_chat("still bad")
    with open_kn(db_path, fake_openai) as kn:
        result = kn.remember(["Alice Smith joined Acme.", "Bob Jones joined Initech."])
        good, bad = (kn.get(m) for m in result.memory_ids)
        assert good.status == "active" and bad.status == "failed"
        assert kn.stats().facts == 1 and len(result.errors) == 1
    assert len(fake_openai.chat_requests) == 5


def test_many_memories_in_flight_with_bounded_model_calls(db_path):
    # Concurrency is read off the fake server (how many calls it held at once), not off a
    # wall clock: a loaded machine stretches every call, never the number in flight.
    latency, count, concurrency = 0.1, 12, 4
    with FakeOpenAI(latency=latency, chat_responder=_by_document) as fake:
        # long enough that each memory takes its own extraction call
        docs = [f"Document {i}. " + " ".join(f"Person {i}-{j} met Person {j}-{i} in City {j}." for j in range(100))
                for i in range(count)]
        with open_kn(db_path, fake, llm_concurrency=concurrency) as kn:
            result = kn.remember(docs)
        assert result.errors == [] and len(fake.chat_requests) == count
        assert fake.max_chat_inflight == concurrency


@pytest.mark.parametrize(("search_type", "kinds"), [("graph_completion", {"fact", "entity", "chunk"}),
                                                     ("rag_completion", {"chunk"})])
def test_answer_search_types_make_exactly_one_call(db_path, fake_openai, search_type, kinds):
    fake_openai.enqueue_chat(ALICE_ACME)
    with open_kn(db_path, fake_openai) as kn:
        kn.remember("Alice Smith joined Acme in March 2020.")
        before = len(fake_openai.chat_requests)
        fake_openai.enqueue_chat({"answer": "At Acme.", "citations": []})
        result = kn.recall("Where does Alice Smith work?", search_type=search_type)
    assert len(fake_openai.chat_requests) == before + 1
    assert result.answer == "At Acme." and result.search_type == search_type
    assert result.hits and {h.kind for h in result.hits} <= kinds


def test_an_empty_graph_answers_without_a_model_call(db_path, fake_openai):
    with open_kn(db_path, fake_openai) as kn:
        result = kn.recall("Where does Alice Smith work?", answer=True)
    assert result.hits == [] and result.answer and "no relevant memories" in result.answer.lower()
    assert fake_openai.chat_requests == []


def test_dry_run_counts_the_resolution_call_of_an_extractor_that_judges_nothing(db_path, fake_openai):
    from kenning.pipeline.offline import OfflineExtractor

    with open_kn(db_path, fake_openai, extractor=OfflineExtractor()) as kn:
        kn.remember("Alice works at Acme.")  # nothing stored yet: nothing to resolve, no call
        assert fake_openai.chat_requests == []
        estimate = kn.remember("Alice works at Globex.", dry_run=True)
        kn.remember("Alice works at Globex.")  # a live fact of Alice's to judge against: one call
    assert estimate.usage.chat_calls == 1 and len(fake_openai.chat_requests) >= 1
