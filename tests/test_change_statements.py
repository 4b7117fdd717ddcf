"""Change statements close the old value (issue 23), offline and through the model path.

Everything goes through the public facade into a real SQLite file; the model path talks to the
fake OpenAI-compatible server over real HTTP. "Current" means what ``context(user=…)`` shows as
valid now; every stored fact is also checked for an interval that ends where it starts.
"""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from kenning import Kenning
from kenning.models import Usage
from kenning.pipeline.offline import OfflineExtractor
from tests.fakeopenai import FakeOpenAI

UTC = dt.UTC
REFERENCE = dt.datetime(2024, 6, 15, 12, tzinfo=UTC)


def extract(text: str, speaker: str | None = "Priya", reference: dt.datetime = REFERENCE):
    return OfflineExtractor().extract([text], reference_time=reference, usage=Usage(), speaker=speaker)


def triples(extraction) -> set[tuple[str, str, str]]:
    return {(f.source, f.relation, f.target) for f in extraction.facts}


def tell(kn: Kenning, user: str, sessions: list[tuple[str, list[str]]]) -> None:
    for number, (date, turns) in enumerate(sessions):
        kn.remember([{"role": "user", "content": t, "created_at": date} for t in turns],
                    user=user, session=f"{user}-{number}")


def current(kn: Kenning, user: str) -> set[tuple[str, str, str]]:
    return {(f.source, f.relation, f.target) for f in kn.context(user=user).facts}


def no_empty_intervals(db_path: str) -> None:
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT description, valid_at, invalid_at FROM facts WHERE invalid_at IS NOT NULL").fetchall()
    assert [r for r in rows if r[2] <= r[1]] == []


# -- everyday changes, offline ------------------------------------------------------------------

LIFE = [
    ("2023-01-10T09:00:00Z", ["I live in Madrid.", "I'm vegetarian.", "I play tennis every Sunday.",
                              "I drive a Honda Civic.", "I have a Pixel 7.", "I work as a teacher.",
                              "I love coffee."]),
    ("2024-09-01T09:00:00Z", ["Quick update: I relocated to Porto in August.",
                              "I gave up coffee in March, it's green tea for me now.",
                              "I've been vegan since May.", "I no longer play tennis; I took up climbing.",
                              "I sold the Civic and bought a Tesla.", "I switched to an iPhone 15.",
                              "I quit teaching in January. I'm now a software tester."]),
]


