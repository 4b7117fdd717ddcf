"""Content identity and dataset names: the two checks every input path shares."""

from __future__ import annotations

import hashlib
import re

from .errors import ValidationError

__all__ = [
    "DATASET_PATTERN", "DEFAULT_DATASET", "ID_CHARS", "check_dataset", "check_user_name", "content_hash",
    "episode_key", "memory_identity",
]

_WS = re.compile(r"\s+")
#: a dataset name: 1-128 letters, digits, '_', '-' or '.', not starting with a symbol
#: the dataset every verb uses when none is named
DEFAULT_DATASET = "main"
#: the longest id a caller may give (memory, fact, user, agent, session ids)
ID_CHARS = 200
DATASET_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"
_DATASET = re.compile(DATASET_PATTERN)
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}$")


def content_hash(text: str, *scope: str | None) -> str:
    """Content identity: sha-256 of the text with whitespace normalized. ``scope`` parts (a
    user, agent, session; a message's place) make the same text in another scope another
    memory; without any, the identity is the text's alone."""
    normalized = _WS.sub(" ", text).strip()
    if any(part is not None for part in scope):
        normalized = "\x1f".join([*(part or "" for part in scope), normalized])
    return hashlib.sha256(normalized.encode()).hexdigest()


def memory_identity(
    content: str, *, kind: str | None = None, user: str | None = None, agent: str | None = None,
    session: str | None = None, episode: str | None = None, position: int | None = None,
    role: str | None = None, speaker: str | None = None,
) -> str:
    """The content identity of a memory, the one function ``remember``, ``add`` and ``update``
    use (so an updated memory keeps its place): a chat message is its text with its episode,
    position, role and speaker (an event: two "ok" turns are two memories); one text of an
    episode (a list given in one call) is its text with its scope and its episode, so
    "Thanks!" in two conversations is two memories (and twice in one list, one; ``add`` keeps
    a text that an earlier memory in no episode holds as that memory); any other text is its text
    with its user, agent and session (none: the text's alone, as before scopes existed)."""
    if kind == "message":
        return content_hash(content, "message", episode, str(position), role, speaker)
    if episode is not None:
        return content_hash(content, user, agent, session, "episode", episode)
    return content_hash(content, user, agent, session)


def episode_key(dataset: str, hashes: list[str]) -> str:
    """The episode of several texts given in one call, named by what they are (the dataset
    and each text's scoped identity, in order): the same list remembered again is the same
    episode, so its memories are found again, while the same text in another list is not."""
    digest = hashlib.sha256("\x1f".join([dataset, *hashes]).encode()).hexdigest()
    return f"ep_{digest[:32]}"


def check_dataset(name: str) -> str:
    if not isinstance(name, str) or not _DATASET.fullmatch(name):
        raise ValidationError(
            f"invalid dataset name {name!r}: use 1-128 letters, digits, '_', '-' or '.'"
        )
    return name


def check_user_name(name: str) -> str:
    if not isinstance(name, str) or not _USER.fullmatch(name):
        raise ValidationError(
            f"invalid user name {name!r}: use 1-64 letters, digits, '_', '-', '.' or '@'"
        )
    return name
