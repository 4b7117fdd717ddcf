"""What the offline pipeline reads from long chat turns stays exactly what it read before the
ingest speed work (issue 29): the chunks, the extraction (entities and facts), the instruction
flags and the hashing vector of each turn in tests/fixtures/long_turns.json, against the
snapshot tests/fixtures/long_turns_expected.json written by the code before that work
(``benchmarks/check_extraction.py`` does the same on the public data sets). Written again on
2026-12-02 for one deliberate change: time words are cut from a value ("coffee last spring" is
"coffee"); and on 2026-12-04 (the everyday loop's third set) for three: a fact of a sentence
of several clauses is described by its own clause, "started learning Japanese" learns Japanese
(not "practices learning"), "our old Honda" is "Honda"; and on 2026-12-04 (wave 10) for one: "… and I …"
after a part of three words or more starts a clause, so a "now" or "anymore" of one clause no longer
marks the other's fact a change, and "I'm going to run …, and I ran 42 km" reads the race that was run."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np

from kenning.models import Usage
from kenning.pipeline.chunk import chunk_text, count_tokens
from kenning.pipeline.instructions import detect
from kenning.pipeline.offline import OfflineExtractor
from kenning.providers.hashing import HashingEmbedder

FIXTURES = Path(__file__).parent / "fixtures"
REFERENCE = dt.datetime(2024, 6, 15, 12, 0, tzinfo=dt.UTC)


def read(turn: dict[str, str]) -> dict[str, object]:
    chunks = [c.text for c in chunk_text(turn["text"])]
    extraction = OfflineExtractor().extract(chunks, reference_time=REFERENCE, usage=Usage(), speaker=turn["speaker"])
    vector = HashingEmbedder().embed([turn["text"]])[0]
    return {"chunks": chunks, "extraction": extraction.model_dump(mode="json"), "flags": detect(turn["text"]),
            "hashing": [round(float(x), 6) for x in vector]}


def snapshot() -> list[dict[str, object]]:
    return [read(turn) for turn in json.loads((FIXTURES / "long_turns.json").read_text())]


def test_long_turns_read_as_before():
    expected = json.loads((FIXTURES / "long_turns_expected.json").read_text())
    got = snapshot()
    assert len(got) == len(expected)
    for index, (now, before) in enumerate(zip(got, expected)):
        assert now == before, f"turn {index} reads differently"
    assert sum(len(s["extraction"]["facts"]) for s in got) >= 20  # the fixture states facts


def test_hashing_batches_give_each_text_its_own_vector():
    texts = [t["text"] for t in json.loads((FIXTURES / "long_turns.json").read_text())]
    embedder = HashingEmbedder()
    together = embedder.embed(texts)
    alone = np.vstack([HashingEmbedder().embed([t]) for t in texts])
    assert np.array_equal(together, alone)
    assert np.array_equal(embedder.embed(texts[::-1])[::-1], together)


def test_a_chunk_counts_the_tokens_of_its_text():
    texts = [t["text"] for t in json.loads((FIXTURES / "long_turns.json").read_text())]
    texts += ["x" * 256, "word " * 51 + "w", "abcdefghijkl " * 40, "Done.  Next!\n\nAnd then?" * 40,
              "a.b.c " * 90, "  " + "é" * 300 + "  "]
    for text in texts:
        chunks = chunk_text(text)
        assert chunks and all(c.token_count == count_tokens(c.text) for c in chunks), text[:40]
        assert (len(chunks) == 1) == (count_tokens(text) <= 256), text[:40]


if __name__ == "__main__":  # writes the snapshot (run with the code it must match)
    (FIXTURES / "long_turns_expected.json").write_text(json.dumps(snapshot(), indent=1, ensure_ascii=False))
