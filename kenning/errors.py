"""Typed errors of kenning. Every surface (Python, CLI, HTTP, MCP) maps these in one place.

KenningError
 ├── ConfigurationError        bad settings, unknown store URL, missing optional dependency
 │    └── EmbedderMismatchError the store was built with another embedder
 ├── ValidationError           bad input from the caller (empty content, bad date, bad field)
 │    └── FileReadError         a file that cannot be read as a document (corrupt, encrypted, binary)
 ├── NotFoundError             an id that does not exist (or that the caller may not see)
 ├── PermissionDeniedError     authenticated, but not allowed on that dataset
 ├── AuthenticationError       missing or wrong API key
 ├── ConflictError             the operation clashes with the stored state
 ├── RateLimitedError          too many requests (failed keys, written characters); retry later
 ├── StoreError                the database failed (I/O, locked, corrupt), or a remote client
 │                             could not reach its kenning server
 └── ModelError                a model provider call failed after retries
      ├── ModelResponseError   the model answered, but not with what was asked
      └── ModelNotConfiguredError  an operation needs a model and none is configured
"""

from __future__ import annotations

from ._redact import redact

__all__ = [
    "AuthenticationError",
    "ConfigurationError",
    "ConflictError",
    "EmbedderMismatchError",
    "FileReadError",
    "KenningError",
    "ModelError",
    "ModelNotConfiguredError",
    "ModelResponseError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitedError",
    "StoreError",
    "ValidationError",
    "redact",
]


class KenningError(Exception):
    """Base class of every error kenning raises on purpose."""

    code = "error"

    def __init__(self, message: str, **details: object) -> None:
        # a URL's password never reaches a message (printed by the CLI, sent by the server, logged)
        message = redact(message)
        super().__init__(message)
        self.message = message
        self.details = {k: redact(v) if isinstance(v, str) else v for k, v in details.items()}


class ConfigurationError(KenningError):
    code = "configuration_error"


class EmbedderMismatchError(ConfigurationError):
    code = "embedder_mismatch"


class ValidationError(KenningError):
    code = "validation_error"


class FileReadError(ValidationError):
    """``details["path"]``: the file; the message is one line that names it."""

    code = "file_read_error"


class NotFoundError(KenningError):
    code = "not_found"


class PermissionDeniedError(KenningError):
    code = "permission_denied"


class AuthenticationError(KenningError):
    code = "authentication_error"


class ConflictError(KenningError):
    code = "conflict"


class RateLimitedError(KenningError):
    """``details["retry_after"]``: seconds until a retry can pass."""

    code = "rate_limited"


class StoreError(KenningError):
    code = "store_error"


class ModelError(KenningError):
    code = "model_error"


class ModelResponseError(ModelError):
    code = "model_response_error"


class ModelNotConfiguredError(ModelError):
    code = "model_not_configured"


def error_body(code: str, message: str) -> dict[str, object]:
    """The one shape an error leaves a server in (HTTP and MCP): ``{"error": {"code", "message"}}``."""
    return {"error": {"code": code, "message": message}}
