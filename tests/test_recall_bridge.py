"""Two-hop questions over documents without a model: the phrasings that go through something
the question does not name, and the passage titled by a name the best passages mention (the
document about the bridge entity) in the second full-text query (kenning/search/recall.py)."""

from __future__ import annotations

import pytest

from kenning import Kenning
from kenning.search.recall import _hops


@pytest.mark.parametrize("question", [
    "Where was the architect of the Tower of Zorn raised?",        # "the X of"
    "What is the most popular hotel in Gisvi's city of birth?",   # a name's possession
    "Who did Barry Wesson's team play in the World Series?",
    "What currency predated the Euro in the country Signmark is from?",  # "the X <Name>"
    "When did the country containing Nugegoda leave the empire?",
    "What county borders the county in which Johnnycake is located?",
])
def test_questions_through_something_they_do_not_name(question: str) -> None:
    assert _hops(question)


@pytest.mark.parametrize("question", ["Where does Alice live?", "Who painted the sunset?",
                                      "Is the museum open on Sundays?"])
def test_plain_questions_go_through_nothing(question: str) -> None:
    assert not _hops(question)


@pytest.fixture
def kn(store_url):
    with Kenning(store_url) as k:
        yield k


def test_the_document_about_the_bridge_name_outranks_one_naming_it_in_passing(kn: Kenning) -> None:
    """"Estoria" is named by the first passage; the passage titled "Estoria" holds the second
    hop, while another names Estoria twice in passing."""
    first = kn.remember("Varnhold\nVarnhold is a fishing town in the north of Estoria, near Lake Umber.").memory_ids[0]
    about = kn.remember("Estoria\nIn 2012 the parliament elected Mara Quill as the new president.").memory_ids[0]
    passing = kn.remember("Estorian pepper\nPepper from Estoria is hot; Estoria sells it abroad.").memory_ids[0]
    for i in range(6):
        kn.remember(f"Electric charge {i}\nA charge is a property of matter, studied in town {i}.")
    ranked = [h.memory_ids[0] for h in kn.recall("Who was in charge of the country Varnhold is located in?",
                                                  top_k=5).hits]
    assert ranked[0] == first and about in ranked[:3]
    assert passing not in ranked or ranked.index(about) < ranked.index(passing)
