"""A fake OpenAI-compatible HTTP server for the test suite (stdlib only).

It listens on 127.0.0.1 on a free port and answers ``POST /v1/chat/completions`` and
``POST /v1/embeddings`` (also without the ``/v1`` prefix), so tests drive the real ``openai``
client over real HTTP. Use it as a context manager or through the ``fake_openai`` fixture::

    with FakeOpenAI() as server:
        server.enqueue_chat({"entities": [], "facts": []})
        server.enqueue_chat(status=429, headers={"Retry-After": "0"})
        chat = OpenAIChat("m", base_url=server.base_url, api_key="k")

Scripted replies are consumed first, in order (chat and embeddings have separate queues); when a
queue is empty, chat asks ``chat_responder(request_json)`` (a ``str`` or ``dict`` answer) and
embeddings are computed: deterministic bag-of-words vectors hashed from the text, so texts that
share words are similar. Every request received is appended to ``requests`` (path, JSON body,
headers) before any scripted failure, so tests can count attempts and assert that no call was
made; ``max_chat_inflight`` is the most chat requests it answered at once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["FakeOpenAI", "Reply", "RequestRecord", "fake_embedding", "fake_openai"]

ChatResponder = Callable[[dict[str, Any]], "str | dict[str, Any]"]
_WORD = re.compile(r"\w+", re.UNICODE)


def fake_embedding(text: str, dimension: int) -> list[float]:
    """Unit bag-of-words vector: each word adds ±1 at a hashed position."""
    vector = [0.0] * dimension
    words = _WORD.findall(text.casefold()) or [""]
    for word in words:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimension
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class Reply:
    """One scripted reply. ``content`` (str or dict → JSON) is the assistant message."""

    content: str | dict[str, Any] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop_connection: bool = False
    body: dict[str, Any] | None = None  # raw JSON body, for error replies or odd shapes
    usage: bool = True


@dataclass
class RequestRecord:
    path: str
    json: dict[str, Any]
    headers: dict[str, str]
    at: float


class FakeOpenAI:
    def __init__(
        self,
        *,
        chat_responder: ChatResponder | None = None,
        dimension: int = 64,
        latency: float = 0.0,
        usage: bool = True,
    ) -> None:
        self.chat_responder = chat_responder
        self.dimension = dimension
        self.latency = latency
        self.usage = usage
        self.requests: list[RequestRecord] = []
        #: chat requests being answered right now, and the most there ever were at once
        self.chat_inflight = 0
        self.max_chat_inflight = 0
        self._chat_queue: deque[Reply] = deque()
        self._embedding_queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------
    def enqueue_chat(self, content: str | dict[str, Any] | None = None, **options: Any) -> None:
        with self._lock:
            self._chat_queue.append(Reply(content, **options))

    def enqueue_embeddings(self, **options: Any) -> None:
        """Script an embeddings reply (a failure: status, delay, drop_connection, body)."""
        with self._lock:
            self._embedding_queue.append(Reply(None, **options))

    @property
    def chat_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_chat_inflight = self.chat_inflight
            self._chat_queue.clear()
            self._embedding_queue.clear()

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling (called from server threads) ----------------------------------------
    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(RequestRecord(path, body, headers, time.monotonic()))

    def _next(self, queue: deque[Reply]) -> Reply | None:
        with self._lock:
            return queue.popleft() if queue else None

    def _chat_content(self, body: dict[str, Any]) -> str:
        answer = self.chat_responder(body) if self.chat_responder else "ok"
        return answer if isinstance(answer, str) else json.dumps(answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOpenAI

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that timed out closed its socket; the late write fails. Not a test failure.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "invalid JSON body"}})
            return
        path = self.path.split("?", 1)[0]
        fake._record(path, body, dict(self.headers.items()))
        if path.endswith("/chat/completions"):
            with fake._lock:
                fake.chat_inflight += 1
                fake.max_chat_inflight = max(fake.max_chat_inflight, fake.chat_inflight)
            try:
                self._reply(fake._next(fake._chat_queue), lambda reply: self._chat(body, reply))
            finally:
                with fake._lock:
                    fake.chat_inflight -= 1
        elif path.endswith("/embeddings"):
            self._reply(fake._next(fake._embedding_queue), lambda reply: self._embeddings(body))
        else:
            self._send(404, {"error": {"message": f"no route {path}"}})

    def _reply(self, reply: Reply | None, success: Callable[[Reply | None], dict[str, Any]]) -> None:
        fake = self.server.fake
        delay = fake.latency + (reply.delay if reply else 0.0)
        if delay:
            time.sleep(delay)
        if reply is not None and reply.drop_connection:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply is not None and reply.status != 200:
            body = reply.body or {"error": {"message": f"scripted status {reply.status}", "type": "fake"}}
            self._send(reply.status, body, reply.headers)
            return
        if reply is not None and reply.body is not None:
            self._send(200, reply.body, reply.headers)
            return
        self._send(200, success(reply), reply.headers if reply else {})

    def _chat(self, body: dict[str, Any], reply: Reply | None) -> dict[str, Any]:
        fake = self.server.fake
        if reply is not None and reply.content is not None:
            content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        else:
            content = fake._chat_content(body)
        prompt = "".join(str(m.get("content") or "") for m in body.get("messages") or [])
        if body.get("response_format"):
            prompt += json.dumps(body["response_format"])
        usage = {
            "prompt_tokens": estimate_tokens(prompt),
            "completion_tokens": estimate_tokens(content),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        answer: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        if fake.usage and (reply is None or reply.usage):
            answer["usage"] = usage
        return answer

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        fake = self.server.fake
        texts = body.get("input", "")
        texts = [texts] if isinstance(texts, str) else list(texts)
        dimension = int(body.get("dimensions") or fake.dimension)
        data = []
        for index, text in enumerate(texts):
            vector: Any = fake_embedding(str(text), dimension)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(estimate_tokens(str(t)) for t in texts)
        answer: dict[str, Any] = {"object": "list", "data": data, "model": body.get("model", "fake")}
        if fake.usage:
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return answer

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started fake server; scripted replies and the request log are per test."""
    with FakeOpenAI() as server:
        yield server
