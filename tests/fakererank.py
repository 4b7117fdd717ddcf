"""A fake ``/rerank`` endpoint (the shape Cohere, Jina, vLLM and TEI share) on 127.0.0.1.

It scores each document by the words it shares with the query (more shared words, higher
score) and answers ``{"results": [{"index", "relevance_score"}]}`` best first, cut to
``top_n``. Scripted replies (``enqueue``: a status, a raw body) are used first, in order;
every request is kept in ``requests``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["FakeRerank", "fake_rerank", "overlap_score"]

_WORD = re.compile(r"\w+")


def overlap_score(query: str, document: str) -> float:
    words = set(_WORD.findall(query.casefold()))
    shared = words & set(_WORD.findall(document.casefold()))
    return len(shared) / (len(words) or 1)


class FakeRerank:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._queue: deque[tuple[int, Any]] = deque()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1/rerank"

    def enqueue(self, status: int = 200, body: Any = None) -> None:
        """The next answer: ``status`` with ``body`` (JSON, or raw text when a str)."""
        self._queue.append((status, body))

    def answer(self, request: dict[str, Any]) -> tuple[int, Any]:
        if self._queue:
            return self._queue.popleft()
        query, documents = request["query"], request["documents"]
        scored = sorted(((overlap_score(query, d), i) for i, d in enumerate(documents)), key=lambda p: -p[0])
        top = scored[: int(request.get("top_n") or len(documents))]
        return 200, {"results": [{"index": i, "relevance_score": s} for s, i in top]}

    def start(self) -> FakeRerank:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.fake = self  # type: ignore[attr-defined]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeRerank:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake: FakeRerank = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        fake.requests.append(body)
        fake.headers.append(dict(self.headers.items()))
        status, answer = fake.answer(body)
        payload = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def fake_rerank() -> Iterator[FakeRerank]:
    with FakeRerank() as server:
        yield server
