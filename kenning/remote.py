"""The remote transport: ``Kenning("http://host:8000", api_key=…)`` speaks the verbs to
``kenning serve``.

A call is checked against its verb's request model (``kenning.requests``), sent to that
model's route in ``ROUTES`` (path fields in the path; the other fields as the query of a GET or
DELETE, else as the JSON body, exactly as the server declares them), and the answer is read back
into the type the embedded engine returns. The server's ``{"error": {"code", "message"}}``
becomes the same ``kenning.errors`` class the engine raises.

Retries: a connection that could not be made (refused, unreachable, connect timeout) is retried
for every verb, since nothing was sent; a connection that dropped after the request left is
retried only for the idempotent verbs (``Route.idempotent``). Failures after the retries, and
timeouts, raise ``StoreError`` (the store behind the verbs could not be reached).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from . import errors as e
from ._extras import require

from .files import find_files, is_files
from .models import (
    Context,
    ImproveResult,
    CognifyResult,
    FileFailure,
    FilesSummary,
    ForgetResult,
    Memory,
    Provenance,
    PruneResult,
    RecallResult,
    RememberResult,
    Session,
    Stats,
    Timeline,
)
from .requests import (
    AddRequest,
    ChainRequest,
    CognifyRequest,
    ContextRequest,
    DatasetsRequest,
    DeleteRequest,
    FeedbackRequest,
    ForgetRequest,
    GetRequest,
    ImproveRequest,
    ListRequest,
    PinRequest,
    ProvenanceRequest,
    PruneRequest,
    RecallRequest,
    RememberRequest,
    SessionsRequest,
    StatsRequest,
    TimelineRequest,
    UnpinRequest,
    UpdateRequest,
    VerbRequest,
)
from .settings import Settings

if TYPE_CHECKING:
    import httpx
else:
    httpx = require("httpx", purpose="the remote client (Kenning('http://…')) needs httpx")

__all__ = ["ROUTES", "Remote", "Route"]

_BACKOFF = 0.25  # seconds before the first retry; doubled each time, at most _MAX_BACKOFF
_MAX_BACKOFF = 4.0
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_DROPPED = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class Route:
    """Where a verb is served: ``result`` is the type the verb returns, ``unwrap`` picks it out
    of the server's answer when the route wraps it (a page, an id list)."""

    method: str
    path: str
    result: Any
    unwrap: Callable[[Any], Any] | None = None
    idempotent: bool | None = None  # None: GET is, the rest are not

    @property
    def path_fields(self) -> list[str]:
        return [name for _, name, _, _ in string.Formatter().parse(self.path) if name]

    @property
    def retry_dropped(self) -> bool:
        return self.method == "GET" if self.idempotent is None else self.idempotent


def _key(name: str) -> Callable[[Any], Any]:
    return lambda body: body[name]


_ONE = "/v1/memories/{memory_id}"
#: every verb's route, by request model (the routes themselves are in ``kenning/server/routes.py``)
ROUTES: dict[type[VerbRequest], Route] = {
    RememberRequest: Route("POST", "/v1/remember", RememberResult),
    AddRequest: Route("POST", "/v1/add", list[str], _key("memory_ids")),
    CognifyRequest: Route("POST", "/v1/cognify", CognifyResult),
    RecallRequest: Route("POST", "/v1/recall", RecallResult, idempotent=True),
    TimelineRequest: Route("GET", "/v1/timeline", Timeline),
    StatsRequest: Route("GET", "/v1/stats", Stats),
    GetRequest: Route("GET", _ONE, Memory),
    ListRequest: Route("GET", "/v1/memories", list[Memory], _key("items")),
    UpdateRequest: Route("PATCH", _ONE, Memory),
    DeleteRequest: Route("DELETE", _ONE, ForgetResult),  # a repeat would answer "not found"
    ForgetRequest: Route("POST", "/v1/forget", ForgetResult),
    ProvenanceRequest: Route("GET", _ONE + "/provenance", Provenance),
    PinRequest: Route("POST", _ONE + "/pin", Memory, idempotent=True),
    UnpinRequest: Route("POST", _ONE + "/unpin", Memory, idempotent=True),
    ChainRequest: Route("GET", _ONE + "/chain", list[Memory]),
    PruneRequest: Route("POST", "/v1/prune", PruneResult),
    DatasetsRequest: Route("GET", "/v1/datasets", list[str], lambda body: [d["name"] for d in body]),
    FeedbackRequest: Route("POST", "/v1/feedback", float, _key("weight")),
    ImproveRequest: Route("POST", "/v1/improve", ImproveResult),
    ContextRequest: Route("POST", "/v1/context", Context, idempotent=True),
    SessionsRequest: Route("GET", "/v1/sessions", list[Session]),
}


