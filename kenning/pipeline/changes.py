"""Change statements: a value that changed ends the open value of that relation (docs/architecture.md, "Time").

"I switched to coffee", "we moved from Graz to Vienna", "I no longer play tennis", "I sold the
Civic and bought a Tesla": each says that what held for a subject stopped holding and (mostly)
what holds now. Two halves, both pure:

- **reading** (offline extractor): ``read_change`` finds the change markers of a clause ("now",
  "anymore", "no longer", "switched", "moved", "replaced", "left", "quit", "stopped", "gave up",
  "used to", "sold", "stole", "these days", "instead", corrections "B, not A") and says what the
  clause states once the marker is read: the new value (``changes``), the old one (``ends``,
  ``old``), or a plan (``future``: "I'm moving to Berlin next month" closes nothing). The
  extractor parses the rewritten clause with its ordinary rules, so every sentence shape it
  knows can be changed, ended or corrected; the marker list is data, not a rule per sentence.
- **closing** (commit): a fact marked ``changes`` ends, at its start, every open fact of the same
  subject that holds the same *slot*: the same single-valued relation (the store's contradiction
  rule), or a relation of the preference/possession family (likes, prefers, drinks, owns, uses,
  practices, plays …) whose value is of the same *kind* ("coffee" and "tea" are drinks, "iPhone
  15" and "Pixel 7" phones, "Trek road bike" and "Brompton" bikes). An ending ("gave up coffee",
  "someone stole the Trek") closes the open fact of that family whose value it names, even when
  the stored value's name is longer ("Trek" ends "Trek road bike").

The model path reaches the same facts: its extraction schema has the same ``changes`` flag, and
the store applies the same closing to it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..text import normalize_name
from .literals import gate

__all__ = [
    "FAMILY",
    "GERUNDS",
    "Change",
    "category_of",
    "changed_by",
    "ended_by",
    "kind_relation",
    "read_change",
    "replaces",
    "tidy_value",
    "value_names",
    "without_now",
]

# -- kinds of value: what a change of one value replaces -------------------------------------

_KINDS: dict[str, str] = {
    **dict.fromkeys(
        "coffee tea espresso latte lattes cappuccino cappuccinos americano macchiato mocha decaf "
        "matcha chai water juice wine beer beers ale lager stout cider whisky whiskey bourbon vodka "
        "gin rum tequila sake soda sodas cola coke pepsi kombucha milk cocoa lemonade smoothie "
        "smoothies mate rooibos cocktails mocktails oolong sencha kefir grey".split(), "drink"),
    **dict.fromkeys(
        "yoga pilates swimming swim running jogging cycling biking climbing bouldering hiking "
        "tennis squash badminton football soccer basketball volleyball baseball rugby cricket "
        "hockey boxing karate judo taekwondo kickboxing crossfit weightlifting lifting gym rowing "
        "surfing skiing snowboarding skating dancing ballet salsa fencing archery triathlon "
        "triathlons spinning zumba sailing kayaking padel netball lacrosse parkour aerobics "
        "calisthenics marathons marathon jiu-jitsu jiujitsu golf".split(), "sport"),
    **dict.fromkeys(
        "pottery ceramics painting drawing knitting crocheting crochet sewing woodworking "
        "gardening baking photography chess guitar piano violin cello drums singing sketching "
        "embroidery quilting calligraphy origami scrapbooking".split(), "craft"),
    **dict.fromkeys(
        "iphone pixel galaxy android smartphone phone oneplus nokia blackberry xperia motorola "
        "huawei xiaomi fairphone".split(), "phone"),
    **dict.fromkeys(
        "car civic tesla prius corolla camry volvo bmw audi mercedes toyota honda ford mustang "
        "jeep subaru mazda kia hyundai nissan volkswagen vw peugeot renault fiat skoda porsche "
        "ferrari lexus chevy chevrolet suv sedan hatchback minivan pickup polestar rivian "
        "outback rav4 yaris".split(), "car"),
    **dict.fromkeys(
        "bike bicycle e-bike ebike trek brompton cannondale scooter motorbike motorcycle vespa "
        "ducati harley".split(), "bike"),
    **dict.fromkeys(
        "laptop macbook thinkpad chromebook notebook".split(), "laptop"),
    **dict.fromkeys(
        "vegan vegetarian pescatarian pescetarian keto paleo flexitarian carnivore".split(), "diet"),
    **dict.fromkeys(
        "english french spanish german italian portuguese dutch swedish norwegian danish finnish "
        "polish russian ukrainian greek turkish arabic hebrew persian farsi hindi urdu bengali "
        "punjabi tamil mandarin cantonese chinese japanese korean thai vietnamese indonesian malay "
        "tagalog swahili czech hungarian romanian catalan welsh irish latin esperanto "
        "icelandic".split(), "language"),
    **dict.fromkeys(
        "university universidad universitat college school academy institute polytechnic uni "
        "conservatory".split(), "school"),
    **dict.fromkeys("gym fitness leisure".split(), "gym"),
}  # fmt: skip
#: the relation a value of each kind is said with when the text names no verb ("gave up coffee")
_KIND_RELATION = {
    "drink": "drinks", "sport": "practices", "craft": "practices", "phone": "owns", "car": "owns",
    "bike": "owns", "laptop": "owns", "diet": "has_diet", "language": "learns", "school": "studied_at",
    "gym": "member_of",
}  # fmt: skip
#: relations that say what a subject likes, has or does: one value of a kind at a time once a
#: change is stated (a change of phone closes the old phone, not the bike)
FAMILY = frozenset(
    "likes prefers drinks eats loves enjoys owns uses drives rides practices plays has_hobby "
    "has_diet avoids learns studied_at member_of supports has_pet".split()
)


#: activities one "does" ("I do yoga"), for the offline extractor
ACTIVITIES = frozenset(word for word, kind in _KINDS.items() if kind in {"sport", "craft"} and len(word) > 3)
#: languages one learns ("I'm taking Greek classes"), for the offline extractor
LANGUAGES = frozenset(word for word, kind in _KINDS.items() if kind == "language")


def category_of(name: str) -> str | None:
    """The kind of a value, from its words (the last word that has one): "green tea" is a
    drink, "Trek road bike" a bike, "my pottery classes" a craft; None when unknown."""
    kind = None
    for word in normalize_name(name).split():
        kind = _KINDS.get(word, kind)
        if kind is None and word.endswith("s"):
            kind = _KINDS.get(word[:-1], kind)
        if kind is None and len(word) > 5 and word.endswith("gym"):
            kind = "gym"  # "PureGym", "TrueGym": a gym by its name's last part
    return kind


def kind_relation(name: str, default: str = "prefers") -> str:
    """The relation a value is held with when the text states no verb."""
    return _KIND_RELATION.get(category_of(name) or "", default)


#: kinds of value a subject has one of at a time: a new phone, car, bike, laptop, diet or usual
#: drink replaces the old one even when the text says no change word ("I got an iPhone 14")
ONE_AT_A_TIME = frozenset({"phone", "car", "bike", "laptop", "diet", "drink"})
_HOLDING = frozenset({"owns", "uses", "drives", "rides", "drinks", "prefers", "has_diet"})
_ADDED = re.compile(r"\b(?:also|another|second|too|as\s+well|both|spare|extra|more|other|plus|work\s+phone)\b",
                    re.IGNORECASE)


def one_of_a_kind(relation: str, value: str, sentence: str) -> bool:
    """A fact that replaces the subject's value of its kind without a change word: holding a
    phone, car, bike, laptop, diet or usual drink, unless the sentence adds one ("also",
    "another", "a second")."""
    return (relation in _HOLDING and category_of(value) in ONE_AT_A_TIME
            and not _ADDED.search(sentence))


#: relations held at one place at a time once a change is stated: a school, a gym (a new value
#: of no known kind ends the old one; one of a known kind ends only the same kind)
ONE_PLACE = frozenset({"studied_at", "member_of"})


def replaces(relation: str, value: str, old_relation: str, old_value: str, single: bool) -> bool:
    """Whether a new (relation, value) stated as a change ends an open (old_relation, old_value)
    of the same subject: the same single-valued relation with another value, or relations of
    the family holding values of the same kind."""
    if normalize_name(value) == normalize_name(old_value):
        return False
    if old_relation == relation and single:
        return True
    if old_relation != relation and (not ({old_relation, relation} <= FAMILY) or ONE_PLACE & {old_relation, relation}):
        return False  # a new gym ends the old gym, not the sport its name says ("The Climbing Hangar")
    kind = category_of(value)
    if kind is None and old_relation == relation in ONE_PLACE:
        return True  # "I moved universities, I'm at UCL now": UCL's kind unsaid, the place is one
    return kind is not None and kind == category_of(old_value)


def names_value(ended: str, stored: Iterable[str]) -> bool:
    """Whether an ending's value names a stored value: the same name, or its words inside the
    stored name in order ("Trek" names "Trek road bike", "the Civic" names "Honda Civic")."""
    want = normalize_name(ended).split()
    if not want:
        return False
    for name in stored:
        have = normalize_name(name).split()
        if any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)):
            return True
        if len(want) == 1 and want[0] in KIND_NOUNS and category_of(name) == _KINDS[want[0]]:
            return True  # "my phone died" ends the iPhone 15: the thing named by its kind
        if len(want) == 1 and want[0].endswith("ing") and len(stem := want[0][:-3]) >= 4 and \
                any(word.startswith(stem) for word in have):
            return True  # "quit teaching" ends "teacher": the work named by its doing
    return False


#: the words that name a kind of thing held one at a time, not a thing itself ("my phone")
KIND_NOUNS = frozenset("phone smartphone car laptop bike bicycle e-bike motorbike motorcycle scooter".split())


def value_names(names: dict[str, list[str]], entity_id: str) -> list[str]:
    return names.get(entity_id, [])


# -- reading change statements ---------------------------------------------------------------

#: capitalised words that start a sentence but name nobody ("Might switch to Three", "Maybe I'll …")
NOT_A_SUBJECT = r"(?!(?:Might|Maybe|Perhaps|Possibly|Probably|Could|Would|Should|Must)\b)"
_SUBJ = rf"(?P<s>(?i:i|we|he|she|they)|{NOT_A_SUBJECT}[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){{0,2}})"
#: "I no longer play tennis", "I've stopped playing tennis", "I quit smoking", "I gave up coffee"
_STOPPED = re.compile(
    _SUBJ + r"\s+(?:(?:has|have|had)\s+)?(?:(?:just|finally|recently|also)\s+)?"
    r"(?P<m>no\s+longer|stopped|quit|(?:gave|given)\s+up(?:\s+on)?|dropped|ditched|cut\s+out|paused|put\s+aside)\s+(?P<rest>.+)",
    re.DOTALL,
)
#: "I don't play tennis anymore", "I'm not vegetarian any more"
_ANYMORE = re.compile(
    _SUBJ + r"\s+(?P<neg>(?:do|does|did)\s+not|don't|doesn't|didn't|(?:am|is|are)\s+not|"
    r"isn't|aren't|(?:has|have)\s+not|haven't|hasn't)\s+(?P<rest>.+?)\s*,?\s+(?:anymore|any\s+more)"
    r"(?P<tail>[\s,;:.!?].*)?",
    re.DOTALL,
)
#: "I used to play tennis", "I used to be vegetarian", "my manager used to be Tom"
_USED_TO = re.compile(_SUBJ + r"\s+used\s+to\s+(?P<rest>.+)", re.DOTALL)
_POSSESSED_USED_TO = re.compile(
    r"(?P<p>(?i:my|his|her|their|our)|[A-Z][\w'’.-]*['’]s)\s+(?P<slot>(?:[a-z][\w-]*\s+){0,2}?"
    r"[a-z][\w-]*)\s+used\s+to\s+be\s+(?P<o>.+)",
    re.DOTALL,
)
#: "I cancelled my gym membership", "I ended my Netflix subscription": what it was held by ends
_CANCELLED = re.compile(
    _SUBJ + r"\s+(?:(?:has|have|had)\s+)?(?:(?:just|finally|recently|also|eventually)\s+)?"
    r"(?:cancell?ed|ended|terminated|stopped|quit|gave\s+up)\s+(?:my|our|his|her|their|the)\s+"
    r"(?P<o>.+?)\s+(?P<what>membership|subscription)(?:\s+(?:at|with|to)\s+(?P<o2>.+?))?",
    re.DOTALL,
)
#: "I let my Gym Group membership lapse", "let the subscription run out"
_LAPSED = re.compile(
    _SUBJ + r"\s+(?:(?:has|have|had)\s+)?(?:(?:just|finally|recently|also|eventually)\s+)?let\s+(?:my|our|his|her|their|the)\s+"
    r"(?:(?P<o>.+?)\s+)?(?P<what>membership|subscription)(?:\s+(?:at|with|to)\s+(?P<o2>.+?))?\s+"
    r"(?:lapse|expire|run\s+out|go)(?:\s+(?:at|with)\s+(?P<o3>.+?))?",
    re.DOTALL,
)
#: what a membership, a subscription or an account is held by ("moved my account from HSBC to Monzo")
_HELD_BY = {"membership": "member_of", "subscription": "uses", "account": "banks_with"}
#: "I sold the Civic", "I lost my phone", "someone stole the Trek", "my bike was stolen"
_LOST = re.compile(
    _SUBJ + r"\s+(?:(?:has|have|had)\s+)?(?:(?:just|finally|recently|also|eventually)\s+)?(?:sold|lost|crashed|totall?ed|wrecked|"
    r"got\s+rid\s+of|gave\s+away|traded\s+in|returned|scrapped)\s+(?P<o>.+)",
    re.DOTALL,
)
#: "the Skoda got written off in a crash", "my laptop died last week", "the Peugeot broke down on
#: the motorway": a thing named by its owner's words ended, whatever adjunct follows
_STOLEN = re.compile(
    r"(?:(?i:someone|somebody|a\s+thief|thieves|they)\s+(?:stole|nicked|took)\s+(?P<o>.+)|"
    r"(?P<o2>(?i:my|the|our)\s+[^,;]+?|[A-Z][\w'’-]+)\s+(?:(?:finally|just|recently|completely)\s+)?(?:(?:(?:was|got|has\s+been|"
    r"had\s+been)\s+(?:stolen|nicked|totall?ed|written\s+off|destroyed|sold|scrapped|wrecked|towed\s+away))|"
    r"died|passed\s+away|broke(?:\s+down)?|gave\s+up\s+the\s+ghost|conked\s+out|packed\s+(?:in|up))"
    r"(?:\s+(?:in|by|during|after|at|on|last|this|yesterday|for|when|while|beyond|and)\b.*)?)",
    re.DOTALL,
)
#: "padel is over for me", "no more skiing", "I cancelled Megatlon": an ending said of the value itself
_OVER = re.compile(
    r"(?:[^,;:]*[,;:]\s*)?(?:(?i:so|and|but)\s+)?(?:(?i:no\s+more)\s+(?P<o>[^,;]+?)|"
    r"(?P<o2>[^,;]+?)\s+(?:is|was)\s+over(?:\s+for\s+(?:me|us))?|"
    r"(?P<s>(?i:i|we))\s+(?:(?:have|has)\s+)?(?:just\s+)?cancell?ed\s+(?P<o3>[A-Z][^,;]*?))"
    r"(?:\s+(?:for\s+me|now|too|then))?\s*[.!]?",
    re.DOTALL,
)
#: "I replaced yoga with swimming", "I swapped tea for coffee", "I traded my Civic for a Tesla"
_REPLACED = re.compile(
    _SUBJ + r"\s+(?:(?:have|has|had)\s+)?(?:(?:just|finally|recently|also|eventually)\s+)?"
    r"(?:replaced|swapped|traded(?:\s+in)?|exchanged|substituted)\s+"
    r"(?P<old>.+?)\s+(?:with|for)\s+(?P<new>.+)",
    re.DOTALL,
)
#: "I switched from tea to coffee" (the offline rules read some of these themselves)
_FROM_TO = re.compile(
    _SUBJ + r"\s+(?:(?:have|has|had)\s+)?(?:(?:just|recently|finally)\s+)?"
    r"(?:switched|changed|moved|went|converted|upgraded|downgraded|transferred)"
    r"(?:\s+(?:my|our|his|her|their)\s+(?:[a-z]+\s+)?(?P<what>account|membership|subscription))?\s+from\s+(?P<old>.+?)\s+to\s+"
    r"(?P<new>.+)",
    re.DOTALL,
)
_SWITCHED_TO = re.compile(
    _SUBJ + r"\s+(?:(?:have|has|had)\s+)?(?:(?:just|recently|finally|also)\s+)?"
    r"(?:switched|changed|converted|upgraded|downgraded|moved\s+on|transferred)\s+(?:over\s+)?to\s+(?P<new>.+)",
    re.DOTALL,
)
#: "these days it's mostly tea", "now it's Sara", "it's green tea for me now"
_ITS = re.compile(
    r"(?:(?i:these\s+days|nowadays|now)\s*,?\s+)?(?i:it\s+is|it's|it’s)\s+(?:(?:mostly|all|just|"
    r"only|usually)\s+)?(?P<new>.+?)(?:\s+(?:for\s+(?:me|us|him|her|them)))?(?:\s*,?\s+(?:now|these\s+days|"
    r"nowadays|instead))?\s*[.!]?$",
    re.DOTALL,
)
#: "I'm focusing on my pottery classes now", "I'm into climbing these days"
_FOCUS = re.compile(
    _SUBJ + r"\s+(?:am|is|are|have\s+been|has\s+been)\s+(?:(?:mostly|mainly|really)\s+)?"
    r"(?:focusing|focussing|concentrating)\s+on\s+(?P<new>.+)",
    re.DOTALL,
)
#: "… B, not A" / "… B (not A)" / "… B rather than A": a correction
_NOT = re.compile(r"(?P<main>.+?)\s*(?:,|\(|—|–|-)\s*(?:and\s+)?(?:not|rather\s+than|instead\s+of)\s+"
                  r"(?P<old>[^,;()]+?)\s*\)?\s*[.!]?$", re.DOTALL)
_NOT_A_B = re.compile(r"(?i:not)\s+(?P<old>[^,;]+?)\s*(?:,|;)\s*(?:but\s+)?(?P<main>.+)$", re.DOTALL)
#: words that say the value is new ("I now work at B", "I live in Lyon now", "I'm vegan these days")
_NOW = re.compile(r"\b(?:now|these\s+days|nowadays|instead|anymore|any\s+more|from\s+now\s+on)\b",
                  re.IGNORECASE)
_NOW_AT_END = re.compile(r"\s*,?\s+(?:now|these\s+days|nowadays)\s*[.!]?$", re.IGNORECASE)
#: a plan, not a change: "I'm moving to Berlin next month", "I will switch to Android"
_FUTURE = re.compile(
    r"\b(?:will|shall|won't|(?:am|is|are|['’]m|['’]re|['’]s)\s+(?:not\s+)?(?:going\s+to|gonna)|about\s+to|"
    r"plan(?:s|ning|ned)?\s+to|intend(?:s|ing)?\s+"
    r"to|hope\s+to|want\s+to|would\s+like\s+to|next\s+(?:week|month|year|spring|summer|autumn|fall|"
    r"winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow|soon|later\s+this|"
    r"in\s+(?:a|an|one|two|three|four|five|six|\d+)\s+(?:days?|weeks?|months?|years?)|"
    r"thinking\s+(?:about|of)|considering|might|maybe|perhaps|possibly)\b",
    re.IGNORECASE,
)
#: every word some change shape above needs (a cheap gate before trying them)
_MARKER = re.compile(
    r"\b(?:no\s+longer|stopped|quit|gave|given|dropped|ditched|cut|anymore|any\s+more|used\s+to|sold|"
    r"lost|crashed|totall?ed|wrecked|rid|traded|returned|scrapped|stole|nicked|took|stolen|written|"
    r"destroyed|died|passed|broke|conked|packed|paused|aside|more|over|"
    r"replaced|swapped|exchanged|substituted|switched|changed|moved|went|converted|upgraded|"
    r"cancell?ed|ended|terminated|transferred|let|"
    r"downgraded|focus\w*|concentrating|not|rather|instead|now|these\s+days|nowadays)\b",
    re.IGNORECASE,
)
#: cheap tests before the two searches every clause pays (``literals.gate``)
_MAY_BE_FUTURE, _MAY_BE_MARKED = gate(_FUTURE), gate(_MARKER)
_PROGRESSIVE = re.compile(r"\b(?:am|is|are)\s+(?:[a-z]+ly\s+)?[a-z]+ing\b", re.IGNORECASE)
#: leading and trailing words that are no part of a value ("now a software tester", "tea lately")
_VALUE_EDGES = re.compile(
    r"^(?:(?:now|currently|also|fully|completely|strictly|mostly|officially|old|trusty|beloved)\s+)+|"
    r"(?:\s*,?\s+(?i:now|lately|recently|these\s+days|nowadays|anymore|any\s+more|mostly|instead|"
    r"again|too|for\s+(?:me|us|him|her|them)|at\s+the\s+moment|completely|entirely|altogether|for\s+good|though|"
    r"for\s+now|almost|nearly|once|twice|(?:two|three|four|five|\d+)\s+times|"
    # a time said in words no date reading takes ("a Mazda last weekend")
    r"(?:last|this|that)\s+(?:weekend|week|month|year|night|morning|afternoon|evening|spring|summer|"
    r"autumn|fall|winter)|yesterday|today|earlier|a\s+(?:while|few\s+\w+)\s+ago))+$"
)
#: what follows an ending to say what holds instead: ", just green tea", "; only water now"
_THEN = re.compile(r"\s*[,;:—–-]?\s*(?:(?:but|and)\s+)?(?:just|only|mostly|now)\s+(?P<new>[^,;]+?)\s*[.!]?",
                   re.IGNORECASE | re.DOTALL)
_INSTEAD = re.compile(r"(?P<old>[^,;]+?)\s*[,;:—–-]\s*(?:(?:but|and)\s+)?(?:just|only|mostly|now)\s+(?P<new>[^,;]+?)\s*[.!]?",
                      re.IGNORECASE | re.DOTALL)
#: an adjunct after an ended value: "gave up tennis after my knee injury", "… because of my back"
_ADJUNCT = re.compile(r"\s+(?:after|because|due\s+to|following|when|once|as\s+soon\s+as|since)\s+.*$",
                      re.DOTALL)
_GERUND = re.compile(r"^(?P<v>[a-z]+)ing\b")
_GERUND_OBJECT = re.compile(r"(?P<v>[a-z]+ing)\s+(?P<o>\S.*)", re.DOTALL)
#: the relation each doing is held by ("stopped eating fish": eats; "started learning German": learns)
GERUNDS = {
    "eating": "eats", "drinking": "drinks", "playing": "plays", "using": "uses", "driving": "drives",
    "riding": "rides", "doing": "practices", "practising": "practices", "practicing": "practices",
    "following": "supports", "supporting": "supports", "learning": "learns", "studying": "learns",
}
_E_VERBS = frozenset("us liv driv rid mak tak hav danc bak hik cycl skat serv writ shar danc".split())


@dataclass(frozen=True, slots=True)
class Change:
    """What a clause says once its change marker is read.

    ``text``: the clause for the extractor's rules (the marker cut: "I play tennis" for "I no
    longer play tennis"); ``ends``: its facts ended (valid until the statement's date);
    ``changes``: its facts are new values that end the open value of their slot; ``old``: a value
    the change names as the one it ends ("from A", "replaced A", "not A"), said with the same
    relation as the new one; ``value``: a bare new or ended value when no rule can read the
    clause ("gave up coffee", "it's green tea now"), with ``subject`` (raw) if the clause names
    one; ``future``: a plan, its facts are no change yet; ``then``: a bare value said to hold
    instead of the ended one ("I don't drink coffee anymore, just green tea").
    """

    text: str
    ends: bool = False
    changes: bool = False
    old: str | None = None
    value: str | None = None
    subject: str | None = None
    future: bool = False
    relation: str | None = None
    then: str | None = None


#: what "it's … now" says when it names a state, not a value ("it's all good now", "it's done")
_NOT_A_VALUE = re.compile(
    r"(?i)(?:[^,;]*[,;]|.*\b(?:by|about|that|when|because)\b|(?:\w+\s+){4,}\w+|(?:all\s+)?(?:good|fine|ok|okay|great|"
    r"sorted|done|over|fixed|better|worse|bad|nice|cool|amazing|awesome|fun|hard|tough|busy|quiet|crazy|"
    r"time|here|there|gone|back|ready|finished|official|true|real|late|early|easy|different|normal|"
    r"weird|perfect|possible|impossible|important|tricky|complicated|[a-z]+ed|[a-z]+ing)\b.*)"
)


def _a_value(text: str) -> bool:
    return not _NOT_A_VALUE.fullmatch(tidy_value(text))


def tidy_value(name: str) -> str:
    """A value without the change words around it: "now a software tester" -> "a software
    tester", "bouldering lately" -> "bouldering"."""
    previous = None
    while previous != name:
        previous, name = name, _VALUE_EDGES.sub("", name).strip()
    return name


