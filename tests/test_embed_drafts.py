"""What a remember call sends to the embedder: every distinct text once, each vector where
its text is used."""

from __future__ import annotations

import numpy as np

from kenning import Kenning
from kenning.models import Usage
from kenning.providers.hashing import HashingEmbedder


class Recording(HashingEmbedder):
    """The hashing embedder, remembering every text it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        self.seen += texts
        return super().embed_batch(texts, usage)


def test_a_text_said_twice_in_one_call_is_embedded_once(tmp_path):
    embedder = Recording()
    with Kenning(str(tmp_path / "m.db"), embedder=embedder) as kn:
        kn.remember(["Alice works at Acme.", "Bob works at Acme.", "Carol works at Acme."])
        assert len(embedder.seen) == len(set(embedder.seen))
        assert "Acme" in embedder.seen  # a new name of three memories, embedded once
        store = kn._engine.store
        # the vector stored for the name is the one it has alone
        [row] = [r for r in store.entity_rows("main", None, 100) if r.name == "Acme"]
        assert row.embedding is not None
        assert np.allclose(row.embedding, HashingEmbedder().embed(["Acme"])[0], atol=1e-3)
