"""Recall quality: the lexical lane (stemming, stop words) on both stores, evidence grouped by
memory, fusion that a useless lane cannot spoil, time windows named by the question, and the
neighbouring turns of a conversation (scoring and context)."""

from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pytest

from kenning import Kenning
from kenning.models import Usage
from kenning.providers.base import Embedder
from kenning.search.when import query_window

NOW = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)


@pytest.fixture
def kn(store_url):
    with Kenning(store_url) as k:
        yield k


def _texts(result) -> list[str]:
    return [h.text for h in result.hits]


# -- the lexical lane ---------------------------------------------------------------------------

def test_stemming_finds_other_forms_of_a_word(kn):
    kn.remember(["Alice moved to Lisbon in the spring.", "Bob bakes bread on Sundays."])
    for query in ("moving Lisbon", "Who moves?", "baking", "Sunday breads"):
        hits = kn.recall(query, search_type="chunks_lexical").hits
        assert hits, query
    assert "Lisbon" in kn.recall("Who moves?", search_type="chunks_lexical").hits[0].text
    assert "bread" in kn.recall("baking", search_type="chunks_lexical").hits[0].text


def test_stop_words_do_not_match(kn):
    kn.remember(["What is it that they were doing there?", "Gardening takes patience."])
    hits = kn.recall("What is the gardening that they were doing?", search_type="chunks_lexical").hits
    assert [h.text for h in hits] == ["Gardening takes patience."]


def test_a_query_of_stop_words_only_still_searches(kn):
    kn.remember(["To be or not to be.", "Cats sleep a lot."])
    hits = kn.recall("to be or not", search_type="chunks_lexical").hits
    assert hits and hits[0].text == "To be or not to be."


# -- fusion -------------------------------------------------------------------------------------

class ConstantEmbedder(Embedder):
    """A lane that finds nothing useful: every text gets the same vector."""

    name = "constant-test"
    dimension = 8

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        return np.ones((len(texts), self.dimension), dtype=np.float32)


def test_a_lane_that_finds_nothing_cannot_push_out_the_best_lexical_hit(tmp_path):
    turns = [f"Note {i}: the weather was mild and people walked around town." for i in range(30)]
    turns[17] = "Note 17: Priya adopted a greyhound called Biscuit."
    with Kenning(str(tmp_path / "k.db"), embedder=ConstantEmbedder()) as kn:
        kn.remember(turns)
        lexical = kn.recall("Which dog did Priya adopt?", search_type="chunks_lexical", top_k=3)
        for search_type in ("hybrid", "chunks"):
            fused = kn.recall("Which dog did Priya adopt?", search_type=search_type, top_k=3)
            assert fused.hits[0].memory_ids == lexical.hits[0].memory_ids, search_type


def test_a_memory_appears_once_in_its_best_form(kn):
    kn.remember("Alice Novak lives in Lisbon. She works at Acme as a designer.")
    kn.remember("Bob Stone lives in Paris.")
    hits = kn.recall("Alice Novak Lisbon Acme designer", top_k=10).hits
    firsts = [h.memory_ids[0] for h in hits]
    assert len(firsts) == len(set(firsts))
    ids = [h.id for h in hits]
    assert len(ids) == len(set(ids))


def test_a_fact_leads_when_the_question_asks_for_it(kn):
    kn.remember("Alice Novak works at Acme.", valid_at="2019-01-01")
    kn.remember("Alice Novak moved to Lisbon last year and loves the sea there.", valid_at="2024-02-01")
    top = kn.recall("Where does Alice Novak live now?").hits[0]
    assert top.kind == "fact" and top.relation == "lives_in" and top.target == "Lisbon"
    assert top.valid_at is not None and top.current
    assert top.support  # the passage it came from is named as support


def test_only_a_one_value_relation_leads(kn):
    # "where does Bob live" has one current answer, which leads; "what did Alice love" has many:
    # one "likes" fact must not jump above the passage that matches the question better
    kn.remember("Alice likes tea.")
    kn.remember("Alice said the jazz festival in Montreal was the best week of her summer.")
    hits = kn.recall("Which jazz festival in Montreal did Alice love in the summer?", top_k=3).hits
    assert "jazz festival" in hits[0].text
    kn.remember("Bob lives in Paris.")
    kn.remember("Bob's favourite bakery in Paris is famous for long queues in the summer.")
    hits = kn.recall("Where does Bob live?", top_k=3).hits
    assert (hits[0].kind, hits[0].relation) == ("fact", "lives_in")


