"""The bundled sample corpus for ``kenning demo``: a small company's story over five years,
with job changes, moves and tools, each note dated so the temporal rule has work to do."""

from __future__ import annotations

__all__ = ["CORPUS", "QUESTIONS"]

#: (reference date, source, text)
CORPUS: list[tuple[str, str, str]] = [
    ("2019-03-04", "onboarding.md", "Alice Novak works at Acme. She lives in Paris."),
    ("2019-03-04", "onboarding.md", "Bob Stone is the CEO of Acme. Bob Stone lives in London."),
    ("2019-06-10", "eng-notes.md", "The frontend uses React. We use PostgreSQL for storage."),
    ("2020-01-15", "people.md", "Carol Diaz is married to Dan Diaz. Eve Novak is Alice Novak's sister."),
    ("2020-09-01", "people.md", "Dan Diaz joined Globex as CTO in 2020."),
    ("2021-05-20", "people.md", "Alice Novak moved to Berlin in May 2021."),
    ("2022-02-01", "eng-notes.md", "The backend uses Python. Alice Novak likes jazz."),
    ("2023-01-09", "people.md", "Alice Novak left Acme in December 2022."),
    ("2023-01-10", "people.md", "Alice Novak started working at Globex in January 2023."),
    ("2023-07-01", "board.md", "Carol Diaz is the CEO of Acme since July 2023."),
    ("2024-04-02", "people.md", "Eve Novak works at Initech. Eve Novak lives in Rome."),
]

#: (question, options for recall)
QUESTIONS: list[tuple[str, dict]] = [
    ("Where does Alice Novak work?", {}),
    ("Where did Alice Novak work in 2021?", {"as_of": "2021-06-01"}),
    ("Who is the CEO of Acme?", {}),
    ("Where does Alice Novak live?", {}),
    ("What does the frontend use?", {}),
]
