"""The HTTP application: ``create_app(kn)`` serves one ``Kenning`` under ``/v1``.

Endpoints are plain ``def`` functions, so FastAPI runs them on its thread pool and the event
loop never waits on the store or a model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from .. import __version__
from ..access import Principal
from ..client import Kenning
from . import errors
from .explore import build_graph_router, mount_ui
from ..access.guard import RequestGuard, bearer_token
from .routes import build_router
from .schemas import Health
from ..access.service import build_service

__all__ = ["DEFAULT_MAX_BODY", "create_app"]

DEFAULT_MAX_BODY = 10 * 1024 * 1024


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, whether or not they announce their
    length (a chunked body is counted as it arrives)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        seen = 0
        over = False

        async def counted_receive() -> dict:
            nonlocal seen, over
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                over = True
                raise _TooLarge
            return message

        async def checked_send(message: dict) -> None:
            # The framework may catch our exception and answer 400 itself; answer 413 instead.
            if not over:
                await send(message)
            elif message["type"] == "http.response.start":
                await self._refuse(send)

        try:
            await self.app(scope, counted_receive, checked_send)
        except _TooLarge:
            await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps(errors.error_body(
            "payload_too_large", f"request body over {self.limit} bytes")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _offline_docs(app: FastAPI) -> None:
    """Swagger UI at /docs from the installed swagger-ui-bundle package: works offline."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount("/docs/assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title="kenning API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )


def create_app(kn: Kenning, *, auth: bool = True, max_body: int | None = None, bind: str = "127.0.0.1",
               allowed_hosts: Sequence[str] = ()) -> FastAPI:
    """The API over ``kn`` (a ``Kenning``). ``auth=False`` is the local single-user mode: every
    request acts as an admin, so serve it on loopback only (``kenning serve`` enforces that).
    ``bind`` (the address served on) and ``allowed_hosts`` decide which ``Host`` headers are
    answered; cross-origin writes are refused (see ``kenning.access.guard``)."""
    service = build_service(kn, auth=auth)
    access = service.access
    bearer = HTTPBearer(auto_error=False, description="An API key: Authorization: Bearer kn_…")
    header = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key, alternatively.")

    def caller(
        request: Request,
        creds: HTTPAuthorizationCredentials | None = Depends(bearer),  # noqa: B008
        key: str | None = Depends(header),
    ) -> Principal:
        client = request.client.host if request.client else ""
        # read here, not from ``creds``: the scheme in any case, any run of spaces (RFC 9110 §11.1)
        given = bearer_token(request.headers.get("authorization"))
        return access.authenticate(given or (creds.credentials if creds else None) or key, client)

    app = FastAPI(
        title="kenning",
        version=__version__,
        description="Persistent, temporal knowledge-graph memory. Every error is "
        '`{"error": {"code": …, "message": …}}`.',
        docs_url=None,  # served by _offline_docs, without a CDN
        redoc_url=None,
    )
    _offline_docs(app)
    app.state.service = service
    errors.install(app)
    app.include_router(build_router(service, caller))
    app.include_router(build_graph_router(service, caller))
    mount_ui(app)
    app.add_middleware(BodyLimit, limit=max_body or DEFAULT_MAX_BODY)
    app.add_middleware(RequestGuard, bind=bind, names=tuple(allowed_hosts))  # outermost

    @app.get("/v1/health", tags=["meta"], summary="Liveness; needs no key.")
    def health() -> Health:
        return Health(version=__version__, auth=access.enabled)

    return app