def test_a_life_of_changes_leaves_only_the_new_values_current(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Priya", LIFE)
        now = current(kn, "Priya")
        for new in [("lives_in", "Porto"), ("has_diet", "vegan"), ("practices", "climbing"), ("owns", "Tesla"),
                    ("has_role", "software tester")]:
            assert ("Priya", *new) in now, new
        assert any(t == "green tea" for _, _, t in now)
        assert any(t == "iPhone 15" for _, _, t in now)
        stale = {"Madrid", "vegetarian", "tennis", "Honda Civic", "Pixel 7", "teacher", "coffee"}
        assert {t for _, _, t in now} & stale == set()
        # the past stays: Madrid until August 2024 (the year before the statement's September)
        [madrid] = [f for f in kn.timeline("Priya").facts if f.target == "Madrid"]
        assert madrid.invalid_at == dt.datetime(2024, 8, 1, tzinfo=UTC)
    no_empty_intervals(db_path)


@pytest.mark.parametrize(("before", "change", "stale", "new"), [
    ("We live in Graz.", "We moved from Graz to Vienna.", "Graz", "Vienna"),
    ("I work at Shopify.", "I left Shopify and joined Ubisoft.", "Shopify", "Ubisoft"),
    ("I work at Acme.", "I now work at Globex.", "Acme", "Globex"),
    ("I'm a big tea drinker.", "I've switched to coffee, the early meetings got me.", "tea", "coffee"),
    ("I drink tea every morning.", "These days it's mostly coffee.", "tea", "coffee"),
    ("I do yoga twice a week.", "I replaced yoga with swimming.", "yoga", "swimming"),
    ("I ride a Trek road bike to work.", "Someone stole the Trek, so I bought a Brompton.", "Trek road bike",
     "Brompton"),
    ("My manager is Tom.", "Tom retired; Sara is my manager now.", "Tom", "Sara"),
    ("My manager is Tom.", "My manager used to be Tom but now it's Sara.", "Tom", "Sara"),
    ("I'm an accountant at Deloitte.", "I changed jobs, I'm a financial analyst at Barclays now.", "Deloitte",
     "Barclays"),
    ("I'm pescatarian.", "I stopped eating fish, so I'm fully vegetarian now.", "pescatarian", "vegetarian"),
    ("I live in Lisbon.", "I live in Porto, not Lisbon.", "Lisbon", "Porto"),
    ("I'm a junior engineer.", "I got promoted to senior engineer.", "junior engineer", "senior engineer"),
    ("I use a Samsung Galaxy S21.", "I finally got an iPhone 14, bye Android.", "Samsung Galaxy S21", "iPhone 14"),
    ("I drive a Volkswagen Golf.", "I traded in the Golf for a Kia EV6.", "Volkswagen Golf", "Kia EV6"),
    ("I'm learning Spanish.", "I switched from Spanish to Italian.", "Spanish", "Italian"),
    ("I go running every morning.", "I stopped running and started cycling.", "running", "cycling"),
    ("I drink a lot of green tea.", "Honestly I don't drink tea anymore, it's all espresso now.", "green tea",
     "espresso"),
    ("I'm based in Berlin.", "Big update: I've relocated to Munich.", "Berlin", "Munich"),
    ("My boss is Karen.", "Karen left; my new boss is Dave.", "Karen", "Dave"),
    # the everyday loop's third set (lifeloop, 2026-12-04): kinds of sentence
    # a label that names a new thing of a kind: "Got a new phone: …", "New car: …"
    ("I have a Pixel 7.", "Got a new phone: an iPhone 15.", "Pixel 7", "iPhone 15"),
    ("I drive a Honda Civic.", "New car: a Kia Niro.", "Honda Civic", "Kia Niro"),
    ("I have a Pixel 7.", "My new phone is a Samsung Galaxy S24.", "Pixel 7", "Samsung Galaxy S24"),
    ("I drive a Honda Civic.", "I got a new car, a Tesla Model Y.", "Honda Civic", "Tesla Model Y"),
    # a change said with a trailing "now" the rules read without it
    ("I have a Pixel 7.", "I changed phones, I have a Pixel 9 now.", "Pixel 7", "Pixel 9"),
    ("I work at Tesco.", "My new job is at Deloitte.", "Tesco", "Deloitte"),
    # a replacement said with an adverb, naming part of the stored value ("the Dell")
    ("I use a Dell laptop.", "I also replaced the Dell with a MacBook Air.", "Dell laptop", "MacBook Air"),
    # a thing that ends (written off, broke down, died), then a new one in the same sentence
    ("I drive a Skoda Octavia.", "The Skoda got written off in a crash, so I bought a Toyota Corolla.",
     "Skoda Octavia", "Toyota Corolla"),
    ("I drive a Peugeot 208.", "The Peugeot broke down on the motorway, so I got a Mazda 3.", "Peugeot 208", "Mazda 3"),
    ("I use an HP laptop.", "My laptop died, so now I use a Chromebook.", "HP laptop", "Chromebook"),
    # "no longer / not … anymore, just / only Y"
    ("I drink a lot of coffee.", "I don't drink coffee anymore, just green tea.", "coffee", "green tea"),
    ("I eat meat.", "I no longer eat meat, only fish now.", "meat", "fish"),
    # an adjunct between the two halves of a change
    ("I play tennis every Sunday.", "I gave up tennis after my knee injury and took up swimming.",
     "tennis", "swimming"),
    ("I do pilates twice a week.", "I quit pilates because of my back and started rowing.", "pilates", "rowing"),
    # moved / changed / switched + a plural slot noun, then the new value
    ("I study law at King's College London.", "I moved universities, I'm at UCL now.",
     "King's College London", "UCL"),
    # wave 10 (life3, tuned on set C; set D held out): kinds of sentence
    # a clause with only its subject: the next clause goes on with it
    ("I live in Oslo.", "We packed up and relocated to Bergen over Christmas.", "Oslo", "Bergen"),
    ("I have an Acer Swift 3.", "I gave up and replaced the Acer with a Framework Laptop.", "Acer Swift 3",
     "Framework Laptop"),
    # a job ended by notice, then where one has been since
    ("I work at Snohetta.", "I handed in my notice at Snohetta, and since May I've been with Statkraft.",
     "Snohetta", "Statkraft"),
    # a membership let lapse, and the next one signed up for
    ("I'm a member of The Gym Group.", "I let my Gym Group membership lapse and signed up at David Lloyd.",
     "Gym Group", "David Lloyd"),
    # an account moved from one bank to another
    ("I bank with HSBC.", "I moved my current account from HSBC to Nationwide.", "HSBC", "Nationwide"),
    # a diet taken up ("went vegan"), a drink said with "only"
    ("I'm vegetarian.", "I went vegan in January.", "vegetarian", "vegan"),
    ("I drink black coffee every morning.", "I've cut out coffee completely, I only drink rooibos now.",
     "black coffee", "rooibos"),
    # "X is what I'm learning now"; a language "done" or "taken" is learned
    ("I'm learning Italian.", "I've given up on Italian; Japanese is what I'm learning now.", "Italian", "Japanese"),
    ("I'm trying to learn Gaelic.", "I dropped the Gaelic though; I've been doing Welsh instead.", "Gaelic", "Welsh"),
    # the laptop one is "on"; a slot named in one sentence, filled in the next
    ("I have a Lenovo ThinkPad.", "The ThinkPad died last week, so I'm on a Surface Laptop now.",
     "Lenovo ThinkPad", "Surface Laptop"),
    ("My dentist is Dr. Mwangi.", "After that awful filling I changed dentists. I go to Dr. Achieng at Nyali Dental now.",
     "Dr. Mwangi", "Dr. Achieng"),
    # a resident of a place lives there
    ("I live in Glasgow.", "I'm officially an Edinburgh resident.", "Glasgow", "Edinburgh"),
])
def test_a_change_statement_ends_the_old_value(db_path, before, change, stale, new) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2023-01-01T09:00:00Z", [before]), ("2024-06-01T09:00:00Z", [change])])
        targets = {t for _, _, t in current(kn, "Lena")}
        assert new in targets and stale not in targets, targets
    no_empty_intervals(db_path)


def test_a_second_thing_of_a_kind_is_added_not_swapped(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2023-01-01T09:00:00Z", ["I drive a Honda Civic."]),
                          ("2024-06-01T09:00:00Z", ["I also bought a Tesla for my wife.", "I love jazz now."])])
        targets = {t for _, _, t in current(kn, "Lena")}
        assert {"Honda Civic", "Tesla", "jazz"} <= targets


