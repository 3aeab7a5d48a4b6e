"""Big delimiters around a rebuilt fraction (issues 15/16: thompson's `R_0(a + \\frac{b}{2\\sqrt{t}})`
read "R_0 a + \\frac{b}{2\\sqrt{t}}", its tall parentheses lost): the pair, a glyph of an extension
font or a run of its pieces, stands around the row the fraction pass rebuilt and keeps its place.

The PDFs are drawn here with `test_parse_stacked_delimited`'s writer (an extension font built with
fontTools), in TeX's drawing order: the text, the delimiter, the row, the fraction's rows and bar,
so MuPDF makes each delimiter a line of its own, as in the real books. The truth is what was drawn."""

from __future__ import annotations

import test_pdf_notation_inline as ni
from test_parse_stacked_delimited import AXIS, FONT, S
from test_pdf_notation import parse_lines
from test_pdf_notation_inline import NamelessWriter

BIGG = {18: ("parenleftbigg", 600, 40, 2360), 19: ("parenrightbigg", 600, 40, 2360),
        90: ("integraldisplay", 560, 0, 2220), 26: ("braceleftbigg", 670, 40, 2360)}


class OrderedWriter(NamelessWriter):
    """Text drawn in the order the test writes it (PyMuPDF's `insert_text` writes all text first;
    one call, a heading, makes its font's encoding Identity-H, as raw glyph ids need)."""

    def __init__(self) -> None:
        super().__init__()
        self.page.insert_text((72, 60), "Answers", fontname="F0", fontsize=S)

    def text(self, x: float, y: float, s: str, size: float = S) -> float:
        gids = "".join(f"{FONT.has_glyph(ord(c)):04x}" for c in s)  # F0 is Identity-H: glyph ids
        self.ops.append(f"BT /F0 {size} Tf {x:.2f} {self.page.rect.height - y:.2f} Td <{gids}> Tj ET")
        return x + self.width(s, size)

    def fraction(self, x: float, y: float, num: str, den: str) -> float:
        end = self.stack(x, y, num, den, 0.677 * S, 0.686 * S, S)
        self.rule(x, end, y - AXIS * S)
        return end

    def bigg(self, x: float, y: float, code: int) -> float:
        """A \\bigg delimiter or a display operator (cmex's metrics) centred on the axis of the row at y."""
        _, _, h, d = BIGG[code]
        top = y - AXIS * S - (h + d) / 2000 * S
        return self.ext(x, top + h / 1000 * S, code)

    def ext(self, x: float, y: float, code: int, size: float = S) -> float:
        self.ops.append(f"BT /EX {size} Tf {x:.2f} {self.page.rect.height - y:.2f} Td <{code:02x}> Tj ET")
        return x + (BIGG.get(code) or ni.CODES[code])[1] / 1000 * size

    def save(self, path):
        saved = dict(ni.CODES)
        ni.CODES.update(BIGG)
        try:
            return super().save(path)
        finally:
            ni.CODES.clear()
            ni.CODES.update(saved)


def test_whole_big_parentheses_around_text_and_a_fraction_keep_their_place(tmp_path):
    # thompson's answer "x^{a+1}/(a+1) (log x − 1/(a+1)) + C": a fraction right before each
    # parenthesis, so the fraction pass takes the parentheses' lines into the rows it rebuilds
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "(3) ")
    x = w.fraction(x, y, "x", "a + 1")
    x = w.bigg(x + 2, y, 18)
    x = w.text(x, y, "log x − ")
    x = w.fraction(x, y, "1", "a + 1")
    x = w.bigg(x, y, 19)
    x = w.text(x + 0.5, y - 0.9 * S, "2", 0.7 * S)
    w.text(x, y, " + C.")
    # two pairs on one row, the second starting with its fraction (MuPDF joins the parenthesis
    # and the numerator in one line)
    y = 300
    x = w.text(72, y, "so ")
    x = w.bigg(x, y, 18)
    x = w.text(x, y, "x + ")
    x = w.fraction(x, y, "1", "x")
    x = w.bigg(x, y, 19)
    x = w.text(x, y, " + ")
    x = w.bigg(x, y, 18)
    x = w.fraction(x, y, "x", "3")
    x = w.text(x, y, " − 1")
    x = w.bigg(x, y, 19)
    w.text(x, y, " holds.")
    lines = parse_lines(w.save(tmp_path / "wrap.pdf"))
    assert "(3) \\frac{x}{a + 1} (log x − \\frac{1}{a + 1})^{2} + C." in lines, lines
    assert "so (x + \\frac{1}{x}) + (\\frac{x}{3} − 1) holds." in lines, lines


