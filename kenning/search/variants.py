"""Lexical normalisation the stemmers leave out: a question's word also searches the words of
its family that stem differently ("allergies" finds "allergic").

Both full-text stores stem the same way — SQLite's FTS5 ``porter`` tokenizer and PostgreSQL's
english Snowball dictionary — and both conflate inflections ("allergy", "allergies" ->
``allergi``) but not derivations ("allergic" -> ``allerg``, "biological" -> ``biolog``).
Rather than a stemmer of our own in the index (a migration and a reindex of every stored row
on both backends, and the two would have to agree), the query carries the family: a content
word ending in one of the suffix classes below is also searched as its stem with the other
class's suffix; a word with irregular forms also searches them (kenning/search/lexicon.py:
"flew" finds "fly", "flight"), a compound its head ("homegrown": grown, grow) and a general
word the words of its kinds ("relatives": cousin, aunt). A variant no row contains costs one term lookup; the stored rows
and both stores' indexes are unchanged, so existing stores need nothing.
"""

from __future__ import annotations

from itertools import chain

from .lexicon import forms, heads, kinds

__all__ = ["with_variants"]

#: suffix classes the stemmers keep apart, each class's members stemmed alike: y/ies
#: (allergy, allergies -> ``allergi``) and ic/ical (allergic, biological -> ``allerg``,
#: ``biolog``). A word searches one word of the other class, never its own class's (the stemmer
#: already joins those, and a second term of one stem would count the word twice). Not "ist":
#: an agent is another concept ("activity" is not "activist")
_CLASSES = (("ies", "y"), ("ical", "ic"))
_MIN_STEM = 4


def variants(word: str) -> list[str]:
    """Words of ``word``'s family that the stemmers do not join to it: "allergies" ->
    allergic, "biological" -> biology, "flew" -> fly, flown, flight (one no text says finds
    nothing)."""
    if not word.isalpha():
        return []
    if irregular := forms(word) or heads(word):
        return [*irregular, *kinds(word)]
    if general := kinds(word):
        return list(general)
    for index, suffixes in enumerate(_CLASSES):
        for suffix in suffixes:
            if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
                other = _CLASSES[1 - index]
                return [word[: -len(suffix)] + other[-1]]
    return []


def with_variants(terms: list[str]) -> list[str]:
    """``terms`` (a question's content words, in order) followed by their families' other
    words, each once."""
    each = (v for term in terms for v in variants(term))
    pairs = (v for a, b in zip(terms, terms[1:]) for v in kinds(f"{a} {b}"))  # "life event" -> wedding, …
    seen = set(terms)
    return [*terms, *(v for v in dict.fromkeys(chain(each, pairs)) if v not in seen)]
