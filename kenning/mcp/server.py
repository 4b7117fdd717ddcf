"""The MCP server: the verbs as tools (``kenning.tools``: names, descriptions, schemas and
annotations), each call one checked call of ``kenning.access.service``, answered with compact
text for the model and the verb's whole result as structured content.

``tools`` picks the profile: ``agent`` (the default, at most 8 tools for a conversation),
``all`` (every verb) or verb names separated by commas. Arguments are checked by the verb's
request model before anything runs: an unknown or bad argument is a ``validation_error``, as
HTTP answers 422.

Over stdio the caller is the key in ``KENNING_API_KEY`` (checked again on every call, so a
revoked key stops working in an open session, as over HTTP), or the local single user. Over
streamable HTTP every request names its caller with ``Authorization: Bearer kn_…``, and sees
only the datasets that key may use.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .._extras import require

require("mcp", purpose="the MCP server needs the mcp package")

import anyio.to_thread  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp.server.mcpserver.tools.base import Tool as SDKTool  # noqa: E402
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata  # noqa: E402
from mcp_types import CallToolResult, TextContent, ToolAnnotations  # noqa: E402

from .. import __version__  # noqa: E402
from .. import tools as agent_tools  # noqa: E402
from ..access import Principal  # noqa: E402
from ..access.guard import RequestGuard  # noqa: E402
from ..access.service import Service, build_service  # noqa: E402
from ..client import Kenning  # noqa: E402
from ..errors import KenningError, error_body  # noqa: E402
from ..requests import DEFAULT_DATASET  # noqa: E402

__all__ = ["OMITTED", "ToolError", "build_server", "http_app"]

#: parameters no tool has (documented in docs/mcp.md)
OMITTED = agent_tools.OMITTED

INSTRUCTIONS = (
    "kenning is persistent, temporal memory. Call `remember` with what happened or was decided "
    "(or a chat's messages [{role, content}] with `user` and `session`), `recall` with a question "
    "to get facts (with their dates, current or not) and passages, `context` for the block to put "
    "in a prompt about a user, `timeline` for how one entity's facts changed, `forget` to delete. "
    f"Datasets are namespaces (default '{DEFAULT_DATASET}')."
)


def _headers(ctx: Context | None) -> Any:
    if ctx is None:
        return None
    headers = getattr(ctx, "headers", None)
    if headers is None:
        request = getattr(getattr(ctx, "request_context", None), "request", None)
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


class _Caller:
    """Who calls: a fixed principal (the local user), a fixed key checked on every call
    (stdio with ``KENNING_API_KEY``), or each HTTP request's bearer key. Runs a service call off
    the event loop.

    The SDK handles a session's requests concurrently; a client that pipes a write and then a
    read must still read its own write, so each session's calls run one at a time, in the
    order they arrived (anyio locks are fair). Different sessions still run in parallel."""

    def __init__(self, service: Service, fixed: Principal | None, key: str | None) -> None:
        self.service = service
        self.fixed = fixed
        self.key = key
        self._locks: weakref.WeakKeyDictionary[Any, anyio.Lock] = weakref.WeakKeyDictionary()

    def who(self, ctx: Context | None) -> Principal:
        if self.key is not None:  # a revoked key fails from the next call on
            return self.service.access.authenticate(self.key)
        return self.fixed or self.service.access.authenticate(_bearer(_headers(ctx)), _client(ctx))

    def _lock(self, ctx: Context | None) -> anyio.Lock:
        try:
            session = ctx.session if ctx is not None else self
        except (AttributeError, LookupError, ValueError):  # called outside a request
            session = self
        # mcp >= 2 makes a session object per request; the connection is what lasts
        key = getattr(session, "_connection", None) or session
        return self._locks.setdefault(key, anyio.Lock())

    async def run(self, ctx: Context | None, fn: Callable[..., Any], values: dict[str, Any]) -> Any:
        async with self._lock(ctx):
            return await anyio.to_thread.run_sync(lambda: fn(self.who(ctx), **values))


class _Arguments(FuncMetadata):
    """Hands the tool its arguments untouched: the verb's request model checks them (unknown
    names included), so an MCP call is refused exactly where an HTTP call is."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate or {})}


def _tool(s: Service, caller: _Caller, t: agent_tools.Tool) -> SDKTool:
    """The SDK tool of one verb: its arguments checked, one ``Service`` call, the answer as
    text (``kenning.tools.render``) with the whole result as structured content."""
    verb = t.name
    method = s.accounts.datasets if verb == "datasets" else getattr(s, verb)

    async def run(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            values = agent_tools.check_arguments(t, arguments)
            result = await caller.run(ctx, method, values)
        except KenningError as exc:  # the model reads {"error": {"code", "message"}}, as over HTTP
            raise ToolError(json.dumps(error_body(exc.code, exc.message))) from None
        data = agent_tools.result_json(result)
        text = agent_tools.render(verb, result)
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=data if isinstance(data, dict) else {"result": data})

    hints = t.annotations
    return SDKTool(fn=run, name=verb, title=hints.pop("title"), description=t.description,
                   parameters=t.schema(), fn_metadata=_Arguments(arg_model=ArgModelBase), is_async=True,
                   context_kwarg="ctx", annotations=ToolAnnotations(**hints))


def build_server(kn: Kenning, *, auth: bool, principal: Principal | None = None, key: str | None = None,
                 tools: str = "agent") -> MCPServer:
    """The MCP server over ``kn`` with the tools of profile ``tools``. ``key`` fixes the caller
    to that API key, checked on every call (stdio); ``principal`` fixes it once; otherwise, with
    ``auth``, each HTTP request is authenticated from its bearer key."""
    service = build_service(kn, auth=auth or key is not None)
    access = service.access
    if key is not None:
        access.authenticate(key)  # a wrong key is refused before the session starts
    fixed = principal if principal is not None else (None if auth or key is not None else access.authenticate(None))
    caller = _Caller(service, fixed, key)
    chosen = agent_tools.select(tools)
    return MCPServer("kenning", version=__version__, instructions=INSTRUCTIONS,
                     tools=[_tool(service, caller, t) for t in chosen])


def http_app(kn: Kenning, *, auth: bool, bind: str = "127.0.0.1", allowed_hosts: Sequence[str] = (),
             tools: str = "agent") -> Any:
    """The streamable-HTTP app at ``/mcp`` behind the HTTP server's Host and cross-origin
    checks (``kenning.access.guard``), so it is as safe bound to any interface as on loopback."""
    app = build_server(kn, auth=auth, tools=tools).streamable_http_app(host=bind)
    return RequestGuard(app, bind=bind, names=tuple(allowed_hosts))
