"""Response bodies of the HTTP API that are not the library's own models, and the bodies of
dataset administration. The verbs' requests are the library's own (``kenning.requests``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..access import DatasetInfo, GrantInfo, Permission
from ..models import AddResult, FeedbackResult, MemoryPage
from ..requests import Dataset, VerbRequest

__all__ = [
    "AddResult",
    "DatasetCreate",
    "DatasetInfo",
    "ErrorBody",
    "ErrorResponse",
    "FeedbackResult",
    "GrantInfo",
    "GrantRequest",
    "Health",
    "MemoryPage",
    "WhoAmI",
    "without",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Body):
    code: str = Field(description="Stable machine-readable code, e.g. not_found.")
    message: str


class ErrorResponse(_Body):
    """Every error the API returns has this shape."""

    error: ErrorBody


class Health(_Body):
    status: Literal["ok"] = "ok"
    version: str
    auth: bool


class WhoAmI(_Body):
    name: str
    admin: bool
    auth: bool


def without(model: type[VerbRequest], *names: str) -> type[VerbRequest]:
    """``model`` less the fields a route takes from its path (``memory_id``): a request body."""
    fields: Any = {n: (f.annotation, f) for n, f in model.model_fields.items() if n not in names}
    body = create_model(model.__name__.replace("Request", "Body"), __base__=VerbRequest,
                        __doc__=model.__doc__, **fields)
    body.partial = model.partial
    return body


class DatasetCreate(_Body):
    name: Dataset


class GrantRequest(_Body):
    permissions: list[Permission] = Field(
        description="The permissions to hold from now on (read is always included); "
        "an empty list revokes the grant."
    )
