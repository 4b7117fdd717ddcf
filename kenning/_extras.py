"""Optional dependencies: one helper, ``require``, imports a module that an extra of kenning
installs, or raises ``ConfigurationError`` naming the extra (never a raw ``ModuleNotFoundError``).

Every optional import of kenning goes through it: the remote client (``remote``: httpx), the
servers (``server``, ``mcp``), the stores and models (``postgres``, ``local``, and ``onnx`` for the
local encoder in onnxruntime), documents (``files``) and the framework integrations (``langgraph``,
``openai-agents``, ``pydantic-ai``, ``crewai``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import ConfigurationError

__all__ = ["EXTRAS", "missing", "require"]

#: the extra of pyproject.toml that installs each optional top-level module
EXTRAS: dict[str, str] = {
    "httpx": "remote",
    "fastapi": "server", "uvicorn": "server", "multipart": "server", "swagger_ui_bundle": "server",
    "mcp": "mcp",
    "psycopg": "postgres", "psycopg_pool": "postgres",
    "tokenizers": "local", "safetensors": "local", "huggingface_hub": "local",
    "onnxruntime": "onnx", "onnx": "onnx",
    "pypdf": "files", "docx": "files", "pptx": "files", "openpyxl": "files", "charset_normalizer": "files",
    "langgraph": "langgraph", "langmem": "langgraph",
    "agents": "openai-agents",
    "pydantic_ai": "pydantic-ai",
    "crewai": "crewai",
}


def missing(module: str, *, extra: str | None = None, purpose: str | None = None) -> ConfigurationError:
    """The error for an optional ``module`` that is not installed."""
    extra = extra or EXTRAS.get(module.split(".", 1)[0], module.split(".", 1)[0])
    what = purpose or f"this needs {module.split('.', 1)[0]}"
    return ConfigurationError(f"{what}: pip install 'kenning[{extra}]'", extra=extra, module=module)


def require(module: str, *, extra: str | None = None, purpose: str | None = None) -> ModuleType:
    """``module`` imported, or a ``ConfigurationError`` naming the extra that installs it
    (``extra``; by default the one ``EXTRAS`` lists for its top-level package). ``purpose``
    starts the message ("the remote client needs httpx")."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing(module, extra=extra, purpose=purpose) from exc