def _base_form(rest: str) -> str:
    """ "playing tennis" -> "play tennis", "using Vim" -> "use Vim": what "stopped …" stopped."""
    match = _GERUND.match(rest)
    if not match:
        return rest
    stem = match["v"]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "ls":
        stem = stem[:-1]  # running -> run
    elif stem in _E_VERBS:
        stem += "e"
    return stem + rest[match.end() :]


def is_future(clause: str, valid_at: dt.datetime | None, reference: dt.datetime) -> bool:
    """A plan: a future word, or a progressive ("I'm moving …") with a date after the reference."""
    if _MAY_BE_FUTURE(clause) and _FUTURE.search(clause):
        return True
    return bool(valid_at and valid_at > reference and _PROGRESSIVE.search(clause))


def read_change(clause: str, said: str | None = None) -> Change | None:
    """The change a (tidied, date-free) clause states, or None when it states none; ``said`` is
    the clause as written (tidying cuts a leading "now", "these days")."""
    text = clause.strip()
    said = said or text
    if not text or not _MAY_BE_MARKED(said) or not _MARKER.search(said):
        return None  # most clauses state no change: one search is all they pay
    if match := _LAPSED.fullmatch(text):
        value = match["o3"] or match["o2"] or match["o"]
        if value:
            return Change(text="", ends=True, value=tidy_value(value), subject=match["s"],
                          relation=_HELD_BY[match["what"].casefold()])
    if match := _CANCELLED.fullmatch(text):
        return Change(text="", ends=True, value=tidy_value(match["o2"] or match["o"]), subject=match["s"],
                      relation=_HELD_BY[match["what"].casefold()])
    if match := _STOPPED.fullmatch(text):
        said, then = match["rest"], None
        if instead := _INSTEAD.fullmatch(said):  # "no longer drink coffee, only tea now"
            said, then = instead["old"], tidy_value(instead["new"])
        rest = _base_form(said.strip())
        value = tidy_value(_ADJUNCT.sub("", said))
        gerund = _GERUND_OBJECT.match(value)
        if gerund and gerund["v"].casefold() in GERUNDS:  # "stopped eating fish": fish
            value = gerund["o"]
        return Change(text=f"{match['s']} {rest}", ends=True, value=value, subject=match["s"],
                      relation=GERUNDS.get(gerund["v"].casefold()) if gerund else None, then=then)
    if match := _ANYMORE.fullmatch(text):
        verb = "is" if re.match(r"(?i)(?:am|is|are|isn|aren)", match["neg"]) else ""
        if verb == "is" and match["s"].casefold() == "i":
            verb = "am"
        body = f"{match['s']} {verb} {match['rest']}".replace("  ", " ")
        now = _THEN.fullmatch(match["tail"] or "")  # "… anymore, just green tea": what holds now
        return Change(text=body + ("" if now else match["tail"] or ""), ends=True,
                      value=tidy_value(match["rest"]), subject=match["s"],
                      then=tidy_value(now["new"]) if now else None)
    if match := _POSSESSED_USED_TO.fullmatch(text):
        return Change(text=f"{match['p']} {match['slot']} is {match['o']}", ends=True)
    if match := _USED_TO.fullmatch(text):
        return Change(text=f"{match['s']} {match['rest']}", ends=True)
    if match := _REPLACED.fullmatch(text):
        return Change(text="", changes=True, old=tidy_value(match["old"]),
                      value=tidy_value(match["new"]), subject=match["s"])
    if match := _FROM_TO.fullmatch(text):
        return Change(text=text, changes=True, old=tidy_value(match["old"]), value=tidy_value(match["new"]),
                      subject=match["s"], relation=_HELD_BY.get((match["what"] or "").casefold()))
    if match := _SWITCHED_TO.fullmatch(text):
        return Change(text=text, changes=True, value=tidy_value(match["new"]), subject=match["s"])
    if match := _LOST.fullmatch(text):
        return Change(text=text, ends=True, value=tidy_value(match["o"]), subject=match["s"], relation="owns")
    if (match := _OVER.fullmatch(text)) and len(value := tidy_value(match["o"] or match["o2"] or match["o3"]).split()) <= 3:
        return Change(text="", ends=True, value=" ".join(value), subject=match["s"] or "I")
    if match := _STOLEN.fullmatch(text):
        return Change(text="", ends=True, value=tidy_value(match["o"] or match["o2"]), subject="I", relation="owns")
    if match := _FOCUS.fullmatch(text):
        return Change(text="", changes=True, value=tidy_value(match["new"]), subject=match["s"])
    if (match := _ITS.fullmatch(text)) and _NOW.search(said) and _a_value(match["new"]):
        return Change(text="", changes=True, value=tidy_value(match["new"]))  # "it's tea" alone: nothing
    if (match := _NOT.fullmatch(text)) or (match := _NOT_A_B.fullmatch(text)):
        return Change(text=match["main"], changes=True, old=tidy_value(match["old"]))
    if _NOW.search(said):
        return Change(text=text, changes=True)
    return None


