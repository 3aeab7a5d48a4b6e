"""Numbering schemes the development books do not use (issue 15): letter-prefixed tasks ("T 5",
"E3."), end to end on a generated PDF with the generator's truth; a line inside an exercise
that starts like one ("A 2 by 2 matrix ...") does not split it."""

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
from rlclimb.stages.documents.structure_patterns import parse_label

pytestmark = pytest.mark.slow


def prefixed_book(path: Path, label: str, key: str, seed: int = 0) -> tuple[Path, list[Truth]]:
    rng = random.Random(seed)
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    y = MARGIN
    truth, answers = [], []

    def put(text: str, size: float = BODY, font: str = FONT) -> None:
        nonlocal y
        page.insert_text((MARGIN, y), text, fontname=font, fontsize=size)
        y += LEADING * size / BODY + 2

    put("Chapter 1. Matrices", 18, BOLD)
    put("We add matrices entry by entry and multiply rows by columns.")
    put("Exercises", 13, BOLD)
    for k in range(1, 7):
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        q = f"Compute the sum of {a} and {b} for the matrix entries of row {k}."
        lines = [q]
        if k == 3:  # a continuation line that starts like a prefixed label
            lines.append("A 2 by 2 matrix has four entries; add them all.")
        put(f"{label.format(k=k)} {lines[0]}")
        for extra in lines[1:]:
            put(extra)
        truth.append(Truth(str(path), " ".join(lines), str(a + b), f"1#{k}"))
        answers.append((k, str(a + b)))
    put("Answers to the Exercises", 13, BOLD)
    for k, ans in answers:
        put(f"{key.format(k=k)} {ans}")
    doc.save(path)
    return path, truth


@pytest.mark.parametrize("label,key", [("T {k}", "T {k}."), ("E{k}.", "E{k}:")])
def test_prefixed_task_numbers_are_found_and_paired(tmp_path, label, key):
    path, truth = prefixed_book(tmp_path / "book.pdf", label, key)
    run_pipeline(build([str(path)], {}), tmp_path / "run", RunOptions(progress=False))
    rows = [r for f in sorted((tmp_path / "run" / "data").glob("*.parquet")) for r in read_rows(f)]
    s = score(rows, truth)
    assert s.extraction_recall == 1.0 and s.extraction_precision == 1.0, (s.summary(), s.missed, s.spurious)
    assert s.pairing_recall == 1.0 and s.pairing_precision == 1.0, (s.summary(), s.wrong_pairs)


def test_prefixed_label_rules():
    assert parse_label("T 5 Show that x = 2.", "exercises").number == "5"
    assert parse_label("E3. Find the sum.", "exercises").number == "3"
    assert parse_label("T 5. 42", "answers").number == "5"
    assert parse_label("A 2 by 2 matrix has four entries.", "exercises") is None
    assert parse_label("T 5 Show that x = 2.", "body") is None  # only inside exercise and answer zones
