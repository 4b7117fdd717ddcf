"""The MCP server: one tool per verb, named as the verb, with the verb's request model as its
input schema; each tool is one checked call of ``kenning.access.service``.

Over stdio the caller is fixed when the server starts (the key in ``KENNING_API_KEY``, or the
local single user). Over streamable HTTP every request names its caller with
``Authorization: Bearer kn_…``, and sees only the datasets that key may use.
"""

from __future__ import annotations

import inspect
import json
import weakref
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import anyio.to_thread
from pydantic import BaseModel, BeforeValidator, Field

from ..access import Principal
from ..client import Kenning
from ..errors import KenningError
from ..requests import DEFAULT_DATASET, VERBS
from ..errors import error_body
from ..access.guard import RequestGuard
from ..access.service import Service, build_service

try:  # mcp >= 2
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

__all__ = ["OMITTED", "build_server", "http_app", "tool_signature"]

INSTRUCTIONS = (
    "kenning is persistent, temporal knowledge-graph memory. Call `remember` with what happened "
    "or was decided, `recall` with a question to get facts (with their valid times) and the "
    "memories behind them, `timeline` for how one entity's facts changed, and `forget` to drop "
    "a memory. A chat's messages ({role, content}) go to `remember` as they are, with `user` and "
    "`session`; `context` gives the block to put in a prompt (current facts, recent messages). "
    f"Datasets are namespaces (default '{DEFAULT_DATASET}')."
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
    checks (``kenning.access.guard``), so it is as safe bound to any interface as on loopback."""
    app = build_server(kn, auth=auth).streamable_http_app(host=bind)
    return RequestGuard(app, bind=bind, names=tuple(allowed_hosts))


#: parameters a tool leaves out (documented in docs/mcp.md): an agent may not wipe every dataset
OMITTED: dict[str, frozenset[str]] = {"forget": frozenset({"everything"})}


def tool_signature(verb: str) -> inspect.Signature:
    """A tool's parameters: its verb's request fields with their limits and descriptions,
    less ``OMITTED``, after the context the SDK passes in."""
    model = VERBS[verb]
    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    for name, field in model.model_fields.items():
        if name in OMITTED.get(verb, ()):
            continue
        annotation = Annotated[(field.annotation, *field.metadata, Field(description=field.description),
                                *_checks(model, name))]
        default = inspect.Parameter.empty if field.is_required() else field.default
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return inspect.Signature(params, return_annotation=Json | list[Any])


def _checks(model: type[BaseModel], name: str) -> list[BeforeValidator]:
    """The model's own checks of a field (a chat message without content, filters given as
    JSON text), run on the tool's argument: the SDK's argument error then carries the verb's
    words ("messages[0] has no content …")."""
    return [BeforeValidator(d.func) for d in model.__pydantic_decorators__.field_validators.values()
            if name in d.info.fields and d.info.mode == "before"]


def _tool(s: Service, t: _Tools, verb: str) -> Callable[..., Any]:
    """The tool for one verb: one checked ``Service`` call with the arguments as keywords."""
    partial = VERBS[verb].partial

    async def tool(ctx: Context, **args: Any) -> Json | list[Any]:
        if partial:  # only the fields given are changed; a tool cannot tell None from unset
            args = {k: v for k, v in args.items() if v is not None}
        if verb in ("remember", "add"):  # the caller is the agent: what it stores is at most its word
            args["origin"] = args["origin"] if args.get("origin") in ("tool", "document") else "agent"
        if verb == "forget" and _selectors(args) != 1:
            raise ToolError(json.dumps(error_body("validation_error", "give exactly one of memory_id, dataset or user "
                                                                      "(user with its dataset)")))
        return await t.run(ctx, s.accounts.datasets if verb == "datasets" else getattr(s, verb), **args)

    tool.__name__ = tool.__qualname__ = verb
    tool.__doc__ = VERBS[verb].__doc__
    tool.__signature__ = tool_signature(verb)  # type: ignore[attr-defined]
    return tool


def _selectors(args: dict[str, Any]) -> int:
    """How many things a ``forget`` call names (a dataset beside a user only scopes the user)."""
    user = args.get("user") is not None
    return sum([args.get("memory_id") is not None, args.get("dataset") is not None and not user, user])


def _register(mcp: MCPServer, s: Service, t: _Tools) -> None:
    for verb in VERBS:
        mcp.add_tool(_tool(s, t, verb))