def test_an_ending_alone_closes_the_value_it_names(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2023-01-01T09:00:00Z", ["I play tennis.", "I'm engaged to Sam!"]),
                          ("2024-06-01T09:00:00Z", ["I don't play tennis anymore.", "Sam and I broke up in May."])])
        assert current(kn, "Lena") == set()
        [engaged] = [f for f in kn.timeline("Lena").facts if f.relation == "engaged_to"]
        assert engaged.invalid_at == dt.datetime(2024, 5, 1, tzinfo=UTC)
    no_empty_intervals(db_path)


# -- bad inputs: nothing to change, plans, one turn that contradicts itself -------------------


def test_a_change_with_no_earlier_value_states_the_new_one_only(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2024-06-01T09:00:00Z", ["I switched to an iPhone 15.", "I moved from Graz to Vienna."])])
        now = current(kn, "Lena")
        assert {t for _, _, t in now} == {"iPhone 15", "Vienna"}
        # the "from Graz" ending had nothing to close and no start: no fact is invented for it
        assert [f.target for f in kn.timeline("Lena").facts if f.target == "Graz"] == []
    no_empty_intervals(db_path)


def test_switched_from_tea_to_coffee_gives_coffee_and_no_empty_tea_fact(db_path) -> None:
    with Kenning(db_path) as kn:
        kn.remember("Alice switched from tea to coffee.", valid_at="2024-06-20")
        facts = kn.timeline("Alice").facts
        assert [(f.target, f.invalid_at) for f in facts] == [("coffee", None)]
    no_empty_intervals(db_path)


def test_a_correction_of_an_unknown_value_states_the_right_one(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2024-06-01T09:00:00Z", ["Correction: I live in Porto, not Lisbon."])])
        assert current(kn, "Lena") == {("Lena", "lives_in", "Porto")}
    no_empty_intervals(db_path)


def test_a_new_gym_ends_the_old_gym_not_the_sport_its_name_says(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2023-01-01T09:00:00Z", ["I'm a member of PureGym.", "I do bouldering twice a week."]),
                          ("2024-06-01T09:00:00Z", ["I cancelled my PureGym membership and joined The Climbing Hangar."])])
        targets = {t for _, _, t in current(kn, "Lena")}
        assert {"Climbing Hangar", "bouldering"} <= targets and "PureGym" not in targets, targets


def test_a_plan_closes_nothing_today(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2024-01-01T09:00:00Z", ["I live in Madrid."]),
                          ("2024-06-01T09:00:00Z", ["I'm moving to Berlin next month.",
                                                    "I will switch to Android soon."])])
        now = current(kn, "Lena")
        assert ("Lena", "lives_in", "Madrid") in now and ("Lena", "lives_in", "Berlin") not in now
        [madrid] = [f for f in kn.timeline("Lena").facts if f.target == "Madrid"]
        assert madrid.invalid_at is None and madrid.expired_at is None


