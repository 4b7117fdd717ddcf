"""Content identity (issue 23 item 4): one ``memory_identity`` for remember, add and update; an
updated memory keeps its scope in its identity; a text repeated in a later episode is its own
memory."""

from __future__ import annotations

from kenning import Kenning
from kenning._identity import memory_identity


def test_an_updated_memory_keeps_its_user_in_its_identity(kn: Kenning) -> None:
    mine = kn.remember("I like green tea.", user="alice").memory_ids[0]
    kn.update(mine, content="I like black coffee.")
    assert kn.get(mine).content_hash == memory_identity("I like black coffee.", user="alice")
    unscoped = kn.remember("I like black coffee.").memory_ids[0]
    assert unscoped != mine  # an unscoped text is nobody's: not alice's memory
    assert kn.get(unscoped).user is None
    again = kn.remember("I like black coffee.", user="alice").memory_ids[0]
    assert again == mine  # and alice's own words find her memory, no duplicate
    assert len(kn.list(user="alice")) == 1


def test_an_updated_message_keeps_its_place(kn: Kenning) -> None:
    ids = kn.remember([{"role": "user", "content": "I live in Rome."}, {"role": "assistant", "content": "ok"}],
                      user="Bob", session="s1").memory_ids
    kn.update(ids[0], content="I live in Milan.")
    memory = kn.get(ids[0])
    assert memory.content_hash == memory_identity("I live in Milan.", kind="message", episode="s1", position=0,
                                                  role="user", speaker="Bob")


def test_a_text_repeated_in_a_later_episode_is_its_own_memory(kn: Kenning) -> None:
    first = kn.remember(["Can you book the table?", "Thanks!"]).memory_ids
    second = kn.remember(["Is the report ready?", "Thanks!"]).memory_ids
    assert len(set(first + second)) == 4  # no hole in the second conversation
    thanks = kn.get(second[1])
    assert thanks.content == "Thanks!" and thanks.position == 1
    assert thanks.episode == kn.get(second[0]).episode != kn.get(first[1]).episode
    # the same list again is the same episode: its memories are found, not copied
    assert kn.remember(["Can you book the table?", "Thanks!"]).memory_ids == first
    assert len(kn.list(limit=100)) == 4
    # a single text is no episode: its identity is its text's, as before
    single = kn.remember("Thanks!").memory_ids[0]
    assert single not in first + second and kn.remember("Thanks!").memory_ids == [single]


def test_a_text_remembered_alone_before_is_found_from_a_list(kn: Kenning) -> None:
    alone = kn.remember("Alice works at Acme.").memory_ids[0]
    both = kn.remember(["Alice works at Acme.", "Bob lives in Paris."]).memory_ids
    assert both[0] == alone and both[1] != alone  # not another conversation's turn: the same note
