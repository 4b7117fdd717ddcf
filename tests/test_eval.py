"""The evaluation package: metrics on hand-computed cases, BM25, loaders on tiny fixtures in the
real formats, and ``kenning eval`` end to end through the CLI (offline, and with a fake model)."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from kenning.cli import cli
from kenning.eval import BM25, exact_match, load, recall_at_k, reciprocal_rank, token_f1
from kenning.eval.datasets import DataError, normalize_evidence, parse_session_time
from kenning.eval.run import ranked_keys
from tests.fakeopenai import FakeOpenAI

FIXTURES = Path(__file__).parent / "fixtures"


# -- metrics -----------------------------------------------------------------------------------

def test_recall_at_k_is_the_share_of_gold_in_the_first_k():
    assert recall_at_k(["a", "b", "c"], ["b", "d"], 2) == 0.5
    assert recall_at_k(["a", "b", "c"], ["b", "d"], 1) == 0.0
    assert recall_at_k(["d", "b"], ["b", "d"], 5) == 1.0
    with pytest.raises(ValueError):
        recall_at_k(["a"], [], 5)


def test_reciprocal_rank_of_the_first_gold_item():
    assert reciprocal_rank(["x", "b", "c"], ["c", "b"]) == 0.5
    assert reciprocal_rank(["x", "y"], ["b"]) == 0.0
    assert reciprocal_rank(["b"], ["b"]) == 1.0


def test_answer_scores_follow_squad_normalization():
    assert exact_match("The Cat!", "cat") == 1.0
    assert exact_match("a dog", "cat") == 0.0
    # prediction "cat sat" vs gold "cat sat down": precision 1, recall 2/3
    assert token_f1("the cat sat", "cat sat down") == pytest.approx(0.8)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0


def test_bm25_ranks_by_hand_computed_scores():
    docs = ["apple banana", "apple apple cherry", "durian"]
    index = BM25(docs)
    assert index.rank("apple", 5) == [1, 0]
    assert index.rank("durian", 5) == [2]
    assert index.rank("mango", 5) == []
    # "apple": df 2 of 3 docs; doc 1 has tf 2 and length 3, the average length is 2
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)
    assert index.scores("apple")[1] == pytest.approx(idf * 2 * 2.2 / (2 + norm))


def test_ranked_keys_are_distinct_in_order_of_first_appearance():
    class Hit:
        def __init__(self, *ids: str) -> None:
            self.memory_ids = list(ids)

    keys = {"m1": ["D1:1"], "m2": ["D1:2", "D3:1"], "m3": ["D2:5"]}
    assert ranked_keys([Hit("m2"), Hit("m1", "m2"), Hit("m9"), Hit("m3")], keys) == ["D1:2", "D3:1", "D1:1", "D2:5"]


# -- loaders -----------------------------------------------------------------------------------

def test_locomo_evidence_and_times_are_normalized():
    assert normalize_evidence(["D8:6; D9:17", "D", "D:11:26", "D30:05", "D9:1 D4:4"]) == [
        "D8:6", "D9:17", "D11:26", "D30:5", "D9:1", "D4:4",
    ]
    assert parse_session_time("1:56 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    assert parse_session_time("sometime") is None


def test_locomo_loader_reads_turns_and_questions():
    (conv,) = load("locomo", FIXTURES / "locomo_tiny.json")
    assert [u.key for u in conv.units] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3"]
    assert conv.units[0].text == "Nora: Hi Tom! I just moved to Lisbon last week."
    assert "small brown dog" in conv.units[3].text
    assert conv.units[4].valid_at == dt.datetime(2023, 6, 20, 10, 4, tzinfo=dt.UTC)
    by_text = {q.text: q for q in conv.questions}
    assert len(conv.questions) == 5  # the question without evidence is skipped
    assert by_text["What is the name of Tom's puppy?"].gold == ("D1:4", "D2:2")
    assert by_text["What class did Nora join?"].gold == ("D2:1",)  # D9:9 names no turn
    assert by_text["What does Tom do at Acme Corp?"].category == "adversarial"


def test_hotpotqa_and_musique_loaders_key_passages():
    (hotpot,) = load("hotpotqa", FIXTURES / "hotpotqa_tiny.json")
    assert len(hotpot.units) == 4 and hotpot.units[0].text.startswith("Acme Corp\nAcme Corp is")
    assert hotpot.questions[0].gold == ("Acme Corp", "Springfield")
    assert [q.category for q in hotpot.questions] == ["bridge", "comparison"]
    (musique,) = load("musique", FIXTURES / "musique_tiny.json")
    assert len(musique.units) == 4
    assert musique.questions[1].gold == ("0", "1", "2") and musique.questions[1].category == "3hop1"


def test_a_file_of_another_format_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"not": "locomo"}))
    with pytest.raises(DataError, match="not a LoCoMo file"):
        load("locomo", bad)


# -- the command -------------------------------------------------------------------------------

def _eval(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["eval", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_eval_locomo_reports_recall_per_category_beside_bm25_and_dragon():
    report = _eval("locomo", str(FIXTURES / "locomo_tiny.json"), "--k", "1,5")
    assert report["questions"] == 5 and report["units"] == 7
    assert set(report["systems"]) == {"hybrid", "chunks", "bm25"}
    hybrid = report["systems"]["hybrid"]
    assert hybrid["overall"]["n"] == 5 and "overall_1_4" in hybrid
    assert set(hybrid["categories"]) == {"single-hop", "multi-hop", "temporal", "adversarial"}
    assert hybrid["overall"]["recall@5"] >= 80.0  # seven turns: nearly everything is in the top 5
    assert report["systems"]["bm25"]["overall"]["recall@1"] > 0
    assert report["reference"]["dragon (LoCoMo paper, Table 3)"]["recall@5"] == 56.7
    assert hybrid["latency_ms"]["p50"] > 0


@pytest.mark.parametrize("kind", ["hotpotqa", "musique"])
def test_eval_passage_sets_find_the_supporting_passages(kind):
    report = _eval(kind, str(FIXTURES / f"{kind}_tiny.json"), "--search-type", "chunks")
    assert set(report["systems"]) == {"chunks", "bm25"}
    assert report["systems"]["chunks"]["overall"]["recall@5"] == 100.0  # 4 passages in all


def test_eval_limit_and_text_output():
    result = CliRunner().invoke(cli, ["eval", "hotpotqa", str(FIXTURES / "hotpotqa_tiny.json"), "--limit", "1"])
    assert result.exit_code == 0, result.output
    assert "1 questions over 4 units" in result.output and "bm25: overall" in result.output


def test_eval_of_a_wrong_file_exits_with_a_message():
    result = CliRunner().invoke(cli, ["eval", "musique", str(FIXTURES / "locomo_tiny.json")])
    assert result.exit_code == 1 and "not a MuSiQue file" in result.output


def _responder(body: dict) -> str | dict:
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    if schema == "answer":
        return {"answer": "Lisbon", "citations": []}
    if schema == "extraction":
        return {"entities": [], "facts": []}
    return "CORRECT"


def test_eval_scores_answers_with_a_model(monkeypatch):
    with FakeOpenAI(chat_responder=_responder) as server:
        monkeypatch.setenv("KENNING_LLM", "test-model")
        monkeypatch.setenv("KENNING_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("KENNING_LLM_API_KEY", "sk-test")
        report = _eval("locomo", str(FIXTURES / "locomo_tiny.json"), "--answer", "--judge",
                       "--search-type", "chunks")
    # one of five gold answers is "Lisbon"; the judge says CORRECT to everything
    assert report["answers"]["em"] == 20.0
    assert report["answers"]["judge"] == 100.0


def test_splits_halve_the_data_and_never_overlap():
    dev, test = load("locomo", FIXTURES / "locomo_tiny.json", "dev"), load("locomo", FIXTURES / "locomo_tiny.json", "test")
    assert len(dev) == 1 and test == []  # one conversation: it is the dev half
    whole = load("hotpotqa", FIXTURES / "hotpotqa_tiny.json")[0].questions
    dev_q = load("hotpotqa", FIXTURES / "hotpotqa_tiny.json", "dev")[0].questions
    test_q = load("hotpotqa", FIXTURES / "hotpotqa_tiny.json", "test")[0].questions
    assert dev_q + test_q == whole and dev_q and not set(q.text for q in dev_q) & set(q.text for q in test_q)
    with pytest.raises(DataError, match="unknown split"):
        load("locomo", FIXTURES / "locomo_tiny.json", "train")


def _ingested(kind: str, path: Path, index: int) -> dict:
    """The memories ``kenning eval`` keeps of one collection, by the set's own turn keys."""
    from kenning import Kenning
    from kenning.eval.run import DATASET, _ingest

    collection = load(kind, path)[index]
    with Kenning(":memory:") as kn:
        keys = _ingest(kn, collection)
        memories = {m.id: m for m in kn.list(dataset=DATASET, limit=100)}
    return {key: memories[memory_id] for memory_id, ks in keys.items() for key in ks}


