"""Loaders for the public evaluation sets, read from a path the user gives (never bundled).

Each loader returns :class:`Collection` objects: the units to remember (a LoCoMo dialog turn, a
HotpotQA or MuSiQue passage), each with a stable key, its text and its reference time, and the
questions with the keys of their gold evidence.

- LoCoMo (``locomo10.json``): one collection per conversation; a unit per turn, keyed by its
  ``dia_id`` ("D1:3"), text "Speaker: text" (plus the BLIP caption of a shared image), dated by
  its session's ``date_time`` ("1:56 pm on 8 May, 2023"). Malformed evidence ids are split and
  normalised ("D8:6; D9:17", "D30:05"); ids that name no turn are dropped, and questions left
  without evidence are skipped.
- HotpotQA (HippoRAG subset): one collection; a unit per corpus passage keyed by its title;
  gold = the titles in ``supporting_facts``; category = ``type`` (bridge / comparison).
- MuSiQue (HippoRAG subset): one collection; a unit per corpus paragraph keyed by its index in
  the corpus ("12"); gold = the supporting paragraphs, matched on (title, text); category = the
  hop label of the id (2hop, 3hop1 …).
- LongMemEval (a folder of one JSON file per question, or a file holding a list of them): one
  collection per question, its own haystack; a unit per turn keyed "<session id>:<index>", with
  its role, dated by its session; gold = the ``has_answer`` turns, and the question's
  ``answer_session_ids`` as its gold sessions; category = ``question_type``; the collection's
  ``now`` is the question date (the engine clock while it is asked). Empty turns are left out;
  questions without an evidence turn (abstention) are skipped.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SPLITS", "Collection", "Question", "Unit", "load", "load_hotpotqa", "load_locomo", "load_longmemeval",
           "load_musique", "session_of"]

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Unit:
    key: str
    text: str
    valid_at: dt.datetime | None = None
    #: units of one episode (a LoCoMo session) are remembered together, in order, in one call
    episode: str | None = None
    #: a chat turn's role (``user`` / ``assistant``): the units of an episode are remembered as
    #: messages of one session
    role: str | None = None


@dataclass(frozen=True)
class Question:
    text: str
    gold: tuple[str, ...]
    category: str
    answer: str = ""
    #: the sessions holding the evidence (LongMemEval), scored by session recall
    sessions: tuple[str, ...] = ()


@dataclass
class Collection:
    name: str
    units: list[Unit] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    #: the engine clock while its questions are asked (None: the real clock)
    now: dt.datetime | None = None


class DataError(ValueError):
    """The file is not in the format its loader reads."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc


def _pick(path: Path, pattern: str) -> Path:
    """A file given directly, or the one file in a directory whose name matches ``pattern``."""
    if path.is_file():
        return path
    found = sorted(p for p in path.glob(pattern) if "corpus" not in p.name) if path.is_dir() else []
    if len(found) != 1:
        raise DataError(f"expected one {pattern} file in {path}, found {len(found)}")
    return found[0]


# -- LoCoMo ------------------------------------------------------------------------------------

def parse_session_time(text: str) -> dt.datetime | None:
    """"1:56 pm on 8 May, 2023" as UTC; None when it does not parse."""
    try:
        return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.UTC)
    except ValueError:
        return None


_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalize_evidence(raw: list[str]) -> list[str]:
    """"D8:6; D9:17" -> D8:6, D9:17; "D30:05" -> D30:5; "D:11:26" -> D11:26; "D" -> nothing."""
    out = []
    for item in raw:
        for session, turn in _EVIDENCE.findall(str(item)):
            out.append(f"D{int(session)}:{int(turn)}")
    return list(dict.fromkeys(out))


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn.get('speaker', '?')}: {turn.get('text', '')}".strip()
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def load_locomo(path: Path) -> list[Collection]:
    data = _read_json(_pick(Path(path), "*.json"))
    if not isinstance(data, list) or not data or "conversation" not in data[0]:
        raise DataError(f"{path} is not a LoCoMo file (a list of objects with 'conversation')")
    return [_conversation(sample) for sample in data]


def _conversation(sample: dict[str, Any]) -> Collection:
    conv = sample["conversation"]
    out = Collection(name=str(sample.get("sample_id", "conversation")))
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := re.fullmatch(r"session_(\d+)", key))
    )
    for _, key in sessions:
        when = parse_session_time(conv.get(f"{key}_date_time", ""))
        for turn in conv[key]:
            out.units.append(Unit(key=turn["dia_id"], text=_turn_text(turn), valid_at=when,
                                  episode=f"{out.name}:{key}"))
    turns = {u.key for u in out.units}
    for qa in sample.get("qa", []):
        gold = tuple(e for e in normalize_evidence(qa.get("evidence", [])) if e in turns)
        if gold:
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            category = LOCOMO_CATEGORIES.get(qa.get("category"), str(qa.get("category")))
            out.questions.append(Question(qa["question"], gold, category, str(answer)))
    return out


# -- HotpotQA ----------------------------------------------------------------------------------

def _corpus_file(questions: Path) -> Path | None:
    candidate = questions.with_name(questions.stem + "_corpus.json")
    return candidate if candidate.is_file() else None


