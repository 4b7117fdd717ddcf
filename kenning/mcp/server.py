"""The MCP server: one tool per verb, each one checked call of ``kenning.server.service``.

Over stdio the caller is fixed when the server starts (the key in ``KENNING_API_KEY``, or the
local single user). Over streamable HTTP every request names its caller with
``Authorization: Bearer kn_…``, and sees only the datasets that key may use.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread
from pydantic import BaseModel

from ..access import Principal
from ..client import Kenning
from ..errors import KenningError
from ..server.errors import error_body
from ..server.guard import RequestGuard
from ..server.service import Service, build_service

try:  # mcp >= 2
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

__all__ = ["build_server", "http_app"]

INSTRUCTIONS = (
    "kenning is persistent, temporal knowledge-graph memory. Call `remember` with what happened "
    "or was decided, `recall` with a question to get facts (with their valid times) and the "
    "memories behind them, `timeline` for how one entity's facts changed, and `forget` to drop "
    "a memory. Datasets are namespaces (default 'main')."
)

Json = dict[str, Any]


def _json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _headers(ctx: Context | None) -> Any:
    if ctx is None:
        return None
    headers = getattr(ctx, "headers", None)  # mcp >= 2
    if headers is None:
        request = getattr(ctx.request_context, "request", None)
        headers = getattr(request, "headers", None)
    return headers


def _client(ctx: Context | None) -> str:
    """The address of an HTTP caller ("" when unknown), for the failed-key limit."""
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx else None
    client = getattr(request, "client", None)
    return getattr(client, "host", "") or ""


def _bearer(headers: Any) -> str | None:
    if not headers:
        return None
    value = headers.get("authorization") or ""
    if value.lower().startswith("bearer "):
        return value[7:].strip()
    return headers.get("x-api-key")


class _Tools:
    """Resolves the caller and runs a service call off the event loop, errors as JSON text.

    The SDK handles a session's requests concurrently; a client that pipes a write and then a
    read must still read its own write, so each session's calls run one at a time, in the
    order they arrived (anyio locks are fair). Different sessions still run in parallel."""

    def __init__(self, service: Service, fixed: Principal | None) -> None:
        self.service = service
        self.fixed = fixed
        self._locks: weakref.WeakKeyDictionary[Any, anyio.Lock] = weakref.WeakKeyDictionary()

    def _lock(self, ctx: Context | None) -> anyio.Lock:
        try:
            session = ctx.session if ctx is not None else self
        except (AttributeError, LookupError, ValueError):  # called outside a request
            session = self
        # mcp >= 2 makes a session object per request; the connection is what lasts
        key = getattr(session, "_connection", None) or session
        return self._locks.setdefault(key, anyio.Lock())

    async def run(self, ctx: Context | None, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        def call() -> Any:
            who = self.fixed or self.service.access.authenticate(_bearer(_headers(ctx)), _client(ctx))
            return _json(fn(who, *args, **kw))

        try:
            async with self._lock(ctx):
                return await anyio.to_thread.run_sync(call)
        except KenningError as exc:
            raise ToolError(json.dumps(error_body(exc.code, exc.message))) from None


def build_server(kn: Kenning, *, auth: bool, principal: Principal | None = None) -> MCPServer:
    """The MCP server over ``kn``. ``principal`` fixes the caller (stdio); otherwise, with
    ``auth``, each HTTP request is authenticated from its bearer key."""
    service = build_service(kn, auth=auth)
    access = service.access
    tools = _Tools(service, principal if principal is not None else (None if auth else access.authenticate(None)))
    mcp = MCPServer("kenning", instructions=INSTRUCTIONS)
    _register(mcp, service, tools)
    return mcp


def http_app(kn: Kenning, *, auth: bool, bind: str = "127.0.0.1", allowed_hosts: Sequence[str] = ()) -> Any:
    """The streamable-HTTP app at ``/mcp`` behind the HTTP server's Host and cross-origin
    checks (``kenning.server.guard``), so it is as safe bound to any interface as on loopback."""
    app = build_server(kn, auth=auth).streamable_http_app(host=bind)
    return RequestGuard(app, bind=bind, names=tuple(allowed_hosts))


def _register(mcp: MCPServer, s: Service, t: _Tools) -> None:
    @mcp.tool()
    async def remember(content: str, ctx: Context, dataset: str = "main", kind: str = "knowledge",
                       source: str | None = None, valid_at: str | None = None, force: bool = False) -> Json:
        """Store a memory and extract its entities and facts now. ``valid_at``: when it happened
        (default now): an ISO date or time, "2024-06", "June 2024", "last year", "3 days ago"."""
        return await t.run(ctx, s.remember, content, dataset=dataset, kind=kind, source=source,
                           valid_at=valid_at, force=force)

    @mcp.tool()
    async def recall(query: str, ctx: Context, dataset: str = "main", search_type: str = "hybrid",
                     top_k: int = 10, as_of: str | None = None, known_at: str | None = None,
                     neighbors: int = 0) -> Json:
        """Search memory: facts with their valid times, entities and text, best first.
        ``as_of`` asks about another time than now, ``known_at`` answers with what was believed
        then (both: an ISO date or time, "2024-06", "June 2024", "last year", "3 days ago");
        ``neighbors`` adds the turns around each hit."""
        return await t.run(ctx, s.recall, query, dataset=dataset, search_type=search_type,
                           top_k=top_k, as_of=as_of, known_at=known_at, neighbors=neighbors)

    @mcp.tool()
    async def forget(ctx: Context, memory_id: str | None = None, dataset: str | None = None) -> Json:
        """Hard-delete one memory (``memory_id``) or a whole dataset's memories (``dataset``)."""
        if (memory_id is None) == (dataset is None):
            raise ToolError(json.dumps(error_body("validation_error", "give exactly one of memory_id or dataset")))
        return await t.run(ctx, s.forget, memory_id, dataset=dataset)

    @mcp.tool()
    async def timeline(entity: str, ctx: Context, dataset: str = "main", relation: str | None = None) -> Json:
        """An entity's facts in time order, current and past."""
        return await t.run(ctx, s.timeline, entity, dataset=dataset, relation=relation)

    @mcp.tool()
    async def get_memory(memory_id: str, ctx: Context) -> Json:
        """One stored memory by id."""
        return await t.run(ctx, s.get, memory_id)

    @mcp.tool()
    async def list_memories(ctx: Context, dataset: str = "main", kind: str | None = None,
                            status: str | None = None, pinned: bool | None = None,
                            limit: int = 20, offset: int = 0) -> Json:
        """Stored memories, newest first, a page at a time."""
        return await t.run(ctx, s.list, dataset=dataset, kind=kind, status=status, pinned=pinned,
                           limit=max(1, min(limit, 1000)), offset=max(0, offset))

    @mcp.tool()
    async def stats(ctx: Context, dataset: str | None = None) -> Json:
        """Counts of memories, entities and facts (all datasets you may read if none given)."""
        return await t.run(ctx, s.stats, dataset)

    @mcp.tool()
    async def update_memory(memory_id: str, ctx: Context, content: str | None = None,
                            topic: str | None = None, metadata: dict[str, Any] | None = None,
                            retention: str | None = None) -> Json:
        """Change a memory's fields; new content is extracted again."""
        given = {"content": content, "topic": topic, "metadata": metadata, "retention": retention}
        return await t.run(ctx, s.update, memory_id, {k: v for k, v in given.items() if v is not None})

    @mcp.tool()
    async def delete_memory(memory_id: str, ctx: Context) -> Json:
        """Hard-delete one memory and what only it stated."""
        return await t.run(ctx, s.delete, memory_id)

    @mcp.tool()
    async def pin_memory(memory_id: str, ctx: Context, reason: str | None = None, pinned: bool = True) -> Json:
        """Pin a memory (never decays or gets pruned), or unpin it with ``pinned=false``."""
        if pinned:
            return await t.run(ctx, s.pin, memory_id, reason)
        return await t.run(ctx, s.unpin, memory_id)

    @mcp.tool()
    async def improve(ctx: Context, dataset: str = "main") -> Json:
        """Tidy a dataset: process pending turns, merge duplicate entities, fill embeddings."""
        return await t.run(ctx, s.improve, dataset=dataset)

    @mcp.tool()
    async def feedback(ctx: Context, fact_id: str, helpful: bool) -> Json:
        """Mark a recalled fact helpful (ranks higher from now on) or not."""
        weight = await t.run(ctx, s.feedback, fact_id, helpful)
        return {"fact_id": fact_id, "weight": weight}

    @mcp.tool()
    async def prune(ctx: Context, dataset: str = "main", max_age_days: float | None = None,
                    min_score: float | None = None, dry_run: bool = True) -> Json:
        """Remove decayed memories; ``dry_run`` (default) only reports what would go."""
        return await t.run(ctx, s.prune, dataset=dataset, max_age_days=max_age_days,
                           min_score=min_score, dry_run=dry_run)
