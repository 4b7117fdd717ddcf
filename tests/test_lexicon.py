"""Irregular word forms in the full-text lane (kenning/search/lexicon.py): a question's word finds
its family's forms that no stemmer joins to it ("fly" -> "flew", "flight"), on both stores."""

from __future__ import annotations

import sqlite3

import pytest

from kenning import Kenning
from kenning.search import lexicon
from kenning.search.lexicon import forms
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
