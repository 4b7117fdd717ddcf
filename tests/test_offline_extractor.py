"""The offline pattern extractor: sentence shapes -> entities and facts, and its guarantees."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning.models import Usage
from kenning.pipeline.extract import Extraction, Extractor
from kenning.text import normalize_name
from kenning.pipeline.offline import OfflineExtractor

UTC = dt.timezone.utc
REF = dt.datetime(2024, 6, 15, 10, 30, tzinfo=UTC)


def day(year: int, month: int = 1, date: int = 1) -> dt.datetime:
    return dt.datetime(year, month, date, tzinfo=UTC)


def extract(*chunks: str) -> Extraction:
    return OfflineExtractor().extract(list(chunks), reference_time=REF, usage=Usage())


def triples(extraction: Extraction) -> set[tuple[str, str, str]]:
    return {(f.source, f.relation, f.target) for f in extraction.facts}


def types(extraction: Extraction) -> dict[str, str]:
    return {e.name: e.type for e in extraction.entities}


def only_fact(extraction: Extraction, relation: str):
    facts = [f for f in extraction.facts if f.relation == relation]
    assert len(facts) == 1, extraction.facts
    return facts[0]


def test_implements_the_extractor_protocol_without_spending_usage() -> None:
    extractor: Extractor = OfflineExtractor()
    usage = Usage()
    extractor.extract(["Alice works at Acme."], reference_time=REF, usage=usage)
    assert usage == Usage()


# employment and roles


def test_works_at() -> None:
    result = extract("Alice works at Acme")
    assert triples(result) == {("Alice", "works_at", "Acme")}
    assert types(result) == {"Alice": "person", "Acme": "organization"}
    fact = result.facts[0]
    assert (fact.valid_at, fact.invalid_at, fact.ends) == (None, None, False)
    assert fact.sentence == "Alice works at Acme"


@pytest.mark.parametrize(
    "sentence",
    [
        "Alice works for Acme.",
        "Alice is employed by Acme.",
        "Alice started working at Acme.",
        "Alice currently works at Acme.",
        "Alice was hired by Acme.",
    ],
)
def test_employment_phrasings(sentence: str) -> None:
    assert triples(extract(sentence)) == {("Alice", "works_at", "Acme")}


def test_joined_as_role_in_year() -> None:
    result = extract("Alice joined Acme as CTO in 2021")
    assert triples(result) == {("Alice", "works_at", "Acme"), ("Alice", "has_role", "CTO")}
    assert types(result) == {"Alice": "person", "Acme": "organization", "CTO": "concept"}
    assert {f.valid_at for f in result.facts} == {day(2021)}


def test_ceo_of() -> None:
    result = extract("Bob is the CEO of Acme.")
    assert triples(result) == {
        ("Bob", "ceo_of", "Acme"),
        ("Bob", "works_at", "Acme"),
        ("Bob", "has_role", "CEO"),
    }
    assert types(result)["Bob"] == "person" and types(result)["Acme"] == "organization"


def test_role_at_organization() -> None:
    result = extract("Alice is a senior software engineer at Acme.")
    assert triples(result) == {
        ("Alice", "works_at", "Acme"),
        ("Alice", "has_role", "senior software engineer"),
    }


def test_promoted_is_a_role() -> None:
    assert triples(extract("Alice was promoted to VP.")) == {("Alice", "has_role", "VP")}


def test_left_ends_employment_at_the_stated_date() -> None:
    fact = only_fact(extract("Alice left Acme in June 2024."), "works_at")
    assert (fact.source, fact.target) == ("Alice", "Acme")
    assert (fact.ends, fact.valid_at, fact.invalid_at) == (True, None, day(2024, 6, 1))


def test_left_without_a_date_still_ends() -> None:
    fact = only_fact(extract("Alice quit Acme."), "works_at")
    assert (fact.ends, fact.valid_at, fact.invalid_at) == (True, None, None)


def test_joined_and_left_in_one_sentence() -> None:
    result = extract("Alice joined Acme in 2019 and left in 2021.")
    spans = {(f.relation, f.target, f.valid_at, f.invalid_at, f.ends) for f in result.facts}
    assert spans == {
        ("works_at", "Acme", day(2019), None, False),
        ("works_at", "Acme", None, day(2021), True),
    }


def test_left_then_joined_on_a_date_ends_the_old_job_at_that_date() -> None:
    result = extract("Alice Novak left Acme and joined Globex on 2024-06-01.")
    spans = {(f.target, f.valid_at, f.invalid_at, f.ends) for f in result.facts if f.relation == "works_at"}
    assert spans == {("Acme", None, day(2024, 6, 1), True), ("Globex", day(2024, 6, 1), None, False)}


def test_joined_then_left_without_a_date_keeps_the_ending_undated() -> None:
    result = extract("Alice joined Acme in 2019 and left.")
    ending = next(f for f in result.facts if f.ends)
    assert (ending.target, ending.invalid_at) == ("Acme", None)


def test_a_fact_the_sentence_only_implies_gets_its_own_words() -> None:
    said = {f.relation: f.sentence for f in extract("Bob Stone is the CEO of Acme.").facts}
    assert said == {"ceo_of": "Bob Stone is the CEO of Acme.", "has_role": "Bob Stone is the CEO of Acme.",
                    "works_at": "Bob Stone works at Acme."}
    said = {f.relation: f.sentence for f in extract("Dan Diaz joined Globex as CTO in 2020.").facts}
    assert said == {"works_at": "Dan Diaz joined Globex as CTO in 2020.", "has_role": "Dan Diaz is CTO."}


def test_range_gives_both_dates() -> None:
    fact = only_fact(extract("Bob worked at Initech from 2019 to 2021."), "works_at")
    assert (fact.valid_at, fact.invalid_at, fact.ends) == (day(2019), day(2021), False)


def test_since_gives_valid_at() -> None:
    fact = only_fact(extract("Alice has lived in Rome since 2019."), "lives_in")
    assert (fact.source, fact.target, fact.valid_at) == ("Alice", "Rome", day(2019))


def test_only_an_end_date_is_an_ending() -> None:
    fact = only_fact(extract("Alice worked at Acme until 2021."), "works_at")
    assert (fact.valid_at, fact.invalid_at, fact.ends) == (None, day(2021), True)


# location


def test_lives_in() -> None:
    result = extract("Alice lives in Paris")
    assert triples(result) == {("Alice", "lives_in", "Paris")}
    assert types(result) == {"Alice": "person", "Paris": "place"}


def test_moved_to_starts_living_there() -> None:
    fact = only_fact(extract("Alice moved to Berlin in 2022."), "lives_in")
    assert (fact.source, fact.target, fact.valid_at) == ("Alice", "Berlin", day(2022))


def test_moved_from_to_ends_the_old_place() -> None:
    result = extract("Alice moved from Paris to Berlin in 2022.")
    spans = {(f.target, f.valid_at, f.invalid_at, f.ends) for f in result.facts}
    assert spans == {("Berlin", day(2022), None, False), ("Paris", None, day(2022), True)}


@pytest.mark.parametrize("verb", ["is headquartered in", "is located in"])
def test_organizations_are_located_in(verb: str) -> None:
    result = extract(f"Acme {verb} London.")
    assert triples(result) == {("Acme", "located_in", "London")}
    assert types(result) == {"Acme": "organization", "London": "place"}


def test_based_in_follows_the_known_type() -> None:
    result = extract("Alice works at Acme. Acme is based in Rome. Alice is based in Paris.")
    assert ("Acme", "located_in", "Rome") in triples(result)
    assert ("Alice", "lives_in", "Paris") in triples(result)


# membership, ownership, founding


def test_member_of() -> None:
    result = extract("Alice is a member of the chess club.")
    assert triples(result) == {("Alice", "member_of", "chess club")}
    assert types(result)["chess club"] == "organization"


def test_owns() -> None:
    assert triples(extract("Bob owns a boat.")) == {("Bob", "owns", "boat")}
    result = extract("Acme owns Initech.")
    assert triples(result) == {("Acme", "owns", "Initech")}
    assert types(result) == {"Acme": "organization", "Initech": "organization"}


def test_acquired_active_and_passive() -> None:
    assert triples(extract("Acme acquired Initech.")) == {("Acme", "acquired", "Initech")}
    fact = only_fact(extract("Initech was acquired by Acme in 2020."), "acquired")
    assert (fact.source, fact.target, fact.valid_at) == ("Acme", "Initech", day(2020))


def test_founded() -> None:
    result = extract("Alice founded Acme.")
    assert triples(result) == {("Alice", "founded", "Acme")}
    assert types(result) == {"Alice": "person", "Acme": "organization"}
    assert triples(extract("Acme was founded by Alice.")) == {("Alice", "founded", "Acme")}


def test_is_a() -> None:
    result = extract("Python is a programming language.")
    assert triples(result) == {("Python", "is_a", "programming language")}
    assert types(result) == {"Python": "technology", "programming language": "concept"}


# family and social


def test_married_to() -> None:
    result = extract("Carol is married to Dan")
    assert triples(result) == {("Carol", "married_to", "Dan")}
    assert types(result) == {"Carol": "person", "Dan": "person"}


def test_sister() -> None:
    result = extract("Eve is Alice's sister")
    assert triples(result) == {("Eve", "sibling_of", "Alice")}
    assert types(result) == {"Eve": "person", "Alice": "person"}


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Eve is Alice's brother.", ("Eve", "sibling_of", "Alice")),
        ("Eve is Alice's mother.", ("Eve", "parent_of", "Alice")),
        ("Tom is Eve's son.", ("Tom", "child_of", "Eve")),
        ("Dan is Carol's husband.", ("Dan", "married_to", "Carol")),
        ("Bob is Alice's friend.", ("Bob", "friend_of", "Alice")),
        ("Bob is friends with Alice.", ("Bob", "friend_of", "Alice")),
        ("Alice's sister is Eve.", ("Eve", "sibling_of", "Alice")),
        ("Bob is Alice's manager.", ("Alice", "reports_to", "Bob")),
        ("Alice reports to Bob.", ("Alice", "reports_to", "Bob")),
        ("Alice knows Bob.", ("Alice", "knows", "Bob")),
        ("Alice and Bob are married.", ("Alice", "married_to", "Bob")),
    ],
)
def test_family_and_social(sentence: str, expected: tuple[str, str, str]) -> None:
    assert triples(extract(sentence)) == {expected}


@pytest.mark.parametrize("verb", ["likes", "loves", "enjoys"])
def test_likes(verb: str) -> None:
    assert triples(extract(f"Alice {verb} hiking.")) == {("Alice", "likes", "hiking")}


# tools and technology


def test_we_use() -> None:
    result = extract("We use PostgreSQL for storage")
    assert triples(result) == {("our team", "uses", "PostgreSQL")}
    assert types(result) == {"our team": "organization", "PostgreSQL": "technology"}


def test_frontend_uses() -> None:
    result = extract("The frontend uses React")
    assert triples(result) == {("frontend", "uses", "React")}
    assert types(result) == {"frontend": "concept", "React": "technology"}


@pytest.mark.parametrize("phrase", ["is built with", "is written in"])
def test_built_with(phrase: str) -> None:
    result = extract(f"Acme {phrase} Python.")
    assert triples(result) == {("Acme", "uses", "Python")}
    assert types(result)["Python"] == "technology"


def test_decision_line_is_our_team() -> None:
    result = extract("Storage.\nDecision: Use PostgreSQL for storage")
    assert triples(result) == {("our team", "uses", "PostgreSQL")}


def test_switched_from_to_ends_the_old_tool() -> None:
    result = extract("We switched from MySQL to PostgreSQL last month.")
    spans = {(f.target, f.valid_at, f.invalid_at, f.ends) for f in result.facts}
    assert spans == {
        ("PostgreSQL", day(2024, 5, 1), None, False),
        ("MySQL", None, day(2024, 5, 1), True),
    }


def test_listed_objects_each_get_a_fact() -> None:
    assert triples(extract("We use Kafka, Redis and Postgres.")) == {
        ("our team", "uses", "Kafka"),
        ("our team", "uses", "Redis"),
        ("our team", "uses", "Postgres"),
    }


# names, pronouns, speakers


def test_multiword_names_and_articles() -> None:
    result = extract("Ada Lovelace works at the New York Times.")
    assert triples(result) == {("Ada Lovelace", "works_at", "New York Times")}


def test_date_phrases_are_not_part_of_names() -> None:
    result = extract("In 2021, Alice joined Acme Corp.")
    assert triples(result) == {("Alice", "works_at", "Acme Corp")}


def test_pronoun_resolves_to_the_last_person_subject() -> None:
    result = extract("Alice works at Acme. She lives in Paris. Bob knows Carol. He likes tea.")
    assert triples(result) == {
        ("Alice", "works_at", "Acme"),
        ("Alice", "lives_in", "Paris"),
        ("Bob", "knows", "Carol"),
        ("Bob", "likes", "tea"),  # the most recent person *subject*, not the last name seen
    }


def test_pronoun_without_antecedent_yields_nothing() -> None:
    assert extract("She lives in Paris.").facts == []


def test_speaker_prefix_maps_first_person() -> None:
    result = extract("Alice: I just moved to Berlin!")
    assert triples(result) == {("Alice", "lives_in", "Berlin")}
    assert types(result) == {"Alice": "person", "Berlin": "place"}


def test_first_person_without_speaker_is_the_user() -> None:
    assert triples(extract("I prefer dark mode.")) == {("User", "prefers", "dark mode")}


def test_entities_are_deduplicated_with_a_description() -> None:
    result = extract("Alice works at Acme.", "Alice lives in Paris. Acme is located in Paris.")
    names = [normalize_name(e.name) for e in result.entities]
    assert sorted(names) == ["acme", "alice", "paris"]
    alice = next(e for e in result.entities if e.name == "Alice")
    assert alice.description == "Alice works at Acme."


def test_repeated_sentences_give_one_fact() -> None:
    assert len(extract("Alice works at Acme. Alice works at Acme.").facts) == 1


# guarantees


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Colorless green ideas sleep furiously.",
        "The weather is nice today, isn't it?",
        "Paris is the capital of France.",
        "lorem ipsum dolor sit amet, consectetur adipiscing elit",
        "It is a good idea. This is great!",
        "!!! ??? ... 12345 ---",
    ],
)
def test_nonsense_yields_no_facts(text: str) -> None:
    result = extract(text)
    assert result.facts == [] and result.entities == []


@pytest.mark.timeout(120)  # a hang guard (about 2 s normally), not a speed check: benchmarks/ measures
def test_large_input_ends() -> None:
    prose = (
        "Alice works at Acme since 2019. The weather was lovely and we walked along the river. "
        "Bob is the CEO of Initech. We use PostgreSQL for storage.\n"
    )
    adversarial = ("Alice " * 60 + ". ") + ("A. " * 200) + ("from 2019 to " * 30) + "x" * 5000
    text = (prose * 800)[:100_000] + adversarial
    result = extract(text)  # no pattern backtracks without bound on the adversarial tail
    assert ("Bob", "ceo_of", "Initech") in triples(result)


@pytest.mark.parametrize("sentence", ["Might switch to Three, might not, I haven't decided.",
                                      "Maybe I'll get a dog.", "Perhaps Tom knows Alice."])
def test_a_modal_word_in_capitals_names_nobody(sentence: str) -> None:
    names = {e.name for e in extract(sentence).entities}
    assert not {"Might", "Maybe I", "Maybe", "Perhaps", "Perhaps Tom"} & names, names
