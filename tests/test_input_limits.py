"""The same limits and the same text on every surface (issue 24): a query over the
10,000-character limit HTTP enforces is refused by Python too, from one constant; text in
decomposed Unicode (NFD) is taken in as NFC, so "José Núñez" typed either way is one name."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import httpx
import pytest

from kenning import Kenning
from kenning.errors import ValidationError
from kenning.requests import QUERY_CHARS


def test_python_recall_and_context_refuse_a_query_over_the_http_limit(tmp_path: Path) -> None:
    from kenning.server import create_app

    from .server_util import serve

    long = "tea " * (QUERY_CHARS // 4) + "x"
    assert len(long) == QUERY_CHARS + 1
    with Kenning(str(tmp_path / "k.db")) as kn:
        kn.remember("Alice likes tea.")
        with pytest.raises(ValidationError, match=f"query is {QUERY_CHARS + 1} characters; the limit is {QUERY_CHARS}"):
            kn.recall(long)
        with pytest.raises(ValidationError, match="query"):
            kn.context(long)
        assert kn.recall(long[:QUERY_CHARS]).hits  # at the limit: answered
        with serve(create_app(kn, auth=False)) as base:
            assert httpx.post(f"{base}/v1/recall", json={"query": long}).status_code == 422


def test_decomposed_names_are_taken_in_composed(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "José Núñez works at Acme.")
    assert nfd != unicodedata.normalize("NFC", nfd)
    with Kenning(str(tmp_path / "k.db")) as kn:
        result = kn.remember(nfd)
        assert result.facts_created >= 1
        memory = kn.get(result.memory_ids[0])
        assert memory.content == "José Núñez works at Acme." and unicodedata.is_normalized("NFC", memory.content)
        # the name recalled and shown on a timeline whichever form the question uses
        for query in ("José Núñez", unicodedata.normalize("NFD", "José Núñez")):
            assert [f.relation for f in kn.timeline(query).facts], query
            assert kn.recall(f"Where does {query} work?").hits[0].text == "José Núñez works at Acme."
        # the same statement typed composed is the same memory (content identity)
        assert kn.remember("José Núñez works at Acme.").memory_ids == result.memory_ids
        # structured memories and uploads too
        from kenning.models import MemoryInput

        for given in ({"topic": unicodedata.normalize("NFD", "Café"), "decisions": [nfd]},
                      MemoryInput(topic=unicodedata.normalize("NFD", "Café crème"), context=nfd)):
            stored = kn.get(kn.remember(given).memory_ids[0])
            assert stored.topic.startswith("Café") and unicodedata.is_normalized("NFC", stored.content)
    from kenning.files import read_document

    assert read_document(nfd.encode(), "a.txt").text == "José Núñez works at Acme."
