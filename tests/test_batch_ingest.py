"""Ingest embeds a whole batch of memories in one call, and keeps its invariants: each memory
commits on its own, a failure fails only the memories it concerns, resolution sees what the
memories before it committed."""

from __future__ import annotations

import numpy as np

from kenning import Kenning
from kenning.errors import ModelError
from kenning.models import Usage
from kenning.pipeline.process import BATCH_MEMORIES
from kenning.providers.hashing import HashingEmbedder


class Counting(HashingEmbedder):
    """The hashing embedder, counting its calls; it fails when told to."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.fail = False

    def embed(self, texts: list[str], usage: Usage | None = None) -> np.ndarray:
        self.calls.append(len(texts))
        if self.fail:
            raise ModelError("embedding endpoint down")
        return super().embed(texts, usage)


TURNS = [f"Speaker {i % 3}: I talked about topic {i} with Alice Novak at Acme Corp." for i in range(12)]


def test_one_embedding_call_per_batch(tmp_path):
    embedder = Counting()
    with Kenning(str(tmp_path / "k.db"), embedder=embedder) as kn:
        result = kn.remember(TURNS)
        assert result.errors == [] and kn.stats().memories == 12
        assert len(embedder.calls) == 1 and embedder.calls[0] >= 12  # chunks + names + facts, together
        many = kn.remember([f"note {i} about tea" for i in range(BATCH_MEMORIES + 5)])
        assert many.errors == [] and len(embedder.calls) == 3  # two batches
        total = sum(kn.get(m).usage.embedded_texts for m in result.memory_ids)
    assert total == embedder.calls[0]  # the shared call is split between the memories, exactly


def test_a_failed_batch_embedding_fails_its_memories_and_writes_nothing(tmp_path):
    embedder = Counting()
    with Kenning(str(tmp_path / "k.db"), embedder=embedder) as kn:
        embedder.fail = True
        result = kn.remember(TURNS[:4])
        assert len(result.errors) == 4 and "embedding endpoint down" in result.errors[0]
        assert {kn.get(m).status for m in result.memory_ids} == {"failed"}
        stats = kn.stats()
        assert stats.chunks == 0 and stats.facts == 0 and stats.entities == 0
        embedder.fail = False
        retried = kn.cognify(retry_failed=True)
        assert sorted(retried.processed) == sorted(result.memory_ids) and kn.stats().chunks == 4


def test_memories_of_one_batch_see_what_the_ones_before_them_committed(tmp_path):
    with Kenning(str(tmp_path / "k.db")) as kn:
        kn.remember(["Alice Novak works at Acme Corp.", "Alice Novak lives in Berlin.",
                     "Bob Stone works at Acme Corp.", "Bob Stone works at ACME corp."])
        stats = kn.stats()
        acme = kn.timeline("Acme Corp").facts
    assert stats.entities == 4  # Alice Novak, Acme Corp, Berlin, Bob Stone: each once
    assert stats.facts == 3 and len(acme) == 2  # the repeat merged into the fact stated before it
