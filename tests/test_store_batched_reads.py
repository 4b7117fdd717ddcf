"""The batched reads recall makes in one query (issue #29): they give what the per-record reads
give, on both backends."""

from __future__ import annotations

from kenning import Kenning
from kenning.store.base import MemoryFilter


def _memories(kn: Kenning) -> list[str]:
    kn.remember(["Alice works at Acme.", "Bob lives in Paris. Bob works at Globex.", "Carol likes chess."])
    kn.remember("Alice works at Acme.")  # the same fact, stated by a second memory
    return [m.id for m in kn.store.list_memories(MemoryFilter(dataset="main", limit=100))]


def test_memory_facts_is_memory_graph_for_many(kn: Kenning) -> None:
    store = kn.store
    ids = _memories(kn)
    batched = store.memory_facts([*ids[::-1], "no-such-memory", ids[0]])
    assert batched == {m: store.memory_graph(m)[1] for m in [*ids[::-1], "no-such-memory"]}
    assert list(batched) == [*ids[::-1], "no-such-memory"]  # keys in the order asked
    assert sum(map(len, batched.values())) >= 5 and batched["no-such-memory"] == []
    assert store.memory_facts([]) == {}


def test_chunk_owners_are_the_chunks_memories(kn: Kenning) -> None:
    store = kn.store
    ids = _memories(kn)
    chunks = [c for m in ids for c in store.memory_chunks(m)]
    asked = [c.id for c in chunks][::-1] + ["no-such-chunk", chunks[0].id]
    assert store.chunk_owners(asked) == {c.id: c.memory_id for c in store.get_chunks(asked)}
    assert set(store.chunk_owners(asked)) == {c.id for c in chunks} and len(chunks) >= 4
    assert store.chunk_owners([]) == {}


def test_a_lone_dataset_stays_exact_when_another_comes(tmp_path, clock) -> None:
    """SQLite's lexical lane leaves the dataset out of the full-text query while the table holds
    one dataset only; another dataset, written since by another process, must not crowd it out."""
    url = f"sqlite:///{tmp_path / 'k.db'}"
    with Kenning(url, clock=clock) as kn, Kenning(url, clock=clock) as other:
        kn.remember([f"Alice plays chess on day {i}." for i in range(6)], dataset="main")
        alone = kn.store.lexical("main", "chunk", ["chess"], 5)
        assert len(alone) == 5
        other.remember([f"Bob plays chess chess chess {i}." for i in range(12)], dataset="other")
        again = kn.store.lexical("main", "chunk", ["chess"], 5)  # counts still cached: one dataset
        mine = {c.id for m in kn.store.list_memories(MemoryFilter(dataset="main", limit=100))
                for c in kn.store.memory_chunks(m.id)}
        assert len(again) == 5 and {s.id for s in again} <= mine
