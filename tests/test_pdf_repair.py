"""Text-layer repair (issue 15): fonts whose code points lie are found, mapped back once per
document from OCR of a few sample pages, or the page goes to OCR; nothing passes silently.

Each PDF is generated with an embedded font whose ToUnicode map is then rewritten
(tests/helpers/textbook_gen.break_tounicode); the truth is the text the generator drew.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from helpers.textbook_gen import FONT, break_tounicode

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.pipelines.stage import Drop
from rlclimb.stages.documents import parse_pdf
from rlclimb.stages.documents.parse_repair import suspects

pytestmark = pytest.mark.slow  # Tesseract reads the sample pages

LINES = [f"{i + 1}. Compute the sum of {13 * i + 7} and {5 * i + 20} for the table in Section {i % 3 + 1}.{i + 2}."
         for i in range(14)]


def broken_book(path: Path, mode: str, pages: int = 4, heading: str | None = None) -> Path:
    """`pages` pages of numbered exercises in an embedded font whose map is broken by `mode`
    (with `heading`: only a heading font is broken, the body font is fine)."""
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        page.insert_font(fontname="BODY", fontbuffer=pymupdf.Font(FONT).buffer)
        y = 72
        if heading:
            page.insert_font(fontname="HEAD", fontbuffer=pymupdf.Font("tiro").buffer)
            page.insert_text((72, y), heading, fontname="HEAD", fontsize=16)
            y += 30
        for line in LINES:
            page.insert_text((72, y), line, fontname="BODY", fontsize=12)
            y += 18
        page.insert_text((300, 760), str(p + 1), fontname="BODY", fontsize=10)
    assert break_tounicode(doc, mode, font="Roman" if heading else None) >= 1
    doc.save(path)
    return path


def parse(path: Path, **config) -> list:
    parse_pdf.close_cached_pdfs()
    stage = parse_pdf.ParsePdf(**config)
    stage.setup(None)
    return [stage.process(item, None) for item in PdfPageReader([path])]


def page_text(page: dict) -> str:
    return "\n".join(ln["text"] for ln in page["lines"])


@pytest.fixture(autouse=True)
def fresh_repairs():
    parse_pdf._REPAIRS.clear()  # substitutions are learned once per document and process
    yield
    parse_pdf._REPAIRS.clear()
    parse_pdf.close_cached_pdfs()


@pytest.mark.parametrize("mode", ["coptic", "nodigits"])
def test_digit_substitution_is_repaired_once_per_document(tmp_path, mode):
    pdf = broken_book(tmp_path / f"{mode}.pdf", mode)
    layer = pymupdf.open(pdf)[0].get_text()
    assert "Compute the sum of 7 and 20" not in layer  # the text layer lies ...
    assert suspects(pymupdf.open(pdf)[0].get_text(flags=parse_pdf.text_flags()))  # ... detectably
    pages = parse(pdf)
    assert all(p["text_path"] == "repaired" and p["backend"] == "text" for p in pages), [
        (p["text_path"], p["path_reason"]) for p in pages]
    for p in pages:  # every digit is back, from the text layer (no page was OCR'd for its text)
        text = page_text(p)
        for line in LINES:
            assert line in text, (line, text[:300])
    [rep] = parse_pdf._REPAIRS.values()
    assert len(rep.pages) <= parse_pdf_sample_limit() and set(rep.table.values()) == set("0123456789")


def parse_pdf_sample_limit() -> int:
    from rlclimb.stages.documents.parse_repair import MAX_SAMPLE_PAGES

    return MAX_SAMPLE_PAGES


def test_ligature_glyphs_are_mapped_back(tmp_path):
    lines = ["Let q be the quick kernel of the check quantity q and k.", "Quickly check every kink in q."]
    doc = pymupdf.open()
    for _ in range(3):
        page = doc.new_page()
        page.insert_font(fontname="BODY", fontbuffer=pymupdf.Font(FONT).buffer)
        for i, line in enumerate(lines * 6):
            page.insert_text((72, 72 + 18 * i), line, fontname="BODY", fontsize=12)
    break_tounicode(doc, "ligature")
    doc.save(tmp_path / "lig.pdf")
    assert "\u019f" in pymupdf.open(tmp_path / "lig.pdf")[0].get_text()
    pages = parse(tmp_path / "lig.pdf")
    for p in pages:
        assert "\u019f" not in page_text(p) and "quick kernel of the check" in page_text(p), p["path_reason"]


def test_latin1_noise_heading_is_read(tmp_path):
    pdf = broken_book(tmp_path / "head.pdf", "latin1", pages=3, heading="Solutions to Selected Exercises")
    assert "Solutions" not in pymupdf.open(pdf)[0].get_text()
    for p in parse(pdf):
        assert p["text_path"] in ("repaired", "ocr"), p["path_reason"]
        assert "Solutions to Selected Exercises" in page_text(p)
        assert LINES[3] in page_text(p)  # the body font was fine and stays so


def test_unrepairable_page_goes_to_ocr_never_through(tmp_path):
    """Every digit maps to U+FFFD: no identity left to learn a substitution from -> OCR."""
    pdf = broken_book(tmp_path / "fffd.pdf", "unmapped", pages=2)
    for p in parse(pdf):
        assert p["backend"] == "tesseract" and p["text_path"] == "ocr", p["path_reason"]
        assert "Compute the sum of 7 and 20" in page_text(p)
    for drop in parse(pdf, ocr="off"):  # no OCR: ledgered with the reason, not passed on
        assert isinstance(drop, Drop) and drop.reason == "garbled_text_layer"


def test_clean_text_layers_take_the_plain_path(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    for i, line in enumerate(LINES):
        page.insert_text((72, 72 + 18 * i), line, fontsize=12)
    doc.save(tmp_path / "clean.pdf")
    [p] = parse(tmp_path / "clean.pdf")
    assert p["text_path"] == "text" and p["path_reason"] is None and not parse_pdf._REPAIRS
