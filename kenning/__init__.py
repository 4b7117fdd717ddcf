"""kenning: persistent, temporal knowledge-graph memory for AI agents and applications."""

import importlib as _importlib
import logging as _logging
import typing as _typing

from .errors import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    EmbedderMismatchError,
    FileReadError,
    KenningError,
    ModelError,
    ModelNotConfiguredError,
    ModelResponseError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    StoreError,
    ValidationError,
)

if _typing.TYPE_CHECKING:
    from .client import AsyncKenning, Kenning
    from .models import (
        CognifyResult,
        Context,
        Entity,
        Fact,
        FactInput,
        FileFailure,
        FilesSummary,
        ForgetResult,
        Hit,
        ImproveResult,
        Location,
        Memory,
        MemoryInput,
        Message,
        Provenance,
        PruneResult,
        RecallResult,
        RememberResult,
        Session,
        Stats,
        Timeline,
        TransferResult,
        Usage,
    )
    from .settings import Settings

__version__ = "0.1.0"

# A library prints nothing unless the application configures logging: without a handler of its
# own, Python's last-resort handler would print kenning's warnings and errors to stderr.
_logging.getLogger("kenning").addHandler(_logging.NullHandler())

# The facade, the models and the settings are imported on first access (PEP 562), not by
# ``import kenning``: they pull in pydantic, numpy, the store and the pipeline (~1.5 s), which a
# process that only needs a submodule (the CLI's ``--help``, ``kenning.errors``) never uses.
# ``from kenning import Kenning`` works as before; type checkers read the imports above.
_LAZY = {
    "AsyncKenning": "client",
    "Kenning": "client",
    "Settings": "settings",
    "CognifyResult": "models",
    "Context": "models",
    "Entity": "models",
    "Fact": "models",
    "FactInput": "models",
    "FileFailure": "models",
    "FilesSummary": "models",
    "ForgetResult": "models",
    "Hit": "models",
    "ImproveResult": "models",
    "Location": "models",
    "Memory": "models",
    "MemoryInput": "models",
    "Message": "models",
    "Provenance": "models",
    "PruneResult": "models",
    "RecallResult": "models",
    "RememberResult": "models",
    "Session": "models",
    "Stats": "models",
    "Timeline": "models",
    "TransferResult": "models",
    "Usage": "models",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AsyncKenning",
    "AuthenticationError",
    "CognifyResult",
    "Context",
    "ConfigurationError",
    "ConflictError",
    "EmbedderMismatchError",
    "Entity",
    "Fact",
    "FactInput",
    "FileFailure",
    "FilesSummary",
    "FileReadError",
    "ForgetResult",
    "Hit",
    "ImproveResult",
    "Kenning",
    "KenningError",
    "Location",
    "Memory",
    "MemoryInput",
    "Message",
    "ModelError",
    "ModelNotConfiguredError",
    "ModelResponseError",
    "NotFoundError",
    "PermissionDeniedError",
    "Provenance",
    "PruneResult",
    "RateLimitedError",
    "RecallResult",
    "RememberResult",
    "Session",
    "Settings",
    "Stats",
    "StoreError",
    "Timeline",
    "TransferResult",
    "Usage",
    "ValidationError",
    "__version__",
]
