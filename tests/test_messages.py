"""Chat messages as memories (kenning.messages): checking, speakers, times, positions, identity,
and the text extraction reads. Pure: no store."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning.errors import ValidationError
from kenning.pipeline.messages import addressee, memory_text, message_memories, read_messages, transcript
from kenning.models import Message

UTC = dt.timezone.utc
NOW = dt.datetime(2024, 6, 1, 12, tzinfo=UTC)

CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "I moved to Paris.", "created_at": "2024-05-02T09:30:00Z"},
    {"role": "assistant", "content": "How do you like it?"},
    {"role": "user", "content": "My sister Carol visits next week.", "name": "Bob"},
    {"role": "tool", "content": "weather: sunny", "name": "weather"},
]


def test_speakers_follow_the_role_the_name_and_the_call() -> None:
    turns = read_messages(CHAT, user="Alice", agent="Ken", now=NOW)
    assert [(t.role, t.speaker) for t in turns] == [
        ("system", None), ("user", "Alice"), ("assistant", "Ken"), ("user", "Bob"), ("tool", "weather"),
    ]
    anonymous = read_messages(CHAT[1:3], now=NOW)
    assert [t.speaker for t in anonymous] == ["User", "Assistant"]


def test_created_at_is_read_by_the_date_parser_and_is_the_turns_time() -> None:
    turns = read_messages(CHAT, user="Alice", now=NOW)
    assert turns[1].said_at == dt.datetime(2024, 5, 2, 9, 30, tzinfo=UTC)
    assert turns[2].said_at is None
    relative = read_messages([{"role": "user", "content": "hi", "created_at": "yesterday"}], now=NOW)
    assert relative[0].said_at == dt.datetime(2024, 5, 31, tzinfo=UTC)
    day = read_messages([Message(role="user", content="hi", created_at=dt.date(2024, 5, 1))], now=NOW)
    assert day[0].said_at == dt.datetime(2024, 5, 1, tzinfo=UTC)
    memories = message_memories(turns, dataset="main", now=NOW, valid_at=dt.datetime(2024, 1, 1, tzinfo=UTC))
    assert memories[1].valid_at == turns[1].said_at
    assert memories[2].valid_at == dt.datetime(2024, 1, 1, tzinfo=UTC)  # the call's reference time


def test_memories_carry_kind_scopes_role_speaker_and_session_positions() -> None:
    turns = read_messages(CHAT[1:3], user="Alice", agent="Ken", now=NOW)
    memories = message_memories(turns, dataset="d", now=NOW, user="alice", agent="ken",
                                session="s1", start=7, metadata={"channel": "web"})
    assert [(m.kind, m.user, m.agent, m.session, m.episode, m.position, m.role, m.speaker) for m in memories] == [
        ("message", "alice", "ken", "s1", "s1", 7, "user", "Alice"),
        ("message", "alice", "ken", "s1", "s1", 8, "assistant", "Ken"),
    ]
    assert memories[0].content == "I moved to Paris." and memories[0].metadata == {"channel": "web"}
    assert memories[0].status == "pending"
    loose = message_memories(turns, dataset="d", now=NOW)
    assert loose[0].episode == loose[1].episode and loose[0].episode.startswith("ep_")
    assert [m.position for m in loose] == [0, 1] and loose[0].session is None


def test_repeated_words_are_separate_turns_and_a_turn_is_identified_by_its_place() -> None:
    turns = read_messages([{"role": "user", "content": "ok"}, {"role": "user", "content": "ok"}], now=NOW)
    first = message_memories(turns, dataset="d", now=NOW, session="s")
    assert first[0].content_hash != first[1].content_hash
    again = message_memories(turns, dataset="d", now=NOW, session="s")
    assert [m.content_hash for m in again] == [m.content_hash for m in first]
    other = message_memories(turns, dataset="d", now=NOW, session="t")
    assert other[0].content_hash != first[0].content_hash


def test_extraction_reads_the_speaker_and_knows_the_addressee() -> None:
    turns = read_messages(CHAT, user="Alice", agent="Ken", now=NOW)
    memories = message_memories(turns, dataset="d", now=NOW, user="Alice", agent="Ken")
    assert memory_text(memories[1]) == "Alice: I moved to Paris."
    assert memory_text(memories[0]) == "You are a helpful assistant."  # no speaker: as said
    assert addressee(memories[1]) == "Ken" and addressee(memories[2]) == "Alice"
    assert addressee(memories[4]) is None
    assert transcript(memories[1:3]) == "Alice: I moved to Paris.\nKen: How do you like it?"
    assert transcript(memories[1:3], max_chars=30) == "Ken: How do you like it?"  # the latest kept


def test_message_objects_and_openai_extras_are_accepted() -> None:
    turns = read_messages([Message(role="user", content="hi"),
                           {"role": "tool", "content": "42", "tool_call_id": "call_1"}], now=NOW)
    assert [t.content for t in turns] == ["hi", "42"]


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "user"}], "messages[0] has no content"),
        ([{"role": "user", "content": "  "}], "messages[0] has empty content"),
        ([{"role": "user", "content": ["a"]}], "content of type list"),
        ([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}], "messages[1] has role 'bot'"),
        ([{"content": "b"}], "has role None"),
        ([{"role": "user", "content": "a", "created_at": "someday soon"}], "messages[0].created_at"),
        ([{"role": "user", "content": "a", "contnet": "x"}], "unknown field 'contnet'"),
        ([{"role": "user", "content": "a", "name": "x" * 201}], "messages[0]"),
        ([], "empty list"),
        ("hello", "must be a list"),
        ({"role": "user", "content": "a"}, "must be a list"),
        (["hello"], "messages[0] must be an object"),
    ],
)
def test_bad_messages_are_typed_errors(messages: object, needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        read_messages(messages, now=NOW)
    assert needle in str(info.value)


def test_the_same_text_in_another_scope_is_another_memory() -> None:
    from kenning._identity import content_hash

    assert content_hash("I like  tea.") == content_hash("I like tea.")  # unscoped: as before
    assert content_hash("I like tea.", None, None) == content_hash("I like tea.")
    alice, bob = content_hash("I like tea.", "alice"), content_hash("I like tea.", "bob")
    assert len({alice, bob, content_hash("I like tea.")}) == 3
    assert content_hash("I like tea.", "alice", None) != content_hash("I like tea.", None, "alice")
