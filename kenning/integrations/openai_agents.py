"""The OpenAI Agents SDK: ``KenningSession`` (a ``Session``: the run's conversation history kept
as kenning messages) and ``memory_tools`` (``recall``/``remember``/``context`` as function tools).

``KenningSession(kn, session_id, user=…)`` stores each input item as one ``message`` memory of
that session (text turns are remembered, so their facts are extracted and recalled later, in
this session and others; tool calls and their outputs are stored unprocessed), with the SDK's
item kept exactly in the memory's metadata (``openai_agents``), so ``get_items`` gives back what
``add_items`` got, in order. ``pop_item`` and ``clear_session`` forget memories.

Needs ``pip install 'kenning[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from .._extras import require

require("agents", extra="openai-agents", purpose="the OpenAI Agents integration needs openai-agents")

from agents import FunctionTool, RunContextWrapper  # noqa: E402
from agents.memory import SessionABC  # noqa: E402

from ..client import Kenning  # noqa: E402
from ..errors import KenningError, NotFoundError  # noqa: E402
from ..models import Memory  # noqa: E402
from ._bound import DEFAULT, bind_tools  # noqa: E402

__all__ = ["KenningSession", "memory_tools"]

META = "openai_agents"
PAGE = 1000


def _text(item: dict[str, Any]) -> tuple[str, str]:
    """The role and text an input item is remembered as."""
    kind = item.get("type", "message")
    if kind == "message" or ("role" in item and "content" in item and kind in ("message", None)):
        content = item.get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text") or part.get("refusal") or "") for part in content
                               if isinstance(part, dict))
        role = item.get("role", "user")
        role = role if role in ("user", "assistant", "system") else "system"  # developer → system
        return role, str(content or "")
    if kind == "function_call":
        return "tool", f"{item.get('name', 'tool')}({item.get('arguments', '')})"
    if kind == "function_call_output":
        output = item.get("output")
        return "tool", output if isinstance(output, str) else json.dumps(output, default=str)
    return "tool", json.dumps(item, default=str)[:2000]


class KenningSession(SessionABC):
    """A conversation's history as kenning messages of session ``session_id``."""

    def __init__(self, kn: Kenning, session_id: str, *, user: str | None = None, agent: str | None = None,
                 dataset: str = "main") -> None:
        self.kn = kn
        self.session_id = session_id
        self.user = user
        self.agent = agent
        self.dataset = dataset
        self.session_settings = None

    # -- sync bodies, run on a worker thread -------------------------------------------------
    def _memories(self) -> list[Memory]:
        out: list[Memory] = []
        offset = 0
        while True:
            try:
                page = self.kn.list(dataset=self.dataset, session=self.session_id, limit=PAGE, offset=offset,
                                    order_by="created_at", descending=False)
            except NotFoundError:  # the dataset holds nothing yet
                return []
            out += [m for m in page if META in m.metadata]
            if len(page) < PAGE:
                break
            offset += PAGE
        return sorted(out, key=lambda m: (m.metadata[META]["seq"], m.created_at))

    def _add(self, items: Sequence[Any]) -> None:
        existing = self._memories()
        seq = existing[-1].metadata[META]["seq"] + 1 if existing else 0
        for item in items:
            item = dict(item)
            role, text = _text(item)
            metadata = {META: {"item": item, "seq": seq}}
            seq += 1
            message = {"role": role, "content": text or "(empty)"}
            if role in ("user", "assistant"):
                self.kn.remember([message], dataset=self.dataset, user=self.user, agent=self.agent,
                                 session=self.session_id, metadata=metadata)
            else:  # tool traffic and instructions: kept in the history, not read for facts
                self.kn.add([message], dataset=self.dataset, user=self.user, agent=self.agent,
                            session=self.session_id, metadata=metadata)

    def _pop(self) -> Any:
        memories = self._memories()
        if not memories:
            return None
        last = memories[-1]
        try:
            self.kn.forget(last.id)
        except NotFoundError:
            pass
        return last.metadata[META]["item"]

    def _clear(self) -> None:
        for memory in self._memories():
            try:
                self.kn.forget(memory.id)
            except NotFoundError:
                pass

    # -- the Session protocol ------------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        memories = await asyncio.to_thread(self._memories)
        items = [m.metadata[META]["item"] for m in memories]
        return items[-limit:] if limit else items

    async def add_items(self, items: list[Any]) -> None:
        await asyncio.to_thread(self._add, list(items))

    async def pop_item(self) -> Any:
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._clear)


def memory_tools(kn: Kenning, names: Sequence[str] = DEFAULT, *, dataset: str | None = None,
                 user: str | None = None, agent: str | None = None, session: str | None = None) -> list[FunctionTool]:
    """kenning's agent tools (default ``recall``, ``remember``, ``context``) as function tools,
    with the given scope fixed (the model never sees or sets it). A kenning error reaches the
    model as the tool's answer (``error: …``), so it can correct its call."""
    out = []
    for bound in bind_tools(kn, names, dataset=dataset, user=user, agent=agent, session=session):
        async def invoke(ctx: RunContextWrapper[Any], arguments: str, bound: Any = bound) -> str:
            try:
                return await asyncio.to_thread(bound, arguments)
            except KenningError as exc:
                return f"error: {exc.code}: {exc.message}"

        out.append(FunctionTool(name=bound.name, description=bound.description, params_json_schema=bound.parameters,
                                on_invoke_tool=invoke, strict_json_schema=False))
    return out
