"""Irregular word forms in the full-text lane (kenning/search/lexicon.py): a question's word finds
its family's forms that no stemmer joins to it ("fly" -> "flew", "flight"), on both stores."""

from __future__ import annotations

import sqlite3

import pytest

from kenning import Kenning
from kenning.search import lexicon
from kenning.search.lexicon import forms, heads, kinds
from kenning.search.variants import with_variants
from kenning.text import terms_of


#: each question, the evidence that says it in another form of one of its words, and shorter
#: turns that share its other word (without the form they rank above the evidence)
CASES = [
    ("When did I fly to Boston?", "My flight to Boston was delayed by two hours.",
     ["Boston traffic was terrible.", "I walked around Boston Common."]),
    ("What did I buy at the market?", "I bought honey and pears at the market.",
     ["The market opens at eight.", "The market was crowded."]),
    ("Where did Sam go skiing?", "Sam went skiing in Chamonix last winter.",
     ["Sam likes skiing.", "Skiing with Sam."]),
    ("Where did I put the knives?", "The knife is in the top drawer.",
     ["I put the keys on the table.", "Put the plates away."]),
    # a compound's head ("homegrown": grown, grow)
    ("What goes well with my homegrown herbs?", "The herbs I grow on the balcony are ready.",
     ["Herbs are expensive at the shop.", "Fresh herbs from the market."]),
    # the kinds of a general word ("phone": iphone)
    ("What case fits my phone?", "I need a new case for my iPhone.",
     ["The case was closed by the police.", "A case of wine arrived."]),
]


@pytest.mark.parametrize(("question", "evidence", "others"), CASES)
def test_a_question_finds_evidence_written_in_another_form_of_its_word(kn: Kenning, question: str,
                                                                       evidence: str, others: list[str]) -> None:
    kn.remember([evidence, *others, "I cooked pasta for dinner on Friday."])
    hits = kn.recall(question, search_type="chunks_lexical").hits
    assert hits and hits[0].text == evidence


def test_inflections_of_a_member_find_the_family() -> None:
    assert set(forms("flew")) == {"fly", "flown", "flight"}
    assert {"flew", "flight"} <= set(forms("flying")) and {"fly", "flew"} <= set(forms("flights"))
    assert "fly" not in forms("flying")  # the stemmer joins those already: it would count twice
    assert "bought" in forms("buys") and "ran" in forms("running") and "knife" in forms("knives")
    assert forms("boston") == () and forms("tea") == ()


def test_a_compound_searches_its_head_and_the_heads_family() -> None:
    assert heads("homegrown") == ("grown", "grow", "grew", "growth")
    assert set(heads("handwritten")) == {"written", "write", "wrote"} and "spent" in heads("overspent")
    # no family's base ("hold" in household, "take" in mistake), no first part under four letters
    # ("present" is not a "sent"), and a word of a family is no compound ("understood")
    assert heads("household") == () and heads("mistake") == () and heads("present") == ()
    assert heads("understood") == () and heads("boston") == ()


def test_a_general_word_searches_its_kinds() -> None:
    assert {"cousin", "aunt", "nephew"} <= set(kinds("relatives")) and kinds("relative") == kinds("relatives")
    assert set(kinds("phone")) == {"iphone", "smartphone"} and kinds("family") == () and kinds("pets") == ()
    assert "iphone" in with_variants(["accessories", "phone"])


def test_the_forms_follow_the_question_words_each_once() -> None:
    terms = with_variants(terms_of("Did I fly or drive to Boston, and what did I buy there?"))
    assert terms[:4] == ["fly", "drive", "boston", "buy"]
    assert {"flew", "flight", "drove", "driven", "bought"} <= set(terms[4:])
    assert len(terms) == len(set(terms))


def test_no_family_holds_two_words_the_stemmer_already_joins() -> None:
    """Each member stems apart from the others under FTS5's porter tokenizer (a member that
    stems alike would score the same word twice)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    for line in lexicon._FAMILIES.strip().splitlines():
        stems = []
        for word in line.split():
            db.execute("DELETE FROM t")
            db.execute("INSERT INTO t VALUES (?)", (word,))
            stems.append(db.execute("SELECT term FROM v").fetchone()[0])
        assert len(line.split()) > 1 and len(set(stems)) == len(stems), line
