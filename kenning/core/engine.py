"""The one core behind ``Kenning`` and ``AsyncKenning``: three parts composed.

``Writing`` (add, remember, cognify, reembed, improve), ``Reading`` (recall, timeline, stats,
get, list, context, sessions) and ``Lifecycle`` (update, delete, forget, provenance, pin, unpin, chain, prune,
feedback) each receive what they need, passed in or built from settings here. The engine is
synchronous and thread-safe; the async facade runs it on a worker thread.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from .._time import as_utc, utcnow
from ..errors import ConfigurationError, ValidationError
from ..pipeline.extract import Extractor
from ..providers.base import ChatModel, Embedder
from ..providers.rerank import Reranker
from ..settings import Settings
from ..store.base import Store
from ..files import is_files
from .files import Files
from .lifecycle import Lifecycle
from .reading import Reading
from .writing import Writing

__all__ = ["Engine"]


class _Verb:
    """A verb of one part, reached through the engine: ``Engine.add`` is ``Writing.add``, so
    each verb's signature and docstring are written once, on its part."""

    def __init__(self, part: str, fn: Callable[..., Any]) -> None:
        self.part, self.fn = part, fn
        self.__doc__ = fn.__doc__

    def __get__(self, engine: Engine | None, owner: type | None = None) -> Callable[..., Any]:
        return self.fn if engine is None else self.fn.__get__(getattr(engine, self.part))


class Engine:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        chat: ChatModel | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
        *,
        verify_embedder: bool = True,
        reranker: Reranker | None = None,
    ) -> None:
        if not isinstance(extractor, Extractor):
            raise ConfigurationError(
                f"extractor must extend kenning.pipeline.extract.Extractor, not {type(extractor).__name__}"
            )
        self.settings, self.store, self.embedder, self.chat, self.reranker = settings, store, embedder, chat, reranker
        self.clock = clock
        self.writing = Writing(settings, store, embedder, extractor, chat, self.now)
        self.reading = Reading(settings, store, embedder, chat, reranker, self.now)
        self.lifecycle = Lifecycle(settings, store, self.writing, self.now)
        self.files = Files(store, self.writing, self.lifecycle)
        if verify_embedder:
            store.check_embedder(embedder.name, embedder.dimension)

    def now(self) -> dt.datetime:
        return as_utc(self.clock())

    def close(self) -> None:
        for part in (self.chat, self.embedder, self.reranker):
            if part is not None:
                part.close()
        self.store.close()

    def remember(self, content: Any, *, include: Any, exclude: Any, sync: bool, **kwargs: Any) -> Any:
        """``Writing.remember`` for text; ``Files.remember`` for files and folders (Paths)."""
        if is_files(content):
            scoped = [name for name in ("user", "agent", "session") if kwargs.pop(name, None) is not None]
            if scoped:
                raise ValidationError(f"{', '.join(scoped)} scope text and chat messages, not files and folders")
            return self.files.remember(content, include=include, exclude=exclude, sync=sync, **kwargs)
        if include or exclude or sync:
            raise ValidationError("include, exclude and sync apply to files and folders (a pathlib.Path; "
                                  "over HTTP, upload them to /v1/remember/file)")
        return self.writing.remember(content, **kwargs)

    add = _Verb("writing", Writing.add)
    cognify = _Verb("writing", Writing.cognify)
    reembed = _Verb("writing", Writing.reembed)
    improve = _Verb("writing", Writing.improve)
    recall = _Verb("reading", Reading.recall)
    timeline = _Verb("reading", Reading.timeline)
    stats = _Verb("reading", Reading.stats)
    get = _Verb("reading", Reading.get)
    list = _Verb("reading", Reading.list)
    context = _Verb("reading", Reading.context)
    sessions = _Verb("reading", Reading.sessions)
    update = _Verb("lifecycle", Lifecycle.update)
    delete = _Verb("lifecycle", Lifecycle.delete)
    forget = _Verb("lifecycle", Lifecycle.forget)
    provenance = _Verb("lifecycle", Lifecycle.provenance)
    pin = _Verb("lifecycle", Lifecycle.pin)
    unpin = _Verb("lifecycle", Lifecycle.unpin)
    chain = _Verb("lifecycle", Lifecycle.chain)
    prune = _Verb("lifecycle", Lifecycle.prune)
    feedback = _Verb("lifecycle", Lifecycle.feedback)
