"""Chat and embeddings through any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, …).

Built on the ``openai`` SDK with its own retries turned off: one retry loop here decides what is
retried (429, 408, 409, 5xx, timeouts, dropped connections), how long to wait (``Retry-After``
first, else exponential backoff with jitter) and counts every attempt in ``Usage``.

The API key is handed to the SDK and kept only to scrub it from server messages: it never
appears in a repr, a log line or an exception (errors are raised ``from None`` so no SDK
exception with request details rides along). Both clients are safe to share between threads:
the SDK's HTTP client is, and ``Usage`` updates take a lock.
"""

from __future__ import annotations

import base64
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from ..errors import ModelError, ModelResponseError
from ..models import Usage
from .base import ChatModel, Embedder
from .retry import RetryPolicy, parse_retry_after

__all__ = ["DEFAULT_BASE_URL", "OpenAIChat", "OpenAIEmbedder", "estimate_tokens"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: sent when no key is configured: local servers (Ollama, llama.cpp) ignore the header
_NO_KEY = "no-key"
_RETRY_STATUSES = frozenset({408, 409, 429})
_KEYISH = re.compile(r"\b(sk-[\w*\-]{4,}|Bearer\s+\S+)", re.IGNORECASE)
_USAGE_LOCK = threading.Lock()

T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    """The estimate used wherever a provider reports no usage: a token per 4 characters."""
    return math.ceil(len(text) / 4)


def _add_usage(usage: Usage, **amounts: float) -> None:
    # One Usage may be shared by the threads working on one memory; += is not atomic.
    with _USAGE_LOCK:
        for name, amount in amounts.items():
            setattr(usage, name, getattr(usage, name) + amount)


@dataclass(frozen=True)
class _Failure:
    retryable: bool
    reason: str
    status: int | None = None
    retry_after: float | None = None


class _Client:
    """What chat and embeddings share: the SDK client, the retry loop, error translation."""

    kind = "model"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        backoff: float,
    ) -> None:
        from openai import OpenAI  # imported here: nothing heavy happens when kenning is imported

        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        self._secret = api_key or ""
        self._policy = RetryPolicy(max_retries=max_retries, base_delay=backoff)
        self._client = OpenAI(
            api_key=api_key or _NO_KEY, base_url=self.base_url, timeout=timeout, max_retries=0
        )

    @property
    def _where(self) -> str:
        parts = urlsplit(self.base_url)
        host = parts.hostname or "?"
        return f"{host}:{parts.port}" if parts.port else host

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, host={self._where!r})"

    def close(self) -> None:
        self._client.close()

    def _scrub(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return _KEYISH.sub("***", text)

    def _call(self, send: Callable[[], T], usage: Usage, counter: str) -> T:
        """Run ``send`` with retries; every attempt is counted in ``usage.<counter>``."""
        started = time.monotonic()
        try:
            for retry in range(self._policy.attempts):
                _add_usage(usage, **{counter: 1})
                try:
                    return send()
                except Exception as exc:  # classified below; unknown ones re-raised
                    failure = self._classify(exc)
                    if failure is None:
                        raise
                if not failure.retryable or retry == self._policy.max_retries:
                    raise self._error(failure, retry + 1) from None
                wait = self._policy.delay(retry, failure.retry_after)
                logger.warning(
                    "%s call to %s failed (%s); retry %d of %d in %.2fs",
                    self.kind,
                    self._where,
                    failure.reason,
                    retry + 1,
                    self._policy.max_retries,
                    wait,
                )
                time.sleep(wait)
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            _add_usage(usage, seconds=time.monotonic() - started)

    def _classify(self, exc: Exception) -> _Failure | None:
        import openai

        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            return _Failure(
                retryable=status in _RETRY_STATUSES or status >= 500,
                reason=f"HTTP {status}{self._server_message(exc.body)}",
                status=status,
                retry_after=parse_retry_after(exc.response.headers),
            )
        if isinstance(exc, openai.APITimeoutError):
            return _Failure(retryable=True, reason="timed out")
        if isinstance(exc, openai.APIConnectionError):
            return _Failure(retryable=True, reason="connection failed")
        if isinstance(exc, openai.OpenAIError):
            return _Failure(retryable=False, reason=type(exc).__name__)
        return None

    def _server_message(self, body: object) -> str:
        if isinstance(body, dict):
            error = body.get("error", body)
            message = error.get("message") if isinstance(error, dict) else error
            if message:
                return ": " + self._scrub(str(message))[:300]
        return ""

    def _error(self, failure: _Failure, attempts: int) -> ModelError:
        message = (
            f"{self.kind} call to {self.model!r} at {self._where} failed after "
            f"{attempts} attempt{'s' if attempts > 1 else ''}: {failure.reason}"
        )
        return ModelError(message, status_code=failure.status, attempts=attempts)


class OpenAIChat(_Client, ChatModel):
    """A chat model behind ``/chat/completions``; structured output via ``json_schema``.

    If the server rejects ``json_schema`` (HTTP 400 naming ``response_format``, as older local
    servers do), the client switches to ``json_object`` mode once and stays there.
    """

    kind = "chat"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        *,
        backoff: float = 0.5,
        temperature: float | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
        )
        self.name = model
        self.temperature = temperature
        self._json_schema_supported = True

    def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], schema_name: str, usage: Usage
    ) -> str:
        if self._json_schema_supported:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": False},
            }
            try:
                return self._complete(messages, usage, response_format)
            except ModelError as exc:
                if not _rejects_json_schema(exc):
                    raise
                logger.warning("%s rejects json_schema output; using json_object", self._where)
                self._json_schema_supported = False
        return self._complete(messages, usage, {"type": "json_object"})

    def complete_text(self, messages: list[dict[str, str]], usage: Usage) -> str:
        return self._complete(messages, usage, None)

    def _complete(
        self, messages: list[dict[str, str]], usage: Usage, response_format: dict[str, Any] | None
    ) -> str:
        options: dict[str, Any] = {"model": self.model, "messages": messages}
        if response_format is not None:
            options["response_format"] = response_format
        if self.temperature is not None:
            options["temperature"] = self.temperature
        response = self._call(lambda: self._client.chat.completions.create(**options), usage, "chat_calls")
        choice = response.choices[0] if response.choices else None
        content = choice.message.content if choice is not None else None
        reported = response.usage
        if reported is not None:
            _add_usage(
                usage,
                prompt_tokens=reported.prompt_tokens or 0,
                completion_tokens=reported.completion_tokens or 0,
            )
        else:
            sent = "".join(str(m.get("content") or "") for m in messages)
            if response_format is not None:
                sent += str(response_format)
            _add_usage(
                usage,
                prompt_tokens=estimate_tokens(sent),
                completion_tokens=estimate_tokens(content or ""),
            )
        if not content:
            reason = choice.finish_reason if choice is not None else "no choices"
            raise ModelResponseError(f"chat model {self.model!r} returned no content ({reason})")
        return content


