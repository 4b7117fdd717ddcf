"""Folder sync planning: what a folder read now means for the memories read from it before."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import ValidationError
from ._read import FileDocument

__all__ = ["SyncPlan", "check_file_options", "check_sync_folder", "plan_sync"]


@dataclass
class SyncPlan:
    """``added``: files with no memory yet; ``changed``: files whose content differs from every
    memory of their source; ``unchanged``: sources whose content is already stored (nothing to
    do); ``removed``: sources stored but no longer in the folder. ``stale`` maps each changed or
    removed source to the ids of its outdated memories (what a sync forgets or supersedes)."""

    added: list[FileDocument] = field(default_factory=list)
    changed: list[FileDocument] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    stale: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> dict[str, int]:
        return {"added": len(self.added), "changed": len(self.changed), "unchanged": len(self.unchanged),
                "removed": len(self.removed)}


def check_file_options(content: object, *, sync: bool) -> None:
    """A ``sync`` compares what is given with what was read from the same folder before, so it
    needs that folder: a folder path, or uploads that name their ``folder``. Uploads without
    one cannot say which earlier files were deleted: with ``sync`` they are a ValidationError,
    before anything is read or forgotten."""
    items = content if isinstance(content, (list, tuple)) else [content]
    for item in items:
        if isinstance(item, FileDocument):
            check_sync_folder(item.folder, sync=sync)


def check_sync_folder(folder: str | None, *, sync: bool) -> None:
    """Uploads of ``folder`` with ``sync``: ValidationError when they name no folder."""
    if sync and not folder:
        raise ValidationError("sync needs a folder: name the folder these uploads come from (folder=…),"
                              " or leave sync out; without one it cannot tell which earlier files were deleted")


def plan_sync(documents: Iterable[FileDocument], stored: Iterable[tuple[str, str, str]]) -> SyncPlan:
    """Compare the documents read from a folder with the stored (source, memory id, content
    hash) of that folder (``Store.file_memories``). Pure: no store access, nothing written."""
    by_source: dict[str, dict[str, str]] = defaultdict(dict)  # source -> content hash -> memory id
    for source, memory_id, content_hash in stored:
        by_source[source].setdefault(content_hash, memory_id)
    plan = SyncPlan()
    seen: set[str] = set()
    for doc in documents:
        seen.add(doc.source)
        versions = by_source.get(doc.source)
        if not versions:
            plan.added.append(doc)
        elif doc.content_hash in versions:
            plan.unchanged.append(doc.source)
            old = [m for h, m in versions.items() if h != doc.content_hash]
            if old:  # an older version left behind beside the current one
                plan.stale[doc.source] = old
        else:
            plan.changed.append(doc)
            plan.stale[doc.source] = list(versions.values())
    for source in sorted(set(by_source) - seen):
        plan.removed.append(source)
        plan.stale[source] = list(by_source[source].values())
    return plan
