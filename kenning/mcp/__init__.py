"""The MCP server (the official ``mcp`` SDK): ``build_server(kn, auth=…, tools="agent")``, the
tools of ``kenning.tools`` (profiles ``agent`` and ``all``). Needs the ``mcp`` extra (a
ConfigurationError names it); imported on first use."""

from __future__ import annotations

from typing import Any

__all__ = ["build_server"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from .server import build_server  # without the mcp package: ConfigurationError naming the extra

        return build_server
    raise AttributeError(name)