def load_hotpotqa(path: Path) -> list[Collection]:
    qfile = _pick(Path(path), "hotpotqa*.json")
    data = _read_json(qfile)
    if not isinstance(data, list) or not data or "supporting_facts" not in data[0]:
        raise DataError(f"{qfile} is not a HotpotQA file (a list with 'supporting_facts')")
    corpus_path = _corpus_file(qfile)
    corpus: dict[str, list[str]] = _read_json(corpus_path) if corpus_path else {}
    for item in data:  # without a corpus file, the questions' own context paragraphs
        for title, sentences in item.get("context", []):
            corpus.setdefault(title, sentences)
    out = Collection(name="hotpotqa")
    out.units = [Unit(key=title, text=f"{title}\n{''.join(s)}") for title, s in corpus.items()]
    for item in data:
        gold = tuple(dict.fromkeys(title for title, _ in item["supporting_facts"]))
        out.questions.append(Question(item["question"], gold, item.get("type", "all"), str(item.get("answer", ""))))
    return [out]


# -- MuSiQue -----------------------------------------------------------------------------------

def load_musique(path: Path) -> list[Collection]:
    qfile = _pick(Path(path), "musique*.json")
    data = _read_json(qfile)
    if not isinstance(data, list) or not data or "paragraphs" not in data[0]:
        raise DataError(f"{qfile} is not a MuSiQue file (a list with 'paragraphs')")
    corpus_path = _corpus_file(qfile)
    corpus = _read_json(corpus_path) if corpus_path else []
    keys: dict[tuple[str, str], str] = {}
    out = Collection(name="musique")
    for entry in corpus + [p for item in data for p in item["paragraphs"]]:
        text = entry.get("text", entry.get("paragraph_text", ""))
        pair = (entry["title"], text)
        if pair not in keys:
            keys[pair] = str(len(keys))
            out.units.append(Unit(key=keys[pair], text=f"{entry['title']}\n{text}"))
    for item in data:
        gold = tuple(dict.fromkeys(
            keys[(p["title"], p["paragraph_text"])] for p in item["paragraphs"] if p.get("is_supporting")
        ))
        if gold:
            hops = str(item.get("id", "")).split("_")[0] or "all"
            out.questions.append(Question(item["question"], gold, hops, str(item.get("answer", ""))))
    return [out]


# -- LongMemEval -------------------------------------------------------------------------------

def parse_lme_time(text: str) -> dt.datetime:
    """"2023/05/20 (Sat) 02:21" as UTC (DataError when it does not parse)."""
    try:
        return dt.datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", str(text)).strip(),
                                    "%Y/%m/%d %H:%M").replace(tzinfo=dt.UTC)
    except ValueError:
        raise DataError(f"cannot read the LongMemEval date {text!r}") from None


def session_of(key: str) -> str:
    """The session of a LongMemEval turn key ("<session id>:<index>")."""
    return key.rpartition(":")[0] or key


def load_longmemeval(path: Path) -> list[Collection]:
    path = Path(path)
    if path.is_dir() and not any(path.glob("*.json")) and (path / "dev").is_dir():
        path = path / "dev"  # the data folder: its dev split
    if path.is_dir():
        items = [_read_json(p) for p in sorted(path.glob("*.json"))]
    else:
        data = _read_json(path)
        items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) and "haystack_sessions" in i for i in items):
        raise DataError(f"{path} holds no LongMemEval questions (objects with 'haystack_sessions')")
    out = []
    for item in items:
        collection = _lme_question(item)
        if collection.questions:
            out.append(collection)
    return out


def _lme_question(item: dict[str, Any]) -> Collection:
    out = Collection(name=str(item["question_id"]), now=parse_lme_time(item["question_date"]))
    gold: list[str] = []
    sessions = zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True)
    for session_id, date, turns in sessions:
        when = parse_lme_time(date)
        for index, turn in enumerate(turns):
            if not str(turn.get("content") or "").strip():
                continue  # an empty turn (the data has a few) says nothing and is no message
            key = f"{session_id}:{index}"
            out.units.append(Unit(key=key, text=str(turn["content"]), valid_at=when,
                                  episode=f"{out.name}:{session_id}", role=str(turn["role"])))
            if turn.get("has_answer"):
                gold.append(key)
    if gold:
        out.questions.append(Question(
            str(item["question"]), tuple(gold), str(item["question_type"]), str(item.get("answer", "")),
            sessions=tuple(str(s) for s in item.get("answer_session_ids", ())),
        ))
    return out


LOADERS = {"locomo": load_locomo, "hotpotqa": load_hotpotqa, "musique": load_musique,
           "longmemeval": load_longmemeval}
SPLITS = ("all", "dev", "test")


def load(kind: str, path: Path | str, split: str = "all") -> list[Collection]:
    """The collections of a data set; ``split`` keeps the dev or the test half: LoCoMo's
    conversations 1-5 / 6-10, or the first / second half of a passage set's questions (the
    passages stay whole). Tune on dev; quote test. DataError when the file is not in
    ``kind``'s format."""
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    try:
        collections = LOADERS[kind](Path(path))
    except DataError:
        raise
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        # A field missing or of the wrong type anywhere in the file: its shape is not kind's.
        raise DataError(f"{path} is not a {kind} file: {type(exc).__name__} {exc}") from None
    if split == "all":
        return collections
    if kind == "locomo":
        half = (len(collections) + 1) // 2
        return collections[:half] if split == "dev" else collections[half:]
    if kind == "longmemeval":  # a folder is already a split (dev/ holds the dev questions)
        return collections
    for c in collections:
        half = (len(c.questions) + 1) // 2
        c.questions = c.questions[:half] if split == "dev" else c.questions[half:]
    return collections
