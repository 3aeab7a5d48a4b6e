"""Display fractions and radicals rebuilt from rules and glyph positions (issues 15/16), and the
look-alikes that must stay as they are (an underline, a table rule, a section rule). Every PDF
is drawn here (text with PyMuPDF, bars and overlines with draw_line); the truth is what the
generator drew."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.stages.documents import parse_pdf
from rlclimb.stages.documents.parse_layout import stext_blocks
from rlclimb.stages.documents.parse_stacked import page_rules, rebuild_from

S = 11.0  # text size
FONT = pymupdf.Font("helv")  # embedded as a font file, so "√" and "−" keep their Unicode


def parse_lines(path: Path) -> list[str]:
    parse_pdf.close_cached_pdfs()
    stage = parse_pdf.ParsePdf(ocr="off")
    stage.setup(None)
    return [ln["text"] for item in PdfPageReader([path]) for ln in stage.process(item, None)["lines"]]


class Writer:
    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = self.doc.new_page()
        self.page.insert_font(fontname="F0", fontbuffer=FONT.buffer)

    def text(self, x: float, y: float, text: str, size: float = S) -> float:
        """Draw `text` with its baseline at y; returns the x where it ends."""
        self.page.insert_text((x, y), text, fontname="F0", fontsize=size)
        return x + FONT.text_length(text, fontsize=size)

    def rule(self, x0: float, x1: float, y: float) -> None:
        self.page.draw_line((x0, y), (x1, y), width=0.4)

    def fraction(self, x: float, y: float, num: str, den: str, size: float = S) -> float:
        """A display fraction on the row whose baseline is y (bar on the axis); returns its end."""
        w = max(FONT.text_length(num, fontsize=size), FONT.text_length(den, fontsize=size)) + 2
        bar = y - 0.25 * size
        self.text(x + (w - FONT.text_length(num, fontsize=size)) / 2, bar - 0.45 * size, num, size)
        self.text(x + (w - FONT.text_length(den, fontsize=size)) / 2, bar + 0.95 * size, den, size)
        self.rule(x, x + w, bar)
        return x + w

    def radical(self, x: float, y: float, radicand: str, index: str | None = None) -> float:
        """√ radicand with its overline from the sign's top-right corner; returns its end."""
        if index:
            self.text(x, y - 0.45 * S, index, 0.6 * S)
        end = self.text(x, y, "√")
        over = self.text(end, y, radicand)
        self.rule(end, over, y - 0.8 * S)
        return over

    def save(self, path: Path) -> Path:
        self.doc.save(path)
        return path


def test_display_fractions_are_rebuilt_in_their_line(tmp_path):
    w = Writer()
    x = w.text(72, 100, "1. Is f(p/q) = ")
    w.fraction(x, 100, "p + 1", "p − 2")
    x = w.text(72, 150, "2. Compute ")
    x = w.fraction(x, 150, "1", "2") + 2
    x = w.text(x, 150, "+ ")
    x = w.fraction(x, 150, "3x", "x + 7") + 2
    w.text(x, 150, " for x = 2.")
    w.fraction(250, 200, "a + b", "2")  # a display on its own, nothing beside it
    # a small fraction in an exponent: x^{-1/2}
    x = w.text(w.text(72, 250, "3. Differentiate") + 30, 250, "u")  # a gap: MuPDF makes "u" a line of its own
    x = w.text(x, 250 - 0.4 * S, "−", 0.7 * S)
    w.fraction(x, 250 - 0.4 * S, "1", "2", 0.7 * S)
    lines = parse_lines(w.save(tmp_path / "frac.pdf"))
    assert lines == ["1. Is f(p/q) = \\frac{p + 1}{p − 2}", "2. Compute \\frac{1}{2} + \\frac{3x}{x + 7} for x = 2.",
                     "\\frac{a + b}{2}", "3. Differentiate u^{−\\frac{1}{2}}"]


def test_radicals_and_nesting(tmp_path):
    w = Writer()
    x = w.text(72, 100, "3. Show that x = ")
    w.radical(x, 100, "b + 4ac")
    x = w.text(72, 150, "4. Find ")
    w.radical(x, 150, "27", index="3")
    # a radical inside a denominator: the overline (narrower) is rebuilt first
    x = w.text(72, 200, "5. Simplify ")
    bar = 200 - 0.25 * S
    end = w.radical(x + 1, bar + 0.95 * S, "2")
    w.text((x + end + 1 - FONT.text_length("1", fontsize=S)) / 2, bar - 0.45 * S, "1")
    w.rule(x, end + 1, bar)
    lines = parse_lines(w.save(tmp_path / "rad.pdf"))
    assert lines == ["3. Show that x = \\sqrt{b + 4ac}", "4. Find \\sqrt[3]{27}", "5. Simplify \\frac{1}{\\sqrt{2}}"]


