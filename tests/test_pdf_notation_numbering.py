"""Numbering with a keyword and a dotted number ("Exercise 2.14") and parts "(a)", "(b)" inside an
exercise, end to end on a generated PDF with the generator's truth: each exercise is one item
with its parts, paired with its key "2.14" in the answer section; "(a)" never starts an item."""

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


def keyword_book(path: Path, seed: int = 0) -> tuple[Path, list[Truth]]:
    rng = random.Random(seed)
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    y = MARGIN
    truth, answers = [], []

    def put(text: str, size: float = BODY, font: str = FONT) -> None:
        nonlocal y
        page.insert_text((MARGIN, y), text, fontname=font, fontsize=size)
        y += LEADING * size / BODY + 2

    put("Chapter 2. Sums", 18, BOLD)
    put("We add numbers two at a time and keep the running total.")
    put("Exercises", 13, BOLD)
    for k in range(11, 17):
        a, b, c = rng.randint(2, 30), rng.randint(2, 30), rng.randint(2, 9)
        stem = f"Exercise 2.{k}. Consider the numbers {a} and {b}."
        parts = ["(a) Compute their sum.", f"(b) Compute {c} times their sum."]
        for line in (stem, *parts):
            put(line)
        truth.append(Truth(str(path), " ".join((stem.split(". ", 1)[1], *parts)), f"(a) {a + b} (b) {c * (a + b)}",
                           f"2.{k}"))
        answers.append((k, f"(a) {a + b} (b) {c * (a + b)}"))
    put("Answers to the Exercises", 13, BOLD)
    for k, ans in answers:
        put(f"2.{k} {ans}")
    doc.save(path)
    return path, truth


def test_keyword_dotted_numbers_with_parts_are_found_and_paired(tmp_path):
    path, truth = keyword_book(tmp_path / "book.pdf")
    run_pipeline(build([str(path)], {}), tmp_path / "run", RunOptions(progress=False))
    rows = [r for f in sorted((tmp_path / "run" / "data").glob("*.parquet")) for r in read_rows(f)]
    s = score(rows, truth)
    assert s.extraction_recall == 1.0 and s.extraction_precision == 1.0, (s.summary(), s.missed, s.spurious)
    assert s.pairing_recall == 1.0 and s.pairing_precision == 1.0, (s.summary(), s.wrong_pairs)


def test_keyword_and_part_label_rules():
    assert parse_label("Exercise 2.14 Show that x = 2.", "body").number == "2.14"
    assert parse_label("Exercise 2.14. Show that x = 2.", "exercises").number == "2.14"
    assert parse_label("Problem 7 Find x.", "exercises").number == "7"
    assert parse_label("(a) Compute their sum.", "exercises") is None  # a part stays in its exercise
    assert parse_label("(a) 2", "answers") is None
