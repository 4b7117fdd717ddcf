"""The LangGraph store against the real langgraph and langmem packages, on both stores (the
``kn`` fixture: SQLite and PostgreSQL), a real graph compiled with ``store=``, LangMem's own
memory tools; no model."""

from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

import anyio
import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

from kenning.integrations.langgraph import KenningStore


def test_put_get_search_delete_and_namespaces(kn):
    store = KenningStore(kn, dataset="agent", user_index=1)
    store.put(("memories", "alice"), "a", {"content": "Alice works at Acme.", "kind": "job"})
    store.put(("memories", "alice"), "b", {"content": "Alice lives in Paris.", "kind": "home", "n": 3})
    store.put(("memories", "bob"), "a", {"content": "Bob lives in Rome.", "kind": "home"})
    store.put(("docs",), "readme", {"title": "no content field"})

    item = store.get(("memories", "alice"), "a")
    assert item.value == {"content": "Alice works at Acme.", "kind": "job"} and item.key == "a"
    assert item.namespace == ("memories", "alice")
    assert store.get(("memories", "alice"), "zzz") is None
    assert store.get(("memories",), "a") is None  # another namespace

    # search(query=…) ranks through kenning's recall, within the prefix
    hits = store.search(("memories", "alice"), query="Where does Alice live?")
    assert hits and hits[0].key == "b" and hits[0].score is not None
    assert all(h.namespace == ("memories", "alice") for h in hits)
    assert {h.namespace[1] for h in store.search(("memories",), query="lives", limit=10)} == {"alice", "bob"}
    # filters: equality and operators, without a query too
    assert [h.key for h in store.search(("memories",), filter={"kind": "job"})] == ["a"]
    assert [h.value["content"] for h in store.search(("memories",), filter={"n": {"$gte": 3}})] == \
        ["Alice lives in Paris."]
    assert len(store.search(("memories",), limit=2)) == 2
    assert len(store.search(("memories",), limit=2, offset=2)) == 1

    # the user's facts reach kenning's user-scoped context
    assert "Alice lives in Paris" in kn.context(dataset="agent", user="alice").text
    assert "Rome" not in kn.context(dataset="agent", user="alice").text

    # put again replaces (re-extracted); put None and delete forget
    store.put(("memories", "alice"), "a", {"content": "Alice works at Beta.", "kind": "job"})
    assert store.get(("memories", "alice"), "a").value["content"] == "Alice works at Beta."
    assert len(kn.list(dataset="agent", user="alice")) == 2
    store.delete(("memories", "alice"), "a")
    assert store.get(("memories", "alice"), "a") is None

    assert store.list_namespaces() == [("docs",), ("memories", "alice"), ("memories", "bob")]
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "bob")]
    assert store.list_namespaces(suffix=("bob",)) == [("memories", "bob")]
    assert store.list_namespaces(max_depth=1) == [("docs",), ("memories",)]


def test_same_text_under_two_keys_is_two_items(kn):
    store = KenningStore(kn)
    store.put(("n",), "one", {"content": "Tea is green."})
    store.put(("n",), "two", {"content": "Tea is green."})
    assert store.get(("n",), "one").key == "one" and store.get(("n",), "two").key == "two"
    store.delete(("n",), "one")
    assert store.get(("n",), "two") is not None


def test_batch_and_abatch(kn):
    store = KenningStore(kn)
    results = store.batch([PutOp(("a",), "k", {"content": "Carol plays chess."}), GetOp(("a",), "k"),
                           SearchOp(("a",), None, 5, 0, "chess"), ListNamespacesOp(None, None, 10, 0)])
    assert results[0] is None and results[1].value["content"] == "Carol plays chess."
    assert results[2][0].key == "k" and results[3] == [("a",)]

    async def main():
        await store.aput(("a",), "j", {"content": "Dan sings."})
        got = await store.aget(("a",), "j")
        found = await store.asearch(("a",), query="Who sings?")
        return got, found

    got, found = anyio.run(main)
    assert got.value == {"content": "Dan sings."} and found[0].key == "j"


class State(TypedDict):
    question: str
    answers: Annotated[list[str], operator.add]


def test_a_graph_compiled_with_the_store_writes_and_reads_memories(kn):
    from langgraph.config import get_store

    def write(state: State) -> dict:
        get_store().put(("memories", "u1"), "job", {"content": "Erin works at Initech."})
        return {"answers": []}

    def read(state: State) -> dict:
        hits = get_store().search(("memories", "u1"), query=state["question"])
        return {"answers": [h.value["content"] for h in hits]}

    graph = StateGraph(State)
    graph.add_node("write", write)
    graph.add_node("read", read)
    graph.add_edge(START, "write")
    graph.add_edge("write", "read")
    graph.add_edge("read", END)
    app = graph.compile(store=KenningStore(kn, dataset="graph", user_index=1))
    out = app.invoke({"question": "Where does Erin work?", "answers": []})
    assert out["answers"][0] == "Erin works at Initech."
    assert kn.recall("Where does Erin work?", dataset="graph", user="u1").hits[0].text.startswith("Erin")


def test_langmem_memory_tools_work_on_it(kn):
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = KenningStore(kn, dataset="lm", user_index=1)
    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=namespace, store=store)
    search = create_search_memory_tool(namespace=namespace, store=store)
    config = {"configurable": {"langgraph_user_id": "frank"}}

    said = manage.invoke({"content": "Frank is allergic to peanuts.", "action": "create"}, config)
    memory_key = said.rsplit(" ", 1)[1]
    found = json.loads(search.invoke({"query": "What is Frank allergic to?"}, config))
    assert found[0]["key"] == memory_key and found[0]["value"]["content"] == "Frank is allergic to peanuts."
    assert "peanuts" in kn.context(dataset="lm", user="frank").text

    manage.invoke({"content": "Frank is allergic to shellfish.", "action": "update", "id": memory_key}, config)
    assert store.get(("memories", "frank"), memory_key).value["content"] == "Frank is allergic to shellfish."
    manage.invoke({"action": "delete", "id": memory_key}, config)
    assert json.loads(search.invoke({"query": "allergic"}, config)) == []
    assert kn.list(dataset="lm") == []