def test_rules_that_are_not_fractions_leave_the_text_alone(tmp_path):
    w = Writer()
    # an underline: text above it runs past the rule, the next line is prose
    x = w.text(72, 100, "6. Read the ")
    end = w.text(x, 100, "definition")
    w.text(end, 100, " twice before the exercise.")
    w.rule(x, end, 101.5)
    w.text(72, 114, "Then answer the questions that follow it.")
    # a table rule between a header row and a data row: cells far apart
    for col, (head, cell) in enumerate([("n", "1"), ("n squared", "1"), ("n cubed", "1")]):
        w.text(100 + 90 * col, 160, head)
        w.text(100 + 90 * col, 174, cell)
    w.rule(95, 340, 163.5)
    # a short rule under a centred heading, a paragraph below it
    w.text(250, 220, "Summary")
    w.rule(248, 292, 223)
    w.text(72, 235, "Everything above holds for every group.")
    lines = parse_lines(w.save(tmp_path / "rules.pdf"))
    text = "\n".join(lines)
    assert "\\frac" not in text and "\\sqrt" not in text
    assert "6. Read the definition twice before the exercise." in lines
    assert "Everything above holds for every group." in lines


def test_a_footnote_rule_is_no_fraction_bar(tmp_path):
    # a paragraph's short last line above the rule, the footnote (smaller, with a raised marker)
    # below it running past its end; the rebuild itself is asked (the page has no other cue)
    w = Writer()
    w.text(72, 279, "A paragraph runs on here and ends on the next line,")
    end = w.text(72, 293, "as the last line shows.")
    w.rule(72, 72 + 1.2 * (end - 72), 300)
    w.text(72, 306.5, "*", 6)
    w.text(76, 309.5, "More information on canonical representatives is in the appendix.", 8)
    page = pymupdf.open(w.save(tmp_path / "footnote.pdf"))[0]
    textpage = page.get_textpage(flags=parse_pdf.text_flags())
    blocks = stext_blocks(textpage)
    assert rebuild_from(blocks, textpage.extractRAWDICT()["blocks"], page_rules(page), {}) == 0


def test_plain_text_pages_skip_the_pass_and_inline_fractions_are_found(tmp_path):
    w = Writer()
    for k in range(30):  # paragraphs: left-aligned lines, short last lines, no drawing
        w.text(72 + (18 if k % 5 == 0 else 0), 80 + 14 * k, "Prose that runs across the page and on" if k % 5 != 4
               else "to a short end.")
    page = pymupdf.open(w.save(tmp_path / "prose.pdf"))[0]
    assert page_rules(page) == []  # nothing to read glyphs for
    # a text-style fraction inside a paragraph, its numerator ending one text line and its
    # denominator starting the next (lebl's "l'équation logistique dx/dt = kx(M − x)"): no line
    # of its own, no short line stacked on another; its bar is the cue
    w = Writer()
    w.text(72, 100, "We start with the logistic equation and then we")
    x = w.text(72, 114, "change it: the rate ")
    w.fraction(x, 114, "dx", "dt", 0.75 * S)
    w.text(x + FONT.text_length("dx", fontsize=0.75 * S) + 3, 114, " = kx(M − x) is proportional to x.")
    w.text(72, 128, "Solving this system gives the constants below.")
    lines = parse_lines(w.save(tmp_path / "inline.pdf"))
    assert "change it: the rate \\frac{dx}{dt} = kx(M − x) is proportional to x." in lines, lines


def test_rows_of_several_lines_over_a_bar_are_left_alone(tmp_path):
    # column vectors over and under a bar (a projection's coefficient): not rebuilt, nor garbled
    w = Writer()
    x = w.text(72, 300, "so that p = ")
    bar = 300 - 0.25 * S
    for k in range(2):
        w.text(x + 1, bar - 0.45 * S - 1.2 * S * (1 - k), str(k + 2))
        w.text(x + 1, bar + 0.95 * S + 1.2 * S * k, str(k + 1))
    w.rule(x, x + 8, bar)
    page = pymupdf.open(w.save(tmp_path / "vectors.pdf"))[0]
    textpage = page.get_textpage(flags=parse_pdf.text_flags())
    assert rebuild_from(stext_blocks(textpage), textpage.extractRAWDICT()["blocks"], page_rules(page), {}) == 0