def test_hybrid_is_never_below_its_best_lane_on_a_conversation(tmp_path):
    """A small conversation where the evidence is often the reply to the turn that matched."""
    sessions = [
        ["Maya: Did you ever finish that pottery class?", "Leo: Yes! I made a blue vase for my mum.",
         "Maya: Lovely. I started rock climbing at the gym.", "Leo: Brave. How high did you get?",
         "Maya: Only the easy wall so far."],
        ["Leo: What book are you reading?", "Maya: A novel about a lighthouse keeper in Norway.",
         "Leo: I'm planning a trip to Japan in April.", "Maya: Take me with you!",
         "Leo: My sister just had a baby girl.", "Maya: Congratulations, what's her name?",
         "Leo: Her name is Aiko."],
    ]
    questions = [  # (question, index of the evidence turn in the flat list)
        ("What did Leo make in his pottery class?", 1),
        ("What is Maya reading?", 6),
        ("What is the name of Leo's sister's baby?", 11),
        ("Where is Leo going in April?", 7),
        ("Which sport did Maya start?", 2),
    ]
    with Kenning(str(tmp_path / "c.db")) as kn:
        ids = []
        for day, turns in enumerate(sessions):
            ids += kn.remember(turns, valid_at=f"2023-05-0{day + 1}").memory_ids
        for search_type in ("hybrid", "chunks_lexical"):
            found = 0
            for question, evidence in questions:
                top = kn.recall(question, search_type=search_type, top_k=3).hits
                found += any(ids[evidence] in h.memory_ids for h in top)
            if search_type == "hybrid":
                hybrid = found
        assert hybrid >= found and hybrid == len(questions)


# -- time windows -------------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "inside", "outside"), [
    ("What did Mel paint on October 13, 2023?", "2023-10-13", "2023-10-20"),
    ("What did Mel paint on 13 October, 2023?", "2023-10-12", "2023-11-13"),
    ("What did Mel do in July 2023?", "2023-07-30", "2023-08-01"),
    ("What happened in 2022?", "2022-12-31", "2023-01-01"),
    ("Where did they camp in June?", "2019-06-15", "2019-07-15"),
    ("What did I buy yesterday?", "2026-11-29", "2026-11-30"),
    ("What did we plan last month?", "2026-10-05", "2026-11-05"),
    ("What did we plan last May?", "2026-05-05", "2025-05-05"),
])
def test_time_windows_named_by_a_question(question, inside, outside):
    window = query_window(question, NOW)
    assert window is not None
    assert window.contains(dt.datetime.fromisoformat(inside).replace(tzinfo=dt.UTC))
    assert not window.contains(dt.datetime.fromisoformat(outside).replace(tzinfo=dt.UTC))


def test_no_window_without_a_time_phrase():
    assert query_window("What does Alice like to paint?", NOW) is None
    assert query_window("May I ask what Alice paints?", NOW) is None


def test_a_memory_dated_in_the_named_window_ranks_first(kn):
    kn.remember("Mel painted a sunset over the lake.", valid_at="2023-07-14")
    kn.remember("Mel painted a portrait of her dog.", valid_at="2023-10-13")
    kn.remember("Mel painted a bowl of lemons.", valid_at="2023-08-02")
    top = kn.recall("What did Mel paint on October 13, 2023?", search_type="chunks").hits[0]
    assert "portrait" in top.text
    top = kn.recall("What did Mel paint in July 2023?", search_type="chunks").hits[0]
    assert "sunset" in top.text


# -- neighbouring turns -------------------------------------------------------------------------

def test_a_list_is_an_episode_in_order(kn):
    ids = kn.remember(["Ann: Hi!", "Ben: Hello Ann.", "Ann: How was Rome?"]).memory_ids
    memories = [kn.get(i) for i in ids]
    assert len({m.episode for m in memories}) == 1 and memories[0].episode
    assert [m.position for m in memories] == [0, 1, 2]
    single = kn.get(kn.remember("A lone note.").memory_ids[0])
    assert single.episode is None and single.position is None


def test_recall_returns_the_turns_around_a_hit_on_request(kn):
    ids = kn.remember([
        "Ann: What did you think of the opera?",
        "Ben: The tenor was superb, but the staging was odd.",
        "Ann: I agree about the staging.",
        "Ben: Shall we get dinner?",
    ]).memory_ids
    plain = kn.recall("tenor superb", search_type="chunks").hits
    assert plain[0].memory_ids[0] == ids[1] and plain[0].neighbors == []
    hit = kn.recall("tenor superb", search_type="chunks", neighbors=1).hits[0]
    assert [(n.memory_id, n.offset) for n in hit.neighbors] == [(ids[0], -1), (ids[2], 1)]
    assert hit.neighbors[0].text == "Ann: What did you think of the opera?"
    wide = kn.recall("tenor superb", search_type="chunks", neighbors=2).hits[0]
    assert [n.offset for n in wide.neighbors] == [-1, 1, 2]