def _error_classes(cls: type[e.KenningError]) -> dict[str, type[e.KenningError]]:
    found = {cls.code: cls}
    for sub in cls.__subclasses__():
        found |= _error_classes(sub)
    return found


#: the server's error codes: kenning's own, then those of the web layer (server/errors.py, access/guard.py)
_BY_CODE = _error_classes(e.KenningError) | {
    "invalid_json": e.ValidationError, "bad_request": e.ValidationError,
    "payload_too_large": e.ValidationError, "unsupported_media_type": e.ValidationError,
    "too_many_requests": e.RateLimitedError, "cross_origin": e.PermissionDeniedError,
    "host_not_allowed": e.ConfigurationError, "method_not_allowed": e.ConfigurationError,
}
_BY_STATUS = {
    400: e.ValidationError, 401: e.AuthenticationError, 403: e.PermissionDeniedError,
    404: e.NotFoundError, 409: e.ConflictError, 413: e.ValidationError, 422: e.ValidationError,
    429: e.RateLimitedError, 502: e.ModelError, 503: e.StoreError, 504: e.StoreError,
}


@functools.cache
def _adapter(result: Any) -> TypeAdapter:
    return TypeAdapter(result)


def _invalid(exc: PydanticValidationError) -> e.ValidationError:
    parts = [f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}"
             for err in exc.errors(include_url=False)[:5]]
    return e.ValidationError("; ".join(parts))


