"""kenning: persistent, temporal knowledge-graph memory for AI agents and applications."""

import logging as _logging

from .client import AsyncKenning, Kenning
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
