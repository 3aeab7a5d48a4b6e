"""The parse step: text-layer quality check, layout (reading order, fonts), OCR fallback.

PDFs are generated here with PyMuPDF: plain text pages, two-column pages drawn line by line
across both columns, fonts whose ToUnicode map is broken, rasterized (scanned) pages.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pymupdf
import pytest
from helpers.textbook_gen import (
    FONT,
    ChapterSpec,
    break_tounicode,
    make_image_only_pdf,
    make_text_pdf,
    make_textbook,
)

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.pipelines.stage import Drop
from rlclimb.stages.documents.parse_pdf import ParsePdf, close_cached_pdfs
from rlclimb.stages.documents.parse_quality import assess

ENGLISH = ("Let f be a continuous function on the closed interval [a, b]. Then f attains a maximum and a "
           "minimum on the interval, and the set of values of f is again a closed interval. ") * 3


def parse(path: Path, **config) -> list:
    close_cached_pdfs()
    stage = ParsePdf(**config)
    stage.setup(None)
    return [stage.process(item, None) for item in PdfPageReader([path])]


# ---- quality check ---------------------------------------------------------------------------------
def test_clean_text_in_several_languages_scores_clean():
    texts = {
        "en": ENGLISH,
        "fr": "Soit f une fonction continue sur l'intervalle fermé [a, b]. Alors f atteint un maximum et un "
              "minimum sur cet intervalle, et l'image de f est encore un intervalle fermé. " * 3,
        "de": "Es sei f eine stetige Funktion auf dem abgeschlossenen Intervall [a, b]. Dann nimmt f auf dem "
              "Intervall ein Maximum und ein Minimum an, und die Bildmenge ist wieder ein Intervall. " * 3,
        "ru": "Пусть f непрерывная функция на отрезке [a, b]. Тогда f достигает на этом отрезке наибольшего и "
              "наименьшего значения, а множество значений f снова является отрезком. " * 3,
        "math": "Solve 2x + 3y = 13 and x − y = −1. Then λx = 3 and πr² = 12.5, so α + β = 7. " * 4,
    }
    for lang, text in texts.items():
        q = assess(text)
        assert q.garbled is None and q.score > 0.9, (lang, q)


def test_broken_text_layers_are_recognized():
    digits_as_cyrillic = ENGLISH.replace("a", "a").translate(str.maketrans("0123456789", "ЖЗИЙКЛМНОП"))
    digits_as_cyrillic += " Exercise З. Compute И + Й = К and Лx − М = Н for x. " * 6
    letters = "abcdefghijklmnopqrstuvwxyz"
    perm = list(letters)
    random.Random(3).shuffle(perm)
    shuffled = ENGLISH.translate(str.maketrans(letters, "".join(perm)))
    cases = {
        "mixed scripts": digits_as_cyrillic,
        "gibberish": shuffled,
        "unmapped glyphs": "\ufffd\ufffd\ufffd \ufffd\ufffd " * 40,
        "private-use glyphs": "\ue001\ue002\ue003 \ue004 " * 40,
        "ligature holes": "The de nition of a speci c e cient rst method is xed here. " * 6,
    }
    for expected, text in cases.items():
        q = assess(text)
        assert q.garbled == expected, (expected, q)
    assert assess("   \n ").garbled == "empty"


# ---- layout ------------------------------------------------------------------------------------------
def test_text_page_lines_keep_fonts_and_labels(tmp_path):
    book = make_textbook(tmp_path / "book.pdf", chapters=[ChapterSpec("Algebra", "inline", exercises=3)])
    page = parse(book.path)[1]
    texts = [ln["text"] for ln in page["lines"]]
    assert page["backend"] == "text" and page["quality"] == 1.0
    label = next(ln for ln in page["lines"] if ln["text"].startswith("1. "))
    assert label["bold"] and label["text"] == f"1. {book.items[0].text}"  # bold label + text on one line
    heading = next(ln for ln in page["lines"] if ln["text"].startswith("Chapter 1:"))
    assert heading["size"] > 1.5 * label["size"]
    assert texts.index(heading["text"]) < texts.index(label["text"])


def test_two_column_page_is_read_column_by_column(tmp_path):
    book = make_textbook(tmp_path / "cols.pdf", chapters=[ChapterSpec("Counting", "key", exercises=16, columns=2, prose=0)])
    page_no = book.two_column_pages[0]
    label = re.compile(r"^(\d+)\.(?:\s|$)", re.M)
    naive = [int(n) for n in label.findall(pymupdf.open(book.path)[page_no - 1].get_text())]
    # the PDF draws both columns line by line: plain extraction interleaves them ...
    assert naive != sorted(naive) and set(naive) == set(range(1, 17))
    page = parse(book.path)[page_no - 1]
    text = "\n".join(ln["text"] for ln in page["lines"])
    labels = [int(m.group(1)) for ln in page["lines"] if ln["bold"] and (m := label.match(ln["text"]))]
    assert labels == list(range(1, 17))  # ... the parse stage reads column by column
    for item in book.items:  # and every statement reads as printed, across the column break
        assert item.text in " ".join(text.split()), item.number


# ---- OCR fallback ----------------------------------------------------------------------------------
def garbled_pdf(path: Path, mode: str) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="GL", fontbuffer=pymupdf.Font(FONT).buffer)
    for i in range(12):
        page.insert_text((72, 72 + 18 * i), f"{i + 1}. Compute the sum of {13 * i + 7} and {5 * i + 20} for the table.",
                         fontname="GL", fontsize=12)
    assert break_tounicode(doc, mode) == 1
    doc.save(path)
    return path


@pytest.mark.parametrize("mode", ["digits", "shuffle", "unmapped"])
def test_garbled_page_is_flagged_and_ledgered_when_ocr_is_off(tmp_path, mode):
    pdf = garbled_pdf(tmp_path / f"{mode}.pdf", mode)
    [drop] = parse(pdf, ocr="off")
    assert isinstance(drop, Drop) and drop.reason == "garbled_text_layer"
    assert f"{pdf} page 1" in drop.detail and "parse.ocr=tesseract" in drop.detail
    [page] = parse(pdf, ocr="vlm")  # the VLM backend gets the page: marked, not yet transcribed
    assert page["needs_ocr"] and page["ocr_reason"].startswith("garbled")


def test_garbled_page_is_repaired_from_ocr(tmp_path):
    """Digits drawn as Cyrillic letters: a consistent substitution, learned from Tesseract's reading
    of the page and applied to the text layer (tests/test_pdf_repair.py has the other classes)."""
    pdf = garbled_pdf(tmp_path / "digits.pdf", "digits")
    assert "Compute the sum of 7 and 20" not in pymupdf.open(pdf)[0].get_text()  # the text layer lies
    [page] = parse(pdf)
    assert page["text_path"] in ("repaired", "ocr") and page["path_reason"]
    assert page["quality"] > 0.5
    text = " ".join(ln["text"] for ln in page["lines"])
    assert "Compute the sum of 7 and 20" in text and "Ж" not in text


def test_image_only_page_goes_to_tesseract(tmp_path):
    pdf = make_image_only_pdf(tmp_path / "scan.pdf", ["Exercise 1. Compute 12 + 30.", "Answer: 42"])
    assert pymupdf.open(pdf)[0].get_text().strip() == ""
    [page] = parse(pdf)
    assert page["backend"] == "tesseract" and page["ocr_reason"] == "empty"
    assert [ln["text"] for ln in page["lines"]] == ["Exercise 1. Compute 12 + 30.", "Answer: 42"]


def test_ocr_through_libtesseract_and_the_pymupdf_fallback_read_alike(tmp_path, monkeypatch):
    """The system libtesseract (in process) is used where it loads; PyMuPDF's bundled Tesseract
    is the fallback. Both give the page's lines, in page coordinates, with the same text."""
    from rlclimb.stages.documents import parse_ocr

    lines = ["Exercise 3. Compute 12 + 30 and 7 - 5.", "Answer: 42 and 2", "Exercise 4. Solve 2x = 10."]
    pdf = make_image_only_pdf(tmp_path / "scan.pdf", lines)
    if parse_ocr._library() is None:
        pytest.skip("libtesseract cannot be loaded here: only the fallback runs")
    [native] = parse(pdf)
    monkeypatch.setattr(parse_ocr, "_library", lambda: None)
    monkeypatch.setattr(parse_ocr, "_APIS", {})
    [fallback] = parse(pdf)
    for page in (native, fallback):
        assert page["backend"] == "tesseract" and [ln["text"] for ln in page["lines"]] == lines
    for a, b in zip(native["lines"], fallback["lines"], strict=True):  # same place on the page
        assert abs(a["x0"] - b["x0"]) < 3 and abs(a["y0"] - b["y0"]) < 6, (a, b)


