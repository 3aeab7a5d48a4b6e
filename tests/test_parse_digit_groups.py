"""Digit groups set apart by a thin space read as one number (issues 15/16, round 16): hefferon's
answers print "s = 25 857, a = 30 596" (TeX's `\\,`, a 1/6 em kern the text layer reads as a
space), so the values read as two numbers side by side and curation dropped the items as layout
damage. A space narrower than 0.2 em between a 1-3 digit group and groups of 3 is a separator;
a word space between numbers ("pages 12 345") and a thin space elsewhere (a decimal's digits,
"x 2") stay as they were, and so does a grouping the page also prints with a word space (the
glyph passes move text between lines, so the page is asked, not the line). The truth is what the generator drew."""

from __future__ import annotations

import pymupdf

from test_pdf_notation import parse_lines

S = 11.0
FONT = pymupdf.Font("helv")


def _grouped(page, x: float, y: float, groups: list[str], gap: float) -> float:
    """Digit groups drawn one after the other, `gap` em apart (no space glyph: a kern)."""
    for k, group in enumerate(groups):
        page.insert_text((x, y), group, fontname="F0", fontsize=S)
        x += FONT.text_length(group, fontsize=S) + (gap * S if k < len(groups) - 1 else 0)
    return x


def test_thin_spaced_digit_groups_are_one_number(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="F0", fontbuffer=FONT.buffer)
    x = _grouped(page, 72, 100, ["(b) s = 25"], 0)
    x = _grouped(page, x, 100, ["", "857, a = 30"], 1 / 6)
    _grouped(page, x, 100, ["", "596"], 1 / 6)
    x = _grouped(page, 72, 130, ["c = 299", "792", "458 m/s"], 1 / 6)
    page.insert_text((72, 160), "Read pages 12 345 and 7 100 again.", fontname="F0", fontsize=S)  # word spaces
    x = _grouped(page, 72, 190, ["π = 3.141", "592"], 1 / 6)  # a decimal's groups: left alone
    path = tmp_path / "groups.pdf"
    doc.save(path)
    lines = parse_lines(path)
    assert lines[0] == "(b) s = 25857, a = 30596", lines
    assert lines[1] == "c = 299792458 m/s", lines
    assert lines[2] == "Read pages 12 345 and 7 100 again.", lines
    assert lines[3] == "π = 3.141 592", lines


def test_a_grouping_the_page_also_prints_with_a_word_space_is_left_alone(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="F0", fontbuffer=FONT.buffer)
    _grouped(page, 72, 100, ["s = 25", "857"], 1 / 6)
    page.insert_text((72, 130), "Chapters 25 857 and 3.", fontname="F0", fontsize=S)
    path = tmp_path / "both.pdf"
    doc.save(path)
    assert parse_lines(path)[:2] == ["s = 25 857", "Chapters 25 857 and 3."]