def test_neighbors_are_bounded(kn):
    kn.remember("Something.")
    from kenning.errors import ValidationError

    with pytest.raises(ValidationError):
        kn.recall("something", neighbors=11)


def test_the_reply_to_a_matching_question_is_found(kn):
    ids = kn.remember([
        "Ann: Which city did your grandmother grow up in?",
        "Ben: Porto, right by the river.",
        "Ann: Nice. The weather today is grim.",
        "Ben: Grim indeed.",
    ]).memory_ids
    hits = kn.recall("Where did Ben's grandmother grow up?", top_k=3).hits
    assert ids[1] in {m for h in hits for m in h.memory_ids}
    reply = next(h for h in hits if ids[1] in h.memory_ids)
    assert "neighbor" in reply.lanes


def _score_of(hits, memory_id: str) -> float:
    return next(h.score for h in hits if memory_id in h.memory_ids)


def test_the_reply_to_a_matching_question_gains_more_than_the_turn_before_it(kn):
    """Between people, the turn after one that asks is its answer: it gains the ``reply``
    share of the question's score, the turn before the ``neighbor`` share."""
    ids = kn.remember([
        "Ann: The rain has not stopped all week.",
        "Ben: How often do you get to watch the sunsets at the beach?",
        "Ann: At least once a week, it calms me.",
        "Ben: Nice.",
    ]).memory_ids
    hits = kn.recall("Does Ann watch the sunsets at the beach?", top_k=5).hits
    assert _score_of(hits, ids[2]) > _score_of(hits, ids[0]) > 0
    assert _score_of(hits, ids[2]) >= _score_of(hits, ids[1])


def test_in_a_chat_with_an_assistant_its_reply_gains_the_neighbor_share(kn):
    """The user asks for help and states the facts in the asking: the assistant's reply is no
    more the answer than the user's turn before the question."""
    ids = kn.remember([
        {"role": "user", "content": "The rain has not stopped all week."},
        {"role": "assistant", "content": "That sounds gloomy."},
        {"role": "user", "content": "How often should I water the basil on my balcony?"},
        {"role": "assistant", "content": "Every two or three days, more in a heatwave."},
    ], session="s1").memory_ids
    hits = kn.recall("Should I water the basil?", top_k=5).hits
    assert _score_of(hits, ids[3]) == pytest.approx(_score_of(hits, ids[1]))


def test_a_turn_two_away_from_a_match_is_found(kn):
    """The answer is often a turn further on: two turns away it gains the ``neighbor2``
    share, below the turns next to the match."""
    ids = kn.remember([
        "Ann: Did you see the lighthouse keeper's cottage by the cliffs?",
        "Ben: I did!",
        "Ann: Wow.",
        "Ben: It was painted blue with a red door.",
        "Ann: Lovely.",
    ] + [f"Ben: note {i} about the harbour market." for i in range(6)]).memory_ids
    hits = kn.recall("lighthouse keeper cottage", top_k=4).hits
    found = [m for h in hits for m in h.memory_ids]
    assert ids[0] in found[:2] and ids[2] in found
    assert _score_of(hits, ids[2]) < _score_of(hits, ids[1])


def test_equal_scores_rank_the_newer_memory_first_whatever_the_ids(kn):
    """Ties are not left to the random part of the ids: the newer memory leads, then the earlier
    turn of an episode. The older session is remembered first (its ids sort first)."""
    old = kn.remember(["Ann: We adore the opera.", "Ben: Nothing else."], valid_at=NOW - dt.timedelta(days=30))
    time.sleep(0.005)
    new = kn.remember(["Ben: We adore the opera.", "Ann: Nothing else."], valid_at=NOW)
    hits = kn.recall("adore opera", top_k=4).hits
    assert hits[0].score == pytest.approx(hits[1].score)
    assert [h.memory_ids[0] for h in hits[:2]] == [new.memory_ids[0], old.memory_ids[0]]


# -- what was believed at known_at --------------------------------------------------------------

def test_known_at_shows_a_fact_as_it_was_believed_then(tmp_path):
    clock = [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)]
    with Kenning(str(tmp_path / "t.db"), clock=lambda: clock[0]) as kn:
        kn.remember("Alice Novak works at Acme.", valid_at="2023-01-01")
        clock[0] = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
        kn.remember("Alice Novak works at Globex.", valid_at="2024-05-01")
        clock[0] = dt.datetime(2024, 7, 1, tzinfo=dt.UTC)
        then = kn.recall("Where does Alice Novak work?", search_type="facts",
                         known_at="2024-03-01T00:00:00Z").hits
        acme = next(h for h in then if "Acme" in h.text)
        assert acme.current and acme.invalid_at is None and acme.expired_at is None
        assert acme.superseded_by is None
        assert all("Globex" not in h.text for h in then)
        now = kn.recall("Where does Alice Novak work?", search_type="facts").hits
        acme_now = next(h for h in now if "Acme" in h.text)
        assert not acme_now.current and acme_now.invalid_at is not None


