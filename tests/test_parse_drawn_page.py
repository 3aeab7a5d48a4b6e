"""The parse stage reads a page through one display list (`parse_pdf.DrawnPage`): the text page
made from it is MuPDF's text page of the page, and `get_cdrawings` is asked of MuPDF only when
the page strokes or fills a path (else it has nothing to find). Pages drawn here: text alone,
text over a fraction bar, a rotated page."""

from __future__ import annotations

import pymupdf

from rlclimb.stages.documents.parse_layout import stext_blocks
from rlclimb.stages.documents.parse_pdf import DrawnPage, ParsePdf, close_cached_pdfs, text_flags


def _doc() -> pymupdf.Document:
    doc = pymupdf.open()
    text = doc.new_page()
    text.insert_text((72, 100), "1. Compute 3 + 4.", fontsize=11)
    text.insert_text((90, 114), "7", fontsize=11)  # a short line under it: the stacked cue, no rule
    bar = doc.new_page()
    bar.insert_text((100, 96), "a + b", fontsize=11)
    bar.draw_line((98, 100), (130, 100), width=0.5)
    bar.insert_text((108, 112), "c", fontsize=11)
    turned = doc.new_page()
    turned.insert_text((72, 100), "Turned page text.", fontsize=11)
    turned.draw_line((72, 110), (140, 110), width=0.5)
    turned.set_rotation(90)
    return doc


def test_drawn_page_reads_as_the_page_and_asks_for_drawings_only_where_paths(monkeypatch):
    doc = _doc()
    asked = []
    real = pymupdf.Page.get_cdrawings
    monkeypatch.setattr(pymupdf.Page, "get_cdrawings", lambda self, *a, **k: asked.append(self.number) or real(self, *a, **k))
    for page in doc:
        drawn = DrawnPage(page)
        assert stext_blocks(drawn.textpage) == stext_blocks(page.get_textpage(flags=text_flags()))
        assert drawn.textpage.extractRAWDICT() == page.get_textpage(flags=text_flags()).extractRAWDICT()
        asked.clear()
        got = drawn.get_cdrawings()
        assert asked == ([] if page.number == 0 else [page.number])
        assert got == real(page)
        assert (len(got) > 0) == (page.number > 0)


def test_stage_output_of_a_page_without_paths(tmp_path):
    path = tmp_path / "drawn.pdf"
    _doc().save(path)
    close_cached_pdfs()
    stage = ParsePdf(ocr="off")
    stage.setup(None)
    rec = {"id": "x", "source": {"document": str(path), "page": 1}, "pages": 3}
    out = stage.process(rec, None)
    assert [ln["text"] for ln in out["lines"]] == ["1. Compute 3 + 4.", "7"]
    rec = {"id": "y", "source": {"document": str(path), "page": 2}, "pages": 3}
    assert [ln["text"] for ln in stage.process(rec, None)["lines"]] == ["\\frac{a + b}{c}"]
    close_cached_pdfs()
