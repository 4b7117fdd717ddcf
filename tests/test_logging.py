"""Logs carry ids, counts, scores, durations and decisions, never what was remembered."""

from __future__ import annotations

import logging

import pytest

from kenning import ConflictError, Kenning, MemoryInput, ModelResponseError
from kenning.pipeline.extract import Extractor


#: words that only occur in remembered content, entity names and metadata keys and values
SECRETS = ("Quillon", "Vantablack", "Morwenna", "Ostrakon", "Zephyrine", "xyzzykey", "plughvalue",
           "Hexaflume", "Tarnwick")


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def texts(self) -> list[str]:
        """Everything a handler could print: the formatted line with any traceback, and every
        attribute of the record, ``extra`` fields included."""
        return [self.format(r) + " " + repr(vars(r)) for r in self.records]


@pytest.fixture
def capture():
    handler = Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    # every logger, including ones created before this test with their own level
    for logger in logging.Logger.manager.loggerDict.values():
        if isinstance(logger, logging.Logger):
            logger.setLevel(logging.NOTSET)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


class TriggeredFailure(Extractor):
    """An extractor that fails on a trigger word, as a model error."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def extract(self, chunks, *, reference_time, usage):
        if any("Hexaflume" in c for c in chunks):
            raise ModelResponseError("the model returned no JSON")
        return self.inner.extract(chunks, reference_time=reference_time, usage=usage)


def test_a_full_session_logs_no_content(tmp_path, capture, clock) -> None:
    from kenning.pipeline.offline import OfflineExtractor

    with Kenning(str(tmp_path / "kn.db"), clock=clock, decay=True,
                 extractor=TriggeredFailure(OfflineExtractor())) as kn:
        text = kn.remember("Morwenna works at Quillon. Ostrakon lives in Vantablack.").memory_ids[0]
        decision = kn.remember(MemoryInput(
            topic="Zephyrine rollout", context="Morwenna knows Tarnwick.", decisions=["Ship Zephyrine"],
            rationale=["Quillon asked"], metadata={"xyzzykey": "plughvalue"}, source="Tarnwick",
        )).memory_ids[0]
        assert kn.recall("Where does Morwenna work?").hits
        kn.update(text, content="Morwenna works at Vantablack.")
        kn.update(decision, metadata={"xyzzykey": "plughvalue", "other": "Quillon"})
        kn.pin(decision, "Zephyrine matters")
        failed = kn.remember("Hexaflume knows Tarnwick.")
        assert failed.errors
        with pytest.raises(ConflictError):
            kn.update(text, content="Hexaflume knows Tarnwick.")
        clock.advance(days=400)
        kn.prune(max_age_days=1)
        kn.prune(max_age_days=1, dry_run=False)
        kn.forget(decision)
        kn.forget(everything=True)

    assert len(capture.records) >= 10
    messages = {r.getMessage() for r in capture.records}
    assert {"memory updated", "memory pinned", "prune", "forgot", "memory deleted"} <= messages
    prune_logs = [r for r in capture.records if r.getMessage() == "prune"]
    assert all(isinstance(r.evaluated, int) and isinstance(r.seconds, float) for r in prune_logs)
    leaks = [(secret, text) for text in capture.texts() for secret in SECRETS
             if secret.casefold() in text.casefold()]
    assert leaks == []


def test_the_library_configures_no_handlers() -> None:
    """Only the NullHandler the logging docs prescribe for libraries, on ``kenning`` itself: it
    keeps Python's last-resort handler from printing kenning's warnings to stderr."""
    import kenning.cli  # noqa: F401  (imports every module with a logger)

    for name, logger in logging.Logger.manager.loggerDict.items():
        if name.startswith("kenning") and isinstance(logger, logging.Logger):
            expected = [logging.NullHandler] if name == "kenning" else []
            assert [type(h) for h in logger.handlers] == expected, name
