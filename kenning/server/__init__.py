"""The HTTP server (FastAPI): ``create_app(kn)``. Needs the ``server`` extra.

``create_app`` is imported on first use, so the framework-free parts (``access``,
``service``, ``schemas``, ``errors``) load without FastAPI installed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .._extras import require

        require("fastapi", purpose="the HTTP server needs FastAPI")
        require("uvicorn", purpose="the HTTP server needs uvicorn")
        from .app import create_app

        return create_app
    raise AttributeError(name)
