"""The offline extractor: entities and facts from plain English with regular expressions.

No model and no dependency; deterministic and fast (every pattern is precompiled, anchored at a
clause start and bounded, so a clause costs a few dozen failed matches at worst and a 100 kB
memory stays linear).

How a memory is read:

1. lines: a "Speaker:" prefix ("Alice: I just moved to Berlin!") makes "I"/"my" the speaker;
   list bullets are dropped; then sentences, then clauses ("Alice joined Acme in 2019 and left
   in 2021" is two clauses sharing the subject "Alice").
2. each clause: ``dates.find_dates`` gives the stated validity and its date phrases are cut out,
   so "Acme in 2021" never becomes an entity name.
3. the first rule whose pattern matches the clause yields its facts; a clause no rule matches
   yields nothing (precision over recall: no garbage facts).

Choices worth knowing:

- Pronouns: he/she/they resolve to the most recent person subject of the memory, "it" to the
  most recent non-person subject; an unresolvable pronoun drops the clause. "I"/"me"/"my" is the
  speaker, or the entity "User" (person) when there is no speaker prefix. "we"/"our team" is the
  entity "our team" (organization); an imperative "Use X" (as in "Decision: Use X") is
  "our team uses X".
- Ending facts ("Alice left Acme in June 2024", "no longer works at") have ``ends=True``,
  ``valid_at=None`` and ``invalid_at`` = the stated date (None if the text states none). A fact
  whose text states only an end ("worked at Acme until 2021") also has ``ends=True``. An
  undated ending takes the date a later clause of the same sentence states ("left Acme and
  joined Globex on 2024-06-01" ends Acme on 2024-06-01).
  "moved/switched from A to B" yields the new fact plus an ending fact for A at the same date.
- One sentence, several facts: the facts it says keep it as their description; a fact it only
  implies gets its own words ("Bob is the CEO of Acme" says ceo_of and has_role; works_at is
  "Bob works at Acme."), so a hit's text never outlives the fact it shows.
- Types come from, in order: what this memory already established, a small vocabulary
  (well-known technologies, organization suffixes like "Inc" or "University"), then the rule's
  slot ("works at X": X is an organization).
- Capitalised names that appear in no fact are not extracted: nodes without edges add noise,
  and the chunk text stays searchable anyway.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ..models import Usage
from ..dates import find_dates
from ..text import normalize_name
from .extract import ExtractedEntity, ExtractedFact, Extraction, Extractor

__all__ = ["OfflineExtractor"]

# Clauses longer than this are skipped: no single fact needs it, and it bounds the work per
# clause whatever the input looks like.
_MAX_CLAUSE = 400
_MAX_DESCRIPTION = 240

# -- vocabulary

_STOP = (
    r"the|a|an|my|our|your|his|its|their|"
    r"in|at|for|with|from|to|of|on|by|as|and|or|but|since|until|because|which|who|whom|that|"
    r"where|when|while|is|am|are|was|were|be|been|will|would|has|have|had|it|them|him|her|me|us|"
    r"you|this|these|those|than|so|if|about|into|onto|over|under|after|before|during|via|per|"
    r"not|no|called|named|remotely|again|today|now|too|also|still|currently|together|here|"
    r"there|anymore|already|yet|ever|recently|then|instead|every|each"
)
_ROLE_HEADS = (
    r"ceo|cto|cfo|coo|cio|cmo|cpo|ciso|vp|svp|evp|president|vice[\s-]president|director|"
    r"manager|engineer|developer|programmer|designer|scientist|analyst|architect|lead|head|"
    r"intern|consultant|officer|chair(?:man|woman|person)?|professor|lecturer|teacher|"
    r"researcher|accountant|lawyer|attorney|doctor|nurse|administrator|specialist|coordinator|"
    r"editor|writer|journalist|advisor|adviser|recruiter|executive|secretary|treasurer|chef|"
    r"associate|principal|strategist|marketer|representative|technician|physician|surgeon|"
    r"librarian|trainee|apprentice|supervisor|tester|sre"
)
_KIN_WORDS = (
    r"sister|brother|sibling|mother|father|mom|mum|dad|parent|son|daughter|child|kid|wife|"
    r"husband|spouse|best\s+friend|friend|colleague|co-?worker|manager|boss|supervisor"
)
_KIN_RELATIONS = {
    "sister": "sibling_of", "brother": "sibling_of", "sibling": "sibling_of",
    "siblings": "sibling_of", "sisters": "sibling_of", "brothers": "sibling_of",
    "mother": "parent_of", "father": "parent_of", "mom": "parent_of", "mum": "parent_of",
    "dad": "parent_of", "parent": "parent_of",
    "son": "child_of", "daughter": "child_of", "child": "child_of", "kid": "child_of",
    "wife": "married_to", "husband": "married_to", "spouse": "married_to", "married": "married_to",
    "friend": "friend_of", "friends": "friend_of", "best friend": "friend_of",
    "colleague": "colleague_of", "colleagues": "colleague_of", "coworker": "colleague_of",
    "co-worker": "colleague_of", "coworkers": "colleague_of", "co-workers": "colleague_of",
    "manager": "reports_to", "boss": "reports_to", "supervisor": "reports_to",
}  # fmt: skip
_TECHNOLOGIES = frozenset(
    "python java javascript typescript rust golang ruby php kotlin swift scala c++ c# haskell "
    "elixir erlang clojure perl sql postgresql postgres mysql mariadb sqlite redis mongodb "
    "cassandra dynamodb elasticsearch opensearch kafka rabbitmq docker kubernetes k8s terraform "
    "ansible aws gcp azure linux macos ios android react vue angular svelte django flask "
    "fastapi rails spring node.js nodejs next.js graphql grpc git github gitlab jenkins nginx "
    "spark hadoop airflow snowflake bigquery pytorch tensorflow numpy pandas pydantic htmx "
    "tailwind webpack vite deno bun celery duckdb clickhouse neo4j pgvector".split()
)
_ORG_SUFFIXES = frozenset(
    "inc corp corporation llc ltd gmbh ag plc co company group labs lab technologies systems "
    "solutions bank university institute college school foundation agency ministry department "
    "hospital studio studios partners ventures capital holdings industries club team society "
    "association council committee".split()
)
_GROUP_WORDS = frozenset(
    "club team group society association committee board band choir orchestra community party "
    "union league guild council church gym".split()
)
# What "X is a Y" says about X, by Y's last word.
_KIND_OF_THING = {
    **dict.fromkeys("company startup firm bank business corporation organization organisation "
                    "nonprofit agency university school".split(), "organization"),
    **dict.fromkeys("city country town village capital state region island continent "
                    "neighborhood neighbourhood".split(), "place"),
    **dict.fromkeys("language framework library database tool platform protocol format editor "
                    "runtime compiler engine api sdk service".split(), "technology"),
    **dict.fromkeys("person man woman boy girl guy student friend vegetarian vegan parent "
                    "mother father child kid".split(), "person"),
}  # fmt: skip
_SPEAKER_LABELS = frozenset(
    "decision decisions rationale context topic note notes summary question answer q a update "
    "todo re subject warning example tip fyi ps important reminder goal status title date time "
    "source tags action result problem solution reason why what how edit step output input "
    "error usage".split()
)
_FIRST_PERSON = frozenset({"i", "me", "my", "myself"})
_WE = frozenset({"we", "us", "our team", "our company", "our org", "our organization"})
_PERSON_PRONOUNS = frozenset({"he", "she", "they", "him", "her", "his", "their", "them"})
_NON_SUBJECTS = frozenset(
    "everyone everybody nobody someone somebody anyone anybody people this that there here "
    "what who which nothing something everything you".split()
)
OUR_TEAM = "our team"
USER = "User"

# -- pattern building blocks

_NAME_WORD = r"[A-Z][\w&.\-]*(?:['’](?!s\b)\w[\w&.\-]*)?"
_NAME = (
    rf"{_NAME_WORD}(?:\s+(?:(?:of|de|du|da|von|van|der|den|la|le|del|&)\s+)?"
    rf"(?:{_NAME_WORD}|\d[\w.\-]*))*"
)
_LOWER = rf"(?!(?:{_STOP})\b)[a-z0-9][\w+#.\-]*"
_DET = r"(?i:the|our|my|his|her|their|its|a|an)\s+"
# A common noun phrase: optional capitalised modifiers, a lower-case head ("a Python developer",
# "the chess club", "dark mode"). Tried before a bare name so "a Python developer" is not "Python".
_NP = rf"(?:{_DET})?(?:{_NAME_WORD}\s+){{0,3}}{_LOWER}(?:\s+{_LOWER}){{0,3}}"
_OBJECT = rf"(?P<o>{_NP}|(?:{_DET})?{_NAME})"
_NAME_OBJECT = rf"(?P<o>(?:(?i:the)\s+)?{_NAME})"
_PRONOUN = r"(?i:i|we|he|she|they|it)\b"
_SUBJECT = rf"(?P<s>{_PRONOUN}|(?:(?i:the)\s+)?{_NAME}|{_DET}{_LOWER}(?:\s+{_LOWER}){{0,2}})"
_ADVERBS = (
    r"(?:\s+(?:now|still|currently|also|recently|just|actually|officially|finally|already|"
    r"then|later|eventually|soon|previously|once|first|originally|initially))*"
)
_AUX = r"(?:(?:has|have|had|will|is|am|are|was|were)\s+(?:been\s+)?)?"
_BE = r"(?:is|am|are|was|were|has\s+been|have\s+been|had\s+been|will\s+be|became|becomes)"
_ROLE = (
    rf"(?P<role>(?:[A-Za-z][\w-]*\s+){{0,3}}?(?i:{_ROLE_HEADS})"
    r"(?:\s+of\s+[A-Za-z][\w-]*(?:\s+[a-z][\w-]*)?)?)\b"
)
_AS_ROLE = (
    rf"(?:\s+as\s+(?:(?:an?|the|our|their)\s+)?(?P<role>[A-Za-z][\w-]*"
    rf"(?:\s+(?:of\s+)?(?!(?:{_STOP})\b)[A-Za-z][\w-]*){{0,3}}))?"
)
_POSSESSOR = rf"(?:(?P<p>{_NAME})['’]s?|(?P<pp>(?i:my|his|her|their)))"
_END = r"(?P<rest>[\s,;:(\[—–-].*)?"

_MACROS = {
    "%S": _SUBJECT,
    "%A": _ADVERBS,
    "%X": _AUX,
    "%B": _BE,
    "%O": _OBJECT,
    "%N": _NAME_OBJECT,
    "%R": _ROLE,
    "%F": _AS_ROLE,
    "%P": _POSSESSOR,
    "%K": rf"(?P<kin>{_KIN_WORDS})",
    "%E": _END,
}


def _compile(template: str) -> re.Pattern[str]:
    for macro, pattern in _MACROS.items():
        template = template.replace(macro, pattern)
    return re.compile(template, re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Rule:
    """One sentence shape. ``relation`` may be a placeholder decided per match:

    ``@location`` lives_in for people, located_in for organizations; ``@joined`` member_of for
    clubs and teams, else works_at; ``@left`` lives_in if the target is a known place, else
    works_at; ``@kin`` from the kin word; ``@role`` only the has_role fact.
    """

    pattern: re.Pattern[str]
    relation: str
    source_type: str
    target_type: str
    swap: bool = False  # passive voice: the grammatical object is the fact's source
    ends: bool = False
    says_role: bool = False  # "is the CEO of Acme": the role is said, the employment implied


def _rule(template: str, relation: str, source: str, target: str, **flags: bool) -> _Rule:
    return _Rule(_compile(template), relation, source, target, **flags)


_USE_VERBS = (
    r"(?:%X(?:uses?|using|used|adopted|adopts?|chose|chooses|picked|selected|relies\s+on|rely\s+on|"
    r"relied\s+on|depends?\s+on|runs?\s+on|ran\s+on|went\s+with|go\s+with|standardi[sz]ed\s+on)"
    r"|(?:decided|chose|plans?|planned|started|want|wants|agreed)\s+to\s+(?:use|adopt))"
)

# Ordered: the first match wins, so specific shapes come before general ones ("is a member
# of" before "is a"; "is Alice's sister" before roles).
_RULES: list[_Rule] = [
    # endings
    _rule(r"%S%A\s+(?:%X(?:left|leaves|leave|quit|quits)|(?:resigned|retired|was\s+fired|was\s+"
          r"laid\s+off|got\s+fired|got\s+laid\s+off)\s+from|(?:stopped|quit)\s+working\s+(?:at|for)"
          r"|no\s+longer\s+works?\s+(?:at|for))\s+%O%E", "@left", "person", "organization",
          ends=True),
    _rule(r"%S%A\s+(?:no\s+longer\s+(?:lives?|resides?)\s+in|%X(?:moved|moves)\s+(?:out\s+of|"
          r"away\s+from))\s+%O%E", "@location", "person", "place", ends=True),
    _rule(r"%S%A\s+%X(?:divorced|divorces)\s+%N%E", "married_to", "person", "person", ends=True),
    _rule(r"%S%A\s+(?:%X(?:stopped|stop)\s+using|no\s+longer\s+uses?|%X(?:dropped|abandoned)|"
          r"%X(?:moved|migrated|switched)\s+away\s+from)\s+%O%E", "uses", "organization?",
          "technology", ends=True),
    _rule(r"%S%A\s+(?:%X(?:left|quit)|resigned|retired)%E", "@left_employer", "person",
          "organization", ends=True),  # "... and left in 2021": the employer named before
    # employment and roles
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+as\s+(?:(?:an?|the)\s+)?(?P<role>[A-Za-z][\w-]*"
          r"(?:\s+[A-Za-z][\w-]*){0,3}?)\s+(?:at|for|with)\s+%O%E", "works_at", "person",
          "organization"),
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+(?:at|for)\s+%O%F%E", "works_at", "person",
          "organization"),
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+as\s+(?:(?:an?|the)\s+)?(?P<role>[A-Za-z][\w-]*"
          r"(?:\s+[A-Za-z][\w-]*){0,3})%E", "@role", "person", "concept"),
    _rule(r"%S%A\s+%B\s+employed\s+(?:by|at)\s+%O%F%E", "works_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:joined|joins|join|joining)\s+%O%F%E", "@joined", "person", "organization"),
    _rule(r"%S%A\s+%X(?:started|starts|start|began|begins)\s+"
          r"(?:working\s+|to\s+work\s+|a\s+(?:new\s+)?job\s+)?(?:at|for)\s+%O%F%E",
          "works_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:was\s+|got\s+|been\s+)?(?:hired|recruited)\s+by\s+%O%F%E", "works_at",
          "person", "organization"),
    _rule(r"%S%A\s+%X(?:was\s+|got\s+|been\s+)?promoted\s+to\s+(?:(?:an?|the)\s+)?(?P<role>"
          r"[A-Za-z][\w-]*(?:\s+(?:of\s+)?(?!(?:at|for|in)\b)[A-Za-z][\w-]*){0,3}?)"
          r"(?:\s+(?:at|for)\s+%N)?%E", "@role", "person", "organization"),
    # family and social (before roles: "Bob is Alice's manager")
    _rule(r"%S%A\s+%B\s+%P\s+(?:(?:older|younger|big|little|twin|best|old|good|close|new)\s+)?%K%E",
          "@kin", "person", "person"),
    _rule(r"%P\s+(?:(?:older|younger|big|little|twin|best|old|good|close|new)\s+)?%K\s+"
          r"(?:is|was)\s+(?P<s>" + _NAME + r")%E", "@kin", "person", "person"),
    _rule(r"(?P<s>" + _NAME + r")\s+and\s+(?P<o>" + _NAME + r")\s+(?:are|were|have\s+been)\s+"
          r"(?:(?:best|good|close|old)\s+)?(?P<kin>married|friends|siblings|sisters|brothers|"
          r"colleagues|co-?workers)%E", "@kin", "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:married|wed)\s+to\s+%N%E", "married_to", "person", "person"),
    _rule(r"%S%A\s+%X(?:married|marries|marry)\s+%N%E", "married_to", "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:(?:best|good|close|old)\s+)?friends\s+with\s+%N%E", "friend_of",
          "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:an?|the)\s+(?:(?:best|good|close|old)\s+)?friend\s+of\s+%N%E",
          "friend_of", "person", "person"),
    _rule(r"%S%A\s+%X(?:reports|reported|report|reporting)\s+to\s+%N%E", "reports_to", "person",
          "person"),
    # membership, founding, ownership
    _rule(r"%S%A\s+%B\s+(?:(?:an?|the)\s+)?(?:[a-z]+\s+)?member\s+of\s+%O%E", "member_of",
          "person", "organization"),
    _rule(r"%S%A\s+%X(?:belongs|belonged|belong)\s+to\s+%O%E", "member_of", "person",
          "organization"),
    _rule(r"%S%A\s+%B\s+(?:(?:an?|the|one\s+of\s+the)\s+)?(?:co-?)?founders?\s+of\s+%N%E",
          "founded", "person", "organization"),
    _rule(r"%S%A\s+%X(?:founded|co-?founded|founds?|started|established|set\s+up)\s+%N%E",
          "founded", "person", "organization"),
    _rule(r"%S%A\s+%B\s+(?:co-?)?founded\s+by\s+%N%E", "founded", "person", "organization",
          swap=True),
    _rule(r"%S%A\s+%X(?:acquired|acquires|acquire|took\s+over|takes\s+over|bought\s+out)\s+%O%E",
          "acquired", "organization", "organization"),
    _rule(r"%S%A\s+%B\s+acquired\s+by\s+%N%E", "acquired", "organization", "organization",
          swap=True),
    _rule(r"%S%A\s+(?:%B\s+the\s+(?:proud\s+)?owner\s+of|%X(?:owns|own|owned|bought|buys|buy|"
          r"purchased|purchases))\s+%O%E", "owns", "person", "organization?"),
    _rule(r"%S%A\s+%B\s+owned\s+by\s+%N%E", "owns", "person", "concept", swap=True),
    # roles at an organization, then roles alone
    _rule(r"%S%A\s+%B\s+(?:(?:an?|the|our|their)\s+)?(?:new\s+)?%R\s+(?:at|of|for|with)\s+%N%E",
          "works_at", "person", "organization", says_role=True),
    _rule(r"%S%A\s+%B\s+(?:(?:an?|the|our|their)\s+)?(?:new\s+)?%R%E", "@role", "person",
          "concept"),
    # location
    _rule(r"%S%A\s+%X(?:lives?|lived|living|resides?|resided|residing|settled)\s+in\s+%O%E",
          "@location", "person", "place"),
    _rule(r"%S%A\s+(?:%B\s+(?:headquartered|located|incorporated)|%X(?:has|have|had)\s+"
          r"(?:its|their)\s+(?:headquarters|hq|head\s+office)|%X(?:is|are|was)\s+HQ'?d)"
          r"\s+in\s+%O%E",
          "@location", "organization", "place"),
    _rule(r"%S%A\s+%B\s+based\s+(?:in|out\s+of)\s+%O%E", "@location", "person", "place"),
    _rule(r"%S%A\s+%X(?:moved|moves|move|moving|relocated|relocates|relocate|relocating)"
          r"(?:\s+from\s+(?P<prev>" + _NAME + r"))?\s+to\s+%O%E", "@location", "person", "place"),
    # tools and technology
    _rule(r"%S%A\s+%X(?:switched|switches|switch|migrated|migrates|migrate|moved|move)"
          r"\s+from\s+(?P<prev>" + _NAME + r")\s+to\s+%O%E", "uses", "organization?", "technology"),
    _rule(r"%S%A\s+%X(?:switched|switches|switch|migrated|migrates|migrate)\s+to\s+%O%E",
          "uses", "organization?", "technology"),
    _rule(r"%S%A\s+%X(?:replaced|replaces|replace)\s+(?P<prev>" + _NAME + r")\s+with\s+%O%E",
          "uses", "organization?", "technology"),
    _rule(r"%S%A\s+" + _USE_VERBS + r"\s+%O%E", "uses", "organization?", "technology"),
    _rule(r"%S%A\s+%B\s+(?:built|written|implemented|developed|made|coded|powered)\s+"
          r"(?:with|in|on|using|by)\s+%O%E", "uses", "technology?", "technology"),
    _rule(r"(?i:use|adopt|switch\s+to|migrate\s+to|standardi[sz]e\s+on|go\s+with)\s+%O%E", "uses",
          "organization", "technology"),
    # preferences and acquaintance
    _rule(r"%S%A\s+(?:%X(?:likes|like|liked|loves|love|loved|enjoys|enjoy|enjoyed|prefers|"
          r"prefer|preferred|adores|adore)|%B\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|%B\s+into)"
          r"\s+%O%E", "likes", "person", "concept"),
    _rule(r"%S%A\s+(?:%X(?:dislikes|dislike|disliked|hates|hate|hated)|(?:does\s+not|doesn't|"
          r"do\s+not|don't|did\s+not|didn't)\s+like|can(?:no|')t\s+stand)\s+%O%E", "dislikes",
          "person", "concept"),
    _rule(r"%S%A\s+%X(?:knows|know|knew|known|met|meets|meet)\s+%N%E", "knows", "person",
          "person"),
    # typing, last: anything more specific has had its chance
    _rule(r"%S%A\s+(?:is|was|are)\s+(?:an?)\s+%O%E", "is_a", "concept", "concept"),
]  # fmt: skip

# -- text shapes

_SPEAKER = re.compile(
    r"\s*(?P<speaker>[A-Za-z][\w.'-]*(?:\s[A-Z][\w.'-]*){0,2})\s*:\s+(?P<text>\S.*)"
)
_BULLET = re.compile(r"\s*(?:[-*•>]+|#+|\d{1,3}[.)])\s+")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Inc|Corp|Ltd|Co|Jr|Sr|vs|etc|e\.g|i\.e|approx|Mt)|\b[A-Z])\.$"
)
_CLAUSE_BREAK = re.compile(r"\s*;\s*|,?\s+(?:and|but)\s+(?:then\s+)?(?=[a-z])")
_CONTRACTION = re.compile(
    r"\b(i|we|you|they|he|she|it|that)['’](m|re|ve|s|ll|d)\b", re.IGNORECASE
)
_CONTRACTED = {"m": "am", "re": "are", "ve": "have", "s": "is", "ll": "will", "d": "would"}
_FILLER = re.compile(
    r"(?:(?i:then|also|and|but|so|now|recently|later|finally|meanwhile|currently|however|"
    r"actually|well|oh|btw|by\s+the\s+way|fun\s+fact|anyway|plus|nowadays|lately|eventually|"
    r"in\s+fact|back\s+then|at\s+the\s+time|these\s+days)\b|[A-Z][a-z]+ly\b(?=\s*,))[\s,:]*"
)
_EDGE_PUNCTUATION = re.compile(r"^[\s,;:.!?\-–—()\[\]\"'“”]+|[\s,;:.!?\-–—(\[\"'“”]+$")
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]")
_SPACES = re.compile(r"\s+")
_LEADING_DETERMINER = re.compile(r"^(?:the|a|an|our|my|his|her|their|its|this|that)\s+", re.I)


_NEXT_CLAUSE = re.compile(r",?\s+(?:and|but)\s+(?P<clause>[A-Z].*)", re.DOTALL)
_BARE_OBJECT = re.compile(rf"{_NP}|(?:{_DET})?{_NAME}")
# Further names listed after an object: ", Redis and Kafka". The lookahead stops at a verb, so
# "Acme and Bob works at Globex" does not make Bob an employer.
_MORE_OBJECT = re.compile(
    rf"(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or|&)\s+)(?:(?i:the)\s+)?(?P<o>{_NAME})"
    r"(?=\s*(?:,|\b(?:and|or)\b|$))"
)


def _sentences(text: str) -> list[tuple[str | None, str]]:
    """(speaker, sentence) pairs: one speaker per line, sentences split on end punctuation."""
    out: list[tuple[str | None, str]] = []
    for line in _join_wrapped(text.splitlines()):
        speaker = None
        match = _SPEAKER.fullmatch(line)
        if match and match["speaker"].casefold() not in _SPEAKER_LABELS:
            speaker, line = _speaker_name(match["speaker"]), match["text"]
        elif match:
            line = match["text"]  # "Decision: Use X": the label is not a speaker
        line = line[_BULLET.match(line).end() :] if _BULLET.match(line) else line
        out.extend((speaker, sentence) for sentence in _split_sentences(line))
    return out


def _join_wrapped(lines: list[str]) -> list[str]:
    """Rejoin hard-wrapped prose: a line without end punctuation continued in lower case."""
    joined: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if joined and stripped[0].islower() and not joined[-1].endswith((".", "!", "?", ":")):
            joined[-1] += " " + stripped
        else:
            joined.append(stripped)
    return joined


def _speaker_name(raw: str) -> str:
    return USER if raw.casefold() in {"user", "human", "me"} else raw.strip()


def _split_sentences(line: str) -> list[str]:
    pieces = _SENTENCE_BREAK.split(line)
    sentences: list[str] = []
    for piece in pieces:
        if sentences and _ABBREVIATION.search(sentences[-1][-8:]) and len(sentences[-1]) < 2000:
            sentences[-1] += " " + piece  # "Acme Inc. is in London" is one sentence
        else:
            sentences.append(piece)
    return [sentence.strip() for sentence in sentences if sentence.strip()]


def _tidy(clause: str) -> str:
    """Cut fillers, contractions and stray punctuation so patterns can anchor at the subject."""
    clause = _EMPTY_BRACKETS.sub(" ", clause)
    clause = _CONTRACTION.sub(lambda m: f"{m[1]} {_CONTRACTED[m[2].lower()]}", clause)
    clause = _SPACES.sub(" ", clause)
    clause = _EDGE_PUNCTUATION.sub("", clause)
    for _ in range(3):
        filler = _FILLER.match(clause)
        if not filler or not filler.end():
            break
        clause = clause[filler.end() :]
    return clause


def _clean_name(raw: str) -> str:
    name = _EDGE_PUNCTUATION.sub("", _SPACES.sub(" ", raw))
    return _LEADING_DETERMINER.sub("", name)


def _vocabulary_type(name: str) -> str | None:
    key = normalize_name(name)
    if key in _TECHNOLOGIES:
        return "technology"
    words = key.split()
    if len(words) > 1 and words[-1] in _ORG_SUFFIXES:
        return "organization"
    return None


_Groups = dict[str, str | None]
_Found = tuple[_Rule, _Groups]


@dataclass(slots=True)
class _Fact:
    source: str
    source_type: str
    relation: str
    target: str
    target_type: str
    ends: bool = False
    closes_previous: bool = False  # the "A" of "moved from A to B": ended when B began
    implied: bool = False  # not what the sentence says but what it implies: gets its own words


class _Reader:
    """State of one extraction: entities so far, facts, and the antecedents for pronouns."""

    def __init__(self, reference_time: dt.datetime) -> None:
        self.reference_time = reference_time
        self.entities: dict[str, ExtractedEntity] = {}
        self.facts: list[ExtractedFact] = []
        self.fact_keys: set[tuple[object, ...]] = set()
        self.last_person: str | None = None
        self.last_thing: str | None = None
        self.employers: dict[str, str] = {}  # person key -> last employer, for a bare "left"

    def read(self, speaker: str | None, sentence: str) -> None:
        if len(sentence) > _MAX_CLAUSE * 4:
            return
        previous: _Found | None = None  # the last clause that matched, for "... and left"
        undated: list[int] = []  # endings that state no date yet: "left Acme and joined …"
        for clause in _CLAUSE_BREAK.split(sentence):
            if len(clause) <= _MAX_CLAUSE:
                before = len(self.facts)
                previous = self.read_clause(speaker, sentence, clause, previous) or previous
                self.date_endings(undated, before)

    def date_endings(self, undated: list[int], before: int) -> None:
        """An undated ending takes the first date a later clause of its sentence states: "left
        Acme and joined Globex on 2024-06-01" ends Acme on 2024-06-01, not when it was read."""
        stated = next((f.valid_at or f.invalid_at for f in self.facts[before:]
                       if f.valid_at or f.invalid_at), None)
        if stated is not None:
            for index in undated:
                self.facts[index] = self.facts[index].model_copy(update={"invalid_at": stated})
            undated.clear()
        undated += [i for i in range(before, len(self.facts))
                    if self.facts[i].ends and self.facts[i].invalid_at is None]

    def read_clause(
        self, speaker: str | None, sentence: str, clause: str, previous: _Found | None
    ) -> _Found | None:
        dates = find_dates(clause, self.reference_time)
        text = _tidy(dates.strip(clause) if dates.spans else clause)
        found = _match(text) if text else None
        if found is None and previous and text[:1].islower():
            found = _continue(text, previous)
        if found is None:
            return None
        rule, groups = found
        more = _more_objects(groups) if rule.relation != "@kin" else []
        # "uses Kafka, Redis and Postgres": one fact per object
        for variant in [groups, *({**groups, "o": name, "role": None} for name in more)]:
            for fact in self.facts_of(rule, variant, speaker):
                self.add(fact, sentence, dates.valid_at, dates.invalid_at, rule.ends)
        tail = _NEXT_CLAUSE.match(groups.get("rest") or "")
        if tail and not more:  # "Alice works at Acme and Bob works at Globex"
            return self.read_clause(speaker, sentence, tail["clause"], found) or found
        return found

    def facts_of(self, rule: _Rule, groups: _Groups, speaker: str | None) -> list[_Fact]:
        subject = self.resolve(groups.get("s"), speaker) if "s" in groups else OUR_TEAM
        if rule.relation == "@kin":
            possessor = groups.get("p") or groups.get("pp") or groups.get("o")
            return _kin_facts(subject, self.resolve(possessor, speaker), groups["kin"] or "")
        target = self.resolve(groups.get("o"), speaker) if groups.get("o") else None
        if not subject or (groups.get("o") and not target):
            return []
        if rule.swap:
            subject, target = target, subject
        if rule.relation == "@left_employer":
            target = self.employers.get(normalize_name(subject))
        source_type = self.type_of(subject, self.source_slot(rule, target))
        facts = self.main_facts(rule, subject, source_type, target, groups)
        roles = _role_facts(subject, target, groups.get("role"), source_type)
        # One sentence, several facts: the ones it says keep it as their description; the ones
        # it only implies get their own, so a hit's text and its timeline are the same fact's
        # ("Bob is the CEO of Acme" closes as CEO while "Bob works at Acme" stays open).
        role_said = rule.says_role or rule.relation == "@role"
        implied = (facts if roles else []) if role_said else roles
        for fact in implied:
            fact.implied = not fact.ends and not fact.closes_previous
        return facts + roles

    @staticmethod
    def source_slot(rule: _Rule, target: str | None) -> str:
        """The source type a rule implies, refined by the target where the rule alone can't tell."""
        if rule.relation == "is_a" and target:
            return _KIND_OF_THING.get(normalize_name(target).rsplit(" ", 1)[-1], rule.source_type)
        if rule.relation == "owns" and target and target[:1].isupper():
            return "organization"  # "Acme owns Initech": owners of named things are companies
        return rule.source_type

    def main_facts(self, rule: _Rule, subject: str, source_type: str, target: str | None,
                   groups: dict[str, str | None]) -> list[_Fact]:  # fmt: skip
        if target is None:
            return []  # a role alone ("Alice was promoted to VP") is only has_role
        target_type = self.type_of(target, rule.target_type)
        relation = self.relation_for(rule.relation, source_type, target, target_type)
        if relation == "located_in" and rule.relation == "@location":
            target_type = "place"
        facts = [_Fact(subject, source_type, relation, target, target_type)]
        previous = _clean_name(groups.get("prev") or "")
        if previous:
            facts.append(
                _Fact(subject, source_type, relation, previous, target_type, closes_previous=True)
            )
        return facts

    def relation_for(self, relation: str, source_type: str, target: str, target_type: str) -> str:
        if relation == "@location":
            return "located_in" if source_type == "organization" else "lives_in"
        if relation == "@joined":
            last = normalize_name(target).rsplit(" ", 1)[-1]
            return "member_of" if last in _GROUP_WORDS else "works_at"
        if relation == "@left":
            return "lives_in" if target_type == "place" else "works_at"
        if relation in {"@role", "@left_employer"}:
            return "works_at"  # "promoted to CTO at Acme"; "joined Acme and left in 2021"
        return relation

    def resolve(self, raw: str | None, speaker: str | None) -> str | None:
        """An entity name for a mention: pronouns resolved, determiners and punctuation cut."""
        if not raw:
            return None
        key = _SPACES.sub(" ", raw.strip()).casefold()
        if key in _FIRST_PERSON:
            return speaker or USER
        if key in _WE:
            return OUR_TEAM
        if key in _PERSON_PRONOUNS:
            return self.last_person
        if key in {"it", "its"}:
            return self.last_thing
        name = _clean_name(raw)
        if not name or name.casefold() in _NON_SUBJECTS or len(name) > 80:
            return None
        return name

    def type_of(self, name: str, slot_type: str) -> str:
        """Known type in this memory, else the vocabulary's, else what the rule's slot says."""
        known = self.entities.get(normalize_name(name))
        if known is not None and known.type != "concept":
            return known.type
        if name == USER or name.casefold() in _FIRST_PERSON:
            return "person"
        if name == OUR_TEAM:
            return "organization"
        if slot_type.endswith("?"):  # proper names get the slot's type, common nouns are concepts
            slot_type = slot_type[:-1] if name[:1].isupper() else "concept"
        return _vocabulary_type(name) or slot_type

    def add(self, fact: _Fact, sentence: str, valid_at: dt.datetime | None,
            invalid_at: dt.datetime | None, rule_ends: bool) -> None:  # fmt: skip
        ends = rule_ends or fact.ends
        if fact.closes_previous:
            valid_at, invalid_at, ends = None, valid_at, True
        elif ends:
            valid_at, invalid_at = None, invalid_at or valid_at
        elif invalid_at is not None and valid_at is None:
            ends = True  # "worked at Acme until 2021": the text states only the ending
        source = self.entity(fact.source, fact.source_type, sentence)
        target = self.entity(fact.target, fact.target_type, sentence)
        if normalize_name(source) == normalize_name(target) or not normalize_name(target):
            return
        key = (normalize_name(source), fact.relation, normalize_name(target), valid_at,
               invalid_at, ends)  # fmt: skip
        if key in self.fact_keys:
            return
        self.fact_keys.add(key)
        said = _implied_sentence(source, fact.relation, target) if fact.implied else sentence
        self.facts.append(
            ExtractedFact(source=source, relation=fact.relation, target=target,
                          sentence=said, valid_at=valid_at, invalid_at=invalid_at, ends=ends)
        )  # fmt: skip
        self.remember_antecedent(source, fact.source_type)
        if fact.relation == "works_at" and not ends:
            self.employers[normalize_name(source)] = target

    def entity(self, name: str, type_: str, sentence: str) -> str:
        """Register a mention once per extraction; returns the name first used for it."""
        key = normalize_name(name)
        existing = self.entities.get(key)
        if existing is None:
            description = sentence
            if len(description) > _MAX_DESCRIPTION:
                description = description[: _MAX_DESCRIPTION - 1] + "…"
            self.entities[key] = ExtractedEntity(name=name, type=type_, description=description)
            return name
        if existing.type == "concept" and type_ != "concept":
            existing.type = type_  # a later, more specific reading wins over the default
        return existing.name

    def remember_antecedent(self, name: str, type_: str) -> None:
        entity = self.entities[normalize_name(name)]
        if entity.type == "person" and name != USER:
            self.last_person = entity.name
        elif entity.type != "person" and name != OUR_TEAM:
            self.last_thing = entity.name


