"""Bad PDFs: each is processed or ledgered with a clear reason; one bad document never stops a run;
memory does not grow with document length (pages stream; the structure stage holds a window)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow.parquet as pq
import pymupdf
import pytest
from helpers.textbook_gen import (
    make_corrupt_pdf,
    make_encrypted_pdf,
    make_huge_pdf,
    make_image_only_pdf,
    make_text_pdf,
    make_zero_page_pdf,
)
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions.textbook_pdf import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.schemas.io import read_rows
from rlclimb.stages.documents.structure import StructureDocument

runner = CliRunner()


def rows_of(run: Path) -> list[dict]:
    return [r for f in sorted((run / "data").glob("*.parquet")) for r in read_rows(f)]


GOOD = [["Exercises", "1. Compute 17 + 25 and explain each step of the addition.",
         "2. Compute 6 times 7 and check the product by repeated addition."]]


def test_unreadable_documents_are_ledgered_and_the_rest_is_processed(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    make_text_pdf(inputs / "good.pdf", GOOD)
    encrypted = make_encrypted_pdf(inputs / "locked.pdf")
    corrupt = make_corrupt_pdf(inputs / "corrupt.pdf")
    zero = make_zero_page_pdf(inputs / "zero.pdf")
    result = runner.invoke(app, ["run", "textbook-pdf", "--input", str(inputs), "--out", str(tmp_path / "run"), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = rows_of(tmp_path / "run")
    assert [(r["source"]["document"], r["source"]["number"]) for r in rows] == [("in/good.pdf", "1"), ("in/good.pdf", "2")]  # relative to the --input directory
    ledger = {r["file"]: r for r in pq.read_table(tmp_path / "run" / "ledger").to_pylist()}
    assert ledger[str(encrypted)]["reason"] == "encrypted_pdf" and "password" in ledger[str(encrypted)]["detail"]
    assert ledger[str(corrupt)]["reason"] == "corrupt_pdf" and str(corrupt) in ledger[str(corrupt)]["detail"]
    assert ledger[str(zero)]["reason"] == "empty_pdf" and "no pages" in ledger[str(zero)]["detail"]
    assert {r["stage"] for r in ledger.values()} == {"read"}


def test_a_broken_page_is_ledgered_with_its_page_number(tmp_path):
    pdf = make_text_pdf(tmp_path / "two.pdf", [GOOD[0], ["Exercise 3. Compute 4 + 4 and explain."]])
    doc = pymupdf.open(pdf)
    xref = doc[1].get_contents()[0]
    doc.update_stream(xref, b"BT /F9 12 Tf 72 72 Td (broken) Tj ET q 1 0 0 1 0 0 cm /Im9 Do Q " + b"\x00" * 20)
    doc.save(tmp_path / "broken.pdf")
    run = tmp_path / "run"
    run_pipeline(build([str(tmp_path / "broken.pdf")], {}), run, RunOptions(progress=False))
    rows = rows_of(run)
    assert [r["source"]["number"] for r in rows] == ["1", "2"]  # the good page still counts


def test_image_only_pdf_is_read_by_ocr(tmp_path):
    pdf = make_image_only_pdf(tmp_path / "scan.pdf", ["Exercises", "1. Compute 12 + 30 for the table.",
                                                     "Answer: 42", "2. Compute 7 + 8 for the table.", "Answer: 15"])
    run = tmp_path / "run"
    run_pipeline(build([str(pdf)], {}), run, RunOptions(progress=False))
    rows = rows_of(run)
    assert [(r["question"], r["answer"]) for r in rows] == [("Compute 12 + 30 for the table.", "42"),
                                                           ("Compute 7 + 8 for the table.", "15")]
    assert all(json.loads(r["meta"])["parse_backends"] == ["tesseract"] for r in rows)


def test_mixed_language_pdf_is_read_from_its_text_layer(tmp_path):
    pages = [
        ["Exercises", "1. Compute the derivative of 3x + 5 with respect to x."],
        ["Exercices", "Exercice 2. Calculer la dérivée de la fonction 4x + 7 par rapport à x.", "Réponse : 4"],
    ]
    doc_path = make_text_pdf(tmp_path / "mixed.pdf", pages, font="tiro")
    doc = pymupdf.open(doc_path)  # a Russian page, in a font that has Cyrillic glyphs
    page = doc.new_page()
    for i, line in enumerate(["Упражнения", "Задача 3. Найдите производную функции 5x + 2 по x.", "Ответ: 5"]):
        page.insert_text((72, 72 + 14 * i), line, fontname="china-s", fontsize=10)
    doc.save(tmp_path / "mixed2.pdf")
    run = tmp_path / "run"
    run_pipeline(build([str(tmp_path / "mixed2.pdf")], {}), run, RunOptions(progress=False))
    rows = rows_of(run)
    assert [(r["source"]["number"], r["answer"]) for r in rows] == [("1", ""), ("2", "4"), ("3", "5")]
    assert rows[2]["question"] == "Найдите производную функции 5x + 2 по x."
    assert all(json.loads(r["meta"])["parse_backends"] == ["text"] for r in rows)  # nothing sent to OCR


def test_huge_pdf_streams_in_page_shards(tmp_path):
    pdf = make_huge_pdf(tmp_path / "huge.pdf", pages=1000)
    run = tmp_path / "run"
    result = run_pipeline(build([str(pdf)], {"parse": {"pages_per_shard": 100}}), run, RunOptions(progress=False))
    assert result.records == 2000
    parse_dir = next((run / "stages").glob("00-*"))
    assert len(list(parse_dir.glob("part-*.done.json"))) == 10  # committed 100 pages at a time
    rows = rows_of(run)
    assert rows[-1]["question"] == "Compute 2000 + 2001 and explain the steps." and rows[-1]["source"]["page"] == 1000


def test_structure_stage_holds_a_bounded_window_of_pages():
    """Pages are consumed lazily: the first items come out after a few pages, not after all."""
    consumed = itertools.count()

    def pages():
        for n in range(1, 100_000):
            next(consumed)
            lines = [{"text": f"{2 * n - 1}. Compute {n} + {n} and explain the steps carefully.", "x0": 72.0, "y0": 100.0,
                      "x1": 400.0, "y1": 112.0, "size": 10.0, "bold": True, "block": 0, "line": None},
                     {"text": f"{2 * n}. Compute {n} times {n} and explain the steps carefully.", "x0": 72.0, "y0": 130.0,
                      "x1": 400.0, "y1": 142.0, "size": 10.0, "bold": True, "block": 0, "line": None}]
            if n == 1:
                lines.insert(0, {"text": "Exercises", "x0": 72.0, "y0": 70.0, "x1": 150.0, "y1": 84.0, "size": 14.0,
                                 "bold": True, "block": 0, "line": None})
            yield {"id": f"p{n}", "source": {"document": "endless.pdf", "page": n}, "pages": 0, "width": 612.0,
                   "height": 792.0, "backend": "text", "quality": 1.0, "lines": lines}

    out = StructureDocument().run(pages(), None)
    first = [next(out) for _ in range(20)]
    assert [u["number"] for u in first] == [str(n) for n in range(1, 21)]
    assert next(consumed) <= 20  # ten pages of items, plus the running-header window of 4 pages


@pytest.mark.parametrize("name", ["notes.txt", "book.pdf.part"])
def test_wrong_input_kind_is_a_clear_cli_error(tmp_path, name):
    (tmp_path / name).write_text("hello")
    result = runner.invoke(app, ["run", "textbook-pdf", "--input", str(tmp_path / name), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "expected .pdf" in result.output
    assert not (tmp_path / "r").exists()
