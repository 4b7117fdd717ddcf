"""The public facade: ``Kenning`` (sync) and ``AsyncKenning`` (async), thin shells over one
``Engine``. ``AsyncKenning`` runs each verb of a ``Kenning`` on a worker thread, so the two can
never drift apart.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Callable, Sequence
from typing import Any

from ._time import utcnow
from .engine import ContentInput, Engine
from .errors import EmbedderMismatchError
from .lifecycle.improve import ImproveResult
from .models import (
    CognifyResult,
    ForgetResult,
    Memory,
    Provenance,
    PruneResult,
    RecallResult,
    RememberResult,
    Stats,
    Timeline,
    TransferResult,
)
from .pipeline.extract import Extractor
from .providers.base import ChatModel, Embedder
from .providers.rerank import Reranker
from .settings import Settings
from .store import open_store
from .store.base import MemoryFilter, Store

__all__ = ["AsyncKenning", "Kenning"]


def _build_engine(
    path_or_url: str | None,
    *,
    store: Store | None,
    embedder: Embedder | None,
    chat: ChatModel | None,
    extractor: Extractor | None,
    clock: Callable[[], dt.datetime] | None,
    settings: dict[str, Any],
    verify_embedder: bool = True,
    reranker: Reranker | None = None,
) -> Engine:
    from .providers.registry import make_chat, make_embedder, make_reranker

    if path_or_url is not None:
        settings["db"] = str(path_or_url)
    if isinstance(embedder, str):  # a spec such as "openai:text-embedding-3-small" is a setting
        settings["embedder"], embedder = embedder, None
    if isinstance(reranker, str):
        settings["reranker"], reranker = reranker, None
    config = Settings(**settings)
    asked = embedder is not None or "embedder" in config.model_fields_set
    store = store if store is not None else open_store(
        config.db, pool_size=config.pool_size, hnsw_ef_search=config.hnsw_ef_search)
    try:
        embedder = embedder if embedder is not None else make_embedder(config)
        chat = chat if chat is not None else make_chat(config)
        reranker = reranker if reranker is not None else make_reranker(config)
        if extractor is None:
            if chat is not None:
                from .pipeline.llm_extract import LLMExtractor

                extractor = LLMExtractor(chat, graph_model=config.graph_model, prompt=config.prompt)
            else:
                from .pipeline.offline import OfflineExtractor

                extractor = OfflineExtractor()
        try:
            return Engine(config, store, embedder, extractor, chat, clock or utcnow,
                          verify_embedder=verify_embedder, reranker=reranker)
        except EmbedderMismatchError as exc:
            stored = str(exc.details.get("stored", ""))
            if asked or not stored.startswith(("local:", "openai:")):
                raise
            # DESIGN §2.6: the store knows its embedder; opening it uses that one unless asked
            # for another (a name it cannot be rebuilt from, e.g. an interrupted re-embedding,
            # stays an error).
            embedder.close()
            config = config.model_copy(update={"embedder": stored})
            embedder = make_embedder(config)
            return Engine(config, store, embedder, extractor, chat, clock or utcnow, reranker=reranker)
    except BaseException:
        store.close()
        raise


class Kenning:
    """Persistent, temporal knowledge-graph memory.

    ``Kenning()`` opens the default store in the user's data directory; ``Kenning(":memory:")``
    an in-memory one; ``Kenning("memory.db")`` or ``Kenning("sqlite:///memory.db")`` a file;
    ``Kenning("postgresql://…")`` a PostgreSQL database. Other keyword arguments are settings
    (see ``docs/settings.md``); ``store``, ``embedder``, ``chat``, ``extractor``, ``reranker``
    and ``clock`` replace a collaborator.

    Example::

        with Kenning("memory.db") as kn:
            kn.remember("Alice works at Acme.")
            print(kn.recall("Where does Alice work?").hits[0].text)
    """

    def __init__(
        self,
        path_or_url: str | None = None,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        chat: ChatModel | None = None,
        extractor: Extractor | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        reranker: Reranker | None = None,
        **settings: Any,
    ) -> None:
        self._engine = _build_engine(
            path_or_url, store=store, embedder=embedder, chat=chat, extractor=extractor,
            clock=clock, settings=settings, reranker=reranker,
        )

    @property
    def settings(self) -> Settings:
        return self._engine.settings

    @property
    def store(self) -> Store:
        """The store this instance writes to (for tools that need more than the verbs)."""
        return self._engine.store

    @classmethod
    def reembed(cls, path_or_url: str | None = None, **kwargs: Any) -> dict[str, int]:
        """Re-embed a whole store with the configured embedder (after changing embedders):
        ``Kenning.reembed("memory.db", embedder="local:all-MiniLM-L6-v2")``."""
        self = cls.__new__(cls)
        known = {k: kwargs.pop(k, None) for k in ("store", "embedder", "chat", "extractor", "clock", "reranker")}
        progress = kwargs.pop("progress", None)  # called with the number of rows just embedded
        self._engine = _build_engine(path_or_url, settings=kwargs, verify_embedder=False, **known)
        with self:
            return self._engine.reembed(progress=progress)

    def __enter__(self) -> Kenning:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._engine.close()

    def remember(
        self,
        content: ContentInput | Sequence[ContentInput],
        *,
        dataset: str = "main",
        kind: str = "knowledge",
        source: str | None = None,
        valid_at: dt.datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> RememberResult:
        """Store and process now: a string, a structured memory, or a list of them.
        ``dry_run`` estimates model calls and tokens without storing or calling anything."""
        return self._engine.remember(content, dataset=dataset, kind=kind, source=source,
                                     valid_at=valid_at, metadata=metadata, force=force,
                                     dry_run=dry_run)

    def add(
        self,
        content: ContentInput | Sequence[ContentInput],
        *,
        dataset: str = "main",
        kind: str = "knowledge",
        source: str | None = None,
        valid_at: dt.datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[str]:
        """Store as ``pending`` without processing; ``cognify`` processes later."""
        added = self._engine.add(content, dataset=dataset, kind=kind, source=source,
                                 valid_at=valid_at, metadata=metadata)
        return [memory_id for memory_id, _ in added]

    def cognify(
        self, *, dataset: str | None = None, force: bool = False, retry_failed: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> CognifyResult:
        """Process every pending memory (failed ones too with ``retry_failed``); ``progress(n)``
        is called as memories are done."""
        return self._engine.cognify(dataset=dataset, force=force, retry_failed=retry_failed, progress=progress)

    def recall(
        self,
        query: str,
        *,
        dataset: str = "main",
        search_type: str | None = "hybrid",
        top_k: int = 10,
        depth: int = 1,
        as_of: dt.datetime | str | None = None,
        known_at: dt.datetime | str | None = None,
        answer: bool = False,
        explain: bool = False,
        neighbors: int = 0,
    ) -> RecallResult:
        """Hybrid search over chunks, facts and entities; no model call unless ``answer``.
        ``neighbors=N`` attaches the N turns before and after each hit's memory in its episode."""
        return self._engine.recall(query, dataset=dataset, search_type=search_type, top_k=top_k,
                                   depth=depth, as_of=as_of, known_at=known_at, answer=answer,
                                   explain=explain, neighbors=neighbors)

    def timeline(self, entity: str, *, dataset: str = "main", relation: str | None = None) -> Timeline:
        """An entity's facts in time order, open and closed, with what superseded what."""
        return self._engine.timeline(entity, dataset=dataset, relation=relation)

    def stats(self, dataset: str | None = None) -> Stats:
        return self._engine.stats(dataset)

    def get(self, memory_id: str) -> Memory:
        return self._engine.get(memory_id)

    def list(
        self,
        *,
        dataset: str | None = "main",
        kind: str | None = None,
        status: str | None = None,
        retention: str | None = None,
        pinned: bool | None = None,
        order_by: str = "created_at",
        descending: bool = True,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Memory]:
        return self._engine.list(MemoryFilter(dataset=dataset, kind=kind, status=status,
                                              retention=retention, pinned=pinned, order_by=order_by,
                                              descending=descending, limit=limit, offset=offset))

    # -- memory management and lifecycle -----------------------------------------------------
    def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change only the given fields; new content is re-extracted and the old version's
        entities and facts that nothing else states are removed."""
        return self._engine.update(memory_id, **changes)

    def delete(self, memory_id: str) -> ForgetResult:
        """Hard-delete one memory, with garbage collection of its graph."""
        return self._engine.delete(memory_id)

    def forget(
        self, memory_id: str | None = None, *, dataset: str | None = None, everything: bool = False
    ) -> ForgetResult:
        """Hard-delete one memory, a whole dataset, or everything."""
        return self._engine.forget(memory_id, dataset=dataset, everything=everything)

    def provenance(self, memory_id: str) -> Provenance:
        """The entities and facts a memory states."""
        return self._engine.provenance(memory_id)

    def pin(self, memory_id: str, reason: str | None = None) -> Memory:
        """Pinned memories never decay and are never pruned."""
        return self._engine.pin(memory_id, reason)

    def unpin(self, memory_id: str) -> Memory:
        return self._engine.unpin(memory_id)

    def chain(self, memory_id: str) -> list[Memory]:
        """The supersession chain a memory belongs to, oldest to newest."""
        return self._engine.chain(memory_id)

    def prune(
        self,
        *,
        dataset: str = "main",
        max_age_days: float | None = None,
        min_score: float | None = None,
        superseded_older_than_days: float | None = None,
        dry_run: bool = True,
    ) -> PruneResult:
        """Remove what has decayed or been superseded; ``dry_run`` (the default) only reports."""
        return self._engine.prune(dataset=dataset, max_age_days=max_age_days, min_score=min_score,
                                  superseded_older_than_days=superseded_older_than_days,
                                  dry_run=dry_run)

    def datasets(self) -> list[str]:
        return self._engine.store.datasets()

    def feedback(self, fact_id: str, *, helpful: bool) -> float:
        """Tell kenning a recalled fact helped (or did not): it ranks higher (or lower) from now
        on. Returns the fact's new weight."""
        return self._engine.feedback(fact_id, helpful=helpful)

    def improve(self, *, dataset: str = "main") -> ImproveResult:
        """Tidy a dataset: process pending memories (such as session turns added with ``add``),
        merge duplicate entities, and fill missing embeddings."""
        return self._engine.improve(dataset=dataset)

    # -- export / import (kenning/store/portable.py) -------------------------------------------
    def export(self, path: str | os.PathLike[str], *, datasets: Sequence[str] | None = None,
               format: str = "jsonl", vectors: bool = True,
               progress: Callable[[int], None] | None = None) -> TransferResult:
        """Write ``datasets`` (default: all) to ``path``: ``format="jsonl"`` everything, sorted
        and versioned, for :meth:`import_`; ``"graphml"`` or ``"json"`` the graph (entities and
        facts) for graph tools. ``vectors=False`` leaves vectors out. The file is replaced only
        once complete. ``progress(n)`` is called as rows are written."""
        from .store.portable import export_file

        return export_file(self.store, path, datasets=datasets, format=format, vectors=vectors,
                           progress=progress)

    def import_(self, path: str | os.PathLike[str], *, vectors: bool = True,
                progress: Callable[[int], None] | None = None) -> TransferResult:
        """Load a file written by :meth:`export` (``import`` is a Python keyword, hence the
        underscore) with the same ids, in one transaction; identical rows already held are
        skipped, differing ones refused. A file without vectors (or ``vectors=False``, which
        ignores the file's: for a store with another embedder) is embedded here."""
        from .store.portable import import_file

        report = import_file(self.store, path, vectors=vectors, progress=progress)
        if not report.vectors:
            self._engine.reembed(missing_only=True)
        return report


