"""A bar taller than the text's, built from an extension font's pieces (issues 15/16, round 9's
442bdf0, tested in round 10): TeX sets `\\big|` (a set-builder's bar, hefferon's
`{ (x y) | x + y = 0 }`) as two cmex `vextendsingle` pieces (code 12, a control character in the
text layer) one under the other; the text read "{ (x y) x + y = 0 }", the bar gone. A run of the
piece no taller than `\\big` reads as "|" (`\\Vert`'s `vextenddouble`: "‖"); a taller one (a
determinant's fence) and a pair a few glyphs apart (|4|) stay as they were.

Drawn with `test_parse_stacked_delimited`'s writer (Helvetica text, a generated extension font
named as TeX names its glyphs), each piece where TeX hangs it (from its origin, the run centred
on the math axis). The truth is what the generator drew."""

from __future__ import annotations

from test_parse_stacked_delimited import AXIS, EXT, S
from test_parse_stacked_delimited import Writer as _Writer
from test_pdf_notation import parse_lines

PIECE = 0.6  # cmex's vextendsingle: 0.6 em under its origin


class Writer(_Writer):
    """Text and pieces in drawing order, as TeX writes them (MuPDF then puts the pieces in the
    line of the text around them, as in the real books): each piece goes into the page's content
    right away, after the text drawn before it."""

    def ext(self, x: float, y: float, code: int, size: float = S) -> float:
        page = self.page
        page.clean_contents()
        contents = page.get_contents()[0]
        op = f"\nBT /EX {size} Tf {x:.2f} {page.rect.height - y:.2f} Td <{code:02x}> Tj ET"
        self.doc.update_stream(contents, self.doc.xref_stream(contents) + op.encode())
        return x + EXT[code][1] / 1000 * size


def _bar(w: Writer, x: float, y: float, code: int, pieces: int = 2) -> float:
    """`pieces` bar pieces one under the other at x, the run centred on the axis of the row at y."""
    top = y - AXIS * S - pieces * PIECE * S / 2
    for k in range(pieces):
        w.ext(x, top + k * PIECE * S, code)
    return x + EXT[code][1] / 1000 * S


def test_a_big_bar_of_extension_pieces_reads_as_a_bar(tmp_path):
    EXT.setdefault(12, ("vextendsingle", 333, 0, 600))
    EXT.setdefault(13, ("vextenddouble", 556, 0, 600))
    w = Writer()
    x = w.text(72, 100, "S = { (a, b) ")
    x = _bar(w, x, 100, 12)
    w.text(x + 2, 100, " a + b = 0 } is a line.")
    x = w.text(72, 140, "its norm ")
    x = _bar(w, x, 140, 13)
    x = w.text(x + 1, 140, "v")
    x = _bar(w, x + 1, 140, 13)
    w.text(x + 2, 140, " is 1.")
    lines = parse_lines(w.save(tmp_path / "bars.pdf"))
    # (the pieces' font box, deep as cmex's, starts a line of its own in MuPDF, as in the book:
    # hefferon's "| c_1, . . . , c_k ∈R }")
    assert lines[:2] == ["S = { (a, b)", "| a + b = 0 } is a line."], lines
    # a pair one glyph apart fences what it holds: left as it was (no bar read)
    assert not any("‖" in t or "|" in t for t in lines[2:]), lines


def test_a_bar_taller_than_big_is_left_as_it_was(tmp_path):
    EXT.setdefault(12, ("vextendsingle", 333, 0, 600))
    w = Writer()
    x = w.text(72, 100, "then ")
    x = _bar(w, x, 100, 12, pieces=4)  # 2.4 em: a fence around stacked rows
    w.text(x + 2, 100, " x = 0.")
    assert "|" not in "\n".join(parse_lines(w.save(tmp_path / "tall.pdf")))
