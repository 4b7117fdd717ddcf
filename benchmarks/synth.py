"""A synthetic corpus for the scale benchmark: people, organizations, places and dates, with
people who change jobs and homes over the years.

Every memory is one short declarative English sentence of a shape the offline extractor reads
("Alice Novak works at Acme Corp since 2019.", "Alice Novak moved to Berlin in March 2021."),
so one memory states about one fact (a new role states two: the employer and the role) and ``--facts N`` asks for about N memories. The corpus is
deterministic for a seed, and comes with questions whose answer entity is known, so a run can
also check that recall still finds the right thing at scale.

The sentences are held packed (UTF-8 bytes and offsets, about 60 bytes a memory), not as
objects (about 400 bytes each, 409 MB at a million, which the scale benchmark's peak memory
counted); ``memories`` and ``questions`` read them back one at a time.

Run it alone to look at the sentences::

    python benchmarks/synth.py --facts 20
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

__all__ = ["Corpus", "Memory", "Question", "generate"]

_FIRST = ["Alice", "Bob", "Carol", "Dana", "Evan", "Fiona", "George", "Hana", "Ivan", "Julia", "Karl", "Lena", "Marco", "Nina", "Omar", "Paula", "Quinn", "Rosa", "Samir", "Tara", "Ugo", "Vera", "Walter", "Xenia", "Yusuf", "Zoe", "Aaron", "Bianca", "Cedric", "Delia", "Emil", "Farah", "Gustav", "Helga", "Igor", "Jonas", "Kira", "Luca", "Mila", "Nils", "Olga", "Pavel", "Rania", "Sven", "Tomas", "Uma", "Viktor", "Wanda"]
_LAST = ["Novak", "Stone", "Diaz", "Kim", "Li", "Moreau", "Schmidt", "Tanaka", "Okafor", "Rossi", "Silva", "Nowak", "Larsen", "Petrov", "Haddad", "Costa", "Meyer", "Fischer", "Kowalski", "Jensen", "Horvat", "Varga", "Popescu", "Ivanova", "Dubois", "Laurent", "Garcia", "Lopez", "Nakamura", "Sato", "Weber", "Wagner", "Becker", "Hoffmann", "Koch", "Richter", "Klein", "Wolf", "Brandt", "Berg", "Lund"]
_SYLLABLES = ["ac", "ber", "cor", "dan", "el", "fen", "gar", "hol", "ix", "jun", "kel", "lum", "mar", "nor", "ost", "pra", "quen", "ral", "sol", "tor", "ul", "ven", "wes", "xan", "yor", "zel", "bri", "cal", "dro", "fal", "gri", "hex", "kor", "lin", "mor", "nex", "pol", "rev", "sta", "tri", "vol", "zen"]
_ORG_SUFFIX = ("Corp", "Labs", "Inc", "Group", "Systems", "Technologies", "Ventures", "Bank")
_PLACE_SUFFIX = ("ton", "burg", "field", "haven", "port", "ville", "stad", "mouth")
_ROLES = (
    "engineer", "designer", "analyst", "manager", "architect", "consultant", "researcher",
    "accountant", "director", "scientist",
)
_SENIORITY = ("junior", "senior", "lead", "principal", "staff")
_HOBBIES = (
    "jazz", "chess", "sailing", "climbing", "pottery", "cycling", "opera", "gardening",
    "photography", "birdwatching", "tango", "surfing",
)
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


@dataclass(frozen=True)
class Memory:
    text: str
    when: dt.date  # the date the sentence states (or implies), used to order the stream


@dataclass(frozen=True)
class Question:
    text: str
    answer: str  # the name of the entity that answers it
    kind: str  # what it asks about: employer, home, colleague, ...


class _Packed(Sequence):
    """Rows of strings (and a small integer each), packed; ``order`` reads them in another order."""

    def __init__(self, make) -> None:
        self.make, self.data, self.ends, self.codes = make, bytearray(), array("Q"), array("H")
        self.order: Sequence[int] | None = None

    def append(self, code: int, *texts: str) -> None:
        for text in texts:
            self.data += text.encode()
            self.ends.append(len(self.data))
        self.codes.append(code)

    def __len__(self) -> int:
        return len(self.codes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def _text(self, i: int) -> str:
        return self.data[self.ends[i - 1] if i else 0 : self.ends[i]].decode()

    @overload
    def __getitem__(self, i: int) -> Memory | Question: ...
    @overload
    def __getitem__(self, i: slice) -> list[Memory | Question]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i] if self.order is None else self.order[i]
        per = len(self.ends) // max(len(self.codes), 1)
        return self.make(self.codes[i], *(self._text(i * per + j) for j in range(per)))


def _memory(month: int, text: str) -> Memory:
    return Memory(text, dt.date(month // 12, month % 12 + 1, 1))


_KINDS = ("employer", "home", "left", "hobby", "colleague")


def _question(kind: int, text: str, answer: str) -> Question:
    return Question(text, answer, _KINDS[kind])


@dataclass
class Corpus:
    memories: Sequence[Memory] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    people: int = 0
    organizations: int = 0
    places: int = 0


def _names(rng: random.Random, count: int, make) -> list[str]:
    """``count`` distinct names from the generator ``make(rng, attempt)``."""
    seen: dict[str, None] = {}
    attempt = 0
    while len(seen) < count:
        seen.setdefault(make(rng, attempt), None)
        attempt += 1
    return list(seen)


def _person(rng: random.Random, attempt: int) -> str:
    name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    if attempt >= len(_FIRST) * len(_LAST) // 2:  # past the plain pairs, add a middle name
        name = f"{rng.choice(_FIRST)} {_word(rng, 2)} {rng.choice(_LAST)}"
    return name


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(syllables)).capitalize()


def _org(rng: random.Random, attempt: int) -> str:
    return f"{_word(rng, 2 + attempt // 3000)} {rng.choice(_ORG_SUFFIX)}"


def _place(rng: random.Random, attempt: int) -> str:
    return _word(rng, 1 + attempt // 2000) + rng.choice(_PLACE_SUFFIX)


def _month(day: dt.date) -> str:
    return f"{_MONTHS[day.month - 1]} {day.year}"


class _Life:
    """One person's history: jobs and homes that change over the years, and a few ties."""

    def __init__(self, rng: random.Random, name: str, orgs: list[str], places: list[str]) -> None:
        self.rng, self.name, self.orgs, self.places = rng, name, orgs, places
        self.day = dt.date(rng.randint(1995, 2012), rng.randint(1, 12), 1)
        self.employer: str | None = None
        self.home: str | None = None

    def step(self) -> tuple[Memory, str, str]:
        """The next event: (memory, question kind, answer)."""
        rng = self.rng
        self.day = _later(self.day, rng.randint(4, 30))
        roll = rng.random()
        if self.employer is None or roll < 0.3:
            return self._job()
        if self.home is None or roll < 0.55:
            return self._move()
        if roll < 0.65:
            org = self.employer
            self.employer = None
            return Memory(f"{self.name} left {org} in {_month(self.day)}.", self.day), "left", org
        if roll < 0.8:
            role = f"{rng.choice(_SENIORITY)} {rng.choice(_ROLES)}"
            text = f"{self.name} became a {role} at {self.employer} in {_month(self.day)}."
            return Memory(text, self.day), "employer", self.employer
        hobby = rng.choice(_HOBBIES)
        return Memory(f"{self.name} likes {hobby}.", self.day), "hobby", hobby

    def _job(self) -> tuple[Memory, str, str]:
        org = self.rng.choice(self.orgs)
        self.employer = org
        if self.rng.random() < 0.5:
            text = f"{self.name} works at {org} since {self.day.year}."
        else:
            text = f"{self.name} joined {org} in {_month(self.day)}."
        return Memory(text, self.day), "employer", org

    def _move(self) -> tuple[Memory, str, str]:
        place = self.rng.choice(self.places)
        if self.home is not None or self.rng.random() < 0.7:
            text = f"{self.name} moved to {place} in {_month(self.day)}."
        else:
            text = f"{self.name} lives in {place}."
        self.home = place
        return Memory(text, self.day), "home", place