def _rejects_json_schema(exc: ModelError) -> bool:
    text = exc.message.lower()
    return exc.details.get("status_code") == 400 and ("response_format" in text or "json_schema" in text)


class OpenAIEmbedder(_Client, Embedder):
    """Embeddings from ``/embeddings``, ``batch_size`` texts per call.

    ``dimensions`` is sent to the server when given (models that allow choosing the size).
    Otherwise the dimension is learned from the first answer; reading ``dimension`` before any
    embedding was made costs one probe call, so configure ``embedding_dimensions`` when you know
    it. Empty texts are not sent (servers reject them) and get a zero vector. Embedding tokens
    are not added to ``prompt_tokens`` (that counts chat tokens); ``embedded_texts`` counts texts.
    """

    kind = "embedding"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 4,
        batch_size: int = 256,
        backoff: float = 0.5,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
        )
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self._requested = dimensions
        self._dimension = dimensions

    @property
    def dimension(self) -> int:  # type: ignore[override]  # lazily discovered
        if self._dimension is None:
            self.embed_batch(["dimension probe"], Usage())
        assert self._dimension is not None
        return self._dimension

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        sent = [i for i, text in enumerate(texts) if text.strip()]
        vectors = self._request([texts[i] for i in sent], usage) if sent else None
        if vectors is None:
            return np.zeros((len(texts), self.dimension), dtype=np.float32)
        if len(sent) == len(texts):
            return vectors
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[sent] = vectors
        return out

    def _request(self, texts: list[str], usage: Usage) -> np.ndarray:
        options: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "base64"}
        if self._requested:
            options["dimensions"] = self._requested
        # The raw response skips building a pydantic object per float: the JSON is read once.
        raw = self._call(
            lambda: self._client.embeddings.with_raw_response.create(**options), usage, "embedding_calls"
        )
        try:
            payload = raw.http_response.json()
            items = sorted(payload["data"], key=lambda item: item.get("index", 0))
            vectors = np.stack([_decode_vector(item["embedding"]) for item in items])
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelResponseError(
                f"embedding model {self.model!r} returned an unreadable answer: {type(exc).__name__}"
            ) from None
        if vectors.shape[0] != len(texts):
            raise ModelResponseError(
                f"embedding model {self.model!r} returned {vectors.shape[0]} vectors for {len(texts)} texts"
            )
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self._dimension:
            raise ModelResponseError(
                f"embedding model {self.model!r} returned {vectors.shape[1]} dimensions, "
                f"expected {self._dimension}"
            )
        _add_usage(usage, embedded_texts=len(texts))
        return vectors


def _decode_vector(value: object) -> np.ndarray:
    # Servers that ignore encoding_format=base64 answer with a list of floats.
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(np.float32)
    if isinstance(value, list):
        return np.asarray(value, dtype=np.float32)
    raise TypeError("embedding is neither base64 nor a list")
