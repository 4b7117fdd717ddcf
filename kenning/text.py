"""Text keys: words, English stop words and a light suffix stemmer for queries; the keys entity
names and relations are matched under, for the pipeline and recall alike.

The full-text index stems with FTS5's ``porter`` tokenizer (PostgreSQL: the ``english``
configuration), so query terms are passed unstemmed; stop words are dropped here, because BM25
over "what", "did" and "the" only adds noise to a question.
"""

from __future__ import annotations

import functools
import re

__all__ = ["STOP_WORDS", "light_stem", "normalize_name", "normalize_relation", "terms_of", "words_of"]

WORD = re.compile(r"\w+", re.UNICODE)
_MAX_CHARS = 32_000
_MAX_TERMS = 64

#: English function words (the usual IR list: articles, pronouns, auxiliaries, prepositions,
#: conjunctions and question words), plus contraction leftovers of the ``\w+`` split
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how i if in into is isn it its itself just let ll me more most mustn my myself
    no nor not now of off on once only or other ought our ours ourselves out over own re s same
    shan she should shouldn so some such t than that the their theirs them themselves then there
    these they this those through to too under until up ve very was wasn we were weren what when
    where which while who whom why will with won would wouldn you your yours yourself yourselves
    d m o y ma also ever much many may might shall must tell know anything something thing things
    """.split()
)


def words_of(text: str) -> list[str]:
    return WORD.findall(text[:_MAX_CHARS].casefold())


def terms_of(text: str) -> list[str]:
    """Distinct content words of a query, in order; all its words if every one is a stop word."""
    words = words_of(text)
    content = [w for w in words if w not in STOP_WORDS]
    return list(dict.fromkeys(content or words))[:_MAX_TERMS]


@functools.lru_cache(maxsize=65_536)
def light_stem(word: str) -> str:
    """A crude suffix stripper for matching query words against relation names and sentences
    in code (the full-text index does real stemming)."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_POSSESSIVE = re.compile(r"['’]s\b")
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


@functools.lru_cache(maxsize=1 << 15)  # names repeat: ingest normalizes each a dozen times
def normalize_name(name: str) -> str:
    """Key under which entity names are resolved: case, whitespace, punctuation, possessives."""
    text = _POSSESSIVE.sub("", name.casefold())
    text = _NON_WORD.sub(" ", text).strip()
    if text.startswith("the "):
        text = text[4:]
    return text


def normalize_relation(relation: str) -> str:
    text = _NON_WORD.sub("_", relation.strip().casefold()).strip("_")
    return text or "related_to"