def _match(text: str) -> _Found | None:
    for rule in _RULES:
        match = rule.pattern.fullmatch(text)
        if match:
            return rule, match.groupdict()
    return None


def _continue(text: str, previous: _Found) -> _Found | None:
    """A clause without its own subject: "... and left in 2021", "... and a car"."""
    rule, groups = previous
    if groups.get("s"):
        found = _match(f"{groups['s']} {text}")
        if found:
            return found
    if groups.get("o") and rule.relation != "@kin" and _BARE_OBJECT.fullmatch(text):
        return rule, {**groups, "o": text, "role": None, "prev": None, "rest": None}
    return None


def _more_objects(groups: _Groups) -> list[str]:
    rest, names, position = groups.get("rest") or "", [], 0
    while match := _MORE_OBJECT.match(rest, position):
        names.append(match["o"])
        position = match.end()
    return names


def _kin_facts(named: str | None, possessor: str | None, kin: str) -> list[_Fact]:
    """"Eve is Alice's sister" -> Eve sibling_of Alice; a manager is reported to."""
    if not named or not possessor:
        return []
    word = _SPACES.sub(" ", kin.casefold())
    relation = _KIN_RELATIONS.get(word, "")
    if not relation:
        return []
    if relation == "reports_to":
        return [_Fact(possessor, "person", relation, named, "person")]
    return [_Fact(named, "person", relation, possessor, "person")]


_IMPLIED_VERBS = {"works_at": "works at", "has_role": "is", "ceo_of": "is the CEO of"}


def _implied_sentence(source: str, relation: str, target: str) -> str:
    """Words for a fact a sentence implies: "Bob Stone works at Acme."."""
    return f"{source} {_IMPLIED_VERBS.get(relation, relation.replace('_', ' '))} {target}."


def _role_facts(
    subject: str, target: str | None, role: str | None, source_type: str
) -> list[_Fact]:
    if not role:
        return []
    role = _clean_name(role)
    if not role:
        return []
    facts = [_Fact(subject, source_type, "has_role", role, "concept")]
    if target and role.casefold() in {"ceo", "chief executive officer", "chief executive"}:
        facts.append(_Fact(subject, source_type, "ceo_of", target, "organization"))
    return facts


class OfflineExtractor(Extractor):
    """Pattern-based ``Extractor``: no model calls, so ``usage`` is left untouched."""

    def extract(
        self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage
    ) -> Extraction:
        reader = _Reader(reference_time)
        for chunk in chunks:
            for speaker, sentence in _sentences(chunk):
                reader.read(speaker, sentence)
        return Extraction(entities=list(reader.entities.values()), facts=reader.facts)
