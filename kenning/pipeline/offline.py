"""The offline extractor: entities and facts from plain English with regular expressions.

No model and no dependency; deterministic and fast (every pattern is compiled once, when first
tried, anchored at a clause start and bounded, so a clause costs a few dozen failed matches at
worst and a 100 kB memory stays linear; a pattern is not even tried on a clause that lacks
every word it needs, ``literals.py``).

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
  speaker: the line's "Name:" prefix, else the ``speaker`` given to ``extract``, else the name
  "my name is X" gave earlier in the memory, else the entity "User" (person). "you"/"your" is
  the addressee: in a dialogue of "Name:" lines the previous line's speaker, else the
  ``addressee`` given; with neither the clause is dropped. "we" is the speaker when there is
  one, else (and "our team" always) the entity "our team" (organization); an imperative
  "Use X" (as in "Decision: Use X") is "our team uses X", while "please always answer in
  French" is the speaker's ``standing_instruction``.
- Apposition: "my brother Tom lives in Denver" states "Tom sibling_of <speaker>" and is then
  read as "Tom lives in Denver" ("my cat Miso …" states has_pet).
- A date is the validity by default; a rule may say it is the fact's target ("due on
  2025-03-31", "born on …": an entity named by the date at the precision said) or when a
  planned thing happens (kept in the sentence, not the validity).
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
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..models import Usage
from ..dates import DateSpan, find_dates, parse_date
from ..text import normalize_name
from . import changes as _changes
from .extract import ExtractedEntity, ExtractedFact, Extraction, Extractor
from .literals import gate, required_literals, scanner

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
    r"there|anymore|already|yet|ever|recently|then|instead|every|each|next|tomorrow|tonight|soon|"
    r"never|how|what|why|all"
)
_ROLE_HEADS = (
    r"ceo|cto|cfo|coo|cio|cmo|cpo|ciso|vp|svp|evp|president|vice[\s-]president|director|"
    r"manager|engineer|developer|programmer|designer|scientist|analyst|architect|lead|head|"
    r"intern|consultant|officer|chair(?:man|woman|person)?|professor|lecturer|teacher|"
    r"researcher|accountant|lawyer|attorney|doctor|nurse|administrator|specialist|coordinator|"
    r"editor|writer|journalist|advisor|adviser|recruiter|executive|secretary|treasurer|chef|"
    r"associate|principal|strategist|marketer|representative|technician|physician|surgeon|"
    r"librarian|trainee|apprentice|supervisor|tester|sre|plumber|electrician|carpenter|pilot|"
    r"firefighter|pharmacist|dentist|veterinarian|vet|photographer|musician|artist|painter|farmer|"
    r"baker|mechanic|paramedic|therapist|psychologist|psychiatrist|economist|translator|"
    r"interpreter|cashier|waiter|waitress|barista|bartender|driver|entrepreneur|freelancer|tutor|"
    r"coach|trainer|instructor|mathematician|physicist|chemist|biologist|historian|novelist|poet|"
    r"actor|actress|dancer|singer|composer|producer|midwife|caregiver|pediatrician|"
    r"paediatrician|surveyor|welder|builder|contractor|realtor|broker|banker|investor|clerk|"
    r"receptionist|salesperson|nanny|cook|butcher|tailor|hairdresser|barber|florist|gardener|"
    r"soldier|postdoc|dietitian|nutritionist|physiotherapist|counsel(?:l)?or|detective|judge|"
    r"paralegal|auditor|bookkeeper|statistician|veterinary\s+nurse|social\s+worker|"
    r"police\s+officer|flight\s+attendant|software\s+developer|data\s+scientist"
)
_KIN_WORDS = (
    r"sister|brother|sibling|mother|father|mom|mum|dad|parent|son|daughter|child|kid|wife|"
    r"husband|spouse|best\s+friend|friend|colleague|co-?worker|manager|boss|supervisor|cousin|"
    r"aunt|uncle|niece|nephew|grand(?:mother|father|ma|pa|mom|mum|dad|parent)|"
    r"grand(?:son|daughter|child)|fianc[ée]e?|partner|girlfriend|boyfriend|roommate|flatmate|"
    r"housemate|neighbou?r|mentor|step(?:mother|father|son|daughter|brother|sister)"
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
    "cousin": "cousin_of", "cousins": "cousin_of", "aunt": "relative_of", "uncle": "relative_of",
    "niece": "relative_of", "nephew": "relative_of",
    **dict.fromkeys("grandmother grandfather grandma grandpa grandmom grandmum granddad "
                    "grandparent".split(), "grandparent_of"),
    **dict.fromkeys("grandson granddaughter grandchild".split(), "grandchild_of"),
    **dict.fromkeys("fiance fiancé fiancee fiancée engaged".split(), "engaged_to"),
    "partner": "partner_of", "partners": "partner_of", "girlfriend": "dating",
    "boyfriend": "dating", "dating": "dating", "divorced": "married_to", "separated": "married_to",
    **dict.fromkeys("roommate roommates flatmate flatmates housemate housemates".split(),
                    "lives_with"),
    **dict.fromkeys("neighbour neighbor neighbours neighbors".split(), "neighbour_of"),
    "mentor": "mentor_of", "stepmother": "parent_of", "stepfather": "parent_of",
    "stepson": "child_of", "stepdaughter": "child_of", "stepbrother": "sibling_of",
    "stepsister": "sibling_of",
}  # fmt: skip
_PETS = (
    r"cat|dog|puppy|kitten|rabbit|bunny|hamster|parrot|budgie|horse|pony|turtle|tortoise|snake|"
    r"goldfish|fish|guinea\s+pig|lizard|gecko|bird|ferret|chinchilla|hedgehog|retriever|"
    r"labrador|terrier|poodle|spaniel|beagle|collie|husky|bulldog|dachshund|shepherd|tabby"
)
# "is diabetic": the condition the adjective names.
_CONDITION_OF = {
    "diabetic": "diabetes", "asthmatic": "asthma", "epileptic": "epilepsy", "anemic": "anemia",
    "anaemic": "anaemia", "celiac": "celiac disease", "coeliac": "coeliac disease",
    "dyslexic": "dyslexia", "autistic": "autism", "colorblind": "color blindness",
    "colourblind": "colour blindness", "color-blind": "color blindness",
    "colour-blind": "colour blindness", "deaf": "deafness", "hypertensive": "hypertension",
    "insomniac": "insomnia", "arthritic": "arthritis", "pregnant": "pregnancy",
}  # fmt: skip
_CONDITIONS = (
    r"(?:type\s+[12]\s+)?diabetes|asthma|epilepsy|adhd|add|autism|arthritis|migraines?|"
    r"high\s+blood\s+pressure|low\s+blood\s+pressure|hypertension|(?:celiac|coeliac|crohn['’]?s|"
    r"lyme|heart|kidney|parkinson['’]?s|alzheimer['’]?s)\s+disease|anxiety|depression|insomnia|"
    r"eczema|psoriasis|cancer|(?:breast|lung|skin)\s+cancer|covid(?:-19)?|long\s+covid|the\s+flu|"
    r"flu|a\s+cold|back\s+pain|dyslexia|ibs|tinnitus|anemia|anaemia|hay\s+fever|"
    r"a\s+(?:heart|thyroid|skin|chronic)\s+condition|sleep\s+apnea|scoliosis|multiple\s+sclerosis|"
    r"ms|ptsd|ocd|bipolar\s+disorder|a\s+(?:bad\s+|broken\s+|sprained\s+)?(?:knee|back|ankle|"
    r"wrist|leg|arm)(?:\s+injury)?|a\s+concussion|glaucoma|cataracts|osteoporosis|gout"
)
_DIETS = (
    r"vegan|vegetarian|pescatarian|pescetarian|keto|paleo|gluten-free|dairy-free|halal|kosher|"
    r"teetotal|sober|lactose-free|sugar-free|plant-based|low-carb|raw\s+vegan|flexitarian"
)
#: languages by their names ("Greek", "Welsh"): what "doing" or "taking" one means learning it
_LANGUAGES = "|".join(sorted((word.capitalize() for word in _changes.LANGUAGES), key=len, reverse=True))
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
    "error usage news update updates meeting memo announcement heads-up recap agenda minutes "
    "highlights breaking correction clarification psa follow-up followup aside quote bonus "
    "spoiler p.s ok okay well anyway btw lol yes no hi hello hey so also today yesterday "
    "tomorrow tonight morning afternoon evening weekend monday tuesday wednesday thursday friday "
    "saturday sunday progress plan plans idea ideas thought thoughts confession lesson "
    "good bad big quick small major minor latest breaking fun random personal life work "
    "family health".split()
)
_FIRST_PERSON = frozenset({"i", "me", "my", "myself"})
_WE = frozenset({"we", "us", "our team", "our company", "our org", "our organization"})
_SECOND_PERSON = frozenset({"you", "your", "yourself"})
_PERSON_PRONOUNS = frozenset({"he", "she", "they", "him", "her", "his", "their", "them"})
_NON_SUBJECTS = frozenset(
    "everyone everybody nobody someone somebody anyone anybody people this that there here "
    "what who which nothing something everything you been must maybe perhaps just really "
    "sounds glad thanks thank love hope wish guess seems looks definitely probably hopefully "
    "yes yeah wow oh sure totally absolutely honestly seriously awesome congrats "
    "congratulations cool great nice our gonna wanna gotta lemme lot lots".split()
)
#: a mention that names nothing: "learned a lot", "learn something new"
_VAGUE = frozenset("lot lots much more stuff things something anything everything nothing".split())
OUR_TEAM = "our team"
USER = "User"

# -- pattern building blocks

# a name starts with a capital, or a brand's small letter ("iPhone", "eBay"); a possessive is
# part of a name only as a saint's ("St Mary's") or before an institution's word ("King's
# College", "Guy's Hospital"); elsewhere "Alice's" is Alice's
_NAME_WORD = (
    r"(?:S(?:t\.?|aint)\s+[A-Z]\w*['’]s\b|(?:[A-Z]|[a-z](?=[A-Z][a-z]))[\w&.\-]*(?:['’](?!s\b)\w[\w&.\-]*|['’]s(?=\s+(?:College|"
    r"Hospital|School|University|Church|Cathedral|Clinic|Academy|Institute|Hall|Centre|Center)\b))?)"
)
_NAME = (
    rf"{_NAME_WORD}(?:\s+(?:(?:of|de|du|da|von|van|der|den|la|le|del|&)\s+)?"
    rf"(?:{_NAME_WORD}|\d[\w.\-]*))*"
)
_LOWER = rf"(?!(?:{_STOP})\b)[a-z0-9][\w+#.\-]*"
_DET = r"(?i:the|our|my|his|her|their|its|a|an)\s+"
# A common noun phrase: optional capitalised modifiers, a lower-case head ("a Python developer",
# "the chess club", "dark mode"). Tried before a bare name so "a Python developer" is not "Python".
_NP = rf"(?:{_DET})?(?:{_NAME_WORD}\s+){{0,3}}{_LOWER}(?:\s+{_LOWER}){{0,3}}"
_MODIFIED_NAME = rf"(?:{_DET})?(?:{_LOWER}\s+){{1,2}}{_NAME}"
_OBJECT = rf"(?P<o>{_NP}|(?:{_DET})?{_NAME})"
_NAME_OBJECT = rf"(?P<o>(?:(?i:the)\s+)?{_NAME})"
_PRONOUN = r"(?i:i|we|he|she|they|it|you)\b"
_SUBJECT = rf"(?P<s>{_PRONOUN}|{_changes.NOT_A_SUBJECT}(?:(?i:the)\s+)?{_NAME}|{_DET}{_LOWER}(?:\s+{_LOWER}){{0,2}})"
_ADVERBS = (
    r"(?:\s+(?:now|still|currently|also|recently|just|actually|officially|finally|already|"
    r"then|later|eventually|soon|previously|once|first|originally|initially|really|truly|"
    r"absolutely|genuinely|totally|definitely|usually|often|sometimes|mostly|mainly|only|sort\s+of|kind\s+of))*"
)
_AUX = (
    r"(?:(?:has|have|had|will|is|am|are|was|were)\s+(?:been\s+)?"
    r"(?:(?:now|still|currently|also|just|already|recently|really)\s+)?)?"
)
_BE = r"(?:is|am|are|was|were|has\s+been|have\s+been|had\s+been|will\s+be|became|becomes)"
_ROLE = (
    rf"(?P<role>(?:[A-Za-z][\w-]*\s+){{0,3}}?(?i:{_ROLE_HEADS})"
    r"(?:\s+of\s+[A-Za-z][\w-]*(?:\s+[a-z][\w-]*)?)?)\b"
)
_AS_ROLE = (
    rf"(?:\s+as\s+(?:(?:an?|the|our|their)\s+)?(?P<role>[A-Za-z][\w-]*"
    rf"(?:\s+(?:of\s+)?(?!(?:{_STOP})\b)[A-Za-z][\w-]*){{0,3}}))?"
)
_POSSESSOR = rf"(?:(?P<p>{_NAME})['’]s?|(?P<pp>(?i:my|his|her|their|your)))"
_END = r"(?P<rest>[\s,;:(\[—–-].*)?"

_PRONOUN_OR_NAME = rf"{_PRONOUN}|{_NAME}"
# what a plan does: concrete verbs only ("I'll make sure" and "I'll reach out" plan nothing)
_PLAN_VERBS = (
    r"visit|travel|go|fly|move|relocate|run|attend|take|buy|get|learn|start|open|climb|hike|join|"
    r"study|write|build|launch|finish|adopt|watch|apply|retire|compete|enter|participate|host|"
    r"throw|organi[sz]e|celebrate|marry|sell|perform|play|publish|release|record|hold|spend|"
    r"volunteer|train|teach|tour|sail|cycle|drive|walk|swim|ski|explore|renovate"
)
_PLANNING = (
    r"(?:visit|travel|go|fly|relocat|mov|runn|attend|tak|buy|learn|start|open|climb|hik|join|"
    r"study|writ|build|launch|finish|adopt|apply|retir|compet|enter|host|organi[sz]|celebrat|"
    r"marry|sell|perform|publish|releas|record|spend|volunteer|train|teach|tour|sail|cycl|driv|"
    r"explor|renovat|gett|switch|chang)ing"
)
# what a standing instruction asks the assistant to do ("please always answer in French")
_ASKS = (
    r"answer|reply|respond|write|use|avoid|include|format|explain|call|address|cite|list|"
    r"summari[sz]e|refer|mention|spell|translate|sign|limit|skip|omit|double-check|round|convert|"
    r"show\s+me|give\s+me|send\s+me|tell\s+me|keep\s+(?:it|your|answers|responses|replies)"
)
# "I am X" names the speaker unless X is a nationality or faith
_NOT_A_NAME = (
    r"(?:American|British|English|Irish|Scottish|Welsh|Canadian|Australian|German|French|Spanish|"
    r"Italian|Portuguese|Dutch|Swiss|Swedish|Norwegian|Danish|Finnish|Polish|Russian|Ukrainian|"
    r"Greek|Turkish|Indian|Pakistani|Chinese|Japanese|Korean|Thai|Vietnamese|Brazilian|Mexican|"
    r"Argentinian|Chilean|Colombian|Nigerian|Kenyan|Egyptian|Moroccan|Israeli|Iranian|Lebanese|"
    r"Filipino|Indonesian|European|African|Asian|Latino|Latina|Jewish|Muslim|Catholic|Christian|"
    r"Hindu|Buddhist|Sikh|Protestant|Orthodox|Mormon|Atheist|Agnostic|Sorry|Glad|Happy|Fine|OK|Okay|"
    r"Here|Back|Home|Done|Ready|Not|So|Very|Really|Just|Still|Also|Always|Never|On|In|At|From)\b"
)

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
    # a thing owned: "a blue Volvo" is the Volvo, not "a blue"
    "%M": rf"(?P<o>{_MODIFIED_NAME}|{_NP}|(?:{_DET})?{_NAME})",
    "%D": rf"(?P<s>{_PRONOUN}|(?:(?i:the)\s+)?{_NAME}|(?:{_DET})?{_LOWER}(?:\s+{_LOWER}){{0,3}})",
    "%E": _END,
    # an activity one does ("yoga", "pottery"): a macro, so no clause needs one of its words
    "%V": "(?i:" + "|".join(sorted(_changes.ACTIVITIES, key=len, reverse=True)) + ")",
}


_MACRO = re.compile("|".join(map(re.escape, _MACROS)))


@functools.cache
def _compile(template: str) -> re.Pattern[str]:
    """A rule's pattern, compiled the first time a clause is tried on it: compiling all of them
    took about a second at import, which every process paid before its first recall."""
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

    template: str  # with its macros (``pattern`` compiles it)
    relation: str
    source_type: str
    target_type: str
    swap: bool = False  # passive voice: the grammatical object is the fact's source
    ends: bool = False
    says_role: bool = False  # "is the CEO of Acme": the role is said, the employment implied
    # What a stated date is: "valid" when the fact began, "object" the fact's target ("due on
    # 2025-03-31"), "plan" when a planned thing happens (kept in the sentence, not the validity)
    when: str = "valid"
    speaker: bool = False  # an imperative ("please answer in French"): the speaker's
    #: strings (lower case) one of which a clause must contain to match (``literals.py``)
    needs: frozenset[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compile(self.template)


#: the macros that are lists of words: read for what a rule needs when nothing else is needed
_WORD_MACROS = ("%K", "%R")


def _rule(template: str, relation: str, source: str, target: str, **flags: Any) -> _Rule:
    # what a clause needs is read from the template with its macros left out (an empty group
    # requires nothing): a tenth of the text to parse, and the macros hold names, not verbs
    needs = required_literals(_MACRO.sub("(?:)", template), re.DOTALL)
    if needs is None:  # else what a kin word or a role needs ("Bob is my brother")
        needs = required_literals(_MACRO.sub(lambda m: _MACROS[m[0]] if m[0] in _WORD_MACROS else "(?:)",
                                             template), re.DOTALL)
    return _Rule(template, relation, source, target, **flags, needs=needs)


#: whom or what one has one of, said "my doctor is Dr. Patel": the relation of each
_SLOTS = {
    **dict.fromkeys("doctor gp physician".split(), "has_doctor"), "dentist": "has_dentist",
    **dict.fromkeys("therapist counsellor counselor psychologist".split(), "has_therapist"),
    "vet": "has_vet", "landlord": "has_landlord", "landlady": "has_landlord", "bank": "banks_with",
    "gym": "member_of", **dict.fromkeys("school university uni college".split(), "studied_at"),
    **dict.fromkeys("team club".split(), "supports"), "hairdresser": "has_hairdresser",
    "barber": "has_hairdresser", "optician": "has_optician", "physio": "has_physio",
    "physiotherapist": "has_physio", "accountant": "has_accountant", "lawyer": "has_lawyer",
    "solicitor": "has_lawyer", "trainer": "has_trainer", "coach": "has_trainer",
}  # fmt: skip
_SLOT_WORDS = "|".join(sorted(_SLOTS, key=len, reverse=True))
#: the slot words' plurals ("banks", "universities", "physios"), each read back to its slot
_SLOT_PLURAL = {(w[:-1] + "ies" if w.endswith("y") and w[-2] not in "aeiou" else w + "s"): w for w in _SLOTS}
_SLOT_PLURALS = "|".join(sorted(_SLOT_PLURAL, key=len, reverse=True))
#: "I changed banks", "switched gyms": the clause after it names the new one ("I'm with Starling now")
_SLOT_CHANGE = re.compile(
    # an adjunct may come first: "after that awful filling I changed dentists"
    r"(?:(?:after|following|because\s+of|since|when)\s+(?:[\w'’-]+\s+){1,5}?(?=(?i:i|we|he|she|they)\s))?"
    r"(?P<s>(?i:i|we|he|she|they)|[A-Z][\w'’.-]*)\s+(?:(?:have|has|had)\s+)?(?:(?:just|finally|recently|also)\s+)?"
    r"(?:changed|switched|moved|swapped|changing|switching)\s+(?P<slot>" + _SLOT_PLURALS + r")(?:\s+again)?",
    re.IGNORECASE,
)
_SLOT_VALUE = re.compile(
    r"(?P<s>(?i:i|we|he|she|they)|[A-Z][\w'’.-]*)\s+(?:(?:is|am|are|(?:has|have)\s+been)\s+(?:now\s+)?(?:with|at|"
    r"registered\s+(?:with|at)|signed\s+up\s+(?:with|at))|(?:now\s+)?(?:go|goes)\s+to|(?:(?:has|have)\s+)?(?:joined|chose|"
    r"picked|went\s+with|registered\s+with|signed\s+up\s+(?:with|at)|started\s+(?:at|with)|moved\s+to|switched\s+to))\s+"
    r"(?P<o>(?:(?i:the)\s+)?" + _NAME + r")(?:\s+(?:at|in)\s+[A-Z][^,;]*?)?(?:\s*,?\s+(?:now|these\s+days|instead))?",
)
#: activities said with their verb alone ("I knit", "she runs twice a week") -> "knitting"
_ACTIVITY_VERBS = (
    r"knit|crochet|sew|paint|draw|sketch|bake|garden|run|jog|swim|cycle|bike|hike|climb|boulder|surf|ski|"
    r"skate|dance|sing|box|row|sail|fence|golf|kayak|journal|meditate|skateboard|snowboard"
)
#: what may follow such a verb and leave it an activity ("a lot", "every Sunday", "three times a week")
_ACTIVITY_TAIL = (
    r"(?:\s+(?:a\s+lot|every\s+\w+|(?:\w+\s+)?times?\s+a\s+\w+|twice\s+a\s+\w+|once\s+a\s+\w+|in\s+the\s+"
    r"\w+|on\s+(?:the\s+)?\w+|at\s+(?:the\s+)?\w+|regularly|daily|weekly|most\s+\w+|for\s+fun|competitively|"
    r"(?:[a-z]+\s+){0,2}?(?:watercolou?rs?|portraits|landscapes|oils|acrylics|sweaters|scarves|bread|cakes|"
    r"marathons|trails|routes))\b)"
)
_USE_VERBS = (
    r"(?:%X(?:uses?|using|used|adopted|adopts?|chose|chooses|picked(?!\s+up)|selected|relies\s+on|rely\s+on|"
    r"relied\s+on|depends?\s+on|runs?\s+on|ran\s+on|went\s+with|go\s+with|standardi[sz]ed\s+on)"
    r"|(?:decided|chose|plans?|planned|started|want|wants|agreed)\s+to\s+(?:use|adopt))"
)

# Ordered: the first match wins, so specific shapes come before general ones ("is a member
# of" before "is a"; "is Alice's sister" before roles).
_RULES: list[_Rule] = [
    # endings
    _rule(r"%S%A\s+%X(?:quit|left|leaves|leave|lost)\s+(?:(?:my|his|her|their|your|the|a)\s+)?"
          r"(?:(?:old|previous|former|full-time|part-time)\s+)?(?:job|position|role|post)\s+"
          r"(?:as\s+(?:an?\s+)?(?P<role>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+)?(?:at|with|in)\s+%O%E",
          "works_at", "person", "organization", ends=True),
    _rule(r"%S%A\s+(?:%B\s+no\s+longer\s+(?:at|with|employed\s+(?:at|by))|used\s+to\s+work\s+"
          r"(?:at|for)|%X(?:was\s+|got\s+|been\s+)?let\s+go\s+(?:from|by))\s+%O%E", "works_at",
          "person", "organization", ends=True),
    _rule(r"%S%A\s+used\s+to\s+live\s+in\s+%O%E", "lives_in", "person", "place", ends=True),
    _rule(r"(?P<s>" + _PRONOUN_OR_NAME + r")\s+and\s+(?P<o>" + _PRONOUN_OR_NAME + r")\s+%X"
          r"(?:got\s+|are\s+|were\s+)?(?P<kin>divorced|separated)%E", "@kin", "person", "person",
          ends=True),
    _rule(r"(?P<s>" + _PRONOUN_OR_NAME + r")\s+and\s+(?P<o>" + _PRONOUN_OR_NAME + r")\s+%X"
          r"(?:broke\s+up|split\s+up|split)%E", "dating", "person", "person", ends=True),
    _rule(r"%S%A\s+%X(?:got\s+|is\s+|was\s+)?divorced\s+from\s+%N%E", "married_to", "person",
          "person", ends=True),
    _rule(r"%S%A\s+%X(?:broke|broken|split)\s+up\s+with\s+%N%E", "dating", "person", "person",
          ends=True),
    _rule(r"%S%A\s+(?:%X(?:left|leaves|leave|quit|quits)|%X(?:handed|put|turned|gave|given)\s+in\s+(?:my|his|her|their)"
          r"\s+notice\s+(?:at|to)|%X(?:gave|given|handed)\s+(?:my|his|her|their)\s+notice\s+(?:at|to)|"
          r"(?:resigned|retired|was\s+fired|was\s+"
          r"laid\s+off|got\s+fired|got\s+laid\s+off)\s+from|(?:stopped|quit)\s+working\s+(?:at|for)"
          r"|no\s+longer\s+works?\s+(?:at|for))\s+%O%E", "@left", "person", "organization",
          ends=True),
    _rule(r"%S%A\s+(?:no\s+longer\s+(?:lives?|resides?)\s+in|%X(?:moved|moves)\s+(?:out\s+of|"
          r"away\s+from))\s+%O(?!\s+to\s)%E", "@location", "person", "place", ends=True),
    _rule(r"%S%A\s+%X(?:divorced|divorces)\s+%N%E", "married_to", "person", "person", ends=True),
    _rule(r"%S%A\s+(?:%X(?:stopped|stop)\s+using|no\s+longer\s+uses?|%X(?:dropped|abandoned)|"
          r"%X(?:moved|migrated|switched)\s+away\s+from)\s+%O%E", "uses", "organization?",
          "technology", ends=True),
    _rule(r"%S%A\s+(?:%X(?:left|quit)|resigned|retired)%E", "@left_employer", "person",
          "organization", ends=True),  # "... and left in 2021": the employer named before
    # who someone is: names, aliases, standing instructions
    _rule(r"%P\s+(?:(?:full|first|real|given)\s+)?name\s+(?:is|was)\s+%N%E", "@named", "person",
          "person"),
    _rule(r"%P\s+nick-?name\s+(?:is|was)\s+%N%E", "also_known_as", "person", "person"),
    _rule(r"(?:(?i:please)\s+)?(?i:just\s+)?(?i:call)\s+(?P<s>(?i:me))\s+%N%E", "also_known_as",
          "person", "person"),
    _rule(r"(?i:everyone|everybody|people|friends|they|(?:my|his|her|their)\s+friends)\s+(?:call|calls|"
          r"called)\s+(?P<s>(?i:me|him|her|them))\s+%N%E", "also_known_as", "person", "person"),
    _rule(r"%S%A\s+(?:%X(?:prefers?|preferred|likes?|liked|wants?|wanted|would\s+like)\s+to\s+be\s+"
          r"(?:called|addressed\s+as|known\s+as)|%X(?:goes|go|went)\s+by|%B\s+(?:also\s+)?"
          r"(?:known\s+as|nicknamed)|(?:am|is|are)\s+called)\s+%N%E", "also_known_as", "person",
          "person"),
    _rule(r"(?P<s>(?i:i))\s+am\s+(?!" + _NOT_A_NAME + r")(?P<o>" + _NAME + r")%E", "@named",
          "person", "person"),
    _rule(r"(?:(?i:please)\s+)?(?P<o>(?:(?i:always|never|don't|do\s+not|only)\s+)?(?i:answer|reply|"
          r"respond|write|talk|speak|text)(?:\s+(?:to\s+)?me)?\s+in\s+" + _NAME + r")%E",
          "standing_instruction", "person", "concept", speaker=True),
    _rule(r"(?i:please)\s+(?P<o>(?:(?i:always|never|don't|do\s+not|only)\s+)?(?i:" + _ASKS + r")\b"
          r"(?:\s+[\w'’-]+){0,8})%E", "standing_instruction", "person", "concept", speaker=True),
    _rule(r"(?P<o>(?i:always|never|don't|do\s+not|only)\s+(?i:" + _ASKS + r")\b(?:\s+[\w'’-]+){0,8})%E",
          "standing_instruction", "person", "concept", speaker=True),
    _rule(r"(?P<o>(?i:keep|make)\s+(?:your\s+)?(?:answers|responses|replies|messages|explanations|"
          r"summaries)\s+[a-z][\w-]*(?:\s+[\w'’-]+){0,4})%E", "standing_instruction", "person",
          "concept", speaker=True),
    # employment and roles
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+as\s+(?:(?:an?|the)\s+)?(?P<role>[A-Za-z][\w-]*"
          r"(?:\s+[A-Za-z][\w-]*){0,3}?)\s+(?:at|for|with)\s+%O%E", "works_at", "person",
          "organization"),
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+(?:at|for)\s+%O%F%E", "works_at", "person",
          "organization"),
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+as\s+(?:(?:an?|the)\s+)?(?P<role>[A-Za-z][\w-]*"
          r"(?:\s+[A-Za-z][\w-]*){0,3})%E", "@role", "person", "concept"),
    _rule(r"%S%A\s+%B\s+employed\s+(?:by|at)\s+%O%F%E", "works_at", "person", "organization"),
    # "my new job is at Deloitte": where one works
    _rule(r"%P\s+(?:(?:new|current)\s+)?(?:job|workplace|employer)\s+(?:is|was)\s+(?:at|with)\s+%N%E", "works_at",
          "person", "organization"),
    _rule(r"%S%A\s+(?:is|am|are|(?:has|have)\s+been)\s+(?:now\s+)?at\s+%N%E", "works_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:got|gets|get|landed|lands|took|takes|accepted|accepts|found|started|"
          r"starts|began|was\s+offered|got\s+offered)\s+(?:(?:an?|the|my|his|her|their)\s+)?"
          r"(?:(?:new|first|full-time|part-time|permanent|summer|dream)\s+)*(?:job|position|role|"
          r"internship|offer|gig|post)(?:\s+as\s+(?:an?\s+)?(?P<role>[A-Za-z][\w-]*(?:\s+[a-z][\w-]*)"
          r"{0,2}?))?\s+(?:at|with|from|in|for)\s+%O%E", "works_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:was\s+|got\s+|been\s+)?(?:hired|employed)\s+(?:at|by)\s+%O%F%E", "works_at",
          "person", "organization"),
    _rule(r"%S%A\s+%X(?:runs|run|ran|running|manages|manage|managed|managing|leads|lead|led|"
          r"leading|heads|head|headed|heading|oversees|oversee|oversaw|directs|directed|directing|"
          r"supervises|supervised|coordinates|coordinated|chairs|chaired)\s+(?P<unit>(?:(?:the|a|an|"
          r"our|their|his|her|my)\s+)?(?:[A-Za-z][\w&-]*\s+){0,3}?(?i:team|department|dept|division|"
          r"group|unit|office|lab|branch|practice|desk|program|programme|project|operations|"
          r"function|squad|studio|clinic|ward|kitchen|store|shop|restaurant|school))\s+(?:at|for|of|"
          r"in|with)\s+%N%E", "@manages", "person", "organization"),
    _rule(r"%S%A\s+%X(?:works?|worked|working)\s+in\s+(?P<unit>(?:the\s+)?[A-Za-z][\w&-]*"
          r"(?:\s+[a-z][\w&-]*){0,2}?)\s+(?:at|for)\s+%N%E", "works_at", "person", "organization"),
    _rule(r"%S%A\s+%B\s+(?:(?:an?|the)\s+)?(?:[a-z][\w-]*\s+){0,2}?(?:student|undergraduate|"
          r"graduate|alumn(?:us|a|i|ae)|pupil|freshman|sophomore|senior|grad\s+student|phd\s+student|"
          r"phd\s+candidate)\s+(?:at|of|from)\s+%N%E", "studied_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:joined|joins|join|joining)\s+%O%F%E", "@joined", "person", "organization"),
    _rule(r"%S%A\s+%X(?:started|starts|start|began|begins)\s+"
          r"(?:working\s+|to\s+work\s+|a\s+(?:new\s+)?job\s+)?(?:at|for)\s+%O%F%E",
          "works_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:was\s+|got\s+|been\s+)?(?:hired|recruited)\s+by\s+%O%F%E", "works_at",
          "person", "organization"),
    _rule(r"%S%A\s+%X(?:was\s+|got\s+|been\s+)?promoted\s+to\s+(?:(?:an?|the)\s+)?(?P<role>"
          r"[A-Za-z][\w-]*(?:\s+(?:of\s+)?(?!(?:at|for|in|on|by|as|after|since|last|this)\b)[A-Za-z][\w-]*){0,3})"
          r"(?:\s+(?:at|for)\s+%N)?%E", "@role", "person", "organization"),
    # family and social (before roles: "Bob is Alice's manager")
    _rule(r"%S%A\s+%B\s+%P\s+(?:(?:older|younger|big|little|twin|best|old|good|close|new)\s+)?%K%E",
          "@kin", "person", "person"),
    _rule(r"%P\s+(?:(?:older|younger|big|little|twin|best|old|good|close|new)\s+)?%K\s+"
          r"(?:is|was)\s+(?P<s>" + _NAME + r")%E", "@kin", "person", "person"),
    _rule(r"(?P<s>" + _NAME + r")\s+and\s+(?P<o>" + _NAME + r")\s+(?:are|were|have\s+been)\s+"
          r"(?:(?:best|good|close|old)\s+)?(?P<kin>married|friends|siblings|sisters|brothers|"
          r"colleagues|co-?workers)%E", "@kin", "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:an?|the|one\s+of)\s+(?:(?:older|younger|big|little|twin|best|old|good|"
          r"close|new|oldest|youngest|eldest)\s+)?%K(?:s)?\s+of\s+(?P<o>" + _PRONOUN_OR_NAME + r")%E",
          "@kin", "person", "person"),
    _rule(r"(?P<s>" + _PRONOUN_OR_NAME + r")\s+and\s+(?P<o>" + _PRONOUN_OR_NAME + r")\s+"
          r"(?:%X(?:got|get|gets|are|were|became|have\s+been)\s+)(?P<kin>engaged|married|dating|"
          r"cousins|neighbou?rs|roommates|flatmates|partners)%E", "@kin", "person", "person"),
    _rule(r"%S%A\s+%X(?:got\s+|is\s+|was\s+|became\s+)?(?P<kin>engaged|married)\s+to\s+%N%E", "@kin",
          "person", "person"),
    _rule(r"(?P<s>" + _PRONOUN_OR_NAME + r")\s+and\s+(?P<o>" + _PRONOUN_OR_NAME + r")\s+%X(?:tied|tie|"
          r"ties)\s+the\s+knot%E", "married_to", "person", "person"),
    _rule(r"%S%A\s+%X(?:tied|tie|ties)\s+the\s+knot\s+with\s+%N%E", "married_to", "person", "person"),
    _rule(r"%S%A\s+%X(?:has|have|had|got)\s+(?:an?|one|two|three|four|five)\s+(?:(?:older|younger|big|"
          r"little|twin|step|new)\s+)?%K(?:s)?\s*[,:]?\s+(?:(?:called|named)\s+)?(?P<o>" + _NAME + r")%E",
          "@has_kin", "person", "person"),
    _rule(r"%S%A\s+%X(?:is\s+|are\s+|am\s+|was\s+)?(?:dating|seeing|going\s+out\s+with|in\s+a\s+"
          r"relationship\s+with|together\s+with)\s+%N%E", "dating", "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:married|wed)\s+to\s+%N%E", "married_to", "person", "person"),
    _rule(r"%S%A\s+%X(?:married|marries|marry)\s+%N%E", "married_to", "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:(?:best|good|close|old)\s+)?friends\s+with\s+%N%E", "friend_of",
          "person", "person"),
    _rule(r"%S%A\s+%B\s+(?:an?|the)\s+(?:(?:best|good|close|old)\s+)?friend\s+of\s+%N%E",
          "friend_of", "person", "person"),
    _rule(r"%S%A\s+%X(?:reports|reported|report|reporting)\s+to\s+%N%E", "reports_to", "person",
          "person"),
    # the person: birth, age, health, diet, pets, languages, education, hobbies, favourites
    _rule(r"%S%A\s+%X(?:was|were)\s+born(?:\s+and\s+(?:raised|brought\s+up|bred))?"
          r"(?:\s+(?:in|at)\s+%O)?(?:\s+on)?%E", "born_in", "person", "place", when="birth"),
    _rule(r"%P\s+(?:birthday|birth\s+date|date\s+of\s+birth|dob|DOB|bday)\s+(?:is|was|falls)"
          r"(?:\s+(?:on|in))?%E", "born_on", "person", "date", when="object"),
    _rule(r"%S%A\s+(?:%B|%X(?:turned|turns|turn)|(?:is|am|are)\s+aged)\s+(?P<o>\d{1,3})"
          r"(?:\s*-?\s*(?:years?|yrs?)(?:\s*-?\s*old)?)?%E", "age", "person", "concept"),
    _rule(r"%S%A\s+%B\s+(?:(?:severely|very|highly|mildly|deathly|seriously)\s+)?allergic\s+to\s+%O%E",
          "allergic_to", "person", "concept"),
    _rule(r"%S%A\s+%X(?:has|have|had|developed)\s+(?:an?\s+)?(?:(?:severe|serious|mild|bad|strong|"
          r"life-threatening)\s+)?(?:allergy|allergies)\s+to\s+%O%E", "allergic_to", "person",
          "concept"),
    _rule(r"%S%A\s+%X(?:has|have|had|developed)\s+(?:an?\s+)?(?:(?:severe|serious|mild|bad|strong|"
          r"life-threatening)\s+)?(?P<o>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?:allergy|allergies)%E",
          "allergic_to", "person", "concept"),
    _rule(r"%S%A\s+%B\s+(?:(?:severely|very|mildly)\s+)?(?P<o>[a-z][\w-]*)[\s-]+intolerant%E",
          "intolerant_to", "person", "concept"),
    _rule(r"%S%A\s+%B\s+intolerant\s+(?:to|of)\s+%O%E", "intolerant_to", "person", "concept"),
    _rule(r"%S%A\s+%B\s+(?P<cond>(?i:" + "|".join(_CONDITION_OF) + r"))%E", "@condition", "person",
          "concept"),
    _rule(r"%S%A\s+(?:%X(?:suffers?|suffered|suffering)\s+from|%X(?:was\s+|got\s+|been\s+)?"
          r"diagnosed\s+with|%X(?:lives?|living|lived)\s+with|%X(?:is\s+|am\s+|are\s+)?"
          r"(?:recovering|recovered)\s+from|%X(?:has|have|had|got|caught)\s+(?=(?i:" + _CONDITIONS +
          r")\b))\s*%O%E", "has_condition", "person", "concept"),
    _rule(r"%S%A\s+(?:%X(?:(?:went|gone|going|turned|became|become|doing|do|does)\s+)?(?:been\s+)?(?:a\s+)?"
          r"(?:(?:strict|strictly|fully|completely|totally|entirely|"
          r"mostly|full|now)\s+)*(?P<o>(?i:" + _DIETS + r"))|%B\s+on\s+an?\s+"
          r"(?P<o2>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+diet|%X(?:keeps?|kept|eats?|ate)\s+"
          r"(?P<o3>kosher|halal))%E", "has_diet", "person", "concept"),
    _rule(r"%S%A\s+(?:(?:does\s+not|doesn't|do\s+not|don't|never|no\s+longer)\s+(?:eats?|drinks?|"
          r"touch(?:es)?)|%X(?:stopped|gave\s+up|quit)\s+(?:eating|drinking))\s+%O%E", "avoids",
          "person", "concept"),
    _rule(r"%S%A\s+%X(?:has|have|had|got|gets|adopted|adopts|owns|own|rescued)\s+(?:an?|the|two|"
          r"three|one)\s+(?:[a-z][\w-]*\s+){0,2}?(?:" + _PETS + r")(?:s)?\s+(?:called|named)\s+%N%E",
          "has_pet", "person", "concept"),
    _rule(r"%P\s+(?:[a-z][\w-]*\s+)?(?:" + _PETS + r")(?:['’]s\s+name)?\s+(?:is|was)\s+"
          r"(?:called\s+|named\s+)?%N%E", "has_pet", "person", "concept", swap=False),
    _rule(r"%S%A\s+%X(?:has|have|had|got|gets|adopted|adopts|owns|own|rescued)\s+(?P<o>(?:an?|the|"
          r"two|three|one)\s+(?:[a-z][\w-]*\s+){0,2}?(?:" + _PETS + r")(?:s)?)%E", "has_pet",
          "person", "concept"),
    _rule(r"%S%A\s+(?:%X(?:speaks?|spoke|speaking|spoken)(?:\s+(?:fluent|some|a\s+little|basic|"
          r"native))?|%B\s+(?:fluent|native|conversational|bilingual)\s+in|%B\s+a\s+native)\s+%O"
          r"(?:\s+speaker)?%E", "speaks", "person", "concept"),
    _rule(r"%P\s+(?:native|first|mother)\s+(?:language|tongue)\s+is\s+%O%E", "speaks", "person",
          "concept"),
    _rule(r"%S%A\s+%X(?:graduated|graduates|graduate)\s+(?:from\s+)?%O%E", "studied_at", "person",
          "organization"),
    _rule(r"%S%A\s+%X(?:studied|studies|study|studying|majored|majors)\s+(?:in\s+)?"
          r"(?:[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2}?\s+)?at\s+%N%E", "studied_at", "person",
          "organization"),
    _rule(r"%S%A\s+%X(?:has|have|had|got|earned|received|holds|completed)\s+(?:an?|the|her|his|my)?"
          r"\s*(?:[\w'’-]+\s+){0,3}?(?:degree|phd|PhD|doctorate|diploma|masters?|master['’]s|"
          r"bachelor['’]?s?|mba|MBA|BSc|MSc|BA|MA)(?:\s+(?:in|of)\s+[\w\s-]+?)?\s+(?:from|at)\s+%N%E",
          "studied_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:attended|attends|attend|went\s+to|goes\s+to)\s+(?P<o>(?:(?i:the)\s+)?"
          r"(?:(?:University|College|School|Institute|Academy|Conservatory)\s+of\s+" + _NAME + r"|"
          + _NAME + r"\s+(?:University|College|School|Institute|Academy|Polytechnic|Conservatory)))%E",
          "studied_at", "person", "organization"),
    _rule(r"%S%A\s+%X(?:plays?|played|playing)\s+%O%E", "plays", "person", "concept"),
    _rule(r"%S%A\s+%X(?:practices|practises|practice|practise|practiced|practised|practicing|"
          r"practising|took\s+up|takes\s+up|take\s+up|taken\s+up|taking\s+up)\s+%O%E", "practices",
          "person", "concept"),
    _rule(r"%S%A\s+%X(?:goes|go|went|going|gone)\s+(?P<o>[a-z]+ing)%E", "practices", "person",
          "concept"),
    _rule(r"%S%A\s+%X(?:(?:trying|starting|beginning|attempting|started|began|tried)\s+to\s+)?(?:learns|learn|"
          r"learned|learnt|learning|studies|study|studied|studying)\s+%O%E", "learns", "person", "concept"),
    _rule(r"%S%A\s+%X(?:doing|does|do|did|taking|takes|take|took)\s+(?P<o>(?:" + _LANGUAGES + r"))"
          r"(?:\s+(?:classes|lessons|courses?|evening\s+classes|on\s+an\s+app))?%E", "learns", "person", "concept"),
    _rule(r"%S%A\s+%X(?:collects|collect|collected|collecting)\s+%O%E", "collects", "person",
          "concept"),
    _rule(r"%S%A\s+(?:has|have|had)\s+been\s+(?!(?:working|living|staying|waiting|thinking|feeling|"
          r"trying|doing|going|getting|looking|planning|saying|talking|wondering|meaning|hoping)\b)"
          r"(?P<o>[a-z]+ing)%E", "practices", "person", "concept", when="dated"),
    _rule(r"%P\s+(?:all-time\s+|absolute\s+|very\s+)?(?:favou?rite|fave|favourite)\s+(?P<cat>[a-z][\w-]*"
          r"(?:\s+[a-z][\w-]*)?)\s+(?:is|was|are|were)\s+%O%E", "@favourite", "person", "concept"),
    _rule(r"(?P<o>" + _NAME + r")\s+(?:is|was|are)\s+%P\s+(?:all-time\s+|absolute\s+)?"
          r"(?:favou?rite|fave)\s+(?P<cat>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)%E", "@favourite", "person",
          "concept"),
    _rule(r"(?:[\w'’]+\s+){1,3}?(?:has|have|had|got|put|puts)\s+(?P<s>(?i:me))\s+on\s+an?\s+(?:strict\s+)?(?P<o>"
          r"[A-Za-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+diet%E", "has_diet", "person", "concept"),
    _rule(r"(?:[\w'’]+\s+){1,3}?(?:has|have|had|got)\s+(?P<s>(?i:me))\s+doing\s+%O%E", "practices", "person", "concept"),
    _rule(r"(?:[\w'’]+\s+){1,3}?(?:made|make|makes|named|appointed|promoted)\s+(?P<s>(?i:me))\s+(?:(?:an?|the|our)\s+)?%R%E",
          "@role", "person", "concept"),
    # whom or what one has one of: "my doctor is Dr. Patel", "my new bank is Monzo"
    _rule(r"%P\s+(?:(?:new|current|regular|usual|old|former)\s+)?(?P<slot>(?i:" + _SLOT_WORDS + r"))\s+"
          r"(?:is|was|has\s+been)\s+%N%E", "@slot", "person", "organization?"),
    # "my new phone is an iPhone 15", "our new car is a Kia": a thing of a kind one holds
    _rule(r"%P\s+(?:(?:brand[\s-]+)?new\s+|current\s+)?(?P<kind>[a-z]+)\s+(?:is|was)\s+(?:an?\s+|the\s+)?%M%E", "@new_kind",
          "person", "concept"),
    _rule(r"%S%A\s+%X(?:banks?|banked|banking)\s+(?:with|at)\s+%N%E", "banks_with", "person",
          "organization"),
    _rule(r"%S%A\s+(?:%X(?:supports?|supported|supporting|follows?|followed|following|(?:cheers?|cheered|cheering|"
          r"roots?|rooted|rooting)\s+for)\s+(?P<o>(?:(?i:the)\s+)?"
          + _NAME + r")|%B\s+(?:an?\s+)?(?:(?:big|huge|lifelong|die-hard|diehard|loyal)\s+)?(?P<o2>" + _NAME
          + r")\s+supporter)%E", "supports", "person", "organization"),
    # "I'm in Newport now", "we're now in Seattle": where one lives, said as a change
    _rule(r"%S\s+(?:is|am|are)\s+(?:(?:now|currently)\s+)(?:living\s+|based\s+)?in\s+%N%E", "@location",
          "person", "place"),
    _rule(r"%S\s+(?:is|am|are)\s+(?:living\s+|based\s+)?in\s+%N\s*,?\s+(?:now|these\s+days|nowadays)%E",
          "@location", "person", "place"),
    # "I transferred to the University of Manchester": a school one studies at now
    _rule(r"%S%A\s+%X(?:transferred|transfers|transfer|switched|moved|changed)\s+to\s+(?P<o>(?:(?i:the)\s+)?"
          r"(?:(?:University|College|School|Institute|Academy|Conservatory)\s+of\s+" + _NAME + r"|"
          + _NAME + r"\s+(?:University|College|School|Institute|Academy|Polytechnic|Conservatory)))%E",
          "studied_at", "person", "organization"),
    # "I knit a lot", "I run three times a week", "I paint watercolours": an activity done
    _rule(r"%S%A\s+%X(?P<act>(?i:" + _ACTIVITY_VERBS + r"))(?:s|es|ed|d)?" + _ACTIVITY_TAIL + r"*"
          r"(?P<rest>[,;:.!?(].*)?", "@activity", "person", "concept"),
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
          r"purchased|purchases|drives|drive|drove|driving|rides|ride|rode))\s+%M%E", "owns",
          "person", "organization?"),
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
    _rule(r"%S%A\s+%X(?:share|shares|shared|rent|rents|rented|own|owns|bought|has|have)\s+(?:a|an|the|our|my)\s+"
          r"(?:[a-z]+\s+)?(?:flat|house|apartment|place|home|condo|studio)\s+in\s+%O%E", "@location", "person", "place"),
    _rule(r"%S%A\s+%B\s+(?:(?:now|officially|finally)\s+)?(?:an?\s+)?(?P<o>" + _NAME + r")\s+(?:resident|local)%E",
          "@location", "person", "place"),
    _rule(r"%S%A\s+%X(?:moved|moves|move|moving|relocated|relocates|relocate|relocating)"
          r"(?:\s+(?:from|out\s+of)\s+(?P<prev>" + _NAME + r"))?\s+to\s+%O%E", "@location", "person", "place"),
    # tools and technology
    _rule(r"%S%A\s+%X(?:switched|switches|switch|migrated|migrates|migrate|moved|move)"
          r"\s+from\s+(?P<prev>" + _NAME + r")\s+to\s+%O%E", "uses", "organization?", "technology"),
    _rule(r"%S%A\s+%X(?:switched|switches|switch|changed|changes|change|moved|went)\s+from\s+"
          r"(?P<prev>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2})\s+to\s+%O%E", "prefers", "person", "concept"),
    _rule(r"%S%A\s+%X(?:switched|switches|switch|migrated|migrates|migrate)\s+to\s+%O%E",
          "@switched", "organization?", "technology"),
    _rule(r"%S%A\s+%X(?:replaced|replaces|replace)\s+(?P<prev>" + _NAME + r")\s+with\s+%O%E",
          "uses", "organization?", "technology"),
    _rule(r"%S%A\s+" + _USE_VERBS + r"\s+%O%E", "uses", "organization?", "technology"),
    _rule(r"%S%A\s+%B\s+(?:built|written|implemented|developed|made|coded|powered)\s+"
          r"(?:with|in|on|using|by)\s+%O%E", "uses", "technology?", "technology"),
    _rule(r"(?i:use|adopt|switch\s+to|migrate\s+to|standardi[sz]e\s+on|go\s+with)\s+%O%E", "uses",
          "organization", "technology"),
    # plans and deadlines: the date says when the planned thing happens, not when it was true
    _rule(r"%S%A\s+(?:%X(?:plans?|planning|planned|intends?|intending|intended|hopes?|hoping|"
          r"hoped|wants?|wanted|wanting|aims?|decided|expects?|(?:is|am|are)\s+going|going|"
          r"(?:would|'d)\s+(?:like|love))\s+to|will|(?:is|am|are)\s+about\s+to)\s+(?P<verb>" + _PLAN_VERBS + r")"
          r"(?:\s+(?:to|in|for|on|at|with|from|out|up|around|through))?\s+%O%E", "plans", "person",
          "concept", when="plan"),
    _rule(r"%S%A\s+(?:%X(?:is|am|are)\s+)?(?:planning|booked|booking|organi[sz]ing|scheduled|"
          r"(?:is|am|are)\s+(?:scheduled|signed\s+up|registered|booked))\s+(?:a\s+trip\s+to|for|to|"
          r"on|a|an|the)?\s*%O%E", "plans", "person", "concept", when="plan"),
    _rule(r"%D\s+(?:deadline|due\s+date)\s+(?:is|was|will\s+be)(?:\s+(?:on|by|at))?%E", "due_on",
          "concept", "date", when="object"),
    _rule(r"(?i:the)\s+(?:deadline|due\s+date)\s+(?:for|of|on)\s+%D\s+(?:is|was|will\s+be)"
          r"(?:\s+(?:on|by))?%E", "due_on", "concept", "date", when="object"),
    _rule(r"%D\s+(?:is|are|was|were|will\s+be)\s+due(?:\s+(?:on|by|at|in))?%E", "due_on", "concept",
          "date", when="object"),
    _rule(r"%D\s+(?:must|has\s+to|have\s+to|needs\s+to|need\s+to|should)\s+be\s+(?:[a-z]+ed|done|"
          r"sent|in|ready|out|finished)(?:\s+(?:on|by|before))?%E", "due_on", "concept", "date",
          when="object"),
    _rule(r"%D\s+(?:is|are|was|were|will\s+be|has\s+been)\s+(?:scheduled|planned|set|booked|slated|"
          r"fixed|moved|rescheduled|postponed|pushed)(?:\s+(?:back|forward))?(?:\s+(?:for|to|on|at))?%E",
          "scheduled_for", "concept", "date", when="object"),
    _rule(r"%D\s+(?:takes\s+place|will\s+take\s+place|is\s+taking\s+place|happens|will\s+happen|"
          r"starts|will\s+start|begins|will\s+begin|ends|will\s+end|opens|will\s+open|launches|"
          r"will\s+launch|will\s+be\s+held|is\s+held)(?:\s+(?:on|in|at))?%E", "scheduled_for",
          "concept", "date", when="object"),
    # preferences and acquaintance
    _rule(r"%S%A\s+%X(?:prefers|prefer|preferred|prefering|preferring)\s+%M%E", "prefers",
          "person", "concept"),
    _rule(r"%S%A\s+(?:%X(?:dislikes|dislike|disliked|hates|hate|hated|detests|detest|detested|"
          r"loathes|loathe|loathed|despises|despise|despised|dreads|dread)|(?:does\s+not|doesn't|"
          r"do\s+not|don't|did\s+not|didn't|never)\s+(?:like|liked|enjoy|enjoyed)|"
          r"can(?:no|['’])t\s+(?:stand|bear|stomach)|(?:(?:is|am|are|was)\s+not|isn't|aren't|wasn't)\s+"
          r"(?:a\s+)?(?:(?:big|huge)\s+)?fan\s+of|(?:is|am|are)\s+not\s+into)\s+%M%E",
          "dislikes", "person", "concept"),
    # "I'm a big tea drinker", "she's a huge Arsenal fan": what the subject drinks, eats, likes
    _rule(r"%S%A\s+%B\s+(?:an?\s+)?(?:(?:big|huge|heavy|avid|keen|massive|serious|daily|regular|real|"
          r"great|true|total|lifelong|die-hard|diehard|passionate)\s+)*(?!(?:your|my|his|her|their|our|the|"
          r"biggest|greatest|number|no|a|an)\b)(?P<o>" + _NAME + r"|[a-z][\w-]*"
          r"(?:\s+[a-z][\w-]*)?)\s+(?P<fan>drinker|eater|fan|lover|enthusiast|buff|nut|addict|fanatic|"
          r"aficionado|devotee|junkie)(?!\s+of\b)%E", "@fan", "person", "concept"),
    # "I drink tea every morning", "she eats meat"
    _rule(r"%S%A\s+%X(?P<verb>drinks|drink|drank|drinking|eats|eat|ate|eating)\s+(?:(?:a\s+lot|lots|plenty|"
          r"loads|tons)\s+of\s+)?%O%E", "@consumes", "person", "concept"),
    # "I teach biology at Northside High"
    _rule(r"%S%A\s+%X(?:teach|teaches|taught|teaching)\s+(?:[a-z][\w-]*\s+){0,2}?(?:at|in)\s+%N%E", "works_at",
          "person", "organization"),
    # "I got an iPhone 14": a thing of a kind one holds (phone, car, bike, laptop)
    _rule(r"%S%A\s+%X(?:got|gets|get|getting|picked\s+up|upgraded\s+to)\s+(?:(?:a|an|the|my|our)\s+)?"
          r"(?:new\s+)?%M%E", "@got", "person", "concept"),
    _rule(r"%S%A\s+(?:is|am|are)\s+(?:now\s+)?on\s+(?:an?|the|my)\s+(?:new\s+)?%M%E", "@got", "person", "concept"),
    # "I do yoga twice a week": a known activity, done regularly
    _rule(r"%S%A\s+%X(?:do|does|did|doing)\s+(?P<o>(?:[a-z][\w-]*\s+){0,2}?%V)%E",
          "practices", "person", "concept"),
    _rule(r"%S%A\s+(?:%X(?:likes|like|liked|loves|love|loved|enjoys|enjoy|enjoyed|adores|adore|"
          r"adored)|%B\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|%B\s+(?:really\s+)?into|"
          r"%B\s+(?:passionate|crazy|mad|obsessed|enthusiastic)\s+(?:about|with))"
          r"\s+%M%E", "likes", "person", "concept"),
    _rule(r"%S%A\s+%X(?:knows|know|knew|known|met|meets|meet)\s+%N%E", "knows", "person",
          "person"),
    # life events, plans told in the present ("is running the marathon in October")
    # "I started learning German", "began playing the piano": the doing's own relation (learns, plays)
    _rule(r"%S%A\s+%X(?:started|starts|start|began|begins|begin|begun)\s+(?P<doing>(?i:" + "|".join(_changes.GERUNDS)
          + r"))\s+%O%E", "@doing", "person", "concept"),
    _rule(r"%S%A\s+%X(?P<verb>started|starts|start|began|begins|begin|finished|finishes|completed|"
          r"completes|passed|passes|won|wins|lost|loses|failed|visited|visits|attended|attends|"
          r"celebrated|celebrates|ran|runs|climbed|organi[sz]ed|hosted|hosts)\s+%O%E", "@event",
          "person", "concept"),
    _rule(r"%S%A\s+(?:is|am|are)\s+(?:thinking\s+(?:about|of)|considering)\s+(?P<verb>" + _PLANNING + r")"
          r"(?:\s+(?:to|in|for|on|at))?\s+%O%E", "plans", "person", "concept", when="plan"),
    _rule(r"%S%A\s+%X(?:doing|does|do|did|done)\s+%O%E", "practices", "person", "concept",
          when="dated"),
    _rule(r"%S%A\s+%X(?:has|have|had)\s+(?:an?|the)\s+(?:[a-z][\w-]*\s+){0,2}(?P<o>" + _NAME + r")"
          r"(?P<rest>[,;:.!?(].*)?", "owns", "person", "concept"),  # "has a red Honda", not "a Zoom call"
    _rule(r"%S%A\s+(?:is|am|are)\s+(?P<verb>[a-z]+ing)(?:\s+(?:to|in|for|on|at))?\s+%O%E", "plans",
          "person", "concept", when="dated plan"),
    # typing, last: anything more specific has had its chance
    _rule(r"%S%A\s+(?:is|was|are)\s+(?:an?)\s+%O%E", "is_a", "concept", "concept"),
]  # fmt: skip

#: every string some rule needs (``_match`` looks for each once per clause)
_LITERALS = frozenset().union(*(rule.needs for rule in _RULES if rule.needs))
#: the rules (by position) to try whatever a clause holds: those that need nothing known
_ALWAYS = frozenset(i for i, rule in enumerate(_RULES) if not rule.needs)
#: for each needed string, the rules that need it (one of them): a clause is tried only on the
#: rules of the strings it holds, in rule order, instead of testing every rule's needs
_RULES_NEEDING: dict[str, frozenset[int]] = {
    literal: frozenset(i for i, rule in enumerate(_RULES) if rule.needs and literal in rule.needs)
    for literal in _LITERALS
}
#: the needed strings a clause holds, found in one pass (``literals.scanner``)
_present = scanner(_LITERALS)

# -- text shapes

_SPEAKER = re.compile(
    r"\s*(?P<speaker>[A-Za-z][\w.'-]*(?:\s[A-Z][\w.'-]*){0,2})\s*:\s+(?P<text>\S.*)"
)
# A leading label that is not a speaker: "Big news:", "Meeting 2024-05-01:", "Quick update:"
_LABEL = re.compile(r"\s*(?P<label>[A-Za-z][\w.'’/-]*(?:\s+[\w.'’/-]+){0,3})\s*:\s+(?P<text>\S.*)")
_SPEAKER_NAME = re.compile(r"[A-Za-z][\w.'-]*(?:\s[A-Z][\w.'-]*){0,2}")
_BULLET = re.compile(r"\s*(?:[-*•>]+|#+|\d{1,3}[.)])\s+")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Inc|Corp|Ltd|Co|Jr|Sr|vs|etc|e\.g|i\.e|approx|Mt)|\b[A-Z])\.$"
)
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*|,?\s+(?:and|but)\s+(?:then\s+)?(?=[a-z])(?!(?:raised|bred|brought\s+up)\b)"
)
_CONTRACTION = re.compile(
    r"\b(i|we|you|they|he|she|it|that)['’](m|re|ve|s|ll|d)\b", re.IGNORECASE
)
_CONTRACTED = {"m": "am", "re": "are", "ve": "have", "s": "is", "ll": "will", "d": "would"}
_FILLER = re.compile(
    r"(?:(?i:then|also|and|but|so|now|recently|later|finally|meanwhile|currently|however|hi|hello|"
    r"hey|yes|yeah|ok|okay|sure|thanks|oh|wow|guess\s+what|"
    r"actually|well|oh|btw|by\s+the\s+way|fun\s+fact|anyway|plus|nowadays|lately|eventually|"
    r"in\s+fact|back\s+then|at\s+the\s+time|these\s+days)\b|[A-Z][a-z]+ly\b(?=\s*,|\s+(?:I|we|he|she|they|[A-Z][a-z]+)\s))[\s,:]*"
)
_EDGE_PUNCTUATION = re.compile(r"^[\s,;:.!?\-–—()\[\]\"'“”]+|[\s,;:.!?\-–—(\[\"'“”]+$")
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]")
_SPACES = re.compile(r"\s+")
_LEADING_DETERMINER = re.compile(r"^(?:the|a|an|our|my|his|her|their|its|this|that)\s+", re.I)


_APPOSITION = re.compile(
    rf"(?:(?P<p>{_NAME})['’]s?|(?P<pp>(?i:my|his|her|their|your)))\s+(?:(?:older|younger|big|"
    rf"little|twin|best|old|eldest|oldest|youngest|baby|new|late)\s+)?(?:(?P<kin>{_KIN_WORDS})|"
    rf"(?:[a-z][\w-]*\s+)?(?:{_PETS}))\s+(?P<name>{_NAME})(?=\s|,|$)"
)
_NEXT_CLAUSE = re.compile(
    r"(?:\s+(?:now|too|also|then|again|today|anymore|already))?,?\s+(?:and|but)\s+(?P<clause>[A-Z].*)",
    re.DOTALL,
)
_BARE_OBJECT = re.compile(rf"{_NP}|(?:{_DET})?{_NAME}")
# Further names listed after an object: ", Redis and Kafka". The lookahead stops at a verb, so
# "Acme and Bob works at Globex" does not make Bob an employer.
_MORE_OBJECT = re.compile(
    rf"(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or|&)\s+)(?:(?i:the)\s+)?(?P<o>{_NAME})"
    r"(?=\s*(?:,|\b(?:and|or)\b|$))"
)


#: a label that names a new thing of a kind ("Got a new phone: …", "New car: …"): what follows is it
_NEW_THING = re.compile(r"(?i:(?:(?:i\s+)?(?:got|bought|have|get|getting)\s+(?:a|an|my|our)\s+)?(?:brand[\s-]+)?"
                        r"new)\s+(?P<kind>[a-z]+)")


#: "I got a new car, a Tesla Model Y": the new thing of a kind, named after it
_NEW_THING_SAID = re.compile(r"(?P<label>(?:(?:I|we)\s+)?(?:just\s+|finally\s+)?(?:got|bought|have)\s+(?:a|an|my|our)\s+"
                             r"(?:brand[\s-]+)?new\s+(?P<kind>[a-z]+))\s*[,:—–-]\s*(?P<text>(?:an?|the)\s+\S.*)")


def _new_thing(sentence: str) -> str:
    """ "I got a new car, a Tesla Model Y." is "My new car is a Tesla Model Y." (``_NEW_THING``)."""
    said = _NEW_THING_SAID.fullmatch(sentence) if "new" in sentence else None
    if said and _changes.category_of(said["kind"]):
        return f"My new {said['kind']} is {said['text']}"
    return sentence


def _sentences(text: str) -> list[tuple[str | None, str]]:
    """(speaker, sentence) pairs: one speaker per line, sentences split on end punctuation."""
    out: list[tuple[str | None, str]] = []
    for line in _join_wrapped(text.splitlines()):
        speaker = None
        match = _SPEAKER.fullmatch(line)
        if match and _is_speaker(match["speaker"]):
            speaker, line = _speaker_name(match["speaker"]), match["text"]
        label = _LABEL.fullmatch(line)
        if label and not _is_speaker(label["label"]):
            line = label["text"]  # "Decision: Use X", "Big news: …": the label is not a speaker
            new = _NEW_THING.fullmatch(label["label"])
            if new and _changes.category_of(new["kind"]):  # "Got a new phone: an iPhone 15"
                line = f"My new {new['kind']} is {line}"
        bullet = _BULLET.match(line)
        line = line[bullet.end() :] if bullet else line
        out.extend((speaker, _new_thing(sentence)) for sentence in _split_sentences(line))
    return out


# ", so I bought a Brompton", ", it's green tea now", ", I'm an analyst at Barclays now": a
# comma before a new subject starts a clause when the text before it has a subject of its own
_COMMA_CLAUSE = re.compile(
    r",\s+(?:(?:and\s+)?so\s+|then\s+|since\s+|because\s+)?(?:now\s+)?(?=(?:I|we|he|she|they|it)(?:\s|['’]))|"
    r",\s+(?:(?:and\s+)?so|then|since|because)\s+(?=(?:my|our|his|her|their)\s)|"
    r"\s*:\s+(?=(?:I|we|he|she|they)(?:\s|['’]))"  # "big year: I moved …", "… a new job: I'm a lead at Wise"
)
_OPENER = re.compile(
    r"\s*(?:(?i:in|on|at|after|before|since|when|whenever|if|because|although|though|while|as|"
    r"once|by|during|for|from|last|this|next|yesterday|today|tonight|honestly|well|so|also|then|"
    r"now|actually|basically|anyway|oh|yes|yeah|no|sure|thanks|hi|hey|hello|ok|okay|sadly|luckily|"
    r"unfortunately|fortunately|wow|until|like|with|without|to|the|a|an)\b|[^\w\s]|\d|$)"
)


#: a first part with a subject of its own: a pronoun, or a verb ("the Skoda got written off, so
#: I …", "the Civic broke down, so I …"), unlike an opener ("In 2019, I …", "The next day, I …")
_OWN_SUBJECT = re.compile(r"\bI\b|\b(?:we|he|she|they)\s+[a-z]|\b(?:[a-z]{3,}ed|died|broke|broken|stolen|sold|got)\b")


#: "… and I …" after a part of three words or more: a clause of its own ("Elena and I" is a subject)
_AND_I = re.compile(r",?\s+and\s+(?=I(?:\s|['’]))")


def _clauses(sentence: str) -> list[str]:
    out: list[str] = []
    parts = []
    for part in _CLAUSE_BREAK.split(sentence):
        pieces = _AND_I.split(part) if "and" in part else [part]
        parts += pieces if len(pieces) > 1 and len(pieces[0].split()) >= 3 else [part]
    for clause in parts:
        pieces = _COMMA_CLAUSE.split(clause) if "," in clause or ":" in clause else [clause]  # what it splits at
        if len(pieces) > 1 and (not _OPENER.match(pieces[0]) or _OWN_SUBJECT.search(pieces[0])):
            out.extend(pieces)
        else:
            out.append(clause)
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


def _is_speaker(label: str) -> bool:
    """A transcript line's "Name:": a name's shape (capitalised words after the first, no
    digits), none of its words a label word ("News", "Quick update", "Meeting 2024-05-01")."""
    if not _SPEAKER_NAME.fullmatch(label.strip()) or label.casefold() in _SPEAKER_LABELS:
        return False
    return not any(word in _SPEAKER_LABELS for word in label.casefold().split())


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
    if "(" in clause or "[" in clause:  # what every empty bracket holds
        clause = _EMPTY_BRACKETS.sub(" ", clause)
    if "'" in clause or "’" in clause:  # what every contraction holds
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
    name = _changes.tidy_value(_LEADING_DETERMINER.sub("", name))  # "now a tester" -> "tester"
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

    def __init__(self, reference_time: dt.datetime, speaker: str | None = None,
                 addressee: str | None = None) -> None:
        self.reference_time = reference_time
        self.speaker, self.addressee = speaker, addressee
        self.entities: dict[str, ExtractedEntity] = {}
        self.facts: list[ExtractedFact] = []
        self.fact_keys: set[tuple[object, ...]] = set()
        self.last_person: str | None = None
        self.last_thing: str | None = None
        self.employers: dict[str, str] = {}  # person key -> last employer, for a bare "left"
        self.named = speaker is not None  # whether "I" has a name ("my name is" gives it one)
        self.line_speaker: str | None = None  # the speaker of the last "Name:" line
        self.other: str | None = None  # the speaker before them: whom they answer
        self.you = addressee
        self.current_line: str | None = None
        self.voices = {name for name in (speaker, addressee) if name}  # speakers are people
        self.sentence_start = 0  # the first fact of the sentence being read
        self.slot: str | None = None  # "I changed banks, …": the relation the sentence's next value holds
        self.carried: str | None = None  # a slot a sentence named and did not fill: the next sentence may
        self.sentence = ""  # the sentence being read
        self.head = ""  # the last clause up to its object: the words of "… and a car"
        self.clause_of: dict[int, str] = {}  # a fact (by index) of the sentence read -> its own clause

    def voice(self, line_speaker: str | None) -> str | None:
        """Who "I" is in a line, and (``self.you``) who "you" is: a "Name:" line is said by Name
        to the dialogue's previous speaker; other lines by the extraction's speaker."""
        if line_speaker is None:
            self.you = self.addressee
            self.voices.update(name for name in (self.speaker, self.you) if name)
            return self.speaker
        self.voices.add(line_speaker)
        if line_speaker != self.line_speaker:
            self.other, self.line_speaker = self.line_speaker, line_speaker
        self.you = self.other or self.addressee
        return line_speaker

    def read(self, line_speaker: str | None, sentence: str) -> None:
        if len(sentence) > _MAX_CLAUSE * 4:
            return
        self.sentence_start, self.sentence = len(self.facts), sentence
        carried, self.carried = self.carried, None  # "I changed dentists. I go to Dr. Achieng now."
        self.slot, self.head = carried, ""
        previous: _Found | None = None  # the last clause that matched, for "... and left"
        undated: list[int] = []  # endings that state no date yet: "left Acme and joined …"
        for clause in _clauses(sentence):
            if len(clause) <= _MAX_CLAUSE:
                before = len(self.facts)
                self.current_line = line_speaker
                speaker = self.voice(line_speaker)  # per clause: "my name is Erin and I …"
                previous = self.read_clause(speaker, sentence, clause, previous) or previous
                self.narrow(before, clause)
                self.date_endings(undated, before)
                ended = next((f.relation for f in self.facts[before:] if f.ends and f.relation in _SLOT_RELATIONS), None)
                self.slot = ended or self.slot  # "I left Acme, since May I've been at X": X is where one works
        if self.slot is not None and self.slot != carried:
            self.carried = self.slot
        self.described()

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
        self, speaker: str | None, sentence: str, clause: str, previous: _Found | None, raw: str | None = None
    ) -> _Found | None:
        said = raw or clause  # the clause as written, for the words of its facts (``narrow``)
        dates = find_dates(clause, self.reference_time)
        dates = dates if dates.spans else _bare_day(clause, self.reference_time) or dates
        text = _tidy(dates.strip(clause) if dates.spans else clause)
        text = _PLACE_OPENER.sub("", text)
        text = _KIND_APPOSITION.sub("a ", text) if "," in text else text
        text = _uncleft(self.apposition(text, speaker, sentence))
        text = _elided(text, clause, sentence) if speaker is not None else text
        if previous and previous[0] is _RULES[-1] and list(previous[1]) == ["s"] and text[:1].islower() \
                and not _OWN_PRONOUN.match(text):
            text = f"{previous[1]['s']} {text}"  # "I gave up and replaced the Acer …": the subject goes on
        slot = self.slot_change(text, speaker, sentence, dates)
        if slot is not None:
            return slot
        change = _changes.read_change(text, clause) if text else None  # "no longer", "switched", "now" …
        future = _changes.is_future(clause, dates.valid_at, self.reference_time)
        found = _match(change.text) if change and change.text and change.text != text else None
        rewritten = found is not None  # "I no longer play tennis" read as "I play tennis", ended
        found = found or (_match(text) if text and (change is None or change.text) else None)
        if found is None and change and change.changes and change.text and (bare := _changes.without_now(text)) != text:
            found = _match(bare)  # "I have a Pixel 9 now": the rules end at the value
        if found is None and previous and text[:1].islower():
            found = _continue(text, previous)
            if found is not None and found[1].get("o") == text and self.head:
                said = self.head + said  # "I use a Pixel and a Dell laptop": "I use a Dell laptop"
            elif found is not None and previous[1].get("s"):
                said = f"{previous[1]['s']} {said}"  # "I live in Pune and work at X": "I work at X"
        if change and not future and change.value and (found is None or (
                change.ends and not rewritten and not found[0].ends)):
            self.value_change(change, speaker, sentence, dates)  # "gave up coffee": no verb to read
            if found is None and change.subject:  # "... and bought a Tesla" continues its subject
                return _RULES[-1], {"s": change.subject}
        if found is None:  # "We packed up and relocated …": the next clause continues "we"
            subject = _PRONOUN_CLAUSE.match(text)
            return (_RULES[-1], {"s": subject["s"]}) if subject else None
        before = len(self.facts)
        rule, groups = found
        valid_at, invalid_at = dates.valid_at, dates.invalid_at
        if valid_at and not future and valid_at > self.reference_time and rule.when == "valid":
            valid_at = _year_before(clause, dates)  # "I moved in August", said in June: last August
        if rule.when not in {"valid", "dated"}:  # the date is what is planned or due, not when it became true
            valid_at = invalid_at = None
            date = _date_name(clause, dates, rule.relation == "born_on", self.reference_time)
            if rule.when == "object":
                groups = {**groups, "o": date}
            elif rule.when == "birth":
                valid_at = dates.valid_at
                if date:
                    born = _Fact(self.resolve(groups.get("s"), speaker) or "", "person", "born_on",
                                 date, "date")
                    if born.source:
                        self.add(born, sentence, None, None, False)
            elif rule.when == "dated plan" and not dates.spans:
                return None
        elif rule.when == "dated" and not dates.spans:
            return None
        more = _more_objects(groups) if rule.relation != "@kin" else []
        # "uses Kafka, Redis and Postgres": one fact per object, each said by its own words
        # ("I use Vim and Emacs": "I use Vim", "I use Emacs")
        listed = (groups.get("o") or "") if more else ""
        at = said.find(listed) if listed else -1
        for variant in [groups, *({**groups, "o": name, "role": None} for name in more)]:
            start = len(self.facts)
            for fact in self.facts_of(rule, variant, speaker):
                self.add(fact, sentence, valid_at, invalid_at, rule.ends)
            if at > 0:
                self.narrow(start, said[:at] + (variant.get("o") or ""))
        self.mark_change(before, change if rewritten or not (change and change.ends) else None, future, sentence)
        if change and change.then and not future:  # "I don't drink coffee anymore, just green tea"
            ended = self.facts[-1].relation if len(self.facts) > before else None  # "no longer eat meat, just fish": eats
            self.value_change(_changes.Change(text="", changes=True, value=change.then, subject=change.subject,
                                              relation=ended), speaker, sentence, dates)
        tail = _NEXT_CLAUSE.match(groups.get("rest") or "")
        if tail and not more:  # "Alice works at Acme and Bob works at Globex"
            head, rest = _head(said, tail["clause"])
            self.narrow(before, head)
            speaker = self.voice(self.current_line)  # "my name is Erin and I …" names "I"
            return self.read_clause(speaker, sentence, tail["clause"], found, rest) or found
        self.narrow(before, said)
        at = said.find(groups.get("o") or "\0")
        self.head = said[:at] if at > 0 and _OWN_CLAUSE.match(said) else ""
        return found

    def narrow(self, before: int, clause: str) -> None:
        """A fact of a sentence of several clauses is described by its own clause when that
        clause has its own subject and names the fact's value: "I'm a nurse at St Mary's and I
        live in Brighton" describes the home by "I live in Brighton", so a change of employer
        leaves no current fact naming the old one. A clause without the value ("… and left in
        2021") keeps the sentence, as do plans and events (``_NOT_STATES``), which no change ends."""
        clause = clause.strip()
        if clause == self.sentence.strip() or not _OWN_CLAUSE.match(clause):
            return
        words = f" {normalize_name(clause)} "
        for index in range(before, len(self.facts)):
            fact = self.facts[index]  # a plan or an event is never closed by a change: its words stay
            if fact.sentence == self.sentence and fact.relation not in _NOT_STATES and \
                    f" {normalize_name(fact.target)} " in words:
                self.clause_of.setdefault(index, clause)

    def described(self) -> None:
        """Each fact of the sentence read takes its own clause (``narrow``) only where the
        sentence names another fact's value that clause does not: the words of a sentence that
        states one thing ("I changed jobs, I'm an analyst at Barclays now") are kept whole."""
        targets = {f" {normalize_name(f.target)} " for f in self.facts[self.sentence_start :]}
        for index, clause in self.clause_of.items():
            words = f" {normalize_name(clause)} "
            if any(target not in words for target in targets):
                self.facts[index] = self.facts[index].model_copy(update={"sentence": clause})
        self.clause_of = {}

    def slot_change(self, text: str, speaker: str | None, sentence: str, dates: DateSpan) -> _Found | None:
        """"I changed banks, I'm with Starling now": the first clause names the slot that
        changed, the next its new value, a change of that slot's relation (``_SLOTS``)."""
        if match := _SLOT_CHANGE.fullmatch(text):
            self.slot = _SLOTS[_SLOT_PLURAL[match["slot"].casefold()]]
            return _RULES[-1], {"s": match["s"]}
        match = _SLOT_VALUE.fullmatch(text) if self.slot else None
        subject = self.resolve(match["s"], speaker) if match else None
        target = _clean_name(match["o"]) if match else ""
        if not match or not subject or not target or not self.slot:
            return None
        relation, self.slot = self.slot, None
        target_type = "person" if relation in _PERSON_SLOTS else "organization"
        before = len(self.facts)
        self.add(_Fact(subject, self.type_of(subject, "person"), relation, target, target_type), sentence,
                 dates.valid_at, dates.invalid_at, False)
        if len(self.facts) > before:
            self.facts[before] = self.changed(self.facts[before])
        return _RULES[-1], {"s": match["s"]}

    def mark_change(self, before: int, change: _changes.Change | None, future: bool, sentence: str) -> None:
        """What a change marker says about the facts a clause gave (``changes.py``): a plan
        changes nothing yet; "no longer …" ended them; "… now", "switched to …" are new values
        that end the old one of their slot, and a named old value ("from A", "not A") ends."""
        for index in range(before, len(self.facts)):
            fact = self.facts[index]
            if future:
                if fact.relation not in _NOT_STATES:
                    self.facts[index] = fact.model_copy(update={"relation": "plans", "valid_at": None,
                                                                "invalid_at": None, "ends": False})
            elif change is None or fact.ends:
                continue
            elif change.ends:
                self.facts[index] = fact.model_copy(update={
                    "ends": True, "valid_at": None, "invalid_at": fact.invalid_at or fact.valid_at})
            elif change.changes and fact.relation not in _NOT_STATES:
                self.facts[index] = self.changed(fact)
                if change.old and index == before:
                    self.add_old(self.facts[index], change.old, sentence)

    def changed(self, fact: ExtractedFact) -> ExtractedFact:
        """A new value stated as a change; undated, it starts when the value it follows in the
        same sentence ended ("gave up coffee in March, it's green tea now")."""
        update: dict[str, object] = {"changes": True}
        if fact.valid_at is None:
            ended = next((f.invalid_at for f in reversed(self.facts[self.sentence_start :])
                          if f.ends and f.invalid_at and f.source == fact.source), None)
            if ended is not None:
                update["valid_at"] = ended
        return fact.model_copy(update=update)

    def add_old(self, new: ExtractedFact, old: str, sentence: str) -> None:
        """The value a change names as replaced ("from A", "replaced A with", "not A") ends, in
        the new value's relation, when the new one begins."""
        name = self.resolve(old, None)
        if not name or normalize_name(name) == normalize_name(new.target):
            return
        known = self.entities.get(normalize_name(new.target))
        kind = known.type if known is not None else "concept"
        source_type = self.type_of(new.source, "person")
        self.add(_Fact(new.source, source_type, new.relation, name, kind, closes_previous=True), sentence,
                 new.valid_at, None, False)

    def value_change(self, change: _changes.Change, speaker: str | None, sentence: str,
                     dates: DateSpan) -> None:  # fmt: skip
        """A change no rule reads, its value bare ("gave up coffee", "sold the Civic", "it's
        green tea for me now", "replaced yoga with swimming"): the relation is the one this
        sentence or memory already gave a value of the same kind, else the kind's own."""
        earlier = self.facts[self.sentence_start :]
        subject = self.resolve(change.subject, speaker) if change.subject else None
        if subject is None:
            subject = earlier[-1].source if earlier else (speaker or USER)
        value = self.resolve(change.value, speaker) if change.value else None
        if not subject or not value:
            return
        kind = _changes.category_of(value) or _changes.category_of(change.old or "")
        relation = next((f.relation for f in reversed(self.facts) if f.source == subject and kind
                         and _changes.category_of(f.target) == kind), None)
        if relation is None and earlier and not change.subject:
            relation = earlier[-1].relation  # "…, it's green tea for me now"
        if relation is None:
            relation = change.relation or _changes.kind_relation(
                value, "practices" if value.endswith("ing") else "owns" if change.ends and not change.text
                else "prefers")
        source_type = self.type_of(subject, "person")
        before = len(self.facts)
        fact = _Fact(subject, source_type, relation, value, "concept", ends=change.ends)
        self.add(fact, sentence, dates.valid_at, dates.invalid_at, change.ends)
        if change.changes and len(self.facts) > before:
            self.facts[before] = self.changed(self.facts[before])
            if change.old:
                self.add_old(self.facts[before], change.old, sentence)

    def apposition(self, text: str, speaker: str | None, sentence: str) -> str:
        """"My brother Tom lives in Denver": states Tom sibling_of the speaker, reads "Tom lives
        in Denver"; "my cat Miso" states has_pet."""
        match = _APPOSITION.match(text)
        if not match:
            return text
        owner = self.resolve(match["p"] or match["pp"], speaker)
        name = _clean_name(match["name"])
        if owner and match["kin"]:
            for fact in _kin_facts(name, owner, match["kin"]):
                self.add(fact, sentence, None, None, False)
        elif owner:
            self.add(_Fact(owner, "person", "has_pet", name, "concept"), sentence, None, None, False)
        return name + text[match.end() :]

    def subject_of(self, rule: _Rule, groups: _Groups, speaker: str | None) -> str | None:
        if rule.speaker:
            return speaker or USER
        if "s" in groups:
            return self.resolve(groups.get("s"), speaker)
        if "p" in groups:
            return self.resolve(groups.get("p") or groups.get("pp"), speaker)
        return OUR_TEAM

    def specialize(self, rule: _Rule, groups: _Groups, subject: str) -> tuple[_Rule, _Groups]:
        """Placeholders that need the match: "favourite colour" is favourite_colour; "is
        diabetic" has_condition diabetes; "switched to" uses (teams, tools) or prefers (people)."""
        relation = rule.relation
        if relation == "@favourite":
            words = normalize_name(groups.get("cat") or "").split()
            return replace(rule, relation="_".join(["favourite", *words][:3])), groups
        if relation == "@condition":
            condition = _CONDITION_OF[(groups.get("cond") or "").casefold()]
            return replace(rule, relation="has_condition"), {**groups, "o": condition}
        if relation == "@event":
            verb = (groups.get("verb") or "").casefold()
            target = groups.get("o") or ""
            if verb in {"started", "starts", "start", "began", "begins", "begin"} and (
                    _changes.category_of(target) in {"sport", "craft"} or re.fullmatch(r"[a-z]+ing", target)):
                return replace(rule, relation="practices"), groups  # "started cycling": a new activity
            return replace(rule, relation=_EVENTS.get(verb, verb)), groups
        if relation == "@slot":  # "my doctor is Dr. Patel": has_doctor
            held = _SLOTS[(groups.get("slot") or "").casefold()]
            return replace(rule, relation=held,
                           target_type="person" if held in _PERSON_SLOTS else "organization"), groups
        if relation == "@activity":  # "I knit a lot": practices knitting
            return replace(rule, relation="practices"), {**groups, "o": _gerund(groups.get("act") or "")}
        if relation == "@doing":  # "started learning German": learns German
            return replace(rule, relation=_changes.GERUNDS[(groups.get("doing") or "").casefold()]), groups
        if relation == "@new_kind":  # "my new phone is …": held as its kind is ("owns" a phone)
            kind = _changes.kind_relation(groups.get("kind") or "", "")
            return replace(rule, relation=kind if kind == "owns" else "@nothing"), groups
        if relation == "@got":  # "got an iPhone 14" owns it; "got a cold", "got the news": nothing
            owned = _changes.category_of(groups.get("o") or "") in {"phone", "car", "bike", "laptop"}
            return replace(rule, relation="owns" if owned else "@nothing"), groups
        if relation == "@consumes":
            verb = (groups.get("verb") or "").casefold()
            return replace(rule, relation="drinks" if verb.startswith("dr") else "eats"), groups
        if relation == "@fan":  # "a big tea drinker" drinks tea; "a jazz fan" likes jazz
            fan = (groups.get("fan") or "").casefold()
            return replace(rule, relation={"drinker": "drinks", "eater": "eats"}.get(fan, "likes")), groups
        if relation == "@switched":
            target = groups.get("o") or ""
            tool = _vocabulary_type(target) == "technology" or target[:1].isupper()
            team = subject == OUR_TEAM or self.type_of(subject, "person") == "organization"
            if not team and (kind := _switched_kind(target)):
                return replace(rule, relation=kind, source_type="person", target_type="concept"), groups
            if tool or team:
                return replace(rule, relation="uses"), groups
            return replace(rule, relation="prefers", source_type="person", target_type="concept"), groups
        return replace(rule, relation="also_known_as"), groups  # @named

    def facts_of(self, rule: _Rule, groups: _Groups, speaker: str | None) -> list[_Fact]:
        subject = self.subject_of(rule, groups, speaker)
        if groups.get("o2") or groups.get("o3"):  # "is on a keto diet", "keeps kosher"
            groups = {**groups, "o": groups.get("o2") or groups.get("o3")}
        if subject and rule.relation in _SPECIALIZED:
            naming = rule.relation == "@named"
            rule, groups = self.specialize(rule, groups, subject)
            if naming and subject == (speaker or USER) and not self.named and groups.get("o"):
                self.speaker, self.named = _clean_name(groups["o"] or ""), True  # "I" is named now
        if rule.relation == "@nothing":
            return []
        if rule.relation == "@has_kin":  # "I have two brothers, Luke and Ben"
            return _kin_facts(self.resolve(groups.get("o"), speaker), subject, groups["kin"] or "")
        if rule.relation == "@kin":
            possessor = groups.get("p") or groups.get("pp") or groups.get("o")
            return _kin_facts(subject, self.resolve(possessor, speaker), groups["kin"] or "")
        target = self.resolve(groups.get("o"), speaker) if groups.get("o") else None
        if not subject or (groups.get("o") and not target):
            return []
        if rule.swap:
            subject, target = target, subject
        if subject is None:  # a passive shape read without its object: nothing it states
            return []
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
        if rule.relation == "owns" and rule.target_type == "organization?" and target and target[:1].isupper():
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
        if relation in {"prefers", "uses"} and groups.get("prev") and \
                source_type == "person" and (kind := _switched_kind(target)):
            relation = kind  # "switched from the iPhone to a Pixel": owns the Pixel; "from Spanish to Italian": learns
        facts = [_Fact(subject, source_type, relation, target, target_type)]
        unit = _clean_name(groups.get("unit") or "")
        if unit:  # "manages the data team at Acme": works at Acme, manages the data team
            facts.append(_Fact(subject, source_type, "manages", unit, "concept", implied=True))
        previous = _clean_name(groups.get("prev") or "")
        if previous:
            facts.append(
                _Fact(subject, source_type, relation, previous, target_type, closes_previous=True)
            )
        return facts

    def relation_for(self, relation: str, source_type: str, target: str, target_type: str) -> str:
        if relation == "@location":
            return "located_in" if source_type == "organization" else "lives_in"
        if relation == "@joined":  # a club, a gym, or what the sentence calls a membership
            last = normalize_name(target).rsplit(" ", 1)[-1]
            member = last in _GROUP_WORDS or _changes.category_of(target) == "gym" or _MEMBERSHIP.search(self.sentence)
            return "member_of" if member else "works_at"
        if relation == "@left":  # "quit pilates": the activity ends; "quit teaching": the work, a role
            if target[:1].islower() and (kind := _changes.kind_relation(target, "")):
                return kind
            if re.fullmatch(r"[a-z]{4,}ing", target):
                return "has_role"
            return "lives_in" if target_type == "place" else "works_at"
        if relation in {"@role", "@left_employer", "@manages"}:
            return "works_at"  # "promoted to CTO at Acme"; "joined Acme and left in 2021"
        return relation

    def resolve(self, raw: str | None, speaker: str | None) -> str | None:
        """An entity name for a mention: pronouns resolved, determiners and punctuation cut."""
        if not raw:
            return None
        key = _SPACES.sub(" ", raw.strip()).casefold()
        if key in _FIRST_PERSON:
            return speaker or USER
        if key in _WE:  # a speaker's "we" includes the speaker ("we're moving to Lisbon")
            return (speaker if key in {"we", "us"} else None) or OUR_TEAM
        if key in _SECOND_PERSON:
            return self.you
        if key in _PERSON_PRONOUNS:
            return self.last_person
        if key in {"it", "its"}:
            return self.last_thing
        name = _clean_name(raw)
        if not name or name.casefold() in _NON_SUBJECTS or len(name) > 80:
            return None
        if name.casefold().split()[0] in _VAGUE:
            return None
        return name

    def type_of(self, name: str, slot_type: str) -> str:
        """Known type in this memory, else the vocabulary's, else what the rule's slot says."""
        known = self.entities.get(normalize_name(name))
        if known is not None and known.type != "concept":
            return known.type
        if name == USER or name.casefold() in _FIRST_PERSON or name in self.voices:
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
        alias = fact.relation == "also_known_as"  # "I'm Nadia" names Nadia Fares: two names kept
        source = self.entity(fact.source, fact.source_type, sentence, alias)
        target = self.entity(fact.target, fact.target_type, sentence, alias)
        if normalize_name(source) == normalize_name(target) or not normalize_name(target):
            return
        key = (normalize_name(source), fact.relation, normalize_name(target), valid_at,
               invalid_at, ends)  # fmt: skip
        if key in self.fact_keys:
            return
        self.fact_keys.add(key)
        said = _implied_sentence(source, fact.relation, target) if fact.implied else sentence
        self.facts.append(
            ExtractedFact(source=source, relation=fact.relation, target=target, sentence=said,
                          valid_at=valid_at, invalid_at=invalid_at, ends=ends,
                          changes=fact.closes_previous)  # "from A": A's states end, whatever their relation
        )  # fmt: skip
        self.remember_antecedent(source, fact.source_type)
        if fact.relation == "works_at" and not ends:
            self.employers[normalize_name(source)] = target

    def entity(self, name: str, type_: str, sentence: str, alias: bool = False) -> str:
        """Register a mention once per extraction; returns the name first used for it."""
        key = normalize_name(name)
        existing = self.entities.get(key) or (None if alias else self.full_name(key, type_))
        if existing is None:
            description = sentence
            if len(description) > _MAX_DESCRIPTION:
                description = description[: _MAX_DESCRIPTION - 1] + "…"
            self.entities[key] = ExtractedEntity(name=name, type=type_, description=description)
            return name
        if existing.type == "concept" and type_ != "concept":
            existing.type = type_  # a later, more specific reading wins over the default
        return existing.name

    def full_name(self, key: str, type_: str) -> ExtractedEntity | None:
        """"Bob" after "Bob Stone" in one memory is Bob Stone: a lone first name is the one
        person of this memory whose full name it begins (none when two share it)."""
        if " " in key or type_ not in {"person", "concept"}:
            return None
        people = [e for k, e in self.entities.items() if e.type == "person" and k.split(" ", 1)[0] == key
                  and " " in k]
        return people[0] if len(people) == 1 else None

    def remember_antecedent(self, name: str, type_: str) -> None:
        entity = self.entities[normalize_name(name)]
        if entity.type == "person" and name != USER:
            self.last_person = entity.name
        elif entity.type != "person" and name != OUR_TEAM:
            self.last_thing = entity.name


#: a clause that can stand for its fact: its own subject and a few words ("I live in Brighton")
_OWN_CLAUSE = re.compile(r"(?:[A-Z]|I\b)\S*(?:\s+\S+){2,}", re.DOTALL)


def _head(clause: str, tail: str) -> tuple[str, str | None]:
    """A clause cut before the next clause it runs into, and that next clause as written ("I'm
    a nurse at X and I live in Y" -> "I'm a nurse at X", "I live in Y"); the whole clause and
    None when the tail is not found."""
    first = re.escape(tail.split(maxsplit=1)[0]) if tail.strip() else ""
    cut = re.search(rf",?\s+(?:and|but)\s+(?={first}\b)", clause) if first else None
    return (clause[: cut.start()], clause[cut.end() :]) if cut else (clause, None)


def _match(text: str) -> _Found | None:
    present = _present(text)
    if present is None:
        candidates: Iterable[int] = range(len(_RULES))
    else:  # a rule none of whose needed strings the clause holds cannot match: not tried
        candidates = sorted(_ALWAYS.union(*map(_RULES_NEEDING.__getitem__, present)))
    for index in candidates:
        match = (_PATTERNS[index] or _pattern(index)).fullmatch(text)
        if match:
            return _RULES[index], match.groupdict()
    return None


#: each rule's pattern, by position, once it has been tried (``_Rule.pattern``)
_PATTERNS: list[re.Pattern[str] | None] = [None] * len(_RULES)


def _pattern(index: int) -> re.Pattern[str]:
    pattern = _PATTERNS[index] = _RULES[index].pattern
    return pattern


#: "Japanese is what I'm learning now": the clause said the plain way ("I am learning Japanese now")
_CLEFT = re.compile(r"(?P<o>[^,;]+?)\s+is\s+what\s+(?P<s>I|we|he|she|they)\s+(?P<v>(?:am|is|are|(?:have|has)\s+been)\s+"
                    r"[a-z]+ing|[a-z]+)(?P<tail>\s+(?:now|these\s+days|nowadays))?\s*[.!]?")
#: a clause that matched no rule but has its own subject: "We packed up and relocated to Bergen"
#: continues "we" in the clause that follows
_PRONOUN_CLAUSE = re.compile(r"(?P<s>(?i:i|we|he|she|they))\s+[a-z]")
_OWN_PRONOUN = re.compile(r"(?:i|we|he|she|they|you|it|there)\s", re.IGNORECASE)
#: the relations a slot holds: a value of one ended in a sentence, the next value said is the new one
_SLOT_RELATIONS = frozenset({*_SLOTS.values(), "works_at"})


#: "bought a car, a Cupra Born", "got a cargo bike, an Urban Arrow": the thing is the name, not its kind
_KIND_APPOSITION = re.compile(r"\b(?:a|an|the|my|our)\s+(?:new\s+)?(?:[a-z]+\s+)?(?:car|phone|laptop|bike|bicycle|"
                              r"motorbike|scooter|van)\s*,\s*(?:(?:a|an|the)\s+)?(?=[A-Z])")
#: "At the new branch I am store manager": a place or time said before the subject
_PLACE_OPENER = re.compile(r"^(?:at|in|on|from|after|since|during|for)\s+(?:the|my|our|this|that|a|an)\s+"
                           r"(?:[\w'’-]+\s+){0,3}?(?=(?:I|we|he|she|they)\s)", re.IGNORECASE)


def _uncleft(text: str) -> str:
    match = _CLEFT.fullmatch(text) if " what " in text else None
    return f"{match['s']} {match['v']} {match['o']}{match['tail'] or ''}" if match else text


#: a first person's sentence that starts at its verb ("Switched from the iPhone to a Pixel",
#: "Got promoted to senior developer", "Finally sold the Volvo")
_ELIDED = re.compile(
    r"(?:(?:Just|Finally|Recently|Also|Eventually)\s+)?(?:switched|changed|moved|got|started|quit|left|joined|"
    r"bought|sold|traded|adopted|gave|stopped|went|took|relocated|transferred|upgraded|landed|replaced|"
    r"swapped|dropped|became|broke|split|cancell?ed|finished|signed|picked|lost|passed|graduated|retired|"
    r"married|divorced|learned|learnt|began|ditched)\s",
    re.IGNORECASE,
)


def _elided(text: str, clause: str, sentence: str) -> str:
    """A sentence said by someone that starts at its verb has "I" as its subject: "Switched
    to a Pixel" is "I switched to a Pixel". Only the sentence's first clause, capitalised."""
    if not text[:1].isupper() or not sentence.lstrip().startswith(clause.lstrip()[:12]) or not _ELIDED.match(text):
        return text
    return "I " + text[0].lower() + text[1:]


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


#: a join the sentence calls a membership ("joined Anytime, the membership is £30"); a club, team or
#: gym is read from the name itself (``_GROUP_WORDS``, the gym kind), never from other words near it
_MEMBERSHIP = re.compile(r"\bmemberships?\b", re.IGNORECASE)
_SPECIALIZED = frozenset({"@favourite", "@condition", "@event", "@switched", "@named", "@fan", "@consumes",
                          "@got", "@slot", "@activity", "@new_kind", "@doing"})
#: the slots whose holder is a person ("my doctor is Dr. Patel"); the others' (a bank, a gym) are organizations
_PERSON_SLOTS = frozenset(relation for relation in _SLOTS.values() if relation.startswith("has_"))


def _gerund(verb: str) -> str:
    """ "knit" -> "knitting", "dance" -> "dancing", "paint" -> "painting"."""
    verb = verb.casefold()
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    one_syllable = len(re.findall(r"[aeiou]+", verb)) == 1
    if one_syllable and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", verb):
        return verb + verb[-1] + "ing"  # run -> running, knit -> knitting
    return verb + "ing"


def _switched_kind(target: str) -> str:
    """The relation a value switched to is held with by its kind ("a Pixel": owns, "Italian":
    learns), or "" where its kind has none or is a drink or food, which stay ``prefers``."""
    kind = _changes.kind_relation(target, "")
    return "" if kind in {"drinks", "eats"} else kind


_EVENTS = {
    "start": "started", "starts": "started", "began": "started", "begins": "started",
    "begin": "started", "finished": "completed", "finishes": "completed",
    "completes": "completed", "passes": "passed", "wins": "won", "loses": "lost",
    "visits": "visited", "attends": "attended", "celebrates": "celebrated", "runs": "ran",
    "organised": "organized", "organizes": "organized", "organises": "organized",
    "hosts": "hosted",
}  # fmt: skip
_YEAR = re.compile(r"\b\d{4}\b")
_MONTH_WORD = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b")
_DAY = re.compile(r"\b\d{4}-\d\d?-\d\d?\b|(?<![\d-])\d{1,2}(?:st|nd|rd|th)?\b(?![-:]?\d)|/\d")
_MONTH = re.compile(r"\b\d{4}-\d\d?\b|\b[A-Za-z]{3,9}\b|/")


def _date_name(clause: str, dates: object, recurring: bool = False,
               reference: dt.datetime | None = None) -> str | None:  # fmt: skip
    """The first date a clause states, as an entity name at the precision it states:
    "21 August 1992" is 1992-08-21, "June 2022" 2022-06, "2015" 2015. A day and month said
    without a year is, for a date that recurs (a birthday), the day itself ("October 12"); for
    anything else (a deadline, a launch) its next occurrence on or after the reference day."""
    when = getattr(dates, "valid_at", None) or getattr(dates, "invalid_at", None)
    spans = getattr(dates, "spans", ())
    if when is None or not spans:
        return None
    said = clause[spans[0][0] : spans[0][1]]
    if not _YEAR.search(said):
        if not _DAY.search(said) or not _MONTH_WORD.search(said) or reference is None:
            return None  # "in June", "next week": no day of a year said, not a date to name
        if recurring:
            return f"{when:%B} {when.day}"
        if when.date() < reference.date():
            try:
                when = when.replace(year=when.year + 1)
            except ValueError:  # 29 February
                when = when.replace(year=when.year + 1, day=28)
        return when.strftime("%Y-%m-%d")
    if _DAY.search(said):
        return when.strftime("%Y-%m-%d")
    if _MONTH.search(re.sub(r"\b(?:in|on|by|since|from|at|of|the|year)\b", "", said)):
        return when.strftime("%Y-%m")
    return when.strftime("%Y")


#: relations whose date is not when they became true, and that no change marker changes
_NOT_STATES = frozenset({"plans", "due_on", "scheduled_for", "born_on", "born_in", "standing_instruction",
                         "also_known_as", "visited", "attended", "completed", "started", "won", "lost"})
_BARE_DAY = re.compile(
    r"\b(?:(?P<a>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?)"
    r"|(?P<b>\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*))\b",
    re.IGNORECASE,
)


_MAY_BE_BARE_DAY = gate(_BARE_DAY)  # a month's name: what ``_bare_day`` cannot do without


def _bare_day(clause: str, reference: dt.datetime) -> DateSpan | None:
    """A month and day said without "on" ("the deadline is June 30"), which ``find_dates``
    leaves to avoid reading names as dates; only where no other date was found."""
    match = _BARE_DAY.search(clause) if _MAY_BE_BARE_DAY(clause) else None
    if not match:
        return None
    when = parse_date((match["a"] or match["b"]).replace(" of ", " "), reference)
    return DateSpan(when, None, (match.span(),)) if when else None


def _year_before(clause: str, dates: DateSpan) -> dt.datetime | None:
    """A past statement's date said without a year that fell after the reference time ("I
    moved in August", said in June) is the last such date: a year earlier."""
    when = dates.valid_at
    said = clause[dates.spans[0][0] : dates.spans[0][1]] if dates.spans else ""
    if when is None or _YEAR.search(said) or not said:
        return when
    try:
        return when.replace(year=when.year - 1)
    except ValueError:  # 29 February
        return when.replace(year=when.year - 1, day=28)


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
        self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage,
        speaker: str | None = None, addressee: str | None = None,
    ) -> Extraction:
        reader = _Reader(reference_time, speaker, addressee)
        for chunk in chunks:
            for voices, sentence in _sentences(chunk):
                reader.read(voices, sentence)
        return Extraction(entities=list(reader.entities.values()), facts=reader.facts)
