"""Ranking signals of user–assistant chats: who said a turn, and which session it is from.

- **Whose words answer the question.** A question about the asker ("where did I…", "my dog")
  is answered by what the user said: the assistant's long replies share its words without
  stating anything about the user. A question about the assistant's own earlier answers ("you
  recommended…", "our previous chat") is answered by an assistant turn. A turn whose role the
  question points at scores ``1 + LANE_WEIGHTS["role"]`` times as much; memories without a
  role (documents, "Speaker: text" transcripts) are not touched. For a question about the
  user the weight lifts the turn's whole score, the share its neighbours lend it included (the
  user's question turn is where the user states the fact; the reply after it repeats its
  words). For a question about the assistant's answer it lifts only the turn's own evidence:
  every reply of a session borrows from the user turn that matched, and the reply that answers
  is the one whose own words match (``Evidence.own`` in search/recall.py).
- **Request words.** "Can you recommend / suggest / give me tips…" are words of the asking,
  not of the thing asked about; every assistant reply is full of them. In a question about the
  user they are left out of the full-text query when at least two other terms remain.
- **Evidence across sessions.** A question that gathers ("how many … have I …", "in total",
  "the order of…") needs one turn from each session it was told in, not the three best turns
  of one: in the memory ranking the n-th hit (from 0) of an episode scores
  ``(1 - LANE_WEIGHTS["session"]) ** n`` of its score (a greedy, MMR-like pass over the ranked
  hits). Other questions keep their order.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Literal

from ..models import Hit, Memory

__all__ = ["diversify", "focus", "gathers", "lexical_terms", "role_multiplier"]

Focus = Literal["user", "assistant"]

#: the question is about what the assistant said earlier
_ABOUT_ASSISTANT = re.compile(
    r"\b(you (?:\w+ )?(told|said|recommended|suggested|mentioned|gave|provided|listed|shared|explained|"
    r"described|wrote|came up with)|did you (recommend|suggest|mention|say|tell|give|list|write)|"
    r"(our|the|that) (previous|last|earlier|past) (chat|conversation|discussion|session)s?|remind me)\b",
    re.IGNORECASE,
)
#: the question is about the asker
_ABOUT_USER = re.compile(r"\b(i|my|me|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
#: the question gathers evidence told at several times
_GATHERS = re.compile(
    r"\b(how many|how much|how often|in total|total|combined|altogether|all (the|of)|each|every|"
    r"so far|order of|from (earliest|first|oldest)|average|sum|count)\b",
    re.IGNORECASE,
)
#: words of asking for something, not of what is asked about
REQUEST_WORDS = frozenset(
    """
    recommend recommends recommended recommendation recommendations suggest suggests suggested
    suggestion suggestions tip tips advice advise idea ideas help helpful useful ways options
    thinking planning wondering looking want wanted need needed please give
    """.split()
)
#: a question about the user keeps at least this many terms besides the request words
_MIN_TERMS = 2


@functools.lru_cache(maxsize=1024)
def focus(text: str) -> Focus | None:
    """Whose turns answer the question: the assistant's (it asks about an earlier answer), the
    user's (it speaks in the first person), or nobody's in particular."""
    if _ABOUT_ASSISTANT.search(text):
        return "assistant"
    if _ABOUT_USER.search(text):
        return "user"
    return None


@functools.lru_cache(maxsize=1024)
def gathers(text: str) -> bool:
    """Whether the question gathers evidence from several places (counts, totals, orders)."""
    return bool(_GATHERS.search(text))


def lexical_terms(text: str, terms: list[str]) -> list[str]:
    """The full-text terms: a question about the user leaves its request words out."""
    if focus(text) != "user":
        return terms
    kept = [t for t in terms if t not in REQUEST_WORDS]
    return kept if len(kept) >= _MIN_TERMS else terms


def role_multiplier(text: str, memory: Memory, weight: float) -> float:
    """``1 + weight`` for a turn of the role the question points at, else 1."""
    wanted = focus(text)
    if weight <= 0 or wanted is None or memory.role is None:
        return 1.0
    return 1.0 + weight if memory.role == wanted else 1.0


def diversify(hits: Sequence[Hit], episode_of: Callable[[Hit], str | None], discount: float) -> list[Hit]:
    """The hits re-ranked so that sessions take turns: the n-th hit (from 0) of an episode
    counts ``(1 - discount) ** n`` of its score (equal scores keep the order given). Hits
    without an episode keep theirs. Scores
    are set to the discounted ones, so what follows (dedupe, the cut at ``top_k``) sees the
    order."""
    factor = 1.0 - discount
    if discount <= 0 or not hits:
        return list(hits)
    shown: dict[str, int] = defaultdict(int)
    out = []
    for hit in sorted(hits, key=lambda h: -h.score):  # stable: ties keep the given order
        episode = episode_of(hit)
        if episode is not None:
            hit.score *= factor ** shown[episode]
            shown[episode] += 1
        out.append(hit)
    return sorted(out, key=lambda h: -h.score)
