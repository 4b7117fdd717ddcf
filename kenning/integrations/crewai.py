"""CrewAI: ``KenningStorage(kn)``, a storage backend for CrewAI's unified ``Memory``, and
``memory(kn)``, that ``Memory`` built on it.

Each ``MemoryRecord`` is one kenning memory in ``dataset``: its content is remembered (so its
facts are extracted, closed by newer ones and found by kenning's recall, ``context`` and every
other surface), and the record itself (id, scope, categories, importance, source, private,
metadata, times) is kept in the memory's metadata under ``crewai``. ``user`` scopes every record
to one kenning user, so the crew's memories reach ``kn.context(user=…)``.

CrewAI hands its storage a query *embedding*, never the query's text. The storage therefore
brings the embedder the ``Memory`` uses (``storage.embedder``, a kenning embedder: the offline
hashing one unless another is given) and remembers which text each vector it made came from;
``search`` turns the vector back into that text and asks ``kn.recall`` (full-text, vector and
graph). The score of each record found is its cosine similarity to the query under that
embedder, in [0, 1], as CrewAI's composite ranking and its consolidation threshold expect,
halved (``STALE``) when every hit of it is a fact kenning has closed, so the current value
leads. A vector the storage did not make is a ``ConfigurationError``: build the
``Memory`` with ``memory(kn)`` or ``Memory(storage=s, embedder=s.embedder)``.

Needs ``pip install 'kenning[crewai]'``. CrewAI pins ``mcp<2``, ``pydantic<2.13`` and
``openai<3``, so the ``crewai`` extra cannot share an environment with ``kenning[mcp]`` (which
needs ``mcp>=2.3``): docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._extras import require

require("crewai.memory.storage.backend", extra="crewai", purpose="the CrewAI integration needs crewai")

from crewai.memory.types import MemoryRecord, ScopeInfo  # noqa: E402

from ..client import Kenning  # noqa: E402
from ..errors import ConfigurationError, NotFoundError, ValidationError  # noqa: E402
from ..models import Memory  # noqa: E402
from ..providers.base import Embedder  # noqa: E402
from ..providers.hashing import HashingEmbedder  # noqa: E402
from ._bound import memory_of  # noqa: E402

__all__ = ["KenningEmbedder", "KenningStorage", "memory"]

META = "crewai"  #: the metadata key that holds the record
PAGE = 1000
#: how many query vectors the embedder remembers the text of
REMEMBERED = 4096
#: the similarity of a record kenning holds no longer true (every hit of it closed), relative to
#: one it holds true: CrewAI ranks the current value first, and history stays findable
STALE = 0.5


def _parts(scope: str | None) -> list[str]:
    return [p for p in (scope or "/").split("/") if p]


def _path(parts: list[str]) -> str:
    return "/" + "/".join(parts)


def _naive_utc(value: dt.datetime) -> dt.datetime:
    """CrewAI's times are naive UTC (``datetime.utcnow``)."""
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value