# -- two hops without a model -------------------------------------------------------------------

def test_the_second_passage_of_a_two_hop_question_is_found(kn):
    """The bridge ("Ilsa Marchetti") is named only in the first passage: a second full-text
    query with the names the best passages mention finds the passage the question cannot."""
    first = kn.remember("Tower of Zorn\nThe Tower of Zorn was designed by Ilsa Marchetti in 1931.").memory_ids[0]
    second = kn.remember("Ilsa Marchetti\nIlsa Marchetti grew up in Vantrell and studied in Milan.").memory_ids[0]
    for i in range(8):
        kn.remember(f"Passage {i}\nA harbour town {i} is known for its fish market and old walls.")
    question = "Where was the architect of the Tower of Zorn raised?"
    lexical = {m for h in kn.recall(question, search_type="chunks_lexical", top_k=3).hits for m in h.memory_ids}
    assert first in lexical and second not in lexical
    hybrid = [h.memory_ids[0] for h in kn.recall(question, top_k=3).hits]
    assert hybrid[0] == first and second in hybrid


_ZORN = "Where was the architect of the Tower of Zorn raised?"
_ONE_WORD_MATCHES = ["the mill's architect retired to the coast.", "cattle are raised on the farms by the river.",
                     "the clock tower of the old town chimes every hour."]


def test_a_bridge_name_between_documents_outranks_passages_that_share_one_word(kn):
    """Documents: the second hop, found only through the name the first passage mentions
    (``bridge``), ranks right after the first, above passages sharing one word of the question."""
    first = kn.remember("Tower of Zorn\nThe Tower of Zorn was designed by Ilsa Marchetti in 1931.").memory_ids[0]
    second = kn.remember("Ilsa Marchetti\nIlsa Marchetti grew up in Vantrell and studied in Milan.").memory_ids[0]
    for text in _ONE_WORD_MATCHES + [f"a harbour town {i} is known for its fish market and old walls." for i in range(8)]:
        kn.remember(text)
    assert [h.memory_ids[0] for h in kn.recall(_ZORN, top_k=2).hits] == [first, second]


def test_in_a_chat_the_names_of_the_best_turns_weigh_as_the_expansion(kn):
    """A chat: the names of the best turns are mostly the speakers' and the people they talk
    about, so the turn found only through them keeps the ``expansion`` weight, below the turns
    that share the question's words."""
    turns = ["Ada: The Tower of Zorn was designed by Ilsa Marchetti in 1931.",
             *(f"{speaker}: {text}" for speaker, text in zip(["Ben", "Ada", "Ben"], _ONE_WORD_MATCHES)),
             "Ada: Ilsa Marchetti grew up in Vantrell and studied in Milan."]
    kn.remember(turns + [f"Ben: a harbour town {i} is known for its fish market and old walls." for i in range(8)])
    texts = _texts(kn.recall(_ZORN, top_k=5))
    assert texts[0] == turns[0] and texts[4] == turns[4]


def test_the_answer_about_the_named_entity_leads_over_others_of_the_same_relation(kn):
    kn.remember("Bob Stone is the CEO of Acme. Bob Stone lives in London.", valid_at="2019-03-04")
    kn.remember("Eve Novak works at Initech. Eve Novak lives in Rome.", valid_at="2024-04-02")
    kn.remember("Alice Novak works at Acme. She lives in Paris.", valid_at="2019-03-04")
    kn.remember("Alice Novak moved to Berlin in May 2021.", valid_at="2021-05-01")
    top = kn.recall("Where does Alice Novak live?").hits[0]
    assert top.kind == "fact" and top.target == "Berlin" and top.current


def test_a_question_window_is_met_by_a_facts_validity(kn):
    kn.remember("Alice Novak works at Acme.", valid_at="2019-03-04")
    kn.remember("Alice Novak moved to Berlin in May 2021.", valid_at="2021-05-01")
    kn.remember("Alice Novak started working at Globex in January 2023.", valid_at="2023-01-01")
    top = kn.recall("Where did Alice Novak work in 2021?", search_type="hybrid", as_of="2021-06-01").hits[0]
    assert top.target == "Acme" and top.current


def test_a_question_about_what_ended_is_answered_by_the_closed_fact(kn):
    kn.remember("Alice Novak works at Acme.", valid_at="2019-03-04")
    kn.remember("Alice Novak started working at Globex in January 2023.", valid_at="2023-01-01")
    now = kn.recall("Which company does Alice Novak work for?").hits[0]
    assert now.target == "Globex" and now.current
    left = kn.recall("Which company did Alice Novak leave?").hits[0]
    assert left.target == "Acme" and not left.current
