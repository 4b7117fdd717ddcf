"""Snapshot what the offline pipeline reads from texts, to show a speed change altered none of it.

For every turn of the given data (LongMemEval haystacks, LoCoMo turns, agent_life and statements
texts, any JSON/JSONL of strings): its chunks (``chunk_text``), the offline extraction of those
chunks (entities and facts, as a speaker of its role says them), its instruction flags
(``instructions.detect``) and a digest of its hashing-embedder vector. ``--write`` saves the
snapshot; ``--compare`` reads it back and prints the first texts that differ (exit status 1).

    python benchmarks/check_extraction.py --write /tmp/before.json ../shared/data/longmemeval/dev \
        ../shared/data/locomo/locomo10.json ../shared/data/agent_life/dev.jsonl --questions 20
    python benchmarks/check_extraction.py --compare /tmp/before.json …the same paths…
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kenning.eval.datasets import load_locomo, load_longmemeval
from kenning.models import Usage
from kenning.pipeline.chunk import chunk_text
from kenning.pipeline.instructions import detect
from kenning.pipeline.offline import OfflineExtractor
from kenning.providers.hashing import HashingEmbedder

REFERENCE = dt.datetime(2024, 6, 15, 12, 0, tzinfo=dt.UTC)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def texts(path: Path, questions: int) -> Iterator[tuple[str, str | None]]:
    """(text, speaker) pairs of a data path."""
    if path.is_dir() or (path.suffix == ".json" and "longmemeval" in str(path)):
        for collection in load_longmemeval(path)[:questions]:
            for unit in collection.units:
                yield unit.text, "User" if unit.role == "user" else "Assistant"
    elif "locomo" in path.name:
        for collection in load_locomo(path):
            for unit in collection.units:
                yield unit.text, None
    elif path.suffix == ".jsonl":
        for line in path.read_text().splitlines():
            for text in _strings(json.loads(line)):
                yield text, None
    else:
        for text in _strings(json.loads(path.read_text())):
            yield text, None


def snapshot(paths: list[Path], questions: int) -> list[dict[str, Any]]:
    extractor, embedder = OfflineExtractor(), HashingEmbedder()
    out = []
    for path in paths:
        for text, speaker in texts(path, questions):
            chunks = [c.text for c in chunk_text(text)]
            extraction = extractor.extract(chunks, reference_time=REFERENCE, usage=Usage(),
                                           **({"speaker": speaker} if speaker else {}))
            vector = embedder.embed([text])[0]
            out.append({
                "text": hashlib.sha1(text.encode()).hexdigest()[:16],
                "chunks": chunks,
                "extraction": extraction.model_dump(mode="json"),
                "flags": detect(text),
                "hashing": hashlib.sha1(vector.tobytes()).hexdigest()[:16],
            })
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--questions", type=int, default=20, help="LongMemEval haystacks to read")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path)
    group.add_argument("--compare", type=Path)
    args = parser.parse_args(argv)
    current = snapshot(args.paths, args.questions)
    if args.write:
        args.write.write_text(json.dumps(current))
        print(f"{len(current)} texts written to {args.write}")
        return 0
    saved = json.loads(args.compare.read_text())
    differ = [i for i, (a, b) in enumerate(zip(saved, current)) if a != b]
    if len(saved) != len(current):
        print(f"{len(saved)} texts saved, {len(current)} now")
    for i in differ[:5]:
        for key in saved[i]:
            if saved[i][key] != current[i][key]:
                print(f"text {i} ({saved[i]['text']}): {key} differs\n  before {saved[i][key]}\n  now    {current[i][key]}")
    print(f"{len(current)} texts compared, {len(differ)} differ")
    return 1 if differ or len(saved) != len(current) else 0


if __name__ == "__main__":
    sys.exit(main())
