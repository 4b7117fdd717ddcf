"""Run by tests/test_integrations_crewai.py inside the CrewAI side environment
(tests/sidevenv.py): CrewAI's real unified ``Memory`` over ``KenningStorage``, without a model.
``python tests/crewai_scenario.py STORE...`` prints one JSON line of what it saw on each store
(CrewAI is imported once); an assertion failure exits non-zero with its message."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import sys

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai.llms.base_llm import BaseLLM
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord
from crewai.memory.unified_memory import Memory

from kenning import Kenning
from kenning.errors import ConfigurationError, NotFoundError
from kenning.integrations.crewai import KenningStorage, memory


CALLS: list[object] = []


class NoModel(BaseLLM):
    """The scenario's LLM: any call is recorded and fails, so the scenario proves none was made."""

    def call(self, messages, *args, **kwargs):
        CALLS.append(messages)
        raise RuntimeError("the CrewAI scenario runs without a model")


def main(store: str) -> dict:
    seen: dict = {}
    kn = Kenning(store)
    storage = KenningStorage(kn, user="ada")
    assert isinstance(storage, StorageBackend)  # CrewAI's own runtime protocol check
    # the form CrewAI documents: Memory(storage=…); every field given, so CrewAI needs no model
    mem = Memory(storage=storage, embedder=storage.embedder, llm=NoModel(model="none"))
    editor = mem.remember("Ada's favourite editor is Helix.", scope="/prefs", categories=["tools"], importance=0.8)
    mem.remember("The team standup is at 9:30 on weekdays.", scope="/team", categories=["schedule"], importance=0.4)
    mem.remember("Ada moved from Lisbon to Porto in March.", scope="/prefs/life", categories=["life"], importance=0.5)
    # the same words in another scope are another record, each found by its id
    twin = mem.remember("The team standup is at 9:30 on weekdays.", scope="/other", categories=["schedule"],
                        importance=0.4)
    seen["count"] = storage.count()
    assert storage.get_record(twin.id).scope == "/other"

    matches = mem.recall("which editor does Ada use?", depth="shallow", limit=3)
    seen["recall"] = [m.record.content for m in matches]
    seen["scores"] = [m.score for m in matches]
    assert matches[0].record.id == editor.id, seen
    assert all(0.0 <= s <= 1.0 for _, s in storage.search(storage.embedder(["editor"])[0])), "similarity in [0, 1]"
    scoped = mem.recall("when is the standup?", scope="/team", depth="shallow")
    seen["scoped"] = [(m.record.scope, m.record.content) for m in scoped]
    seen["scopes"] = mem.list_scopes("/")
    seen["children"] = mem.list_scopes("/prefs")
    seen["categories"] = mem.list_categories()
    info = mem.info("/prefs")
    seen["info"] = [info.record_count, info.categories, info.child_scopes]
    seen["records"] = [r.content for r in mem.list_records(limit=2)]

    # the same facts are kenning's: its own recall and the user's context see them
    seen["kenning_recall"] = kn.recall("Helix", user="ada").hits[0].text
    seen["context"] = kn.context(user="ada").text

    # a change closes the old value (kenning's temporal rule), whatever CrewAI stored
    mem.remember("Ada switched from Helix to Zed.", scope="/prefs", categories=["tools"], importance=0.8)
    now = kn.context(user="ada").text
    seen["context_after_change"] = now
    seen["recall_after_change"] = [m.record.content for m in mem.recall("which editor does Ada use?", depth="shallow")]

    # update, delete by ids, categories, scope and age; reset
    record = storage.get_record(editor.id)
    storage.update(record.model_copy(update={"content": "Ada's favourite editor is Helix, with vim keys."}))
    seen["updated"] = storage.get_record(editor.id).content
    try:
        storage.update(MemoryRecord(content="nobody", id="no-such-record"))
        raise AssertionError("updating a missing record must fail")
    except NotFoundError:
        pass
    seen["deleted_category"] = storage.delete(categories=["life"])
    seen["deleted_ids"] = storage.delete(record_ids=[twin.id])
    seen["deleted_old"] = storage.delete(older_than=dt.datetime(2000, 1, 1))
    seen["forgot_team"] = mem.forget(scope="/team")
    seen["left"] = sorted(r.content for r in storage.list_records())

    # a vector the storage did not make cannot be turned back into words
    try:
        storage.search([0.5] * len(storage.embedder(["x"])[0]))
        raise AssertionError("a foreign vector must be refused")
    except ConfigurationError as exc:
        seen["foreign"] = str(exc)

    async def run_async() -> int:
        await storage.asave([MemoryRecord(content="Ada's cat is called Miso.", scope="/pets", categories=["pets"],
                                          importance=0.5)])
        found = await storage.asearch(storage.embedder(["what is the cat called?"])[0], limit=2)
        assert found and "Miso" in found[0][0].content, found
        return await storage.adelete(scope_prefix="/pets")

    seen["async_deleted"] = asyncio.run(run_async())

    # memory(kn) builds the same thing
    built = memory(kn, dataset="crew", user="ada", llm=NoModel(model="none"))
    built.remember("Deploys happen on Thursdays.", scope="/ops", categories=["ops"], importance=0.5)
    seen["built"] = [m.record.content for m in built.recall("when are deploys?", depth="shallow")]
    mem.reset()
    seen["after_reset"] = storage.count()
    seen["model_calls"] = len(CALLS)  # no model was ever needed
    mem.close()
    built.close()
    kn.close()
    return seen


if __name__ == "__main__":
    for store in sys.argv[1:]:
        CALLS.clear()
        print("SCENARIO " + json.dumps(main(store), default=str), flush=True)