def without_now(text: str) -> str:
    """A clause without a trailing "now" ("I have a Pixel 9 now"), for the rules that end at
    the value; the clause itself when it has none."""
    return _NOW_AT_END.sub("", text) or text


# -- closing (inside the write transaction) --------------------------------------------------

#: relations one ending or change speaks for together: a break-up ends dating, an engagement
#: and a marriage alike; the preference/possession family shares values by kind
_GROUPS = (
    frozenset({"dating", "engaged_to", "married_to", "partner_of", "spouse_of"}),
    frozenset({"works_at", "works_for", "employed_by", "employer"}),
    FAMILY,
)
_SYMMETRIC = _GROUPS[0]


def _group(relation: str) -> frozenset[str]:
    return next((g for g in _GROUPS if relation in g), frozenset({relation}))


def _rows(txn: Any, dataset: str, source_id: str, target_id: str, relations: Iterable[str]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for relation in sorted(relations):
        for row in txn.live_facts_touching(dataset, source_id, target_id, relation):
            rows.setdefault(row.id, row)
    return rows


#: relations an old value named by a change ("from Spanish", "replaced yoga") is never taken
#: to end: what happened once, or who someone is
_NOT_ENDED = frozenset(
    "born_in born_on also_known_as studied_at founded visited attended completed started won lost "
    "plans due_on scheduled_for sibling_of parent_of child_of relative_of grandparent_of "
    "grandchild_of cousin_of standing_instruction acquired".split()
)


def ended_by(txn: Any, dataset: str, source_id: str, target_id: str, relation: str,
             end: dt.datetime, named: bool = False) -> list[Any]:  # fmt: skip
    """Open facts an ending closes when no fact has its exact source, relation and target: the
    same two people in a relation of its group ("broke up" ends "engaged to"), or a value of the
    subject in its group whose name it names ("gave up coffee" ends "drinks coffee", "someone
    stole the Trek" ends "owns Trek road bike"). ``named``: the old value a change named
    ("switched from Spanish to Italian") also ends the subject's other states of that very
    value ("learns Spanish")."""
    group = _group(relation)
    rows = _rows(txn, dataset, source_id, target_id, group | {relation})
    if named:
        group = group | {r.relation for r in rows.values() if r.source_id == source_id
                         and r.target_id == target_id and r.relation not in _NOT_ENDED}
    names = txn.entity_names(sorted({target_id, *(r.target_id for r in rows.values())}))
    ended = names.get(target_id, [])[:1]
    out = []
    for row in rows.values():
        if row.relation not in group or (row.invalid_at is not None and row.invalid_at <= end):
            continue
        pair = {row.source_id, row.target_id} == {source_id, target_id}
        if pair and (row.source_id == source_id or relation in _SYMMETRIC):
            out.append(row)
        elif row.source_id == source_id and ended and names_value(ended[0], names.get(row.target_id, [])):
            out.append(row)
    if relation in _EMPLOYMENT:  # "I left St Mary's": the role said there ends with it
        out += [r for r in roles_at(txn, dataset, source_id, [names.get(r.target_id, []) for r in out])
                if r.valid_at < end]
    return out


def changed_by(txn: Any, dataset: str, source_id: str, target_id: str, relation: str,
               single: bool, stated: bool = True, sentence: str = "") -> list[Any]:  # fmt: skip
    """Open facts a new value ends: stated as a change (``stated``), the subject's other value
    of the same single-valued relation or of the same kind in the relation's family; not
    stated, only the old value of a kind held one at a time (``one_of_a_kind``). A new
    employer, stated or not, also ends the roles said at the employers it ends (``roles_at``)."""
    if relation in _EMPLOYMENT and single:
        return _new_employer(txn, dataset, source_id, target_id, relation, stated)
    if not stated and relation not in _HOLDING:
        return []
    value = (txn.entity_names([target_id]).get(target_id) or [""])[0]
    if not stated and not one_of_a_kind(relation, value, sentence):
        return []
    rows = _rows(txn, dataset, source_id, target_id, _group(relation) | {relation})
    rows = {k: r for k, r in rows.items() if r.source_id == source_id and r.target_id != target_id}
    if not rows:
        return []
    names = txn.entity_names(sorted({r.target_id for r in rows.values()}))
    return [
        row for row in rows.values()
        if replaces(relation, value, row.relation, (names.get(row.target_id) or [""])[0], single and stated)
    ]


def _new_employer(txn: Any, dataset: str, source_id: str, target_id: str, relation: str, stated: bool) -> list[Any]:
    """A new employer ends the old one of its relation (the contradiction rule, and as a change
    when ``stated``); either way the roles said at the employer it ends end with it."""
    rows = _rows(txn, dataset, source_id, target_id, {relation})
    ending = [r for r in rows.values() if r.source_id == source_id and r.target_id != target_id
              and r.relation == relation]
    names = txn.entity_names(sorted({r.target_id for r in ending}))
    roles = roles_at(txn, dataset, source_id, [names.get(r.target_id, []) for r in ending])
    return (ending if stated else []) + roles


_EMPLOYMENT = frozenset({"works_at", "works_for", "employed_by", "employer"})


def roles_at(txn: Any, dataset: str, source_id: str, employers: list[list[str]]) -> list[Any]:
    """Open roles of a subject said at an employer that ends ("I'm a nurse at St Mary's", then
    a new job elsewhere): the role was the job there, and its words name the old employer."""
    wanted = [f" {normalize_name(name)} " for names in employers for name in names[:1] if normalize_name(name)]
    if not wanted:
        return []
    return [row for row in txn.live_facts_touching(dataset, source_id, source_id, "has_role")
            if row.source_id == source_id and row.relation == "has_role" and row.invalid_at is None
            and any(name in f" {normalize_name(row.description)} " for name in wanted)]
