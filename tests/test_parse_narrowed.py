"""The glyph and span passes read MuPDF's dict extraction of only the blocks they may change
(`parse_math.PageExtraction.span_blocks` / `glyph_blocks`, the text page's box narrowed around
them). What they get for those blocks must be exactly what the whole page's extraction gives,
the page's box must be put back, and the parse output must not change. PDFs generated here."""

from __future__ import annotations

import copy

import pymupdf

from rlclimb.stages.documents.parse_layout import stext_blocks
from rlclimb.stages.documents.parse_math import PageExtraction, rebuild_lines
from rlclimb.stages.documents.parse_pdf import text_flags
from rlclimb.stages.documents.parse_stacked import rebuild_stacked


def _page() -> pymupdf.Document:
    """Prose blocks in one size, a block with an exponent and a subscript, a display fraction
    (a rule with a row on it and a row under it) and prose again."""
    doc = pymupdf.open()
    page = doc.new_page()
    font = pymupdf.Font("helv")
    y = 72.0
    for i in range(6):  # plain prose: nothing for either pass to change
        page.insert_text((72, y), f"Line {i} of plain prose set in one size, nothing to rebuild here.", fontsize=11)
        y += 15
    y += 20
    x = 72.0
    for text, size, rise in (("Compute 292", 11, 0), ("3171", 7.5, 4), (" and a", 11, 0), ("n", 7.5, -2), (" now.", 11, 0)):
        page.insert_text((x, y - rise), text, fontsize=size)
        x += font.text_length(text, fontsize=size)
    y += 40  # the display f = (p + 1)/q: its bar on the axis, as `test_pdf_notation` draws one
    page.insert_text((150, y), "f =", fontsize=11)
    num, den = "p + 1", "q"
    w = max(font.text_length(num, fontsize=11), font.text_length(den, fontsize=11)) + 2
    bar = y - 0.25 * 11
    page.insert_text((172 + (w - font.text_length(num, fontsize=11)) / 2, bar - 0.45 * 11), num, fontsize=11)
    page.insert_text((172 + (w - font.text_length(den, fontsize=11)) / 2, bar + 0.95 * 11), den, fontsize=11)
    page.draw_line((172, bar), (172 + w, bar), width=0.4)
    y += 40
    for i in range(4):
        page.insert_text((72, y), f"More prose, line {i}, after the display.", fontsize=11)
        y += 15
    return doc


def test_narrowed_span_extraction_is_the_whole_pages_for_the_blocks_it_returns():
    doc = _page()
    tp = doc[0].get_textpage(flags=text_flags())
    full = tp.extractDICT()["blocks"]
    blocks = stext_blocks(tp)
    got = PageExtraction(tp, blocks).span_blocks(blocks, {})
    assert len(got) == len(full) == len(blocks)
    kept = [k for k, b in enumerate(got) if b["lines"]]
    assert kept, "the block with scripts must be extracted"
    assert len(kept) < len(blocks), "prose blocks in one size are not extracted"
    for k in kept:
        assert got[k]["lines"] == full[k]["lines"]
    scripted = [k for k, b in enumerate(blocks) if any("3171" in ln["text"] for ln in b["lines"])]
    assert set(scripted) <= set(kept)
    box = tp.this.m_internal.mediabox
    assert (box.x0, box.y0, box.x1, box.y1) == tuple(doc[0].rect)  # the page's box is put back
    assert tp.extractDICT()["blocks"] == full


def test_narrowed_passes_give_the_same_lines_as_whole_page_extraction():
    doc = _page()
    page = doc[0]
    tp = page.get_textpage(flags=text_flags())
    blocks = stext_blocks(tp)
    whole, narrow = copy.deepcopy(blocks), copy.deepcopy(blocks)
    rebuild_stacked(page, tp, whole)  # a plain TextPage: the whole page's glyphs
    rebuild_lines(whole, tp.extractDICT()["blocks"])
    extraction = PageExtraction(tp, narrow)
    rebuild_stacked(page, extraction, narrow)  # narrowed to the blocks near the rule
    rebuild_lines(narrow, extraction.span_blocks(narrow, {}))
    texts = [ln["text"] for b in narrow for ln in b["lines"]]
    assert texts == [ln["text"] for b in whole for ln in b["lines"]]
    assert any("292^{3171}" in t for t in texts) and any("a_n" in t for t in texts)
    assert any("\\frac{p + 1}{q}" in t for t in texts), texts


def test_a_line_whose_glyphs_disagree_with_its_json_text_is_checked_on_a_wider_box():
    """A wanted line whose glyphs do not spell its JSON text (MuPDF places combining accents
    differently in the two; or a glyph the narrowed box cut off) is extracted again from a box
    as wide as the page: the block returned is still exactly the whole page's."""
    doc = _page()
    tp = doc[0].get_textpage(flags=text_flags())
    blocks = stext_blocks(tp)
    full = tp.extractRAWDICT()["blocks"]
    extraction = PageExtraction(tp, blocks)
    extraction._texts[0][0] += "x"  # the JSON text of block 0 no longer matches its glyphs
    got = extraction.glyph_blocks(blocks, {0})
    assert got[0]["lines"] == full[0]["lines"]
    assert all(not b["lines"] for b in got[1:])
