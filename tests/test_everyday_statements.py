"""Everyday statements: the offline extractor's pattern families, speakers as entities (offline,
through the pipeline, and in the LLM prompt), and the temporal rules of the new relations."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kenning import Kenning
from kenning.models import Usage
from kenning.pipeline.extract import Extraction
from kenning.pipeline.offline import OfflineExtractor
from kenning.pipeline.temporal import RelationRules
from tests.fakeopenai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(ROOT / "benchmarks"))

import eval_statements  # noqa: E402

UTC = dt.UTC
REF = dt.datetime(2024, 6, 15, 10, 30, tzinfo=UTC)


def extract(text: str, speaker: str | None = None, addressee: str | None = None) -> Extraction:
    return OfflineExtractor().extract([text], reference_time=REF, usage=Usage(), speaker=speaker,
                                      addressee=addressee)


def triples(extraction: Extraction) -> set[tuple[str, str, str]]:
    return {(f.source, f.relation, f.target) for f in extraction.facts}


# -- the families, as a statement set of our own (written apart from the shared dev set, which stays outside the repository)


@pytest.mark.parametrize("name", ["statements.jsonl"])
def test_statement_sets_yield_their_facts(name: str) -> None:
    rows = eval_statements.load(FIXTURES / name)
    per_family, misses = eval_statements.evaluate(rows)
    found = sum(f for f, _ in per_family.values())
    assert found / len(rows) >= 0.9, [row["text"] for row, _ in misses]
    assert all(f for f, _ in per_family.values()), per_family  # no family left unread


def test_the_eval_script_prints_rates_per_family() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "eval_statements.py"),
                           str(FIXTURES / "statements.jsonl"), "--misses"],
                          capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["family", "found", "total", "%"]
    assert any(line.startswith("allergy ") for line in lines)
    overall = next(line for line in lines if line.startswith("overall"))
    assert float(overall.split()[-1]) >= 90.0


def test_eval_matching_is_by_whole_words_in_order() -> None:
    assert eval_statements.matches("Volvo", "blue Volvo")
    assert eval_statements.matches("quarterly review", "The quarterly review")
    assert eval_statements.matches("1990-05-03", "1990-05")  # a date said at lower precision
    assert not eval_statements.matches("Volvo", "Volvos")
    assert not eval_statements.matches("Ann", "Anna Smith")


@pytest.mark.parametrize(
    ("text", "speaker", "expected"),
    [
        ("Dev Rao is severely allergic to latex.", None, ("Dev Rao", "allergic_to", "latex")),
        ("Kim has a mild pollen allergy.", None, ("Kim", "allergic_to", "pollen")),
        ("I'm gluten intolerant.", "Ada", ("Ada", "intolerant_to", "gluten")),
        ("Lee is diabetic.", None, ("Lee", "has_condition", "diabetes")),
        ("I suffer from migraines.", "Ada", ("Ada", "has_condition", "migraines")),
        ("Omar is a pescatarian.", None, ("Omar", "has_diet", "pescatarian")),
        ("Tom is on a low-carb diet.", None, ("Tom", "has_diet", "low-carb")),
        ("Ruth Weiss keeps kosher.", None, ("Ruth Weiss", "has_diet", "kosher")),
        ("Lena Ford's date of birth is 2 May 1988.", None, ("Lena Ford", "born_on", "1988-05-02")),
        ("Sam Ito was born in Nagoya.", None, ("Sam Ito", "born_in", "Nagoya")),
        ("Max turned 40.", None, ("Max", "age", "40")),
        ("Ana and Luis got married in 2019.", None, ("Ana", "married_to", "Luis")),
        ("Vera is engaged to Paul Kent.", None, ("Vera", "engaged_to", "Paul Kent")),
        ("Jo is seeing Chris Park.", None, ("Jo", "dating", "Chris Park")),
        ("Ida is Ben's cousin.", None, ("Ida", "cousin_of", "Ben")),
        ("Mia Cole is the niece of Ray Cole.", None, ("Mia Cole", "relative_of", "Ray Cole")),
        ("Nick heads the legal department at Orion Bank.", None, ("Nick", "works_at", "Orion Bank")),
        ("Nick heads the legal department at Orion Bank.", None, ("Nick", "manages", "legal department")),
        ("Pat landed a job at Vireo Labs.", None, ("Pat", "works_at", "Vireo Labs")),
        ("Gus is passionate about sailing.", None, ("Gus", "likes", "sailing")),
        ("Eva despises reality TV.", None, ("Eva", "dislikes", "reality TV")),
        ("Lou's favorite sport is tennis.", None, ("Lou", "favourite_sport", "tennis")),
        ("I prefer window seats.", "Ada", ("Ada", "prefers", "window seats")),
        ("Bo adopted a puppy named Rex.", None, ("Bo", "has_pet", "Rex")),
        ("Kai speaks fluent Korean.", None, ("Kai", "speaks", "Korean")),
        ("Uma attended the University of Leeds.", None, ("Uma", "studied_at", "University of Leeds")),
        ("The audit is due by 2025-06-30.", None, ("audit", "due_on", "2025-06-30")),
        ("The offsite is scheduled for 12 May 2025.", None, ("offsite", "scheduled_for", "2025-05-12")),
        ("Zoe intends to climb Kilimanjaro.", None, ("Zoe", "plans", "Kilimanjaro")),
        ("Raj practises yoga.", None, ("Raj", "practices", "yoga")),
        ("Ola goes swimming on Sundays.", None, ("Ola", "practices", "swimming")),
        ("Ed used to work at Pinegrove.", None, ("Ed", "works_at", "Pinegrove")),
        ("Call me Liz.", "Elizabeth Hart", ("Elizabeth Hart", "also_known_as", "Liz")),
        ("Please answer in German.", "Ada", ("Ada", "standing_instruction", "answer in German")),
        ("Julia and Mark Hansen tied the knot in 2016.", None, ("Julia", "married_to", "Mark Hansen")),
        ("I have two brothers, Luke and Ben.", "Anna", ("Ben", "sibling_of", "Anna")),
        ("Everyone calls me Kat.", "Katherine", ("Katherine", "also_known_as", "Kat")),
        ("Tom is thinking about moving to Canada.", None, ("Tom", "plans", "Canada")),
        ("Ben Ward has a red Honda.", None, ("Ben Ward", "owns", "Honda")),
        ("Zainab is now living in Abuja.", None, ("Zainab", "lives_in", "Abuja")),
        ("I've been doing yoga since 2015.", "Pia", ("Pia", "practices", "yoga")),
    ],
)
def test_family_patterns(text: str, speaker: str | None, expected: tuple[str, str, str]) -> None:
    assert expected in triples(extract(text, speaker))


def test_endings_and_their_dates() -> None:
    divorce = extract("Frank and Grace divorced in 2021.").facts
    assert [(f.relation, f.ends, f.invalid_at) for f in divorce] == [
        ("married_to", True, dt.datetime(2021, 1, 1, tzinfo=UTC))]
    quit_ = extract("I quit my job at Orbit Media.", "Gina").facts
    assert [(f.source, f.relation, f.target, f.ends) for f in quit_] == [("Gina", "works_at", "Orbit Media", True)]
    broke = extract("Sam broke up with Alex Kim.").facts
    assert [(f.relation, f.ends) for f in broke] == [("dating", True)]


def test_switching_preference_ends_the_old_one_and_tools_stay_tools() -> None:
    drink = extract("Ravi switched from tea to coffee in 2023.").facts
    assert {(f.relation, f.target, f.ends) for f in drink} == {("prefers", "coffee", False), ("prefers", "tea", True)}
    tools = extract("We switched from MySQL to PostgreSQL.").facts
    assert {(f.relation, f.target) for f in tools} == {("uses", "PostgreSQL"), ("uses", "MySQL")}
    assert triples(extract("Alice switched to Linux.")) == {("Alice", "uses", "Linux")}


def test_dates_are_objects_for_birth_and_deadlines_and_not_validity_for_plans() -> None:
    born = extract("Ivan was born in Kyiv on 3 May 1990.").facts
    assert {(f.relation, f.target) for f in born} == {("born_in", "Kyiv"), ("born_on", "1990-05-03")}
    assert triples(extract("Diego was born in 1979.")) == {("Diego", "born_on", "1979")}
    due = extract("The project deadline is 2024-12-01.").facts
    assert [(f.source, f.relation, f.target, f.valid_at) for f in due] == [("project", "due_on", "2024-12-01", None)]
    plan = extract("Sofia plans to visit Japan in May 2025.").facts
    assert [(f.relation, f.target, f.valid_at) for f in plan] == [("plans", "Japan", None)]
    assert "in May 2025" in plan[0].sentence  # the date stays in the words


@pytest.mark.parametrize(
    "text",
    ["Please note that the meeting moved.", "Never mind.", "I'm happy today.", "I'm sorry to hear that.",
     "I am going to sleep now.", "I'm English.", "She is at home.", "I love you so much!",
     "I have a Zoom meeting at 3.", "I'll make sure to call.", "I'm thinking of asking her out.",
     "Never give up!", "I've been thinking about it."],
)
def test_chat_small_talk_yields_nothing(text: str) -> None:
    assert extract(text, "Ada").facts == []


def test_instructions_keep_their_negation_and_imperatives_stay_team_decisions() -> None:
    assert triples(extract("Don't use emojis.", "Ada")) == {("Ada", "standing_instruction", "Don't use emojis")}
    assert triples(extract("Decision: Use Kafka for events.")) == {("our team", "uses", "Kafka")}


# -- speakers are entities


def test_speakers_are_people() -> None:
    said = extract("I bought a Tesla.", "Noah Fischer")
    assert triples(said) == {("Noah Fischer", "owns", "Tesla")}
    assert {e.name: e.type for e in said.entities}["Noah Fischer"] == "person"
    assert {e.name: e.type for e in extract("Ben Ward has a red Honda.").entities}["Ben Ward"] == "person"


def test_first_person_is_the_speaker_given_to_the_extractor() -> None:
    assert triples(extract("I moved to Paris.", "Alice")) == {("Alice", "lives_in", "Paris")}
    # a move next month is a plan: it closes nothing today (issue 23)
    assert triples(extract("We are moving to Lisbon next month.", "Ana")) == {("Ana", "plans", "Lisbon")}
    assert triples(extract("I moved to Paris.")) == {("User", "lives_in", "Paris")}  # no speaker: the user


def test_second_person_is_the_addressee_and_unknown_you_says_nothing() -> None:
    assert triples(extract("You live in Berlin now.", "Alice", "Bob")) == {("Bob", "lives_in", "Berlin")}
    assert triples(extract("Your sister Eve works at Acme.", "Alice", "Bob")) == {
        ("Eve", "sibling_of", "Bob"), ("Eve", "works_at", "Acme")}
    assert extract("You live in Berlin now.", "Alice").facts == []


def test_dialogue_lines_name_speaker_and_addressee() -> None:
    chat = "Alice: Hi Bob.\nBob: You live in Berlin now, right?\nAlice: Yes, and you still work at Acme."
    assert triples(extract(chat)) == {("Alice", "lives_in", "Berlin"), ("Bob", "works_at", "Acme")}


def test_my_name_is_names_the_speaker_for_the_rest_of_the_memory() -> None:
    said = triples(extract("My name is Erin and I'm allergic to peanuts. I live in Oslo."))
    assert said == {("User", "also_known_as", "Erin"), ("Erin", "allergic_to", "peanuts"), ("Erin", "lives_in", "Oslo")}
    known = triples(extract("My name is Zoe and I work as a nurse.", "Zoe Carter"))
    assert known == {("Zoe Carter", "also_known_as", "Zoe"), ("Zoe Carter", "has_role", "nurse")}


def test_apposition_states_the_kinship_and_reads_the_rest() -> None:
    said = triples(extract("My daughter Ella started school this year.", "Mark"))
    assert said == {("Ella", "child_of", "Mark"), ("Ella", "started", "school")}
    assert ("Ellie", "has_pet", "Biscuit") in triples(extract("My dog Biscuit loves the beach.", "Ellie"))


def test_the_pipeline_takes_the_speaker_from_metadata(store_url: str) -> None:
    with Kenning(store_url) as kn:
        result = kn.remember("I moved to Paris in 2023.", metadata={"speaker": "Alice Moreau"})
        assert not result.errors
        facts = kn.timeline("Alice Moreau").facts
        assert [(f.source, f.relation, f.target) for f in facts] == [("Alice Moreau", "lives_in", "Paris")]
        bad = kn.remember("I moved to Rome.", metadata={"speaker": ["not", "a", "name"]})
        assert bad.errors and "metadata speaker must be a name" in bad.errors[0]
        assert kn.get(bad.memory_ids[0]).status == "failed"  # kept, visible, retryable


def test_new_values_close_old_ones_through_the_engine(store_url: str, clock) -> None:  # noqa: ANN001
    with Kenning(store_url, clock=clock) as kn:
        kn.remember("Alice's favourite colour is green.", valid_at="2020-01-01")
        kn.remember("Alice's favourite colour is blue.", valid_at="2022-01-01")
        kn.remember("Ravi Shah drinks tea. Ravi Shah prefers tea.", valid_at="2020-01-01")
        kn.remember("Ravi Shah switched from tea to coffee in 2023.", valid_at="2023-06-01")
        kn.remember("Frank Hale married Grace Lin in 2010.", valid_at="2010-06-01")
        kn.remember("Frank Hale and Grace Lin divorced in 2021.", valid_at="2021-06-01")
        live = {(f.relation, f.target): f.invalid_at for f in kn.timeline("Alice").facts}
        assert live == {("favourite_colour", "green"): dt.datetime(2022, 1, 1, tzinfo=UTC),
                        ("favourite_colour", "blue"): None}
        ravi = {f.target: f.invalid_at for f in kn.timeline("Ravi Shah").facts if f.relation == "prefers"}
        assert ravi == {"tea": dt.datetime(2023, 1, 1, tzinfo=UTC), "coffee": None}
        marriage = [f for f in kn.timeline("Frank Hale").facts if f.relation == "married_to"]
        assert [f.invalid_at for f in marriage] == [dt.datetime(2021, 1, 1, tzinfo=UTC)]


def test_relation_rules_for_everyday_relations() -> None:
    rules = RelationRules()
    for relation in ("prefers", "has_diet", "born_in", "favourite_book", "favorite_food", "partner_of"):
        assert rules.contradicts(relation, "a", "x", "a", "y"), relation
    for relation in ("likes", "allergic_to", "speaks", "has_pet", "standing_instruction", "also_known_as"):
        assert not rules.contradicts(relation, "a", "x", "a", "y"), relation


# -- the model is told who "I" and "you" are


def test_the_llm_prompt_names_speaker_and_addressee(db_path: str, fake_openai: FakeOpenAI) -> None:
    answer = {"entities": [], "facts": [{"source": "Alice", "relation": "lives_in", "target": "Paris",
                                         "sentence": "Alice lives in Paris.", "valid_at": None,
                                         "invalid_at": None, "ends": False}]}
    fake_openai.enqueue_chat(answer)
    options = {"llm": "gpt-4o-mini", "llm_base_url": fake_openai.base_url, "llm_api_key": "sk-test",
               "embedder": "openai:text-embedding-3-small", "embedding_dimensions": 256}
    with Kenning(db_path, **options) as kn:
        result = kn.remember("I moved to Paris, you know.", metadata={"speaker": "Alice", "addressee": "Bob"})
        assert not result.errors
        assert [(f.source, f.target) for f in kn.timeline("Alice").facts] == [("Alice", "Paris")]
    messages = fake_openai.chat_requests[0].json["messages"]
    assert 'speaker="Alice" addressee="Bob"' in messages[-1]["content"]
    assert '"I", "me", "my" are the speaker' in messages[0]["content"]
    assert json.dumps(messages).count("Alice") >= 1


def test_a_group_call_names_each_documents_speaker(fake_openai: FakeOpenAI) -> None:
    from kenning.pipeline.extract import Document
    from kenning.pipeline.llm_extract import LLMExtractor
    from kenning.providers.openai_compat import OpenAIChat

    fake_openai.enqueue_chat({"documents": [{"document": "1", "entities": [], "facts": []},
                                            {"document": "2", "entities": [], "facts": []}]})
    extractor = LLMExtractor(OpenAIChat("test-model", fake_openai.base_url, "sk-test", max_retries=0))
    documents = [Document(chunks=["I moved to Paris."], reference_time=REF, speaker="Alice"),
                 Document(chunks=["You did?"], reference_time=REF, speaker='Bob "B"', addressee="Alice")]
    extractor.extract_many(documents, usage=Usage())
    user = fake_openai.chat_requests[0].json["messages"][-1]["content"]
    assert 'speaker="Alice">' in user and 'speaker="Bob \\"B\\"" addressee="Alice">' in user


def _stated(text: str, speaker: str | None = None) -> set[tuple[str, str, str, bool]]:
    return {(f.source, f.relation, f.target, f.ends) for f in extract(text, speaker).facts}


@pytest.mark.parametrize(("text", "expected"), [
    ("My doctor is Dr. Patel.", {("User", "has_doctor", "Dr. Patel", False)}),
    ("I bank with Monzo.", {("User", "banks_with", "Monzo", False)}),
    ("I changed banks, I'm with Starling now.", {("User", "banks_with", "Starling", False)}),
    ("I knit a lot.", {("User", "practices", "knitting", False)}),
    ("I support Arsenal.", {("User", "supports", "Arsenal", False)}),
    ("I stopped following Chelsea.", {("User", "supports", "Chelsea", True)}),
    ("I cancelled my PureGym membership.", {("User", "member_of", "PureGym", True)}),
    ("I transferred to the University of Leeds.", {("User", "studied_at", "University of Leeds", False)}),
    ("I got a Mazda last weekend.", {("User", "owns", "Mazda", False)}),  # the time words are not the value
    ("I'm learning Italian now, I stopped Spanish.",
     {("User", "learns", "Italian", False), ("User", "learns", "Spanish", True)}),
])
def test_everyday_slots_and_their_changes(text: str, expected: set[tuple[str, str, str, bool]]) -> None:
    assert _stated(text) == expected


def test_a_speakers_sentence_from_its_verb_and_a_place_said_with_now() -> None:
    # a chat turn that starts at its verb is the speaker's; a switch is held with its kind's relation
    assert _stated("Switched from the iPhone to a Pixel 7.", "Ada") == {
        ("Ada", "owns", "Pixel 7", False), ("Ada", "owns", "iPhone", True)}
    assert _stated("We're now in Lisbon.", "Ada") == {("Ada", "lives_in", "Lisbon", False)}
    # a relative's home stays the relative's
    assert _stated("My sister lives in Paris.", "Ada") == {("sister", "lives_in", "Paris", False)}


@pytest.mark.parametrize(("text", "relation"), [
    ("I joined Globex in March, and the team is lovely.", "works_at"),  # a new job, whatever else is said
    ("I joined Stripe and started in the payments team.", "works_at"),
    ("I joined PureGym.", "member_of"),  # a gym by its name
    ("I joined the chess club.", "member_of"),
    ("I joined Anytime, the membership is cheap.", "member_of"),  # called a membership
])
def test_joining_is_a_job_unless_the_name_or_the_words_make_it_a_membership(text: str, relation: str) -> None:
    assert {f.relation for f in extract(text, "Ada").facts if f.source == "Ada"} == {relation}


# -- the everyday loop, third set: names with a possessive, and each fact described by its own clause -------

def test_a_saints_or_an_institutions_possessive_is_part_of_the_name() -> None:
    assert ("Nina", "works_at", "St Mary's Hospital") in triples(extract("I'm a nurse at St Mary's Hospital.", "Nina"))
    assert ("Zara", "studied_at", "King's College London") in triples(
        extract("I study law at King's College London.", "Zara"))
    assert ("Nina", "works_at", "St Mary's") in triples(extract("I left St Mary's in June.", "Nina"))
    # elsewhere a possessive is still the owner's
    assert ("Jo", "sibling_of", "Alice") in triples(extract("Alice's sister Jo lives in Leeds."))


def _said(extraction: Extraction) -> dict[str, str]:
    return {f.target: f.sentence for f in extraction.facts}


def test_each_fact_of_a_sentence_of_several_clauses_keeps_its_own_clause() -> None:
    said = _said(extract("I'm a nurse at St Mary's Hospital and I live in Brighton.", "Nina"))
    assert said["Brighton"] == "I live in Brighton."
    assert "Brighton" not in said["nurse"]
    said = _said(extract("I use a Samsung Galaxy S21 and a Dell laptop.", "Raj"))
    assert said == {"Samsung Galaxy S21": "I use a Samsung Galaxy S21", "Dell laptop": "I use a Dell laptop."}
    said = _said(extract("I live in Pune and work at Infosys as a developer.", "Arjun"))
    assert said["Pune"] == "I live in Pune" and said["Infosys"] == "I work at Infosys as a developer."
    # a sentence that states one thing keeps its words whole ("jobs" is what a question asks by)
    said = _said(extract("I changed jobs, I'm a financial analyst at Barclays now.", "Ben"))
    assert said["financial analyst"] == "I changed jobs, I'm a financial analyst at Barclays now."
    # a clause without the value ("… and left in 2021") keeps the sentence
    said = {(f.target, f.ends): f.sentence for f in extract("Alice joined Acme in 2019 and left in 2021.").facts}
    assert said[("Acme", True)] == "Alice joined Acme in 2019 and left in 2021."


def test_a_doing_started_is_held_by_the_doings_own_relation() -> None:
    assert ("Grace", "learns", "German") in triples(extract("I dropped French and started learning German.", "Grace"))
    assert ("Grace", "plays", "piano") in triples(extract("I've started playing the piano.", "Grace"))
    assert ("Grace", "practices", "running") in triples(extract("I started running in May.", "Grace"))