def test_locomo_sessions_are_remembered_as_episodes():
    by_key = _ingested("locomo", FIXTURES / "locomo_tiny.json", 0)
    first, second = by_key["D1:1"], by_key["D1:2"]
    assert first.episode == second.episode and (first.position, second.position) == (0, 1)
    assert by_key["D2:1"].episode != first.episode
    assert first.valid_at == load("locomo", FIXTURES / "locomo_tiny.json")[0].units[0].valid_at


def test_eval_lanes_reports_each_lane_and_each_ablation():
    report = _eval("locomo", str(FIXTURES / "locomo_tiny.json"), "--lanes", "--split", "dev",
                   "--search-type", "hybrid")
    systems = set(report["systems"])
    assert {"hybrid", "bm25", "lane:lexical", "lane:vector", "lane:graph", "hybrid-no-neighbor"} <= systems
    assert report["split"] == "dev"


# -- LongMemEval ---------------------------------------------------------------------------------

def test_ndcg_and_any_all_at_k_by_hand():
    from kenning.eval.metrics import all_at_k, any_at_k, ndcg_at_k

    # gold at ranks 2 and 3 of 3; ideal puts them at ranks 1 and 2
    dcg, ideal = 1 / math.log2(3) + 1 / math.log2(4), 1 + 1 / math.log2(3)
    assert ndcg_at_k(["x", "a", "b"], ["a", "b"], 3) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(["a", "x"], ["a", "b", "c"], 1) == 1.0  # one slot, filled by gold
    assert any_at_k(["x", "a"], ["a", "b"], 2) == 1.0 and any_at_k(["x", "a"], ["a", "b"], 1) == 0.0
    assert all_at_k(["b", "x", "a"], ["a", "b"], 3) == 1.0 and all_at_k(["b", "x", "a"], ["a", "b"], 2) == 0.0