class AsyncKenning:
    """The async facade: the same verbs as ``Kenning``, awaited."""

    def __init__(self, path_or_url: str | None = None, **kwargs: Any) -> None:
        self._sync = Kenning(path_or_url, **kwargs)

    @property
    def settings(self) -> Settings:
        return self._sync.settings

    async def __aenter__(self) -> AsyncKenning:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def close(self) -> None:
        await self._run(self._sync.close)

    async def remember(self, content: ContentInput | Sequence[ContentInput], **kwargs: Any) -> RememberResult:
        return await self._run(self._sync.remember, content, **kwargs)

    async def add(self, content: ContentInput | Sequence[ContentInput], **kwargs: Any) -> list[str]:
        return await self._run(self._sync.add, content, **kwargs)

    async def cognify(self, **kwargs: Any) -> CognifyResult:
        return await self._run(self._sync.cognify, **kwargs)

    async def recall(self, query: str, **kwargs: Any) -> RecallResult:
        return await self._run(self._sync.recall, query, **kwargs)

    async def timeline(self, entity: str, **kwargs: Any) -> Timeline:
        return await self._run(self._sync.timeline, entity, **kwargs)

    async def stats(self, dataset: str | None = None) -> Stats:
        return await self._run(self._sync.stats, dataset)

    async def get(self, memory_id: str) -> Memory:
        return await self._run(self._sync.get, memory_id)

    async def list(self, **kwargs: Any) -> list[Memory]:
        return await self._run(self._sync.list, **kwargs)

    async def update(self, memory_id: str, **changes: Any) -> Memory:
        return await self._run(self._sync.update, memory_id, **changes)

    async def delete(self, memory_id: str) -> ForgetResult:
        return await self._run(self._sync.delete, memory_id)

    async def forget(self, memory_id: str | None = None, **kwargs: Any) -> ForgetResult:
        return await self._run(self._sync.forget, memory_id, **kwargs)

    async def provenance(self, memory_id: str) -> Provenance:
        return await self._run(self._sync.provenance, memory_id)

    async def pin(self, memory_id: str, reason: str | None = None) -> Memory:
        return await self._run(self._sync.pin, memory_id, reason)

    async def unpin(self, memory_id: str) -> Memory:
        return await self._run(self._sync.unpin, memory_id)

    async def chain(self, memory_id: str) -> list[Memory]:
        return await self._run(self._sync.chain, memory_id)

    async def prune(self, **kwargs: Any) -> PruneResult:
        return await self._run(self._sync.prune, **kwargs)

    async def datasets(self) -> list[str]:
        return await self._run(self._sync.datasets)

    async def feedback(self, fact_id: str, *, helpful: bool) -> float:
        return await self._run(self._sync.feedback, fact_id, helpful=helpful)

    async def improve(self, *, dataset: str = "main") -> ImproveResult:
        return await self._run(self._sync.improve, dataset=dataset)

    async def export(self, path: str | os.PathLike[str], **kwargs: Any) -> TransferResult:
        return await self._run(self._sync.export, path, **kwargs)

    async def import_(self, path: str | os.PathLike[str], **kwargs: Any) -> TransferResult:
        return await self._run(self._sync.import_, path, **kwargs)
