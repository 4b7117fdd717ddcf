"""Providers as plugins: factories registered by prefix, built-ins through the same path.

``KENNING_EMBEDDER`` is ``<prefix>`` or ``<prefix>:<spec>`` (``hashing``, ``openai:<model>``,
``local:<dir|package|hub id>``); an unknown prefix is a ``ConfigurationError``.
``KENNING_RERANKER`` (``make_reranker``) is ``local:<dir|hub id>`` or an ``http(s)://`` URL. ``KENNING_LLM`` is a
model name for the OpenAI-compatible client (``gpt-4o-mini``, ``llama3.1:8b``), or
``<prefix>:<spec>`` when ``<prefix>`` is a registered chat provider. Model names contain colons
(Ollama tags), so an unregistered prefix is not an error there: the whole value is the model.

Third-party packages register from an entry point in the ``kenning.providers`` group: a callable
taking no arguments that calls ``register_embedder`` / ``register_chat``. Entry points load once,
the first time a name is not found among the registered ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib.metadata import entry_points

from ..errors import ConfigurationError
from ..settings import Settings
from .base import ChatModel, Embedder
from .rerank import Reranker

__all__ = ["make_chat", "make_embedder", "make_reranker", "register_chat", "register_embedder"]

#: ``factory(spec, settings)``; ``spec`` is what follows ``prefix:`` (empty when absent)
EmbedderFactory = Callable[[str, Settings], Embedder]
ChatFactory = Callable[[str, Settings], ChatModel]

ENTRY_POINT_GROUP = "kenning.providers"
DEFAULT_CHAT = "openai"

_lock = threading.RLock()
_embedders: dict[str, EmbedderFactory] = {}
_chats: dict[str, ChatFactory] = {}
_state = {"builtins": False, "plugins": False}


def register_embedder(prefix: str, factory: EmbedderFactory) -> None:
    """Make ``KENNING_EMBEDDER=<prefix>[:<spec>]`` build an embedder with ``factory``."""
    with _lock:
        _embedders[prefix.casefold()] = factory


def register_chat(prefix: str, factory: ChatFactory) -> None:
    """Make ``KENNING_LLM=<prefix>:<spec>`` build a chat model with ``factory``."""
    with _lock:
        _chats[prefix.casefold()] = factory


def make_embedder(settings: Settings) -> Embedder:
    prefix, _, spec = settings.embedder.strip().partition(":")
    factory = _lookup(_embedders, prefix.casefold())
    if factory is None:
        known = ", ".join(sorted(_embedders))
        raise ConfigurationError(
            f"unknown embedder {settings.embedder!r}: use one of {known} (as <name> or <name>:<model>)"
        )
    return factory(spec.strip(), settings)


def make_chat(settings: Settings) -> ChatModel | None:
    """The configured chat model, or None when ``settings.llm`` is unset (offline)."""
    value = (settings.llm or "").strip()
    if not value:
        return None
    _ensure_builtins()
    prefix, sep, spec = value.partition(":")
    factory = _lookup(_chats, prefix.casefold()) if sep else None
    if factory is None:
        return _chats[DEFAULT_CHAT](value, settings)
    return factory(spec.strip(), settings)


def make_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``settings.reranker`` names (``local:<dir|hub id>`` or an ``http(s)://``
    ``/rerank`` URL), or None when it is unset (the default: no reranking)."""
    value = (settings.reranker or "").strip()
    if not value:
        return None
    if value.startswith(("http://", "https://")):
        from .rerank import HttpReranker

        return HttpReranker(value, model=settings.reranker_model, api_key=_secret(settings.reranker_api_key),
                            timeout=settings.llm_timeout, max_retries=settings.llm_max_retries)
    prefix, _, spec = value.partition(":")
    if prefix.casefold() == "local" and spec.strip():
        from .rerank import LocalCrossEncoder

        return LocalCrossEncoder(spec.strip())
    raise ConfigurationError(
        f"unknown reranker {value!r}: use local:<dir or hub id> (a cross-encoder) or an http(s)://…/rerank URL"
    )


def _lookup(table: dict[str, Callable], prefix: str) -> Callable | None:
    _ensure_builtins()
    with _lock:
        if prefix not in table and not _state["plugins"]:
            _state["plugins"] = True
            _load_plugins()
        return table.get(prefix)


def _load_plugins() -> None:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register = entry.load()
            register()
        except Exception as exc:  # a broken plugin must name itself, not crash later
            raise ConfigurationError(f"provider plugin {entry.name!r} failed to load: {exc}") from exc


# -- built-ins --------------------------------------------------------------------------------


def _secret(value: object) -> str | None:
    return value.get_secret_value() if value is not None else None  # type: ignore[attr-defined]


def _hashing(spec: str, settings: Settings) -> Embedder:
    from .hashing import HashingEmbedder

    if not spec:
        dimension = settings.embedding_dimensions
        return HashingEmbedder(dimension=dimension) if dimension else HashingEmbedder()
    try:
        return HashingEmbedder(dimension=int(spec))
    except ValueError:
        raise ConfigurationError(f"hashing:<dimension> expects a number, got {spec!r}") from None


def _openai_embedder(spec: str, settings: Settings) -> Embedder:
    from .openai_compat import OpenAIEmbedder

    if not spec:
        raise ConfigurationError("openai embedder needs a model: KENNING_EMBEDDER=openai:<model>")
    return OpenAIEmbedder(
        spec,
        base_url=settings.embedder_base_url or settings.llm_base_url,
        api_key=_secret(settings.embedder_api_key or settings.llm_api_key),
        dimensions=settings.embedding_dimensions,
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
    )


def _local_embedder(spec: str, settings: Settings) -> Embedder:
    from .local import LocalEmbedder

    return LocalEmbedder(spec or "all-MiniLM-L6-v2")


def _openai_chat(spec: str, settings: Settings) -> ChatModel:
    from .openai_compat import OpenAIChat

    if not spec:
        raise ConfigurationError("KENNING_LLM=openai:<model> needs a model name")
    return OpenAIChat(
        spec,
        base_url=settings.llm_base_url,
        api_key=_secret(settings.llm_api_key),
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
    )


def _ensure_builtins() -> None:
    with _lock:
        if _state["builtins"]:
            return
        _state["builtins"] = True
        for prefix, factory in (
            ("hashing", _hashing),
            ("openai", _openai_embedder),
            ("local", _local_embedder),
        ):
            _embedders.setdefault(prefix, factory)
        _chats.setdefault(DEFAULT_CHAT, _openai_chat)
