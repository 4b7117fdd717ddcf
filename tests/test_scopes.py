"""Scopes, metadata filters and sessions in the store, on both backends: ``MemoryFilter`` with
user / agent / session / filters in ``list_memories``, ``in_scope`` (the
hook recall's lanes narrow candidates with), ``facts_stated``, ``session_messages`` and
``sessions``."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning import Kenning
from kenning.errors import ValidationError
from kenning.pipeline.messages import message_memories, read_messages
from kenning.store.base import MemoryFilter, Store
from kenning.store.filters import parse_filters

UTC = dt.timezone.utc


def _chat(store: Store, now: dt.datetime, messages: list[dict], *, user: str, session: str,
          dataset: str = "main", agent: str = "ken") -> list[str]:
    """Store a chat the way ``remember(messages, user=, session=)`` will: positions continue."""
    last = store.session_messages(dataset, session, 1)
    start = last[-1].position + 1 if last else 0
    turns = read_messages(messages, user=user.title(), agent=agent.title(), now=now)
    memories = message_memories(turns, dataset=dataset, now=now, user=user, agent=agent,
                                session=session, start=start)
    return [memory_id for memory_id, _ in store.insert_memories(memories)]


@pytest.fixture
def chats(kn: Kenning, clock) -> dict[str, list[str]]:  # noqa: ANN001
    store = kn.store
    out = {
        "alice1": _chat(store, clock(), [
            {"role": "user", "content": "Alice works at Acme.", "created_at": "2024-01-02"},
            {"role": "assistant", "content": "Noted.", "created_at": "2024-01-02T00:01:00Z"},
        ], user="alice", session="a1"),
        "bob": _chat(store, clock(), [
            {"role": "user", "content": "Bob lives in Paris.", "created_at": "2024-01-03"},
        ], user="bob", session="b1", agent="max"),
    }
    out["alice2"] = _chat(store, clock(), [
        {"role": "user", "content": "Alice lives in Lyon.", "created_at": "2024-01-05"},
    ], user="alice", session="a1")
    out["other"] = _chat(store, clock(), [{"role": "user", "content": "Carol likes chess."}],
                         user="alice", session="a1", dataset="other")
    kn.cognify()
    return out


def _ids(store: Store, **scope: object) -> set[str]:
    return {m.id for m in store.list_memories(MemoryFilter(limit=100, **scope))}


def test_user_agent_and_session_scope_memories_inside_a_dataset(kn: Kenning, chats) -> None:  # noqa: ANN001
    store = kn.store
    alice = set(chats["alice1"] + chats["alice2"])
    assert _ids(store, dataset="main", user="alice") == alice
    assert _ids(store, dataset="main", user="bob") == set(chats["bob"])
    assert _ids(store, dataset="main", agent="max") == set(chats["bob"])
    assert _ids(store, dataset="main", session="a1") == alice
    assert _ids(store, dataset="other", session="a1") == set(chats["other"])
    assert _ids(store, user="alice") == alice | set(chats["other"])  # no dataset: every one
    assert len(store.list_memories(MemoryFilter(dataset="main", user="alice", kind="message"))) == 3
    assert len(store.list_memories(MemoryFilter(dataset="main", user="nobody"))) == 0
    stored = store.get_memories(chats["alice1"])
    assert [(m.role, m.speaker, m.session, m.user, m.agent) for m in stored] == [
        ("user", "Alice", "a1", "alice", "ken"), ("assistant", "Ken", "a1", "alice", "ken")]


def test_session_messages_are_the_latest_turns_in_order_across_calls(kn: Kenning, chats) -> None:  # noqa: ANN001
    store = kn.store
    turns = store.session_messages("main", "a1", 10)
    assert [m.content for m in turns] == ["Alice works at Acme.", "Noted.", "Alice lives in Lyon."]
    assert [m.position for m in turns] == [0, 1, 2]
    assert [m.content for m in store.session_messages("main", "a1", 2)] == ["Noted.", "Alice lives in Lyon."]
    assert [m.content for m in store.session_messages("main", "a1", 5, before=2)] == ["Alice works at Acme.", "Noted."]
    assert [m.content for m in store.session_messages("main", "a1", 1, before=2)] == ["Noted."]
    assert store.session_messages("main", "a1", 5, before=0) == []
    assert store.session_messages("main", "nope", 5) == []
    assert [m.content for m in store.session_messages("other", "a1", 5)] == ["Carol likes chess."]


def test_a_new_message_is_in_its_session_before_it_is_processed(kn: Kenning, chats, clock) -> None:  # noqa: ANN001
    _chat(kn.store, clock(), [{"role": "user", "content": "Alice left Acme."}], user="alice", session="a1")
    latest = kn.store.session_messages("main", "a1", 1)[0]
    assert (latest.content, latest.status, latest.position) == ("Alice left Acme.", "pending", 3)


def test_sessions_list_their_user_agent_times_and_counts(kn: Kenning, chats) -> None:  # noqa: ANN001
    store = kn.store
    listed = store.sessions(MemoryFilter(dataset="main"))
    assert [(s.id, s.user, s.agent, s.messages) for s in listed] == [("a1", "alice", "ken", 3), ("b1", "bob", "max", 1)]
    assert listed[0].first_at == dt.datetime(2024, 1, 2, tzinfo=UTC)
    assert listed[0].last_at == dt.datetime(2024, 1, 5, tzinfo=UTC)
    assert [s.id for s in store.sessions(MemoryFilter(dataset="main", user="bob"))] == ["b1"]
    everyone = store.sessions(MemoryFilter(user="alice"))
    assert {(s.dataset, s.id) for s in everyone} == {("main", "a1"), ("other", "a1")}
    assert store.sessions(MemoryFilter(dataset="main", limit=1, offset=1))[0].id == "b1"


def test_facts_stated_by_a_users_memories(kn: Kenning, chats) -> None:  # noqa: ANN001
    store = kn.store
    alice = store.facts_stated(MemoryFilter(dataset="main", user="alice"))
    assert {(f.source, f.relation, f.target) for f in alice} == {
        ("Alice", "works_at", "Acme"), ("Alice", "lives_in", "Lyon")}
    bob = store.facts_stated(MemoryFilter(dataset="main", user="bob"))
    assert [(f.source, f.target) for f in bob] == [("Bob", "Paris")]
    assert store.facts_stated(MemoryFilter(dataset="main", user="alice", limit=1))[0].target in ("Acme", "Lyon")


def test_in_scope_keeps_the_records_a_selected_memory_states(kn: Kenning, chats) -> None:  # noqa: ANN001
    store = kn.store
    every = store.list_memories(MemoryFilter(dataset="main", limit=100))
    facts = [f for m in every for f in store.memory_graph(m.id)[1]]
    entities = [e for m in every for e in store.memory_graph(m.id)[0]]
    chunks = [c.id for m in every for c in store.memory_chunks(m.id)]
    bob = MemoryFilter(dataset="main", user="bob")
    bob_memory = chats["bob"][0]
    bob_facts = store.memory_graph(bob_memory)[1]
    assert store.in_scope("memory", [m.id for m in every], bob) == [bob_memory]
    assert store.in_scope("chunk", chunks, bob) == [c.id for c in store.memory_chunks(bob_memory)]
    assert store.in_scope("fact", facts, bob) == bob_facts
    assert set(store.in_scope("entity", entities, bob)) == set(store.memory_graph(bob_memory)[0])
    assert store.in_scope("fact", facts[::-1], MemoryFilter(dataset="main")) == facts[::-1]  # order kept
    assert store.in_scope("fact", [], bob) == []


def test_session_neighbours_stay_in_their_dataset(kn: Kenning, chats) -> None:  # noqa: ANN001
    # "a1" is a session in two datasets: recall's neighbouring turns must not cross them.
    pairs = kn.store.memory_neighbors(chats["other"], 5)
    assert pairs == []
    inside = kn.store.memory_neighbors(chats["alice2"], 1)
    assert [n for _, n, _ in inside] == [chats["alice1"][1]]


# -- metadata filters ---------------------------------------------------------------------------

_META = {
    "a": {"topic": "billing", "priority": 3, "due": "2024-06-01", "flag": True, "ticket": {"state": "open"}},
    "b": {"topic": "refunds", "priority": 5.5, "due": "2024-06-15T12:00:00+02:00", "flag": False},
    "c": {"topic": "billing", "priority": "3", "due": "today", "ticket": {"state": "closed"}},
    "d": {"topic": "other", "priority": 1, "due": "2023-12-31T23:00:00Z", "flag": 1},
}


@pytest.fixture
def tagged(kn: Kenning) -> dict[str, str]:
    ids = {}
    for name, meta in _META.items():
        ids[name] = kn.add(f"Note {name}.", metadata=meta)[0]
    return ids


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"topic": "billing"}, "ac"),
        ({"topic": {"eq": "billing"}}, "ac"),
        ({"topic": {"in": ["billing", "refunds"]}}, "abc"),
        ({"priority": 3}, "a"),  # the number, not the string "3"
        ({"priority": "3"}, "c"),
        ({"priority": {"in": [3, 1]}}, "ad"),
        ({"priority": 5.5}, "b"),
        ({"priority": {"gte": 3}}, "ab"),
        ({"priority": {"gte": 2, "lte": 4}}, "a"),
        ({"priority": {"lte": 3.0}}, "ad"),
        ({"flag": True}, "a"),  # true is not 1
        ({"flag": False}, "b"),
        ({"flag": 1}, "d"),
        ({"due": {"gte": "2024-06-01"}}, "ab"),  # 'today' is not a date
        ({"due": {"lte": "2024-06-15T10:00:00Z"}}, "abd"),  # 12:00+02:00 is 10:00 UTC
        ({"due": {"lte": "2024-06-15T09:59:59Z"}}, "ad"),
        ({"due": {"gte": "2024-01-01", "lte": "2024-06-10"}}, "a"),
        ({"due": {"lte": "2024"}}, "d"),
        ({"ticket.state": "open"}, "a"),
        ({"ticket.state": {"in": ["open", "closed"]}}, "ac"),
        ({"topic": "billing", "priority": 3}, "a"),
        ({"missing": "x"}, ""),
        ({}, "abcd"),
    ],
)
def test_metadata_filters_select_on_both_stores(kn: Kenning, tagged: dict[str, str], filters: dict,
                                                 expected: str) -> None:
    flt = MemoryFilter(dataset="main", filters=filters, limit=100)
    got = {m.id for m in kn.store.list_memories(flt)}
    assert got == {tagged[name] for name in expected}
    assert len(kn.store.list_memories(flt)) == len(expected)


def test_filters_and_scopes_narrow_together(kn: Kenning, tagged: dict[str, str], clock) -> None:  # noqa: ANN001
    ids = _chat(kn.store, clock(), [{"role": "user", "content": "billing question"}], user="zoe", session="z")
    kn.store.update_memory(ids[0], {"metadata": {"topic": "billing"}})
    both = MemoryFilter(dataset="main", user="zoe", filters={"topic": "billing"})
    assert [m.id for m in kn.store.list_memories(both)] == ids
    assert kn.store.in_scope("memory", [*tagged.values(), *ids], both) == ids


@pytest.mark.parametrize(
    ("filters", "needle"),
    [
        ({"topic": {"like": "bill%"}}, "unknown filter operator 'like'"),
        ({"topic": {"ne": "x"}}, "unknown filter operator 'ne'"),
        ({"topic": {}}, "has no operator"),
        ({"topic": ["a", "b"]}, "use {'in': [...]}"),
        ({"topic": {"in": []}}, "'in' takes a list"),
        ({"topic": {"in": "abc"}}, "'in' takes a list"),
        ({"topic": None}, "compares with a NoneType"),
        ({"priority": {"gte": "soonish"}}, "could not read filter 'priority' gte"),
        ({"priority": {"gte": True}}, "takes a number or a date"),
        ({"priority": {"gte": float("nan")}}, "takes a number or a date"),
        ({"bad key": 1}, "is not a metadata key"),
        ({"a..b": 1}, "is not a metadata key"),
        ({'q"uote': 1}, "is not a metadata key"),
        ("topic=billing", "must be a JSON object"),
    ],
)
def test_bad_filters_are_typed_errors(filters: object, needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        MemoryFilter(filters=filters)
    assert needle in str(info.value)


def test_date_bounds_read_relative_dates_against_the_callers_clock() -> None:
    now = dt.datetime(2024, 6, 10, tzinfo=UTC)
    (cond,) = parse_filters({"due": {"gte": "last week"}}, now=now)
    assert cond.value == dt.datetime(2024, 6, 3, tzinfo=UTC)  # the Monday last week began


def test_deleting_what_a_user_scope_selects_removes_what_only_they_stated(kn: Kenning, chats) -> None:  # noqa: ANN001
    # forget(user=...) will select with the scope and delete each memory: the usual collection.
    store = kn.store
    for memory in store.list_memories(MemoryFilter(dataset="main", user="alice", limit=1000)):
        kn.delete(memory.id)
    assert len(store.list_memories(MemoryFilter(dataset="main", user="alice"))) == 0
    assert store.facts_stated(MemoryFilter(dataset="main")) == store.facts_stated(MemoryFilter(user="bob"))
    assert [f.target for f in store.facts_stated(MemoryFilter(dataset="main"))] == ["Paris"]
    assert store.find_entities("main", ["alice", "acme", "lyon"]) == {}
    assert store.sessions(MemoryFilter(dataset="main"))[0].id == "b1"
    assert [s.id for s in store.sessions(MemoryFilter(dataset="other"))] == ["a1"]  # another dataset


def test_a_store_from_before_scopes_opens_with_its_memories_unscoped(tmp_path) -> None:  # noqa: ANN001
    import sqlite3

    from kenning.store.sqlite.schema import SQLITE_MIGRATIONS
    from kenning.store.sqlite.store import SQLiteStore

    path = str(tmp_path / "old.db")
    db = sqlite3.connect(path)
    scopes = next(i for i, step in enumerate(SQLITE_MIGRATIONS) if any('"user"' in sql for sql in step))
    for statements in SQLITE_MIGRATIONS[:scopes]:
        for sql in statements:
            db.execute(sql)
    db.execute(f"PRAGMA user_version = {scopes}")
    db.execute("INSERT INTO memories (id, dataset, kind, content, content_hash, valid_at, status, created_at,"
               " updated_at) VALUES ('m1', 'main', 'knowledge', 'x', 'h', '2024-01-01T00:00:00.000000+00:00',"
               " 'active', '2024-01-01T00:00:00.000000+00:00', '2024-01-01T00:00:00.000000+00:00')")
    db.commit()
    db.close()
    store = SQLiteStore(path)
    try:
        (memory,) = store.get_memories(["m1"])
        assert (memory.user, memory.agent, memory.session, memory.role, memory.speaker) == (None,) * 5
        assert len(store.list_memories(MemoryFilter(user="alice"))) == 0
        assert store.sessions(MemoryFilter()) == []
    finally:
        store.close()


# -- recall's lanes narrowed by a scope ---------------------------------------------------------

def _recall(kn: Kenning, text: str, scope: MemoryFilter | None, search_type: str = "hybrid", top_k: int = 5):  # noqa: ANN202
    from kenning.search.recall import Query, search

    engine = kn._engine
    q = Query(text=text, search_type=search_type, top_k=top_k, scope=scope)
    hits, memories = search(engine.store, engine.embedder, engine.settings, q, engine.now())
    return hits, memories


@pytest.mark.parametrize("search_type", ["hybrid", "facts", "entities", "graph"])
def test_a_scoped_recall_shows_only_evidence_from_the_scope(kn: Kenning, chats, search_type: str) -> None:  # noqa: ANN001
    mine = set(chats["alice1"] + chats["alice2"])
    hits, memories = _recall(kn, "Where do Alice and Bob live and work?", MemoryFilter(dataset="main", user="alice"),
                             search_type)
    assert hits and {m for h in hits for m in h.memory_ids} <= mine
    assert {m.id for m in memories} <= mine
    everyone, _ = _recall(kn, "Where do Alice and Bob live and work?", None, search_type)
    assert {m for h in everyone for m in h.memory_ids} - mine  # unscoped, Bob's evidence is there


def test_a_narrow_scope_finds_its_memory_among_many_better_matches(kn: Kenning, clock) -> None:  # noqa: ANN001
    kn.remember([f"Paris Paris trip number {n} to Paris." for n in range(80)])
    mine = _chat(kn.store, clock(), [{"role": "user", "content": "My trip to Paris was long."}],
                 user="zoe", session="z")
    kn.cognify()
    hits, _ = _recall(kn, "trip to Paris", MemoryFilter(dataset="main", user="zoe"))
    assert [h.memory_ids for h in hits] == [mine]
    unscoped, _ = _recall(kn, "trip to Paris", None)
    assert mine[0] not in {m for h in unscoped for m in h.memory_ids}  # it is not in the top 5 otherwise


def test_a_scoped_recall_with_metadata_filters(kn: Kenning, tagged: dict[str, str]) -> None:
    kn.cognify()
    hits, _ = _recall(kn, "Note", MemoryFilter(dataset="main", filters={"topic": "billing"}), top_k=10)
    assert {m for h in hits for m in h.memory_ids} == {tagged["a"], tagged["c"]}


# -- the context of a scope ---------------------------------------------------------------------

def test_the_context_of_a_user_and_session(kn: Kenning, chats, clock) -> None:  # noqa: ANN001
    from kenning.search.context import build_context

    _chat(kn.store, clock(), [{"role": "user", "content": "Alice moved to Paris.", "created_at": "2024-03-01"}],
          user="alice", session="a1")
    kn.cognify()
    ctx = build_context(kn.store, MemoryFilter(dataset="main", user="alice", session="a1"),
                        as_of=dt.datetime(2024, 6, 1, tzinfo=UTC), max_tokens=1500, last_messages=3)
    assert {(f.relation, f.target) for f in ctx.facts} == {("works_at", "Acme"), ("lives_in", "Paris")}
    assert [(f.relation, f.target) for f in ctx.history] == [("lives_in", "Lyon")]  # closed by Paris
    current = ctx.text.split("\n\n")[1]  # after the header (pipeline/instructions.py)
    assert current.startswith("# Facts valid now") and "Lyon" not in current and "(since 2024-03-01)" in current
    assert {e.name for e in ctx.entities} == {"Alice", "Acme", "Paris"}  # Lyon only as history
    assert [m.content for m in ctx.messages] == ["Noted.", "Alice lives in Lyon.", "Alice moved to Paris."]
    assert "Bob" not in ctx.text
    bob = build_context(kn.store, MemoryFilter(dataset="main", user="bob"), as_of=dt.datetime(2024, 6, 1, tzinfo=UTC),
                        max_tokens=1500)
    assert [f.target for f in bob.facts] == ["Paris"] and bob.messages == []


def test_first_person_turns_resolve_to_their_speaker(kn: Kenning, clock) -> None:  # noqa: ANN001
    _chat(kn.store, clock(), [
        {"role": "user", "content": "I moved to Paris."},
        {"role": "assistant", "content": "Do you like it?"},
        {"role": "user", "content": "I joined Globex in March."},
    ], user="alice", session="s")
    kn.cognify()
    facts = kn.store.facts_stated(MemoryFilter(dataset="main", user="alice"))
    assert {(f.source, f.relation, f.target) for f in facts} == {
        ("Alice", "lives_in", "Paris"), ("Alice", "works_at", "Globex")}
    (chunk,) = kn.store.memory_chunks(kn.store.session_messages("main", "s", 1)[0].id)
    assert chunk.text == "Alice: I joined Globex in March."  # a turn is searched with its speaker
