"""What ingestion through a chat model costs: calls, tokens and wall time per memory.

Generates short documents (3-6 sentences about people, companies, cities and dates), starts the
test suite's fake OpenAI-compatible server (``tests/fakeopenai.py``) on loopback with a fixed
latency per request, and ingests them through the public ``Kenning`` facade with
``KENNING_LLM``-style settings, in one ``remember`` call (``batch``) and one call per document
(``perdoc``). The fake answers extraction with mechanical entities and facts taken from each
document's capitalised names, so the counts are kenning's own call pattern, not model quality.

    python benchmarks/bench_llm.py --n 100 --latency-ms 0,300 --concurrency 8

Prints, per mode and latency: chat calls, embedding calls and tokens per memory, wall time,
the most chat requests the server saw at once, and the machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import machine_info, print_table
from tests.fakeopenai import FakeOpenAI

_FIRST = ["Alice", "Bruno", "Chiara", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
_LAST = ["Mehta", "Adeyemi", "Silva", "Novak", "Haddad", "Chen", "Larsen", "Okafor", "Rossi", "Weber"]
_COMPANIES = ["Kestrel Air", "Blue Heron Analytics", "Northwind Labs", "Acme Robotics", "Orchid Bank",
              "Granite Systems", "Lumen Health", "Tidewater Foods"]
_CITIES = ["Seoul", "Osaka", "Krakow", "Lisbon", "Nairobi", "Toronto", "Berlin", "Istanbul"]
_ROLES = ["research scientist", "product manager", "data engineer", "designer", "analyst"]
_HOBBIES = ["chess", "sailing", "climbing", "pottery", "jazz"]
_MONTHS = ["January", "March", "May", "June", "September", "October", "December"]
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")


def make_docs(n: int, seed: int = 7) -> list[str]:
    """``n`` notes of 3-6 sentences; later notes move people and change their jobs."""
    rng = random.Random(seed)
    people = [f"{f} {l}" for f, l in zip(_FIRST, _LAST)]
    docs = []
    for i in range(n):
        person, other = rng.sample(people, 2)
        first = person.split()[0]
        company, city = rng.choice(_COMPANIES), rng.choice(_CITIES)
        when = f"{rng.choice(_MONTHS)} {rng.randint(2012, 2024)}"
        sentences = [
            f"{person} joined {company} in {when} as a {rng.choice(_ROLES)}."
            if i < n // 2 else f"In {when} {person} left their job and joined {company}.",
            f"{first} lives in {city} and works from the {company} office there.",
            (f"{first} met {other} at a conference in {rng.choice(_CITIES)} in {rng.choice(_MONTHS)} "
             f"{rng.randint(2015, 2024)}."),
            f"{other} reports to {person} since {rng.choice(_MONTHS)} {rng.randint(2016, 2024)}.",
            f"In their spare time, {first} enjoys {rng.choice(_HOBBIES)}.",
            f"{company} is headquartered in {rng.choice(_CITIES)}.",
        ]
        docs.append(" ".join(sentences[: rng.randint(3, 6)]))
    return docs


def _graph(text: str) -> dict[str, Any]:
    names = list(dict.fromkeys(m.group() for m in _CAPITALISED.finditer(text)
                               if m.group() not in {"In", "The"} and m.group() not in _MONTHS))[:4]
    entities = [{"name": n, "type": "person" if n.split()[0] in _FIRST else "organization", "description": ""}
                for n in names]
    facts = [{"source": a, "relation": "related_to", "target": b, "sentence": f"{a} is related to {b}.",
              "valid_at": None, "invalid_at": None, "ends": False, "same_as": None, "replaces": []}
             for a, b in itertools.pairwise(names)]
    return {"entities": entities, "facts": facts}


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """A mechanical model: entities from each document's capitalised names, a chain of facts."""
    schema = body.get("response_format", {}).get("json_schema", {})
    text = body["messages"][-1]["content"]
    if schema.get("name") == "resolution":
        return {"duplicates": [], "contradictions": [], "entities": []}
    if schema.get("name") == "answer":
        return {"answer": "fake", "citations": ["f1"]}
    documents = re.findall(r'<document id="(\d+)"[^>]*>\n(.*?)\n</document>', text, re.DOTALL)
    if documents:
        return {"documents": [{"document": i, **_graph(t)} for i, t in documents]}
    single = re.search(r"<document>\n(.*?)\n</document>", text, re.DOTALL)
    return _graph(single.group(1) if single else text)


def run(mode: str, docs: list[str], latency_ms: float, concurrency: int) -> dict[str, Any]:
    from kenning import Kenning

    with FakeOpenAI(chat_responder=respond, latency=latency_ms / 1000, dimension=256) as fake, \
            tempfile.TemporaryDirectory() as tmp:
        kn = Kenning(os.path.join(tmp, "kenning.db"), llm="gpt-4o-mini", llm_base_url=fake.base_url,
                     llm_api_key="fake", embedder="openai:text-embedding-3-small", embedding_dimensions=256,
                     llm_concurrency=concurrency)
        with kn:
            fake.reset()
            started = time.perf_counter()
            results = [kn.remember(docs)] if mode == "batch" else [kn.remember(d) for d in docs]
            seconds = time.perf_counter() - started
            stats = kn.stats()
            ingest, inflight = list(fake.requests), fake.max_chat_inflight
            fake.reset()
            for query in ("Where does Alice Mehta work?", "Who lives in Seoul?"):
                kn.recall(query)
            recall_chat = len(fake.chat_requests)
    chat = [r for r in ingest if r.path.endswith("/chat/completions")]
    n = len(docs)
    prompt = sum(_tokens(json.dumps(r.json.get("messages"))) + _tokens(json.dumps(r.json.get("response_format")))
                 for r in chat)
    return {
        "mode": mode, "N": n, "latency ms": latency_ms,
        "chat/doc": round(len(chat) / n, 2),
        "embed/doc": round((len(ingest) - len(chat)) / n, 2),
        "tokens/doc": round((stats.usage.prompt_tokens + stats.usage.completion_tokens) / n),
        "sent tokens/doc": round(prompt / n),
        "wall s": round(seconds, 2),
        "max chat in flight": inflight,
        "errors": sum(len(r.errors) for r in results),
        "facts": stats.facts,
        "recall chat calls": recall_chat,
    }


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="documents")
    parser.add_argument("--latency-ms", default="0,300", help="comma list of per-request latencies")
    parser.add_argument("--concurrency", type=int, default=8, help="KENNING_LLM_CONCURRENCY")
    parser.add_argument("--modes", default="batch,perdoc")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    docs = make_docs(args.n, args.seed)
    rows = [run(mode, docs, float(lat), args.concurrency)
            for mode in args.modes.split(",") for lat in args.latency_ms.split(",")]
    print("machine:", json.dumps(machine_info()))
    print_table(list(rows[0]), [list(r.values()) for r in rows])


if __name__ == "__main__":
    main()