def _later(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    return dt.date(min(index // 12, 2025), index % 12 + 1, 1)


_QUESTIONS = {
    "employer": "Where does {name} work?",
    "home": "Where does {name} live?",
    "left": "Which company did {name} leave?",
    "hobby": "What does {name} like?",
    "colleague": "Who does {name} know?",
}


def generate(facts: int, *, seed: int = 7, questions: int = 300) -> Corpus:
    """About ``facts`` memories (one fact each) in date order, and questions about them."""
    rng = random.Random(seed)
    n_people = max(3, facts // 10)
    people = _names(rng, n_people, _person)
    orgs = _names(rng, max(3, facts // 100), _org)
    places = _names(rng, max(3, facts // 300), _place)
    corpus = Corpus(people=len(people), organizations=len(orgs), places=len(places))
    memories, asked = _Packed(_memory), _Packed(_question)

    def remember(memory: Memory) -> None:
        memories.append(memory.when.year * 12 + memory.when.month - 1, memory.text)

    def ask(kind: str, name: str, answer: str) -> None:
        asked.append(_KINDS.index(kind), _QUESTIONS[kind].format(name=name), answer)

    for org in orgs:
        remember(Memory(f"{org} is headquartered in {rng.choice(places)}.", dt.date(1990, 1, 1)))
    lives = [_Life(rng, name, orgs, places) for name in people]
    while len(memories) < facts:
        life = rng.choice(lives)
        if rng.random() < 0.05:
            other = rng.choice(people)
            if other != life.name:
                remember(Memory(f"{life.name} knows {other}.", life.day))
                ask("colleague", life.name, other)
            continue
        memory, kind, answer = life.step()
        remember(memory)
        if kind in ("left", "hobby"):
            ask(kind, life.name, answer)
    for life in lives:  # employer and home questions ask about the end state
        for kind, found in (("employer", life.employer), ("home", life.home)):
            if found is not None:
                ask(kind, life.name, found)
    # in date order, the order of generation among equal dates (as a stable sort)
    memories.order = np.argsort(np.frombuffer(memories.codes, np.uint16), kind="stable")
    corpus.memories = memories  # type: ignore[assignment]  # reads back Memory rows
    corpus.questions = rng.sample(asked, min(questions, len(asked)))  # type: ignore[arg-type]
    return corpus


def batches(corpus: Corpus, size: int) -> Iterator[list[str]]:
    for start in range(0, len(corpus.memories), size):
        yield [m.text for m in corpus.memories[start : start + size]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    corpus = generate(args.facts, seed=args.seed, questions=5)
    for memory in corpus.memories:
        print(memory.text)
    print()
    for q in corpus.questions:
        print(f"{q.text}  -> {q.answer}")


if __name__ == "__main__":
    main()
