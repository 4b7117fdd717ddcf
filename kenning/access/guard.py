"""Refuse what a web page can make a browser send, in both auth modes.

- **Host**: a DNS-rebinding page reaches the server under the attacker's own name, so a request
  is served only when its ``Host`` is a loopback name, the address the server is bound to (any
  IP address when bound to all interfaces), or a name the operator allowed (``--allow-host``).
- **Cross-origin writes**: a form or ``fetch`` from another site needs no CORS preflight for a
  multipart POST. A write (any method but GET, HEAD, OPTIONS) is refused when the browser says it
  comes from elsewhere: ``Sec-Fetch-Site`` other than ``same-origin`` / ``none``, or an ``Origin``
  that is not this server's. Clients that are not browsers send neither header and pass.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..errors import error_body

__all__ = ["LOOPBACK", "RequestGuard", "bearer_token", "forwarded_options"]

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARD = frozenset({"", "0.0.0.0", "::"})
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORT = {"http": 80, "https": 443}


def bearer_token(value: str | None) -> str | None:
    """The key of an ``Authorization: Bearer …`` header; the scheme is matched in any case and
    any run of spaces or tabs may follow it (RFC 9110 §11: schemes are case-insensitive)."""
    match = _BEARER.fullmatch(value or "")
    return match[1] if match else None


_BEARER = re.compile(r"\s*bearer[ \t]+(\S+)\s*", re.IGNORECASE)


def forwarded_options(trusted: Sequence[str]) -> dict[str, Any]:
    """uvicorn's options for forwarded headers: honoured only from the ``trusted_proxies``
    setting's addresses. uvicorn's own default trusts them from 127.0.0.1, so a client on the
    server's machine could name any address it liked and escape the limit on failed keys."""
    trusted = [t.strip() for t in trusted if t.strip()]
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or ""}


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _plain(name: str) -> str:
    """A configured name or address as ``split_host`` reports it: no brackets, port or dot."""
    bare = name.strip().strip("[]")
    return bare.lower() if _ip(bare) else split_host(name.strip())[0] or bare.lower()


def split_host(value: str) -> tuple[str, int | None]:
    """``Host`` header → (lower-case name without brackets or trailing dot, port or None);
    ("", -1) for anything that is not a plain host[:port]."""
    if not value or "@" in value or any(c.isspace() for c in value):
        return "", -1
    try:
        parts = urlsplit(f"//{value}")
        port = parts.port
    except ValueError:  # a malformed port or IPv6 literal never matches
        return "", -1
    return (parts.hostname or "").rstrip(".").lower(), port


class RequestGuard:
    """ASGI middleware: ``bind`` is the address the server listens on, ``names`` the extra host
    names it is known by (``"*"`` accepts any Host, e.g. behind a proxy that checks it)."""

    def __init__(self, app: Any, *, bind: str = "127.0.0.1", names: Iterable[str] = ()) -> None:
        self.app = app
        names = [_plain(n) for n in names]
        self.any_host = "*" in names
        self.names = LOOPBACK | {n for n in names if n and n != "*"}
        bind = _plain(bind)
        self.any_ip = bind in _WILDCARD
        self.bind_ip = _ip(bind)
        if self.bind_ip is None and not self.any_ip:
            self.names |= {bind}

    def host_allowed(self, name: str) -> bool:
        if self.any_host or name in self.names:
            return True
        ip = _ip(name)
        return ip is not None and (self.any_ip or ip == self.bind_ip or ip.is_loopback)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        if not self.host_allowed(split_host(host)[0]):
            await _refuse(send, 421, "host_not_allowed",
                          f"this server is not served as {host!r}: use its address or a name "
                          "allowed with --allow-host")
            return
        if scope.get("method", "GET") not in _SAFE and self._cross_site(headers, scope):
            await _refuse(send, 403, "cross_origin", "cross-origin writes are refused")
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _cross_site(headers: dict[str, str], scope: dict) -> bool:
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return True
        origin = headers.get("origin")
        if origin is None:
            return False
        parts = urlsplit(origin)
        if parts.scheme not in _DEFAULT_PORT or not parts.hostname:
            return True  # "null" (sandboxed page, file://) or garbage
        scheme = scope.get("scheme", "http")
        name, port = split_host(headers.get("host", ""))
        try:
            origin_port = parts.port or _DEFAULT_PORT[parts.scheme]
        except ValueError:
            return True
        return (parts.scheme, parts.hostname.rstrip(".").lower(), origin_port) != (
            scheme, name, port or _DEFAULT_PORT.get(scheme, 80))


async def _refuse(send: Any, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
