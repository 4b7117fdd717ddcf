"""The tools an integration gives an agent: ``kenning.tools`` definitions with the scope the
application fixes (dataset, user, agent, session) taken out of the schema and put into every
call, so the model can neither forget nor change whose memory it reads and writes."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..client import Kenning
from ..errors import NotFoundError, ValidationError
from ..models import Memory, RecallResult

__all__ = ["BoundTool", "bind_tools", "memory_of"]

#: the tools an integration gives by default
DEFAULT = ("recall", "remember", "context")
SESSION_SCOPED = frozenset({"remember", "context"})


@dataclass(frozen=True)
class BoundTool:
    """One verb as a tool with some arguments fixed by the application."""

    name: str
    description: str
    parameters: dict[str, Any]
    fixed: dict[str, Any]
    kn: Kenning

    def __call__(self, arguments: dict[str, Any] | str | None = None) -> str:
        """Run the model's call: its arguments plus the fixed ones, the answer as text."""
        if isinstance(arguments, str):
            arguments = json.loads(arguments or "{}") if arguments.strip() else {}
        if not isinstance(arguments, dict):
            raise ValidationError(f"{self.name}: the arguments must be a JSON object")
        return self.kn.call_tool(self.name, {**arguments, **self.fixed})


def bind_tools(kn: Kenning, names: Sequence[str] = DEFAULT, *, dataset: str | None = None,
               user: str | None = None, agent: str | None = None, session: str | None = None) -> list[BoundTool]:
    """The agent-profile tools ``names`` with the given scope fixed."""
    scope = {k: v for k, v in {"dataset": dataset, "user": user, "agent": agent, "session": session}.items()
             if v is not None}
    offered = {d["function"]["name"]: d["function"] for d in kn.tools("agent")}
    unknown = [n for n in names if n not in offered]
    if unknown:
        raise ValidationError(f"no agent tool {', '.join(map(repr, unknown))}: the tools are {', '.join(offered)}")
    out = []
    for name in names:
        schema = copy.deepcopy(offered[name]["parameters"])
        # a session scopes what is written and the context's latest turns; recall searches
        # everything the user said, in every session
        fixed = {k: v for k, v in scope.items() if k in schema.get("properties", {})
                 and (k != "session" or name in SESSION_SCOPED)}
        for k in fixed:
            schema.get("properties", {}).pop(k, None)
            if k in schema.get("required", []):
                schema["required"].remove(k)
        out.append(BoundTool(name, offered[name]["description"], schema, fixed, kn))
    return out


def memory_of(kn: Kenning, result: RecallResult, memory_id: str) -> Memory | None:
    """The memory a recall hit names: from the result's own list, else read (``None`` when it
    was deleted meanwhile)."""
    for memory in result.memories:
        if memory.id == memory_id:
            return memory
    try:
        return kn.get(memory_id)
    except NotFoundError:
        return None