class KenningEmbedder:
    """CrewAI's embedder callable (``embedder(texts) -> vectors``) over a kenning embedder,
    remembering the text of the vectors it made so that ``KenningStorage.search`` can ask
    kenning's recall in words."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.inner = embedder if embedder is not None else HashingEmbedder()
        self._texts: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(vector: Iterable[float]) -> bytes:
        return np.asarray(list(vector), dtype=np.float32).round(6).tobytes()

    def __call__(self, input: list[str]) -> list[list[float]]:
        texts = [str(t) for t in input]
        if not texts:
            return []
        vectors = np.asarray(self.inner.embed_query(texts), dtype=np.float32)
        out = [v.tolist() for v in vectors]
        with self._lock:
            for text, vector in zip(texts, out, strict=True):
                key = self._key(vector)
                self._texts[key] = text
                self._texts.move_to_end(key)
            while len(self._texts) > REMEMBERED:
                self._texts.popitem(last=False)
        return out

    def text_of(self, vector: Iterable[float]) -> str | None:
        with self._lock:
            return self._texts.get(self._key(vector))

    def similarity(self, query: list[float], texts: list[str]) -> list[float]:
        if not texts:
            return []
        q = np.asarray(query, dtype=np.float32)
        m = np.asarray(self.inner.embed_query(texts), dtype=np.float32)
        norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
        cos = (m @ q) / np.where(norms == 0, 1.0, norms)
        return [float(min(max(c, 0.0), 1.0)) for c in cos]


class KenningStorage:
    """A CrewAI ``StorageBackend`` whose records are kenning memories (see the module's words)."""

    def __init__(self, kn: Kenning, *, dataset: str = "main", user: str | None = None,
                 embedder: Embedder | KenningEmbedder | None = None) -> None:
        self.kn = kn
        self.dataset = dataset
        self.user = user
        self.embedder = embedder if isinstance(embedder, KenningEmbedder) else KenningEmbedder(embedder)
        self._lock = threading.RLock()

    # -- records <-> memories ------------------------------------------------------------------
    def _metadata(self, record: MemoryRecord) -> dict[str, Any]:
        parts = _parts(record.scope)
        return {META: {
            "id": record.id, "scope": _path(parts), "depth": len(parts),
            "path": {f"p{i}": part for i, part in enumerate(parts)},
            "categories": list(record.categories), "importance": record.importance,
            "metadata": dict(record.metadata), "source": record.source, "private": record.private,
            "created_at": _naive_utc(record.created_at).isoformat(),
            "last_accessed": _naive_utc(record.last_accessed).isoformat(),
        }}

    @staticmethod
    def _record(memory: Memory) -> MemoryRecord:
        data = memory.metadata[META]
        return MemoryRecord(
            id=data["id"], content=memory.content, scope=data["scope"], categories=data["categories"],
            metadata=data["metadata"], importance=data["importance"], source=data["source"],
            private=data["private"], created_at=dt.datetime.fromisoformat(data["created_at"]),
            last_accessed=dt.datetime.fromisoformat(data["last_accessed"]))

    def _list(self, filters: dict[str, Any], limit: int = PAGE, offset: int = 0) -> list[Memory]:
        try:
            return self.kn.list(dataset=self.dataset, user=self.user, filters=filters, limit=limit, offset=offset)
        except NotFoundError:  # the dataset holds nothing yet
            return []

    def _all(self, scope_prefix: str | None, metadata_filter: dict[str, Any] | None = None) -> list[Memory]:
        filters = {f"{META}.path.p{i}": part for i, part in enumerate(_parts(scope_prefix))}
        filters |= {f"{META}.metadata.{k}": v for k, v in (metadata_filter or {}).items()
                    if not isinstance(v, (dict, list))}
        out: list[Memory] = []
        while True:
            page = self._list(filters, PAGE, len(out))
            out += page
            if len(page) < PAGE:
                break
        return [m for m in out if META in m.metadata and _meta_matches(m.metadata[META]["metadata"], metadata_filter)]

    def _find(self, record_id: str) -> Memory | None:
        found = self._list({f"{META}.id": record_id}, 1)
        return found[0] if found else None

    def _remember(self, record: MemoryRecord) -> None:
        if not record.content or not record.content.strip():
            raise ValidationError("a CrewAI memory record needs content")
        metadata = self._metadata(record)
        source = f"crewai:{_path(_parts(record.scope))}"
        result = self.kn.remember(record.content, dataset=self.dataset, user=self.user, metadata=metadata,
                                  source=source, origin="agent")
        if result.skipped and result.memory_ids:
            kept = self.kn.get(result.memory_ids[0]).metadata.get(META, {})
            if kept.get("id") != record.id:  # the same text is another record: this one gets its own
                self.kn.remember(record.content, dataset=self.dataset, user=self.user, metadata=metadata,
                                 session=f"crewai:{record.id}"[:200], source=source, origin="agent")

    # -- the protocol ----------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        with self._lock:
            for record in records:
                existing = self._find(record.id)
                if existing is not None:
                    self._replace(existing, record)
                else:
                    self._remember(record)

    def _replace(self, existing: Memory, record: MemoryRecord) -> None:
        self.kn.update(existing.id, content=record.content, metadata=self._metadata(record))

    def update(self, record: MemoryRecord) -> None:
        with self._lock:
            existing = self._find(record.id)
            if existing is None:
                raise NotFoundError(f"no CrewAI memory record {record.id!r}")
            self._replace(existing, record)

    def search(self, query_embedding: list[float], scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        query = self.embedder.text_of(query_embedding)
        if query is None:
            raise ConfigurationError(
                "KenningStorage searches by the query's words: build the Memory with "
                "kenning.integrations.crewai.memory(kn), or pass embedder=storage.embedder to Memory")
        filters = {f"{META}.path.p{i}": part for i, part in enumerate(_parts(scope_prefix))}
        filters |= {f"{META}.metadata.{k}": v for k, v in (metadata_filter or {}).items()
                    if not isinstance(v, (dict, list))}
        try:
            result = self.kn.recall(query, dataset=self.dataset, user=self.user, filters=filters,
                                    top_k=min(max(limit * 3, 10), 100))
        except NotFoundError:  # the dataset holds nothing yet
            return []
        found: dict[str, Memory] = {}
        current: set[str] = set()
        for hit in result.hits:
            if hit.current:
                current.update(hit.memory_ids)
            for memory_id in hit.memory_ids:
                memory = None if memory_id in found else memory_of(self.kn, result, memory_id)
                if memory is None:
                    continue
                data = memory.metadata.get(META)
                if (not data or not _meta_matches(data["metadata"], metadata_filter)
                        or (categories and not set(categories) & set(data["categories"]))):
                    continue
                found[memory_id] = memory
        ranked = list(found.values())
        scores = self.embedder.similarity(query_embedding, [m.content for m in ranked])
        scores = [s if m.id in current else s * STALE for m, s in zip(ranked, scores, strict=True)]
        out = [(self._record(m), s) for m, s in zip(ranked, scores, strict=True) if s >= min_score]
        return out[:limit]  # kenning's order; CrewAI ranks again by its composite score

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: dt.datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        with self._lock:
            if record_ids is not None:
                candidates = [m for m in (self._find(i) for i in record_ids) if m is not None]
                prefix = _parts(scope_prefix)
                candidates = [m for m in candidates
                              if m.metadata[META]["scope"].split("/")[1:len(prefix) + 1] == prefix
                              and _meta_matches(m.metadata[META]["metadata"], metadata_filter)]
            else:
                candidates = self._all(scope_prefix, metadata_filter)
            cutoff = _naive_utc(older_than) if older_than else None
            gone = 0
            for m in candidates:
                data = m.metadata[META]
                if categories and not set(categories) & set(data["categories"]):
                    continue
                if cutoff and dt.datetime.fromisoformat(data["created_at"]) >= cutoff:
                    continue
                try:
                    self.kn.forget(m.id)
                    gone += 1
                except NotFoundError:  # deleted meanwhile: what was asked
                    pass
            return gone

    def get_record(self, record_id: str) -> MemoryRecord | None:
        memory = self._find(record_id)
        return self._record(memory) if memory else None

    def list_records(self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        records = [self._record(m) for m in self._all(scope_prefix)]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[offset:offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        parts = _parts(scope)
        memories = self._all(scope)
        created = [dt.datetime.fromisoformat(m.metadata[META]["created_at"]) for m in memories]
        children = sorted({_path(parts + [m.metadata[META]["path"][f"p{len(parts)}"]]) for m in memories
                           if m.metadata[META]["depth"] > len(parts)})
        return ScopeInfo(path=_path(parts), record_count=len(memories),
                         categories=sorted({c for m in memories for c in m.metadata[META]["categories"]}),
                         oldest_record=min(created, default=None), newest_record=max(created, default=None),
                         child_scopes=children)

    def list_scopes(self, parent: str = "/") -> list[str]:
        return self.get_scope_info(parent).child_scopes

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self._all(scope_prefix):
            for c in m.metadata[META]["categories"]:
                counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        return len(self._all(scope_prefix))

    def reset(self, scope_prefix: str | None = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    async def asave(self, records: list[MemoryRecord]) -> None:
        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float], scope_prefix: str | None = None,
                      categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
                      limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        return await asyncio.to_thread(self.search, query_embedding, scope_prefix, categories,
                                       metadata_filter, limit, min_score)

    async def adelete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
                      record_ids: list[str] | None = None, older_than: dt.datetime | None = None,
                      metadata_filter: dict[str, Any] | None = None) -> int:
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than,
                                       metadata_filter)


def _meta_matches(have: dict[str, Any], want: dict[str, Any] | None) -> bool:
    return all(have.get(k) == v for k, v in (want or {}).items())


def memory(kn: Kenning, *, dataset: str = "main", user: str | None = None,
           embedder: Embedder | None = None, **options: Any) -> Any:
    """CrewAI's ``Memory`` stored in kenning: ``Memory(storage=KenningStorage(kn, …),
    embedder=storage.embedder, **options)`` (``options`` are ``Memory``'s own: ``llm``,
    ``root_scope``, weights…)."""
    from crewai.memory.unified_memory import Memory as CrewMemory

    storage = KenningStorage(kn, dataset=dataset, user=user, embedder=embedder)
    return CrewMemory(storage=storage, embedder=storage.embedder, **options)
