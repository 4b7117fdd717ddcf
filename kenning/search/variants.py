"""Lexical normalisation the stemmers leave out: a question's word also searches the words of
its family that stem differently ("allergies" finds "allergic").

Both full-text stores stem the same way — SQLite's FTS5 ``porter`` tokenizer and PostgreSQL's
english Snowball dictionary — and both conflate inflections ("allergy", "allergies" ->
``allergi``) but not derivations ("allergic" -> ``allerg``, "therapist" -> ``therapist``,
"biological" -> ``biolog``). Rather than a stemmer of our own in the index (a migration and a
reindex of every stored row on both backends, and the two would have to agree), the query
carries the family: each content word of five letters or more ending in one of the suffixes
below is searched with the words its stem makes with the others. A variant no row contains
costs one term lookup; the stored rows and both stores' indexes are unchanged, so existing
stores need nothing.
"""

from __future__ import annotations

__all__ = ["with_variants"]

#: suffix families whose members the stemmers keep apart: y/ies (allergy, allergies), ic and
#: ical (allergic, biological), ist (therapist)
_FAMILY = ("ies", "y", "ic", "ical", "ist")
#: at most this many variants for one word, and words shorter than this have none
_MAX_VARIANTS, _MIN_CHARS = 4, 5


def _stem(word: str) -> str | None:
    for suffix in sorted(_FAMILY, key=len, reverse=True):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return None


def variants(word: str) -> list[str]:
    """The other members of ``word``'s family: "allergies" -> allergy, allergic, allergical,
    allergist (those no text says find nothing)."""
    if len(word) < _MIN_CHARS or not word.isalpha():
        return []
    stem = _stem(word)
    if stem is None:
        return []
    return [stem + suffix for suffix in _FAMILY if stem + suffix != word][:_MAX_VARIANTS]


def with_variants(terms: list[str]) -> list[str]:
    """``terms`` (a question's content words, in order) followed by their families' other
    words, each once."""
    out = list(terms)
    seen = set(out)
    for term in terms:
        for variant in variants(term):
            if variant not in seen:
                seen.add(variant)
                out.append(variant)
    return out