def test_longmemeval_loader_keys_turns_by_session_with_roles_dates_and_the_question_clock():
    from kenning.eval.datasets import session_of

    collections = load("longmemeval", FIXTURES / "longmemeval_tiny")
    assert [c.name for c in collections] == ["tiny_multi", "tiny_user"]  # the abstention one is skipped
    user = collections[1]
    assert user.now == dt.datetime(2023, 5, 30, 23, 51, tzinfo=dt.UTC)
    assert len(user.units) == 6 and [u.role for u in user.units[:2]] == ["user", "assistant"]
    assert "noise_2:2" not in {u.key for u in user.units}  # an empty turn is no message
    assert user.units[2].key == "answer_tiny_1:0" and session_of(user.units[2].key) == "answer_tiny_1"
    assert user.units[2].valid_at == dt.datetime(2023, 5, 10, 9, 30, tzinfo=dt.UTC)
    (q,) = user.questions
    assert q.gold == ("answer_tiny_1:0",) and q.sessions == ("answer_tiny_1",)
    assert q.category == "single-session-user"
    one = load("longmemeval", FIXTURES / "longmemeval_tiny" / "3_tiny_user.json")
    assert [c.name for c in one] == ["tiny_user"]
    with pytest.raises(DataError, match="no LongMemEval questions"):
        load("longmemeval", FIXTURES / "locomo_tiny.json")


def test_longmemeval_sessions_are_remembered_as_chats():
    by_key = _ingested("longmemeval", FIXTURES / "longmemeval_tiny", 1)
    said, reply = by_key["answer_tiny_1:0"], by_key["answer_tiny_1:1"]
    assert (said.role, reply.role) == ("user", "assistant") and said.kind == "message"
    assert said.session == reply.session and (said.position, reply.position) == (0, 1)
    assert said.valid_at == dt.datetime(2023, 5, 10, 9, 30, tzinfo=dt.UTC)


def test_eval_longmemeval_reports_turn_and_session_recall_per_type_at_the_question_date():
    report = _eval("longmemeval", str(FIXTURES / "longmemeval_tiny"), "--k", "1,2", "--search-type", "hybrid")
    assert report["questions"] == 2 and set(report["systems"]) == {"hybrid", "bm25"}
    hybrid = report["systems"]["hybrid"]
    assert set(hybrid["categories"]) == {"multi-session", "single-session-user"}
    overall = hybrid["overall"]
    assert {"ndcg@1", "session_any@2", "session_all@2"} <= set(overall)
    # "last week" is read at the question date (2023), not today: the week's two turns lead the
    # old session that says "bookshelf" twice
    multi = hybrid["categories"]["multi-session"]
    assert multi["recall@2"] == 100.0 and multi["session_all@2"] == 100.0
    assert report["systems"]["bm25"]["categories"]["multi-session"]["recall@2"] < 100.0
    result = CliRunner().invoke(cli, ["eval", "longmemeval", str(FIXTURES / "longmemeval_tiny"), "--limit", "1"])
    assert result.exit_code == 0 and "Sall@5" in result.output and "1 questions" in result.output