def test_missing_tesseract_data_is_a_clear_drop(tmp_path):
    pdf = make_image_only_pdf(tmp_path / "scan.pdf", ["Exercise 1. Compute 12 + 30."])
    [drop] = parse(pdf, tessdata=str(tmp_path))  # a folder without eng.traineddata
    assert drop.reason == "ocr_unavailable"
    assert f"{pdf} page 1" in drop.detail and "apt-get install tesseract-ocr-eng" in drop.detail


def test_blank_page_is_not_sent_to_ocr(tmp_path):
    pdf = make_text_pdf(tmp_path / "blank.pdf", [[], ["Exercise 1. Compute 2 + 2 and explain why."]])
    blank, text = parse(pdf)
    assert blank["backend"] == "text" and blank["lines"] == [] and blank["ocr_reason"] is None
    assert text["lines"][0]["text"].startswith("Exercise 1.")


def test_matrices_drawn_as_stacked_rows_come_out_as_pmatrix(tmp_path):
    """A matrix typeset as rows of numbers (the label beside its middle row, as LaTeX draws it)
    keeps its rows; the text layer alone would flatten it into "2 0 3 4 1 -1 5 5 5"."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Exercise 1. Calculate Ab, where", fontsize=10)
    page.insert_text((120, 124), "A =", fontsize=10)
    for k, row in enumerate(["2 0 3", "4 1 -1", "5 5 5"]):
        page.insert_text((145, 112 + 12 * k), row, fontsize=10)
    page.insert_text((300, 118), "b =", fontsize=10)
    for k, entry in enumerate(["1", "0", "5"]):  # a column vector
        page.insert_text((330, 106 + 12 * k), entry, fontsize=10)
    page.insert_text((72, 180), "Exercise 2. Two lines of prose that are not", fontsize=10)
    page.insert_text((72, 192), "a matrix at all, 3 4", fontsize=10)
    path = tmp_path / "matrix.pdf"
    doc.save(path)
    texts = [ln["text"] for ln in parse(path)[0]["lines"]]
    assert " ".join(texts).count(r"A = \begin{pmatrix} 2 & 0 & 3 \\ 4 & 1 & -1 \\ 5 & 5 & 5 \end{pmatrix}") == 1
    assert r"\begin{pmatrix} 1 \\ 0 \\ 5 \end{pmatrix}" in texts
    assert "a matrix at all, 3 4" in texts


def test_rebuild_matrices_leaves_other_number_lines_alone():
    from rlclimb.stages.documents.parse_matrix import rebuild_matrices

    def line(text, x0, y0):
        return {"text": text, "x0": x0, "y0": y0, "x1": x0 + 6 * len(text), "y1": y0 + 10, "size": 10.0}

    far_apart = [line("1 2", 100, 100), line("3 4", 100, 160)]  # not stacked: a gap of 5 lines
    widths = [line("1 2", 100, 100), line("3 4 5", 100, 112)]  # rows of different lengths
    page_numbers = [line("12", 300, 700), line("Chapter 2", 100, 712)]
    for lines in (far_apart, widths, page_numbers):
        assert rebuild_matrices(lines) == lines
    # the label "A =" joined to the middle row (same block, same height) stays in front
    joined = [line("2 0", 130, 100), line("A = 4 1", 100, 112), line("5 5", 130, 124)]
    joined[1]["x1"] = joined[0]["x1"]
    assert [ln["text"] for ln in rebuild_matrices(joined)] == [r"A = \begin{pmatrix} 2 & 0 \\ 4 & 1 \\ 5 & 5 \end{pmatrix}"]


def test_replacement_characters_on_a_prose_page_are_not_tolerated():
    """Issue 15: digits that came out as U+FFFD (8.7% of a page's characters) scored 1.0 under the
    30% margin meant for TeX delimiters, and cleaning then deleted them silently."""
    prose = ("Exercise \ufffd.\ufffd Find the derivative of f(x) = x\ufffd + \ufffdx and evaluate it at x = \ufffd. "
             "Then use the result to sketch the tangent line and explain why the slope is positive. ") * 8
    q = assess(prose)
    assert q.garbled == "unmapped glyphs" and q.score < 0.8, q
    tex = ("Let A be the matrix \x12 a b c d \x13 and compute its determinant, then explain the result "
           "for the reader in a few words of running text. ") * 8  # TeX delimiter pieces stay tolerated
    assert assess(tex).garbled is None
