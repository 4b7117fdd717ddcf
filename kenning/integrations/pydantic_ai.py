"""Pydantic AI: ``memory_toolset(kn, user=…)``, a toolset giving an agent kenning's
``recall``, ``remember`` and ``context`` (``Agent(model, toolsets=[memory_toolset(kn)])``).

The schemas are kenning's own (``Kenning.tools()``) with the scope the application fixes
(dataset, user, agent, session) taken out; a call's bad argument comes back to the model as a
retry (``ModelRetry``) with kenning's message, so it can correct the call.

Needs ``pip install 'kenning[pydantic-ai]'``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .._extras import require

require("pydantic_ai", extra="pydantic-ai", purpose="the Pydantic AI integration needs pydantic-ai-slim")

from pydantic_ai import ModelRetry, Tool  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

from ..client import Kenning  # noqa: E402
from ..errors import ValidationError  # noqa: E402
from ._bound import DEFAULT, BoundTool, bind_tools  # noqa: E402

__all__ = ["memory_toolset"]


def _function(bound: BoundTool) -> Any:
    async def run(**arguments: Any) -> str:
        try:
            return await asyncio.to_thread(bound, arguments)
        except ValidationError as exc:
            raise ModelRetry(exc.message) from None

    run.__name__ = bound.name
    return run


def memory_toolset(kn: Kenning, names: Sequence[str] = DEFAULT, *, dataset: str | None = None,
                   user: str | None = None, agent: str | None = None, session: str | None = None) -> FunctionToolset:
    """kenning's agent tools ``names`` as a Pydantic AI toolset, with the given scope fixed."""
    tools = [Tool.from_schema(_function(b), name=b.name, description=b.description, json_schema=b.parameters)
             for b in bind_tools(kn, names, dataset=dataset, user=user, agent=agent, session=session)]
    return FunctionToolset(tools)
