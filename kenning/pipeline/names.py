"""One person, two mentions: "Bob Stone" early in a session, "Bob" later.

The offline extractor already reads a lone first name as the one full name it begins within a
memory (``offline._Reader.full_name``). Across the turns of one session the earlier turns are
other memories, so the pipeline looks there: a new single-word name is the stored person whose
full name the session's earlier turns use with it ("Bob Stone"), when exactly one such person
exists and no entity of the single name does. Store reads only, no model.
"""

from __future__ import annotations

import re

from ..models import Memory
from ..store.base import Store
from ..text import normalize_name
from .commit import EntityDraft, FactDraft

__all__ = ["same_people"]

#: earlier turns of the session looked at
SESSION_TURNS = 50


def same_people(memory: Memory, store: Store, entities: list[EntityDraft],
                facts: list[FactDraft]) -> tuple[list[EntityDraft], list[FactDraft]]:  # fmt: skip
    """The drafts with a lone first name replaced by the session's full name for it."""
    singles = [e for e in entities if " " not in e.key and e.type in {"person", "concept"} and e.name[:1].isupper()]
    if not singles or memory.kind != "message" or memory.session is None or not memory.position:
        return entities, facts
    stored = store.find_entities(memory.dataset, [e.key for e in singles])
    singles = [e for e in singles if e.key not in stored]  # "Bob" is known as himself
    if not singles:
        return entities, facts  # the earlier turns are not read
    turns = store.session_messages(memory.dataset, memory.session, SESSION_TURNS, before=memory.position)
    text = "\n".join(t.content for t in turns)
    if not text:
        return entities, facts
    renamed: dict[str, EntityDraft] = {}
    for draft in singles:
        said = {" ".join(m.split()): None for m in re.findall(rf"\b{re.escape(draft.name)}\s+[A-Z][\w'’-]+", text)}
        if len(said) != 1:
            continue  # no full name, or two people share the first name
        [full] = said
        row = store.find_entities(memory.dataset, [normalize_name(full)]).get(normalize_name(full))
        if row is not None and row.type != "person":
            continue
        renamed[draft.key] = EntityDraft(key=normalize_name(full), name=row.name if row else full, type="person",
                                         description=draft.description)
    if not renamed:
        return entities, facts
    kept: dict[str, EntityDraft] = {}
    for draft in entities:
        draft = renamed.get(draft.key, draft)
        kept.setdefault(draft.key, draft)
    for fact in facts:
        fact.source_key = renamed[fact.source_key].key if fact.source_key in renamed else fact.source_key
        fact.target_key = renamed[fact.target_key].key if fact.target_key in renamed else fact.target_key
    return list(kept.values()), [f for f in facts if f.source_key != f.target_key]
