"""Hits say where they come from (issue 26 item 4): a passage of a file names its file and its
place in it on the hit itself; a message names its speaker and when it was said."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from kenning import Kenning

UTC = dt.timezone.utc


def test_a_file_passage_hit_names_its_file_and_location(kn: Kenning, tmp_path: Path) -> None:
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "travel.md").write_text("# Handbook\n\nWelcome.\n\n## Travel\n\nTrains are booked through the "
                                      "portal, never by phone.\n")
    kn.remember(folder)
    hit = next(h for h in kn.recall("How are trains booked?", search_type="chunks").hits if "portal" in h.text)
    assert (hit.kind, hit.source, str(hit.location)) == ("chunk", "travel.md", "Handbook › Travel")
    data = hit.model_dump(mode="json")
    assert data["source"] == "travel.md" and data["location"]["headings"] == ["Handbook", "Travel"]


def test_a_message_hit_names_its_speaker_and_time(kn: Kenning) -> None:
    kn.remember([{"role": "user", "content": "The rehearsal moved to the old boathouse.",
                  "created_at": "2024-03-05T18:30:00Z"},
                 {"role": "assistant", "content": "Noted, the boathouse it is."}],
                user="maya", agent="coach", session="s1", valid_at="2024-03-05T18:31:00Z")
    hits = {h.text: h for h in kn.recall("Where is the rehearsal?", search_type="chunks").hits}
    said = next(h for text, h in hits.items() if "rehearsal moved" in text)
    assert said.speaker == "maya" and said.valid_at == dt.datetime(2024, 3, 5, 18, 30, tzinfo=UTC)
    assert said.source is None
    reply = next((h for text, h in hits.items() if "Noted" in text), None)
    if reply is not None:
        assert reply.speaker == "coach" and reply.valid_at == dt.datetime(2024, 3, 5, 18, 31, tzinfo=UTC)