class Remote:
    """One HTTP client for one server: ``call(model, arguments)`` runs a verb there."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = str(settings.db).rstrip("/")
        headers = {"Accept": "application/json"}
        if settings.api_key is not None:
            headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        timeout = httpx.Timeout(settings.remote_timeout, connect=min(10.0, settings.remote_timeout))
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def call(self, model: type[VerbRequest], arguments: dict[str, Any]) -> Any:
        """Run the verb of ``model`` with ``arguments`` (its fields) on the server."""
        if model is RememberRequest and is_files(arguments.get("content")):
            return self._remember_files(arguments)
        route = ROUTES.get(model)
        if route is None:
            raise e.ConfigurationError(f"{model.__name__} has no HTTP route: this verb runs only embedded")
        path, sent = _encode(model, route, arguments)
        body = self._answer(self._send(route, path, sent))
        try:
            return _adapter(route.result).validate_python(route.unwrap(body) if route.unwrap else body)
        except (PydanticValidationError, KeyError, TypeError) as exc:
            raise e.ConfigurationError(f"kenning server {self.url} answered {route.method} {path} in a shape "
                                       f"this client does not read (another kenning version?): {exc}") from None

    def _remember_files(self, arguments: dict[str, Any]) -> RememberResult:
        """Files and folders of this machine, uploaded to ``/v1/remember/file`` (a server reads
        no paths of its own; docs/files.md): one request per path given, named by its folder,
        so a sync compares it with earlier uploads of that folder only."""
        unsent = [name for name in ("source", "metadata") if arguments.get(name) is not None]
        if unsent:
            raise e.ValidationError(f"{' and '.join(unsent)}: not taken with files sent to a server")
        content = arguments["content"]
        paths = [Path(p) for p in (content if isinstance(content, (list, tuple)) else [content])]
        picked = {"include": arguments.get("include") or (), "exclude": arguments.get("exclude") or ()}
        found = [(path, find_files(path, **picked)) for path in paths]  # a missing path: nothing sent
        summary = FilesSummary()  # out.files: add() extends it in place
        out = RememberResult(files=summary, dry_run=bool(arguments.get("dry_run")))
        for path, files in found:
            parts = []
            for file, source in files:
                try:
                    parts.append(("file", (source, file.read_bytes(), "application/octet-stream")))
                except OSError as exc:
                    summary.failed.append(FileFailure(source=source, error=f"{source}: cannot read ({exc.strerror or exc})"))
            if parts:
                out.add(self._upload(path, parts, arguments))
        return out

    def _upload(self, path: Path, parts: list[Any], arguments: dict[str, Any]) -> RememberResult:
        valid_at = arguments.get("valid_at")
        form = {name: str(arguments.get(name, False)).lower() for name in ("force", "dry_run")}
        given = RememberRequest.defaults(**{k: v for k, v in arguments.items() if v is not None})
        form |= {"dataset": given["dataset"], "kind": given["kind"],
                 "sync": str(bool(arguments.get("sync")) and path.is_dir()).lower(),  # a file alone: no sync
                 "folder": str((path if path.is_dir() else path.parent).resolve())}
        if valid_at is not None:
            form["valid_at"] = valid_at.isoformat() if isinstance(valid_at, (dt.date, dt.datetime)) else str(valid_at)
        try:
            body = self._answer(self._send(Route("POST", "/v1/remember/file", RememberResult), "/v1/remember/file",
                                           {"files": parts, "data": form}))
        except e.FileReadError as exc:  # no file of this path could be read there
            source = exc.message.split(": ", 1)[0]
            return RememberResult(files=FilesSummary(failed=[FileFailure(source=source, error=exc.message)]))
        return RememberResult.model_validate(body)

    def _send(self, route: Route, path: str, sent: dict[str, Any]) -> httpx.Response:
        attempts = 0
        while True:
            try:
                return self._http.request(route.method, path, **sent)
            except httpx.TransportError as exc:
                attempts += 1
                again = isinstance(exc, _NOT_SENT) or (route.retry_dropped and isinstance(exc, _DROPPED))
                if not again or attempts > self.settings.remote_retries:
                    raise self._unreachable(exc, attempts) from exc
                time.sleep(min(_BACKOFF * 2 ** (attempts - 1), _MAX_BACKOFF))

    def _unreachable(self, exc: httpx.TransportError, attempts: int) -> e.StoreError:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, _NOT_SENT):
            what = f"no answer within {self.settings.remote_timeout:g} s (setting remote_timeout)"
        else:
            what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return e.StoreError(f"kenning server {self.url}: {what}{tries}", url=self.url, attempts=attempts)

    def _answer(self, response: httpx.Response) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success and body is not None:
            return body
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            error = {"message": f"HTTP {response.status_code} from {self.url}: {response.text[:200]}"}
        code = str(error.get("code", ""))
        cls = _BY_CODE.get(code) or _BY_STATUS.get(response.status_code, e.KenningError)
        details: dict[str, Any] = {"status": response.status_code, "code": code}
        if cls is e.RateLimitedError:
            details["retry_after"] = _seconds(response.headers.get("Retry-After"))
        raise cls(str(error.get("message", "")), **details)


def _seconds(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() else 60


def _encode(model: type[VerbRequest], route: Route, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route's path and what goes with it (the query or the JSON body) for a call, checked
    by the verb's model first."""
    # a Python date is a date argument to the engine; the models take text or a datetime
    arguments = {k: v.isoformat() if type(v) is dt.date else v for k, v in arguments.items()}
    try:
        request = model(**arguments)
    except PydanticValidationError as exc:
        raise _invalid(exc) from None
    fields = request.model_dump(mode="json", include=set(request.arguments()))
    path = route.path.format(**{name: quote(str(fields.pop(name)), safe="") for name in route.path_fields})
    if route.method in ("GET", "DELETE"):
        return path, {"params": _query(model, fields)}
    return path, {"json": fields} if fields else {}


def _query(model: type[VerbRequest], fields: dict[str, Any]) -> dict[str, Any]:
    """The query string of a GET or DELETE: a field left out takes the server's default, so a
    None whose default is not None cannot be sent and is refused here."""
    params: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            if model.model_fields[name].default is not None:
                raise e.ValidationError(f"{name}: None cannot be sent to a server; name a value")
            continue
        params[name] = json.dumps(value) if isinstance(value, dict) else value
    return params
