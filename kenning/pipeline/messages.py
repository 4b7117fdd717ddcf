"""Chat messages as memories. Pure: no store, no model.

A list of ``{"role", "content", "name"?, "created_at"?}`` (the OpenAI chat shape) becomes one
memory of kind ``message`` per turn, in order, each with its role, its speaker and its time, so
provenance points at the turn that said a thing:

- the speaker of a ``user`` turn is its ``name``, else the call's ``user``, else ``User``; of an
  ``assistant`` turn its ``name``, else the call's ``agent``, else ``Assistant``; of a
  ``system`` or ``tool`` turn its ``name`` (else none);
- a turn is said at its ``created_at`` (read by the one date parser), else at the call's
  reference time;
- the turns of a session continue its positions, and the session is their episode, so recall
  sees the turn before and after a hit across calls; without a session one call is one episode.

A message is an event, not a document: two turns that say "ok" are two memories. Its identity
(``content_hash``) is the text with its episode, position, role and speaker.

Extraction reads a turn as ``Speaker: text`` (:func:`memory_text`), so first-person statements
resolve to the speaker; :func:`addressee` names whom "you" means, and :func:`transcript` renders
the turns before it, for an extractor that is shown its context.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from .._checks import check_text
from .._identity import memory_identity
from ..errors import ValidationError
from ..models import Memory, MemoryStatus, Message, Role
from .commit import new_id
from .instructions import strip_role_markers
from ..dates import parse_user_datetime

__all__ = ["ROLES", "Turn", "addressee", "is_messages", "memory_text", "message_memories", "read_messages",
           "transcript"]

ROLES: tuple[str, ...] = get_args(Role)
#: the most messages one call may carry
MAX_MESSAGES = 1000
#: OpenAI message fields that carry no text to remember; dropped, not refused
_IGNORED = frozenset(("tool_call_id", "tool_calls", "function_call", "refusal", "audio"))
_DEFAULT_SPEAKER = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class Turn:
    """A checked message: its text, role, speaker and when it was said (None: the call's time)."""

    role: Role
    content: str
    speaker: str | None
    said_at: dt.datetime | None


def is_messages(content: Any) -> bool:
    """Whether a verb's ``content`` is chat messages: a message (a ``Message`` or an object
    with a ``role``) or a list that starts with one."""
    if isinstance(content, (list, tuple)) and content:
        content = content[0]
    return isinstance(content, Message) or (isinstance(content, Mapping) and "role" in content)


def read_messages(
    messages: Any, *, user: str | None = None, agent: str | None = None, now: dt.datetime
) -> list[Turn]:
    """Check every message (a ``Message`` or a mapping) before any is kept; a bad one is a
    ``ValidationError`` naming its index."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a list of {'role', 'content'} objects")
    if not messages:
        raise ValidationError("messages is an empty list")
    if len(messages) > MAX_MESSAGES:
        raise ValidationError(f"{len(messages)} messages; the limit is {MAX_MESSAGES} per call")
    return [_turn(i, m, user, agent, now) for i, m in enumerate(messages)]


def _turn(index: int, raw: Any, user: str | None, agent: str | None, now: dt.datetime) -> Turn:
    where = f"messages[{index}]"
    message = _message(where, raw)
    check_text(message.content, f"{where}.content")
    name = check_text(message.name, f"{where}.name", optional=True, max_chars=200)
    said_at = None
    if message.created_at is not None:
        said_at = parse_user_datetime(message.created_at, now=now, name=f"{where}.created_at")
    default = {"user": user, "assistant": agent}.get(message.role) or _DEFAULT_SPEAKER.get(message.role)
    return Turn(message.role, message.content, (name or "").strip() or default, said_at)


def _message(where: str, raw: Any) -> Message:
    if isinstance(raw, Message):
        data: dict[str, Any] = raw.model_dump()
    elif isinstance(raw, Mapping):
        data = {k: v for k, v in raw.items() if k not in _IGNORED}
    else:
        raise ValidationError(f"{where} must be an object with 'role' and 'content', not {type(raw).__name__}")
    if data.get("role") not in ROLES:
        raise ValidationError(f"{where} has role {data.get('role')!r:.50}: use one of {', '.join(ROLES)}")
    content = data.get("content")
    if not isinstance(content, str) or not content.strip():
        what = "no content" if content is None else "empty content" if isinstance(content, str) else \
            f"content of type {type(content).__name__}"
        raise ValidationError(f"{where} has {what}: each message needs its text as a string")
    unknown = sorted(set(data) - set(Message.model_fields))
    if unknown:
        raise ValidationError(f"{where} has unknown field {unknown[0]!r:.50}: use role, content, name, created_at")
    try:
        return Message(**data)
    except ValueError as exc:
        raise ValidationError(f"{where} is not a message: {exc}") from None


def message_memories(
    turns: Sequence[Turn],
    *,
    dataset: str,
    now: dt.datetime,
    user: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    start: int = 0,
    valid_at: dt.datetime | None = None,
    metadata: dict[str, Any] | None = None,
    source: str | None = None,
    status: MemoryStatus = "pending",
) -> list[Memory]:
    """One ``message`` memory per turn. ``start`` is the session's next position (one past
    its last message's); ``valid_at`` the time of turns that give none (else ``now``)."""
    episode = session or new_id("ep")
    out = []
    for offset, turn in enumerate(turns):
        position = start + offset
        out.append(Memory(
            id=new_id("mem"), dataset=dataset, kind="message", content=turn.content, source=source,
            metadata=dict(metadata or {}),
            content_hash=memory_identity(turn.content, kind="message", episode=episode, position=position,
                                         role=turn.role, speaker=turn.speaker),
            valid_at=turn.said_at or valid_at or now, status=status, created_at=now, updated_at=now,
            episode=episode, position=position, user=user, agent=agent, session=session,
            role=turn.role, speaker=turn.speaker,
        ))
    return out


def memory_text(memory: Memory) -> str:
    """The text chunked and extracted for a memory: a message as ``Speaker: text``; role
    markers ("SYSTEM:") left out of instruction-shaped text, so none becomes a speaker."""
    content = strip_role_markers(memory.content) if "role_marker" in memory.flags else memory.content
    if memory.kind == "message" and memory.speaker:
        return f"{memory.speaker}: {content}"
    return content


def addressee(memory: Memory) -> str | None:
    """Whom a message's "you" means: the agent for a user's turn, the user for the agent's."""
    if memory.role == "user":
        return memory.agent or _DEFAULT_SPEAKER["assistant"]
    if memory.role == "assistant":
        return memory.user or _DEFAULT_SPEAKER["user"]
    return None


def transcript(memories: Sequence[Memory], max_chars: int = 4000) -> str:
    """The turns as ``Speaker: text`` lines, oldest first, the latest kept when too long."""
    lines: list[str] = []
    size = 0
    for memory in reversed(memories):
        line = memory_text(memory).replace("\n", " ")
        if size + len(line) > max_chars and lines:
            break
        lines.append(line[:max_chars])
        size += len(line) + 1
    return "\n".join(reversed(lines))
