"""Passwords out of what is printed or logged: ``scheme://user:password@host`` becomes
``scheme://user:***@host`` wherever it appears in a text (a store URL, a server URL, an error
a driver raised about either)."""

from __future__ import annotations

import re

__all__ = ["redact"]

# a scheme, then user info up to the last '@' before the host (a password may hold '@', ':', '/')
_URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*):\S*@")
# libpq keyword form: password=… (quoted or not)
_KEYWORD_PASSWORD = re.compile(r"\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the password of every URL (and libpq ``password=``) replaced by ``***``."""
    if not isinstance(text, str) or ("@" not in text and "password" not in text.lower()):
        return text
    return _KEYWORD_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1:***@", text))
