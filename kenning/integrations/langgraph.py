"""A LangGraph ``BaseStore`` backed by kenning: ``KenningStore(kn)``.

Each item is one kenning memory in ``dataset``: its text (the value's ``content`` when it is
text, else the value as JSON) is remembered, so its facts are extracted and it is found by
kenning's recall; the item itself (namespace, key, value) is kept in the memory's metadata
under ``langgraph``. ``user_index`` names the namespace element that is the kenning ``user``
(``("memories", "{user_id}")`` → ``user_index=1``), so the user's facts reach
``kn.context(user=…)`` and user-scoped recall.

``put`` replaces the item at (namespace, key) (``update``: re-extracted) and ``put(…, None)`` /
``delete`` forgets it; ``get``; ``search(prefix, query=…)`` ranks through ``kn.recall``,
without a query lists newest first; ``filter`` matches values (``{"kind": "note"}`` or the
operators ``$eq $ne $gt $gte $lt $lte``); ``list_namespaces`` with prefix/suffix/max_depth.
``abatch`` runs ``batch`` on a worker thread. TTLs are not supported.

Needs ``pip install 'kenning[langgraph]'``.
"""

from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import Iterable, Mapping
from typing import Any

from .._extras import require

require("langgraph.store.base", extra="langgraph", purpose="the LangGraph store needs langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..client import Kenning  # noqa: E402
from ..errors import NotFoundError, ValidationError  # noqa: E402
from ..models import Memory  # noqa: E402
from ._bound import memory_of  # noqa: E402

__all__ = ["KenningStore"]

META = "langgraph"  #: the metadata key that holds the item
PAGE = 1000


def _ns_filter(namespace: tuple[str, ...], exact: bool) -> dict[str, Any]:
    out: dict[str, Any] = {f"{META}.ns.n{i}": part for i, part in enumerate(namespace)}
    if exact:
        out[f"{META}.depth"] = len(namespace)
    return out


def _text(value: Mapping[str, Any]) -> str:
    content = value.get("content")
    if isinstance(content, str) and content.strip():
        return content
    if isinstance(content, dict) and isinstance(content.get("content"), str) and content["content"].strip():
        return content["content"]  # LangMem's structured memories: {"content": {"content": …}}
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


_OPS = {"$eq": operator.eq, "$ne": operator.ne, "$gt": operator.gt, "$gte": operator.ge,
        "$lt": operator.lt, "$lte": operator.le}


def _matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    for key, want in (conditions or {}).items():
        have: Any = value
        for part in key.split("."):
            have = have.get(part) if isinstance(have, dict) else None
        ops = want if isinstance(want, dict) and want and all(k.startswith("$") for k in want) else {"$eq": want}
        for op, arg in ops.items():
            if op not in _OPS:
                raise ValidationError(f"unknown filter operator {op!r}: use $eq $ne $gt $gte $lt $lte")
            try:
                ok = _OPS[op](have, arg)
            except TypeError:  # a value of another type (None against a number) does not match
                ok = False
            if not ok:
                return False
    return True


class KenningStore(BaseStore):
    """A LangGraph store whose items are kenning memories (see the module's words)."""

    supports_ttl = False

    def __init__(self, kn: Kenning, *, dataset: str = "main", user_index: int | None = None) -> None:
        self.kn = kn
        self.dataset = dataset
        self.user_index = user_index

    # -- the one entry point ---------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op.namespace, op.key, op.value)
                out.append(None)
            elif isinstance(op, SearchOp):
                out.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._namespaces(op))
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- items -------------------------------------------------------------------------------
    def _list(self, filters: dict[str, Any], limit: int, offset: int = 0) -> list[Memory]:
        try:
            return self.kn.list(dataset=self.dataset, filters=filters, limit=limit, offset=offset)
        except NotFoundError:  # the dataset holds nothing yet
            return []

    def _user(self, namespace: tuple[str, ...]) -> str | None:
        if self.user_index is None or not -len(namespace) <= self.user_index < len(namespace):
            return None
        return namespace[self.user_index]

    def _find(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        found = self._list(_ns_filter(namespace, True) | {f"{META}.key": key}, 1)
        return found[0] if found else None

    def _item(self, memory: Memory, cls: type = Item, score: float | None = None) -> Any:
        data = memory.metadata[META]
        extra = {"score": score} if cls is SearchItem else {}
        return cls(namespace=tuple(data["ns"][f"n{i}"] for i in range(data["depth"])), key=data["key"],
                   value=data["value"], created_at=memory.created_at, updated_at=memory.updated_at, **extra)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        memory = self._find(tuple(namespace), key)
        return self._item(memory) if memory else None

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None) -> None:
        namespace = tuple(namespace)
        existing = self._find(namespace, key)
        if value is None:
            if existing is not None:
                try:
                    self.kn.forget(existing.id)
                except NotFoundError:  # deleted meanwhile: what was asked
                    pass
            return
        metadata = {META: {"ns": {f"n{i}": part for i, part in enumerate(namespace)}, "depth": len(namespace),
                           "key": key, "value": value}}
        text = _text(value)
        if existing is not None:
            self.kn.update(existing.id, content=text, metadata=metadata)
            return
        user = self._user(namespace)
        result = self.kn.remember(text, dataset=self.dataset, user=user, metadata=metadata,
                                  source=f"langgraph:{'/'.join(namespace)}")
        if result.skipped and result.memory_ids and self.kn.get(result.memory_ids[0]).metadata.get(META) != metadata[META]:
            # the same text is another item's memory: this item gets its own, in its own scope
            self.kn.remember(text, dataset=self.dataset, user=user, metadata=metadata,
                             session=f"langgraph:{'/'.join(namespace)}/{key}"[:200],
                             source=f"langgraph:{'/'.join(namespace)}")

    # -- search ------------------------------------------------------------------------------
    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        scope = _ns_filter(prefix, False)
        equal = {f"{META}.value.{k}": v for k, v in (op.filter or {}).items()
                 if not isinstance(v, (dict, list))}  # pushed down; the rest checked here
        wanted = op.offset + op.limit
        if not op.query:
            items: list[SearchItem] = []
            offset = 0
            while len(items) < wanted:
                page = self._list(scope | equal, PAGE, offset)
                items += [self._item(m, SearchItem) for m in page
                          if META in m.metadata and _matches(m.metadata[META]["value"], op.filter)]
                if len(page) < PAGE:
                    break
                offset += PAGE
            return items[op.offset:wanted]
        user = self._user(prefix)
        try:
            result = self.kn.recall(op.query, dataset=self.dataset, top_k=min(max(wanted * 3, 10), 1000),
                                    user=user, filters=scope | equal)
        except NotFoundError:  # the dataset holds nothing yet
            return []
        scores: dict[str, float] = {}
        for hit in result.hits:
            for memory_id in hit.memory_ids:
                scores[memory_id] = max(scores.get(memory_id, 0.0), hit.score)
        ranked: list[SearchItem] = []
        for memory_id, score in sorted(scores.items(), key=lambda kv: -kv[1]):
            memory = memory_of(self.kn, result, memory_id)
            if memory is not None and META in memory.metadata and _matches(memory.metadata[META]["value"], op.filter):
                ranked.append(self._item(memory, SearchItem, score))
        return ranked[op.offset:wanted]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and "*" not in condition.path:
                prefix = tuple(condition.path)
        found: set[tuple[str, ...]] = set()
        offset = 0
        while True:
            page = self._list(_ns_filter(prefix, False), PAGE, offset)
            for m in page:
                data = m.metadata.get(META)
                if data:
                    found.add(tuple(data["ns"][f"n{i}"] for i in range(data["depth"])))
            if len(page) < PAGE:
                break
            offset += PAGE
        out = sorted({ns[: op.max_depth] if op.max_depth else ns for ns in found
                      if all(_condition(ns, c) for c in op.match_conditions or ())})
        return out[op.offset: op.offset + op.limit]


def _condition(namespace: tuple[str, ...], condition: Any) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
