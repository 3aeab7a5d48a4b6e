"""Answer keys found without the English word "Answers" (issue 15), end to end on generated PDFs
with the generator's truth: a French book ("Exercice 1.2.101 :" items, a "Solutions à des
exercices choisis" key keyed "1.2.101:"), found by the multilingual heading words; and the same
book with its key headed in a language no word list knows (Danish), found by numbering
alignment alone: the key's numbers are the numbers of exercises printed earlier in the book."""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf
import pytest
from helpers.textbook_gen import BODY, BOLD, FONT, LEADING, MARGIN, PAGE_H, PAGE_W
from helpers.textbook_scoring import Truth, score

from rlclimb.pipelines.definitions.textbook_pdf import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.schemas.io import read_rows
from rlclimb.stages.documents.structure_patterns import zone_of

pytestmark = pytest.mark.slow

_THINGS = ["une pompe remplit un réservoir", "un cycliste longe une rivière", "une usine peint des voitures",
           "une chorale apprend des chants", "un jardinier arrose des plantes", "un train quitte la gare"]


def french_book(path: Path, key_heading: str, seed: int = 0) -> tuple[Path, list[Truth]]:
    """Two chapters of two sections; each section ends with "Exercices" numbered s.101..s.104
    (Lebl's convention), answers to all of them in a key at the back under `key_heading`."""
    rng = random.Random(seed)
    doc = pymupdf.open()
    state: dict = {"page": None, "y": 0.0}
    truth: list[Truth] = []
    answers: list[tuple[str, str]] = []

    def new_page() -> None:
        state["page"] = doc.new_page(width=PAGE_W, height=PAGE_H)
        state["y"] = MARGIN
        state["page"].insert_text((PAGE_W / 2, PAGE_H - 40), str(doc.page_count), fontname=FONT, fontsize=9)

    def put(text: str, size: float = BODY, font: str = FONT) -> None:
        if state["page"] is None or state["y"] > PAGE_H - MARGIN - 20:
            new_page()
        state["page"].insert_text((MARGIN, state["y"]), text, fontname=font, fontsize=size)
        state["y"] += LEADING * size / BODY

    for c in (1, 2):
        new_page()
        put(f"Chapitre {c}", 18, BOLD)
        state["y"] += 8
        for s in (1, 2):
            put(f"{c}.{s} Solutions de l'équation homogène", 14, BOLD)
            for _ in range(5):
                put("On cherche une solution de la forme donnée, puis on vérifie la condition initiale.")
            put("Exercices", 13, BOLD)
            for k in range(101, 105):
                a, b = rng.randint(2, 40), rng.randint(2, 40)
                q = f"Supposons que {rng.choice(_THINGS)}, de sorte que y = {a}x + {b}. Calculer y pour x = {k - 100}."
                ans = f"y = {a * (k - 100) + b}"
                put(f"Exercice {c}.{s}.{k} : {q}")
                truth.append(Truth(str(path), q, ans, f"{c}.{s}#{k}"))
                answers.append((f"{c}.{s}.{k}", ans))
    new_page()
    put(key_heading, 18, BOLD)
    state["y"] += 8
    for number, ans in answers:
        put(f"{number}: {ans}")
    state["y"] += 12
    put("Index", 18, BOLD)
    put("équation homogène, 3")
    doc.save(path)
    return path, truth


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("languages")
    books = {
        "fr": french_book(tmp / "fr.pdf", "Solutions à des exercices choisis"),
        "unknown": french_book(tmp / "da.pdf", "Svar til udvalgte opgaver", seed=1),
    }
    out = tmp / "run"
    run_pipeline(build([str(p) for p, _ in books.values()], {}), out, RunOptions(progress=False))
    rows = [r for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]
    return books, rows


@pytest.mark.parametrize("book", ["fr", "unknown"])
def test_answer_key_found_without_english_words(runs, book):
    books, rows = runs
    path, truth = books[book]
    mine = [r for r in rows if Path(r["source"]["document"]).name == path.name]
    s = score(mine, truth)
    assert s.extraction_recall == 1.0 and s.extraction_precision == 1.0, (s.summary(), s.missed, s.spurious)
    assert s.pairing_recall == 1.0 and s.pairing_precision == 1.0, (s.summary(), s.wrong_pairs)


def test_multilingual_key_headings_and_their_lookalikes():
    for heading in ("Solutions à des exercices choisis", "Réponses aux exercices impairs",
                    "Lösungen zu ausgewählten Aufgaben", "Respuestas a ejercicios seleccionados",
                    "Soluções dos exercícios", "Soluzioni degli esercizi", "Answers to Selected Exercises"):
        assert zone_of(heading) == "answers", heading
    # a section about solutions, an item's answer marker: not keys
    for title in ("Solutions de l'équation homogène", "Lösungen der Wellengleichung", "Solution.", "Solution: x = 3"):
        assert zone_of(title) is None, title