def test_contradictory_values_in_one_turn_keep_the_last_and_store_no_empty_fact(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Lena", [("2024-06-01T09:00:00Z", ["I live in Paris. I live in Lyon."])])
        assert current(kn, "Lena") == {("Lena", "lives_in", "Lyon")}
    no_empty_intervals(db_path)


# -- labels, dates without a year, one person under two names ----------------------------------


@pytest.mark.parametrize("text", [
    "Big news: Alice moved to Rome.", "Meeting 2024-05-01: Alice moved to Rome.", "Quick update: Alice moved to Rome.",
    "News: Alice moved to Rome.", "Update: Alice moved to Rome.",
])
def test_a_label_is_not_a_speaker(text: str) -> None:
    assert triples(extract(text, None)) == {("Alice", "lives_in", "Rome")}


def test_a_transcript_line_still_names_its_speaker() -> None:
    assert triples(extract("Bob Stone: I moved to Rome.", None)) == {("Bob Stone", "lives_in", "Rome")}
    assert triples(extract("Maya: News: I moved to Rome.", None)) == {("Maya", "lives_in", "Rome")}


def test_a_birthday_without_a_year_recurs_and_a_deadline_is_the_next_such_day() -> None:
    assert triples(extract("My birthday is on October 12.")) == {("Priya", "born_on", "October 12")}
    assert triples(extract("The deadline for the launch is June 30.", None)) == {("launch", "due_on", "2024-06-30")}
    # said after this year's June 30: next year's
    later = dt.datetime(2024, 7, 2, tzinfo=UTC)
    assert triples(extract("The deadline for the launch is June 30.", None, later)) == {
        ("launch", "due_on", "2025-06-30")}
    assert triples(extract("The report is due by March 3rd.", None)) == {("report", "due_on", "2025-03-03")}


def test_a_first_name_after_the_full_name_is_the_same_person(db_path) -> None:
    assert triples(extract("Bob Stone joined Acme. Bob lives in Oslo.", None)) == {
        ("Bob Stone", "works_at", "Acme"), ("Bob Stone", "lives_in", "Oslo")}
    # two people share the first name: "Bob" stays himself
    assert ("Bob", "lives_in", "Oslo") in triples(extract("Bob Stone joined Acme. Bob Marsh joined Initech. "
                                                          "Bob lives in Oslo.", None))
    with Kenning(db_path) as kn:  # across the turns of one session
        kn.remember([{"role": "user", "content": "My colleague Bob Stone works at Acme."},
                     {"role": "user", "content": "Bob lives in Oslo."}], user="Lena", session="s1")
        assert kn.timeline("Bob Stone").facts and {f.target for f in kn.timeline("Bob Stone").facts} >= {"Oslo"}


# -- preferences (issue 25) ---------------------------------------------------------------------


def test_stated_preferences_become_facts(db_path) -> None:
    said = {
        "I've been really into bouldering lately.": ("likes", "bouldering"),
        "I can't stand cilantro.": ("dislikes", "cilantro"),
        "I prefer aisle seats.": ("prefers", "aisle seats"),
        "I love Thai food.": ("likes", "Thai food"),
        "I'm a big jazz fan.": ("likes", "jazz"),
        "I'm a huge tea drinker.": ("drinks", "tea"),
    }
    for text, (relation, target) in said.items():
        assert triples(extract(text)) == {("Priya", relation, target)}, text
    with Kenning(db_path) as kn:
        tell(kn, "Priya", [("2024-06-01T09:00:00Z", list(said))])
        found = kn.recall("Can you recommend a jazz concert for me?", user="Priya", search_type="facts").hits
        assert found and "jazz" in found[0].text


# -- the model path reaches the same facts ----------------------------------------------------


def _fact(source, relation, target, sentence, **extra) -> dict:
    return {"source": source, "relation": relation, "target": target, "sentence": sentence,
            "valid_at": extra.pop("valid_at", None), "invalid_at": extra.pop("invalid_at", None),
            "ends": extra.pop("ends", False), **extra}


def _model(db_path: str, fake: FakeOpenAI) -> Kenning:
    return Kenning(db_path, llm="gpt-4o-mini", llm_base_url=fake.base_url, llm_api_key="sk-test",
                   embedder="openai:text-embedding-3-small", embedding_dimensions=64, llm_max_retries=0)


def test_the_model_path_closes_the_old_value_of_a_change(db_path, fake_openai) -> None:
    fake_openai.enqueue_chat({"entities": [], "facts": [_fact("Maya", "likes", "tea", "Maya likes tea.")]})
    # the model marks the change but names no stored fact: the store closes the old drink itself
    fake_openai.enqueue_chat({"entities": [], "facts": [
        _fact("Maya", "prefers", "coffee", "Maya switched to coffee.", changes=True, same_as=None, replaces=[]),
        _fact("Maya", "lives_in", "Montreal", "Maya lives in Montreal.", changes=True, same_as=None, replaces=[])]})
    fake_openai.chat_responder = lambda request: {"duplicates": [], "contradictions": []}
    with _model(db_path, fake_openai) as kn:
        kn.remember("I love tea.", valid_at="2024-01-01", metadata={"speaker": "Maya"})
        kn.remember("I've switched to coffee and moved to Montreal.", valid_at="2024-06-01",
                    metadata={"speaker": "Maya"})
        facts = {f.target: f for f in kn.timeline("Maya").facts}
        assert facts["tea"].invalid_at == dt.datetime(2024, 6, 1, tzinfo=UTC)
        assert facts["coffee"].invalid_at is None and facts["Montreal"].invalid_at is None
    prompts = [r.json["messages"][0]["content"] for r in fake_openai.chat_requests]
    assert "changes: true if it replaced an earlier value" in prompts[0]
    schema = fake_openai.chat_requests[0].json["response_format"]["json_schema"]["schema"]
    assert "changes" in schema["properties"]["facts"]["items"]["properties"]
    no_empty_intervals(db_path)


def test_the_model_path_stores_no_empty_ending(db_path, fake_openai) -> None:
    fake_openai.enqueue_chat({"entities": [], "facts": [
        _fact("Alice", "prefers", "coffee", "Alice prefers coffee.", changes=True),
        _fact("Alice", "prefers", "tea", "Alice no longer prefers tea.", ends=True)]})
    with _model(db_path, fake_openai) as kn:
        kn.remember("Alice switched from tea to coffee.", valid_at="2024-06-20")
        assert [(f.target, f.invalid_at) for f in kn.timeline("Alice").facts] == [("coffee", None)]
    no_empty_intervals(db_path)


def test_the_closing_rules_hold_on_both_stores(store_url: str, clock) -> None:  # noqa: ANN001
    with Kenning(store_url, clock=clock) as kn:
        tell(kn, "Lena", [("2023-01-01T09:00:00Z", ["I love tea.", "I ride a Trek road bike.", "I have a Pixel 7.",
                                                    "I'm engaged to Sam!"]),
                          ("2023-06-01T09:00:00Z", ["I've switched to coffee.", "Someone stole the Trek.",
                                                    "I got an iPhone 14.", "Sam and I broke up.",
                                                    "I live in Paris. I live in Lyon."])])
        assert current(kn, "Lena") == {("Lena", "prefers", "coffee"), ("Lena", "owns", "iPhone 14"),
                                       ("Lena", "lives_in", "Lyon")}
        ended = {f.target: f.invalid_at for f in kn.timeline("Lena").facts if f.invalid_at is not None}
        june = dt.datetime(2023, 6, 1, 9, tzinfo=UTC)
        assert ended == {"tea": june, "Trek road bike": june, "Pixel 7": june, "Sam": june}
        paris = [f for f in kn.timeline("Lena").facts if f.target == "Paris"]
        assert [(f.invalid_at, f.expired_at is not None) for f in paris] == [(None, True)]


# -- the everyday loop, third set (issue 23's scenarios): kinds of sentence, not one user's words ----------

def _now_and_ended(kn: Kenning, user: str) -> tuple[set[str], set[str]]:
    ended = {f.target for f in kn.timeline(user).facts if f.invalid_at is not None or f.expired_at is not None}
    return {t for _, _, t in current(kn, user)}, ended


def test_a_thing_that_ended_by_its_kind_ends_only_that_kind(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Ines", [("2022-01-01T09:00:00Z", ["I have an iPhone 13.", "I ride a Brompton bike."]),
                          ("2023-01-01T09:00:00Z", ["My phone died last week."])])
        now, ended = _now_and_ended(kn, "Ines")
        assert "iPhone 13" in ended and "Brompton bike" in now


