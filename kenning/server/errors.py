"""The one mapping from kenning's typed errors (and the web framework's own) to HTTP.

Every error leaves the server as ``{"error": {"code": …, "message": …}}``. ``STATUS`` is the
table; the MCP server uses :func:`error_body` for the same codes and messages.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import errors as e
from ..errors import error_body
from ..requests import SOURCE_CHARS

__all__ = ["STATUS", "error_body", "install", "status_of"]

log = logging.getLogger(__name__)

#: most specific class first; the first class in an error's MRO that is listed wins
STATUS: dict[type[e.KenningError], int] = {
    e.ValidationError: 422,
    e.NotFoundError: 404,
    e.PermissionDeniedError: 403,
    e.AuthenticationError: 401,
    e.ConflictError: 409,
    e.RateLimitedError: 429,
    e.ModelNotConfiguredError: 400,  # the request needs a model this server does not have
    e.ModelError: 502,
    e.StoreError: 503,
    e.ConfigurationError: 500,
    e.KenningError: 500,
}

_HTTP_CODES = {
    400: "bad_request", 401: "authentication_error", 403: "permission_denied", 404: "not_found",
    405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
    415: "unsupported_media_type", 422: "validation_error", 429: "too_many_requests",
}


def status_of(exc: e.KenningError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _validation_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def _header_too_long(exc: BaseException) -> bool:
    """Whether the multipart parser refused a part header for its size (a long file name)."""
    seen: BaseException | None = exc
    for _ in range(5):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return False
        if "header size exceeded" in str(seen).lower():
            return True
    return False


def install(app: Any) -> None:
    """Register the handlers on a FastAPI app."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    def respond(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse(error_body(code, message), status_code=status, headers=headers)

    @app.exception_handler(e.KenningError)
    async def _kenning(request: Any, exc: e.KenningError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:
            log.warning("request failed", extra={"code": exc.code, "status": status})
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if status == 429:
            headers = {"Retry-After": str(exc.details.get("retry_after", 60))}
        return respond(status, exc.code, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Any, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        bad_json = any(err.get("type") == "json_invalid" for err in errors)
        code = "invalid_json" if bad_json else "validation_error"
        return respond(400 if bad_json else 422, code, _validation_message(errors))

    @app.exception_handler(HTTPException)
    async def _http(request: Any, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400 and _header_too_long(exc):
            return respond(422, "validation_error", "a part of the upload has a header over 4 KiB (a file"
                           f" name is limited to {SOURCE_CHARS} characters)")
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return respond(exc.status_code, code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Any, exc: Exception) -> JSONResponse:
        # A bug: logged with its traceback (never the request content), reported in the shape.
        log.exception("unexpected error", extra={"path": request.url.path})
        return respond(500, "internal_error", "internal server error")
