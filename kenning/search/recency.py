"""What is true now, read from the evidence itself: whether a passage is ``current``, and which
passage leads a present-tense question about a state. Pure functions over the hits recall
ranked; recall (``search/recall.py``) calls :func:`settle` once per memory-level search.

**A passage is current** (``Hit.current`` on a chunk or memory hit) when nothing later
supersedes what it states, at the asked instant (``as_of``, else now):

- its memory has not been superseded (``status``), and was said by then;
- no fact its memory states was closed after the memory was said (the passage states
  something no longer true: "I live in Toronto" once Maya lives in Montreal; a fact the passage
  itself says has ended, "I left Shopify", does not make it stale);
- for a present-tense question about a state, no later passage answers the same question
  (below) — the later statement supersedes it even when extraction found nothing. A plan, a
  wish or a possibility that did not happen ("thinking of moving to Toronto", "might switch")
  answers no such question: it neither leads nor is set aside.

**The newer leads.** A question asks about a state now when it is in the present tense
(no "did", "was", "used to", no date or ``as_of``; not a plan, a wish, a count or a list) and
what it asks for (its wh-phrase, or the word after its subject) is a *topic* that holds one
value at a time: where someone lives, their work or role, diet, drink, sport or pastime, vehicle,
phone, partner, manager, school, "favourite X". Among the hits about the question's subject
(a name it says, or the user whose memories are searched, as a word of the passage or as its
first-person speaker), those that answer the same question are one group: they are of one of
the question's topics, or they restate a name a group member says with a word of change
("stole the Trek, so I bought a Brompton"). In a group the most recently said leads (it takes
the group's best score); the older ones are history: not current (a passage's
``superseded_by`` names the memory of the newest), ranked below it. A later passage that only
adds ("we also adopted a second dog") supersedes nothing; of a topic that holds several values
at once (pastimes), a later passage supersedes only the passages naming what it replaces.
Facts keep their own validity: a fact hit's ``current`` is its timeline's.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..models import Fact, Hit, Memory
from ..text import STOP_WORDS, light_stem

__all__ = ["asked_topics", "asks_now", "contradicted", "names_in", "passage_current", "settle", "topics_of"]


#: the topics that hold one value at a time, by the words that name them (a word matches as
#: written, or without a plural "s": "lives", "cars")
_TOPIC_WORDS: dict[str, str] = {
    "home": "live lived living move moved moving relocate relocated relocating reside resided residing "
            "resident home hometown based city town apartment house neighborhood neighbourhood address",
    "work": "work worked working job employer employed employee company career profession occupation "
            "office hired joined role position title promoted promotion colleague boss",
    "diet": "diet vegetarian vegan pescatarian meat fish eat eating ate food keto gluten dairy carnivore "
            "omnivore",
    "drink": "drink drinking drinker coffee tea espresso latte cappuccino matcha beer wine juice soda "
             "caffeine decaf",
    "pastime": "sport exercise workout training yoga swim swimming swam run running jog jogging climb "
               "climbing bouldering tennis gym cycling cyclist hike hiking football soccer basketball golf "
               "pilates boxing dance dancing ski skiing surf surfing rowing karate crossfit hobby hobbies "
               "pastime pottery painting knitting gardening photography chess guitar piano violin",
    "vehicle": "car bike bicycle ride riding rode drive driving drove vehicle motorbike motorcycle scooter "
               "commute truck van",
    "phone": "phone iphone android smartphone mobile",
    "partner": "partner girlfriend boyfriend wife husband spouse married marry engaged fiance fiancee dating "
               "relationship divorced single",
    "manager": "manager supervisor",
    "school": "school study studies studying student university college degree major course",
    "laptop": "laptop computer macbook thinkpad chromebook notebook",
    "bank": "bank banks banking account",
    "doctor": "doctor gp physician",
    "dentist": "dentist dental",
    "therapist": "therapist counsellor counselor psychologist",
    "provider": "provider carrier internet broadband insurer insurance",
    "language": "language languages",
    "team": "team club",
    "pet": "pet pets dog dogs cat cats puppy kitten",
}
_TOPICS: dict[str, str] = {w: topic for topic, words in _TOPIC_WORDS.items() for w in words.split()}
#: topics of which one holds several values ("I do yoga" and "I play chess", two dogs): a later
#: passage supersedes an older one only when it names what it replaces ("I replaced yoga with swimming")
_MANY = frozenset({"pastime", "pet"})
_FAVOURITE = re.compile(r"\bfavou?rite\s+(\w+)", re.IGNORECASE)
_AUX = frozenset({"does", "do", "is", "are", "'s", "’s"})
_WORDS = re.compile(r"[A-Za-z][\w'’-]*")
#: the question is about the past, or a time it names: its answer need not be the newest
_PAST = re.compile(
    r"\b(did|didn't|was|wasn't|were|weren't|had|used to|before|earlier|previous(ly)?|former(ly)?|"
    r"originally|initially|at first|first|ago|last|until|back then|(?:19|20)\d\d)\b",
    re.IGNORECASE)
#: the question's form: a wh-word with a present-tense verb, or a present yes/no question
_NOW_FORM = re.compile(
    r"^\W*(?:(?:what|where|which|who|whom|whose)\b[^?]*?\b(?:does|do|is|are|'s|’s)\b|(?:does|do|is|are)\b|"
    r"(?:what|which|who)\s+[a-z]+s\s+[A-Z][\w-]*['’]s?\s)",
    re.IGNORECASE)
#: a plan, a wish, a possibility, a count or a list: not the one value that holds now
_NOT_NOW = re.compile(
    r"\b(will|would|could|should|can|might|may|plan\w*|going to|want\w*|wish\w*|hope\w*|intend\w*|"
    r"potential\w*|like to|think\w*|feel\w*|how many|how much|how often|some|several|all|other than|besides|"
    r"activities|things|ways|kinds|types|ideas|when)\b",
    re.IGNORECASE)
#: words that say a state changed: a later passage with one of these that names what an earlier
#: one said ("stole the Trek, so I bought …") answers the same question
_CHANGE = re.compile(
    r"\b(switch\w*|mov(e|ed|ing)|relocat\w*|chang\w*|replac\w*|instead|now|anymore|any more|no longer|"
    r"stopp?\w*|quit\w*|gave up|give up|left|leav\w*|sold|sell\w*|bought|buy\w*|start\w*|took up|"
    r"join\w*|new|these days|nowadays|since|stole|lost|broke|ended|retired|promoted|upgraded|picked up|got|"
    r"totall?ed|written off|wrote off|crashed|died|passed away|is over|no more|cancell?ed|registered|"
    r"transferred|signed up|lapsed?)\b",
    re.IGNORECASE)
#: a plan, a wish or a possibility ("I'm thinking of moving to Toronto", "might switch to Three", "I'd
#: love a Polestar one day") with no change that happened: it says nothing of what holds now
_PLANNED = re.compile(
    r"\b(thinking (?:about|of)|considering|plan(?:s|ning)? to|going to|gonna|might|maybe|someday|one day|"
    r"would (?:love|like)|['’]d (?:love|like)|wants? to|hop(?:e|es|ing) to|if (?:i|we|he|she|they)|should (?:i|we))\b",
    re.IGNORECASE)
_HAPPENED = re.compile(
    r"\b(moved|relocated|switched|changed|left|joined|bought|sold|started|quit|stopped|gave up|took up|got|"
    r"transferred|replaced|retired|adopted|signed up|cancell?ed)\b", re.IGNORECASE)
#: a passage that only adds to what holds ("also", "another", "a second") supersedes nothing
_ADDITIVE = re.compile(r"\b(also|another|second|third|too|as well|in addition|added|adopted another)\b",
                       re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i’m|i've|i’ve|i'd|i'll|me|my|mine|myself|we|we're|we've|our|us)\b",
                           re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][\w'’-]+")


def _topic(word: str) -> str | None:
    word = re.sub(r"['’]s$", "", word.casefold())
    return _TOPICS.get(word) or (_TOPICS.get(word[:-1]) if len(word) > 3 and word.endswith("s") else None)


def topics_of(text: str) -> set[str]:
    """The one-value topics ``text`` speaks of ("favourite band" is its own topic)."""
    found = {t for w in _WORDS.findall(text) if (t := _topic(w))}
    found |= {"favourite:" + light_stem(m.casefold()) for m in _FAVOURITE.findall(text)}
    return found


def asks_now(question: str) -> bool:
    """A present-tense question for the one value a state has now: "Where does Maya live?",
    "What is Dev's diet?", "Does Ben ride a Brompton?". Not one about the past, a plan or what
    might be ("does she want to live"), nor one asking for several things ("what activities",
    "how many")."""
    if _PAST.search(question) or _NOT_NOW.search(question) or not _NOW_FORM.search(question):
        return False
    return bool(asked_topics(question))


def asked_topics(question: str) -> set[str]:
    """The topics of what a question asks for: the words of its wh-phrase ("what *bike* does",
    "which *football club* does") and the word after its subject ("where does Maya *live*",
    "what is Dev's *diet*", "is Deborah *married*"), not every word it says ("the bench near
    her house" asks about a bench). A favourite in the plural ("favorite books") is several."""
    words = _WORDS.findall(question.split("?")[0])
    aux = next((i for i, w in enumerate(words) if w.casefold() in _AUX), None)
    if aux is None:  # "Who provides Gideon's internet?": what the possessive owns
        owned = next((i for i, w in enumerate(words) if re.search(r"['’]s?$", w) and w[:1].isupper()), None)
        return topics_of(" ".join(words[owned + 1: owned + 3])) if owned is not None else set()
    asked = words[1:aux] if aux > 0 else []
    rest = words[aux + 1:]
    subject = 0
    while subject < len(rest) and (rest[subject][:1].isupper() or rest[subject].casefold() in ("and", "his", "her",
                                                                                               "their", "my")):
        subject += 1
    if subject:
        possessive = re.search(r"['’]s?$", rest[subject - 1]) is not None
        asked += rest[subject: subject + (2 if possessive else 1)]
    text = " ".join(asked)
    favourite = [m for m in _FAVOURITE.findall(question) if not m.casefold().endswith("s")]
    return topics_of(text) - {t for t in topics_of(text) if t.startswith("favourite:")} | {
        "favourite:" + light_stem(m.casefold()) for m in favourite}


def names_in(text: str) -> set[str]:
    """Capitalised words that are names (not the first word of a sentence, not "I")."""
    out = set()
    for match in _NAME.finditer(text):
        word = re.sub(r"['’]s$", "", match.group()).casefold()
        before = text[: match.start()].rstrip()
        if word in STOP_WORDS or word == "i" or not before or before[-1] in ".!?:\"“":
            continue
        out.add(word)
    return out


def _values(text: str, topics: set[str]) -> set[str]:
    """What a passage names that could be the value of one of ``topics``: its names and the
    words of those topics ("Trek", "yoga"; not the "work" of "a bike to work" for a bike)."""
    return names_in(text) | {w.casefold() for w in _WORDS.findall(text) if _topic(w) in topics}


def _body(text: str, memory: Memory) -> str:
    """A passage without its "Speaker: " prefix (message turns are chunked with it)."""
    speaker = memory.speaker or ""
    if speaker and text.startswith(speaker + ":"):
        return text[len(speaker) + 1:].lstrip()
    return text


def _subjects(body: str, memory: Memory) -> set[str]:
    """Who a passage speaks about: the names it says, and its speaker when it says "I"."""
    out = {re.sub(r"['’]s$", "", w).casefold() for w in _WORDS.findall(body) if w[:1].isupper() and w != "I"}
    if memory.speaker and _FIRST_PERSON.search(body):
        out |= {part.casefold() for part in memory.speaker.split()}
    return out


def passage_current(memory: Memory, facts: Iterable[Fact], at: dt.datetime) -> bool:
    """Whether nothing later supersedes what a passage of ``memory`` states, at ``at``: the
    memory is not superseded and was said by then, and no fact it states was closed (by
    then) after it was said."""
    if memory.status == "superseded" or memory.valid_at > at:
        return False
    for fact in facts:
        if fact.valid_at > at:
            continue  # a fact that begins later closes nothing yet
        ended = fact.invalid_at if fact.invalid_at is not None and fact.invalid_at <= at else None
        expired = fact.expired_at if fact.expired_at is not None and fact.expired_at <= at else None
        if ended is not None and ended > memory.valid_at:
            return False  # true when said, ended since
        if expired is not None and ended is None and expired > memory.created_at:
            return False  # retracted or superseded later
    return True


@dataclass
class _Member:
    hit: Hit
    said: dt.datetime
    body: str
    additive: bool


def settle(
    hits: Sequence[Hit],
    memories: Mapping[str, Memory],
    facts_of: Mapping[str, Sequence[Fact]],
    *,
    question: str,
    at: dt.datetime,
    now_question: bool,
    subjects: set[str],
) -> None:
    """Set ``current`` on the passage hits (chunk, memory) and, for a present-tense question
    about a state (``now_question``), let the newest evidence of each group lead and rank the
    older as history. ``facts_of`` maps a memory id to the facts it states; ``subjects`` are
    the names (casefolded) the question is about (empty: anyone); a passage is about one when
    it says every word of it ("Alice Novak" is not "Eve Novak"). Scores change in place; the
    caller sorts."""
    for hit in hits:
        if hit.kind in ("chunk", "memory") and hit.memory_ids and hit.memory_ids[0] in memories:
            hit.current = passage_current(memories[hit.memory_ids[0]], facts_of.get(hit.memory_ids[0], ()), at)
    if not now_question:
        return
    asked = asked_topics(question)
    candidates: list[_Member] = []
    for hit in hits:
        memory = memories.get(hit.memory_ids[0]) if hit.memory_ids else None
        if memory is None:
            continue
        body = _body(hit.text, memory)
        if hit.kind == "fact" and hit.relation:  # a fact's relation names its topic ("has_role")
            body = f"{body} ({hit.source} {hit.relation.replace('_', ' ')} {hit.target})"
        # a passage is also about whom the facts its memory states are about ("New car: a Hyundai
        # Kona", said by Oscar, states Oscar owns it; "Tom moved to Paris", said by Oscar, is Tom's)
        about = _subjects(body, memory) | {part.casefold() for f in facts_of.get(memory.id, ())
                                           for part in f.source.split()}
        if subjects and not any(set(name.split()) <= about for name in subjects):
            continue
        if hit.kind != "fact" and _PLANNED.search(body) and not _HAPPENED.search(body):
            continue  # a plan answers no question about what holds now
        said = memory.valid_at if hit.kind != "fact" or hit.valid_at is None else max(memory.valid_at, hit.valid_at)
        candidates.append(_Member(hit, said, body, bool(_ADDITIVE.search(body))))
    group = [c for c in candidates if topics_of(c.body) & asked]
    # a later change statement that names what a member said joins the group
    parts = {part for name in subjects for part in name.split()}
    names = set().union(*(_values(c.body, asked) for c in group)) - parts if group else set()
    for c in candidates:
        if c in group or not _CHANGE.search(c.body):
            continue
        if _values(c.body, asked) & names and any(c.said > g.said for g in group):
            group.append(c)
    if len(group) < 2:
        return
    latest = max(c.said for c in group)
    newest = max((c for c in group if c.said == latest), key=lambda c: c.hit.score)
    if newest.additive or all(c.said == latest for c in group):
        return
    if asked <= _MANY:  # several values hold at once: only what the newest names is replaced
        named = _values(newest.body, asked) - parts
        if not _CHANGE.search(newest.body):
            return
        group = [c for c in group if c is newest or c.said == latest or _values(c.body, asked) & named]
        if len(group) < 2:
            return
    best = max(c.hit.score for c in group)
    newest.hit.score = max(newest.hit.score, best * 1.000001 + 1e-9)
    # the older stay where they ranked, below the newest: demoting them further measured worse
    # on LoCoMo (evidence a question needs besides the newest fell out of the top 5)
    for c in group:
        if c.said < latest:
            if c.hit.kind != "fact":
                c.hit.current = False
                c.hit.superseded_by = newest.hit.memory_ids[0] if newest.hit.memory_ids else None


#: the words of change strong enough to set an open fact aside ("I started a new project at
#: work" changes no employer)
_CHANGED = re.compile(
    r"\b(switch\w*|moved|relocat\w*|chang\w*|replac\w*|instead|now|anymore|any more|no longer|stopp\w*|"
    r"quit\w*|gave up|given up|left|sold|bought|took up|these days|nowadays|retired|broke up|divorced|"
    r"since)\b",
    re.IGNORECASE)


def contradicted(facts: Sequence[Fact], evidence: Sequence[Hit], memories: Mapping[str, Memory],
                 at: dt.datetime, may_change: Callable[[Memory, Fact], bool] | None = None) -> dict[str, dt.datetime]:
    """The open facts a later passage among ``evidence`` says have changed, with when it was
    said: a passage about the fact's subject, of the fact's one-value topic (read from its
    relation and value: "lives_in", "is pescatarian"), said after the fact began, with a word
    of change ("I moved to Montreal" for "Maya lives in Toronto"). The context block shows such
    a fact as history even when extraction did not close it; a passage that only adds, or one
    of the memories that state the fact, changes nothing; nor does one ``may_change`` refuses
    (authority: a source that could not close the fact cannot show it as changed either)."""
    out: dict[str, dt.datetime] = {}
    passages = []
    for hit in evidence:
        memory = memories.get(hit.memory_ids[0]) if hit.memory_ids else None
        if hit.kind == "fact" or memory is None or memory.valid_at > at:
            continue
        body = _body(hit.text, memory)
        if _CHANGED.search(body) and not _ADDITIVE.search(body):
            passages.append((memory, body, topics_of(body), _subjects(body, memory)))
    for fact in facts:
        topics = topics_of(f"{fact.relation.replace('_', ' ')} {fact.target}") - _MANY
        name = set(fact.source.casefold().split())
        for memory, _body_text, said, about in passages:
            if memory.id in fact.memory_ids or memory.valid_at <= fact.valid_at:
                continue
            if may_change is not None and not may_change(memory, fact):
                continue
            if topics & said and name <= about:
                out[fact.id] = min(out.get(fact.id, memory.valid_at), memory.valid_at)
    return out