def test_quitting_the_work_ends_the_role_and_the_new_role_is_current(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Ines", [("2020-09-01T09:00:00Z", ["I work as a teacher at Oakwood Primary."]),
                          ("2022-09-01T09:00:00Z", ["I quit teaching and became a software tester at Sky."])])
        now, ended = _now_and_ended(kn, "Ines")
        assert {"software tester", "Sky"} <= now and not {"teacher", "teaching", "Oakwood Primary"} & now
        assert "teacher" in ended


def test_a_role_said_at_an_employer_ends_with_that_job(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Ines", [("2021-02-01T09:00:00Z", ["I'm a nurse at St Mary's Hospital and I live in Brighton."]),
                          ("2022-07-01T09:00:00Z", ["I left St Mary's in June and now work at the Royal Sussex."])])
        facts = kn.context(user="Ines").facts
        said = " ".join(f"{f.description} {f.target}" for f in facts)
        assert "St Mary" not in said, said  # no current fact names the old employer
        assert "Royal Sussex" in said and "Brighton" in said


def test_a_new_employer_said_plainly_also_ends_the_role_at_the_old_one(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Ines", [("2021-02-01T09:00:00Z", ["I'm an engineer at Acme.", "I live in Leeds."]),
                          ("2022-07-01T09:00:00Z", ["I work at Globex."])])
        now, ended = _now_and_ended(kn, "Ines")
        assert "engineer" in ended and {"Globex", "Leeds"} <= now and not {"Acme", "engineer"} & now


def _first_naming(kn: Kenning, user: str, question: str, values: tuple[str, ...]) -> str:
    return next(h.text for h in kn.recall(question, user=user).hits if any(v in h.text for v in values))


def test_the_question_words_of_a_living_and_of_studying_lead_to_the_current_fact(db_path) -> None:
    with Kenning(db_path) as kn:
        tell(kn, "Ines", [("2020-09-01T09:00:00Z", ["I'm Ines, I work as a teacher at Oakwood Primary.",
                                                    "I study law at King's College London."]),
                          ("2022-09-01T09:00:00Z", ["I quit teaching and became a software tester at Sky.",
                                                    "I moved universities, I'm at UCL now."])])
        assert "tester" in _first_naming(kn, "Ines", "What does Ines do for a living?", ("teacher", "tester"))
        assert "UCL" in _first_naming(kn, "Ines", "Where does Ines study?", ("UCL", "King's"))