def test_a_tall_pair_of_pieces_around_a_fraction_keeps_its_place(tmp_path):
    # a delimiter taller than \\Bigg (TeX stacks it from a top and a bottom piece)
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "then y = ")
    top = y - AXIS * S - 1.8 * S  # top and bottom pieces of cmex's metrics: 3.6 S tall

    def delimiter(x: float, codes: tuple[int, int]) -> float:
        end = w.ext(x, top, codes[0])
        w.ext(x, top + 1.8 * S, codes[1])
        return end

    x = delimiter(x, (48, 64)) + 1
    x = w.text(x, y, "x + ")
    x = w.fraction(x, y, "1", "2")
    x = delimiter(x + 1, (49, 65))
    w.text(x, y, " at last.")
    lines = parse_lines(w.save(tmp_path / "tall.pdf"))
    assert "then y = (x + \\frac{1}{2}) at last." in lines, lines


def test_a_matrix_with_a_fraction_cell_is_no_row_in_parentheses(tmp_path):
    # big parentheses around two stacked rows, one holding a fraction: not one row `( ... )`
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "let A = ")
    x = w.bigg(x, y, 18) + 1
    w.fraction(x, y - 0.6 * S, "1", "2")
    x = w.text(x + 12, y - 0.6 * S, "0")
    w.text(x - 12, y + 0.8 * S, "0")
    x = w.text(x, y + 0.8 * S, "1")
    w.bigg(x + 1, y, 19)
    text = "\n".join(parse_lines(w.save(tmp_path / "matrix.pdf")))
    assert "\\frac{1}{2}" in text, text
    assert "(\\frac" not in text, text


def test_a_closing_parenthesis_far_from_the_bar_is_read_too(tmp_path):
    # judson p235 "q^2 − 4(z − p)(\frac{1}{4}z^2 − r) = 0": the closing parenthesis stands more
    # than the fraction pass's reach (3 sizes) past the bar's end
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "then q − 4p ")
    x = w.bigg(x, y, 18)
    x = w.fraction(x, y, "1", "4")
    x = w.text(x + 1, y, "z − r + s − t")
    x = w.bigg(x, y, 19)
    w.text(x, y, " = 0.")
    x = w.text(72, 300, "as ")  # (a fraction whose rows are lines of their own: the page's cue)
    w.fraction(x, 300, "a", "b + c")
    lines = parse_lines(w.save(tmp_path / "far.pdf"))
    assert "then q − 4p (\\frac{1}{4}z − r + s − t) = 0." in lines, lines


def test_an_integral_beside_a_rebuilt_fraction_keeps_its_limits(tmp_path):
    # lebl's Fourier coefficients "a_n = \\frac{1}{L} ∫ / L / −L / f(t) dt" (the limits on lines of
    # their own): the fraction pass rewrites the row, so the delimiter pass cannot read its sign
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "so a = ")
    x = w.fraction(x, y, "1", "L")
    op = w.bigg(x + 2, y, 90)  # (centred on the axis, as TeX sets it)
    w.text(op - 1, y - 1.0 * S, "L", 0.7 * S)
    w.text(op - 6, y + 0.9 * S, "−L", 0.7 * S)
    w.text(op + 8, y, "f dt.")
    x = w.text(72, 300, "as ")  # (a fraction whose rows are lines of their own: the page's cue)
    w.fraction(x, 300, "a", "b + c")
    lines = parse_lines(w.save(tmp_path / "integral.pdf"))
    assert "so a = \\frac{1}{L} ∫_{−L}^{L} f dt." in lines, lines


def test_a_pair_right_after_a_rebuilt_fraction_keeps_its_place(tmp_path):
    # lebl's "\\frac{d}{dx} [r(x)y] = r(x)f(x)" read "\\frac{d}{dx} hr(x)y / i / = ...": nothing
    # rebuilt inside the pair, but the fraction pass rewrites its row
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "then ")
    x = w.fraction(x, y, "d", "dx")
    x = w.bigg(x + 2, y, 18)
    x = w.text(x, y, "r y")
    x = w.bigg(x, y, 19)
    w.text(x, y, " = f.")
    lines = parse_lines(w.save(tmp_path / "beside.pdf"))
    assert "then \\frac{d}{dx} (r y) = f." in lines, lines


def test_a_left_brace_alone_before_flush_left_rows_is_cases(tmp_path):
    # judson's "δ_{ij} = { 1 i = j / 0 i ≠ j" read as "(" and one line per row: a brace with no
    # right one, rows flush left after it, conditions in one column a quad or more off
    w = OrderedWriter()
    y = 200
    x = w.text(72, y, "let f = ")
    x = w.bigg(x + 2, y, 26) + 0.5
    for k, (value, condition) in enumerate((("1", "if x > 0,"), ("−1", "otherwise."))):
        at = y - AXIS * S - 0.6 * S + 0.35 * S + k * 1.2 * S
        w.text(x, at, value)
        w.text(x + 3 * S, at, condition)
    # prose crossed by a brace of a construct under it is no case split
    w.text(72, 320, "and so the words go on here past it")
    w.bigg(100, 318, 26)
    w.text(120, 338, "x = 3")
    lines = parse_lines(w.save(tmp_path / "cases.pdf"))
    assert "let f = \\begin{cases} 1 & if x > 0, \\\\ −1 & otherwise. \\end{cases}" in lines, lines
    assert "and so the words go on here past it" in lines, lines
