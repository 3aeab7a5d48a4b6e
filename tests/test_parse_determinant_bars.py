"""Determinants read as determinants (issues 15/16, round 16): TeX fences a `vmatrix`'s rows
with a tall bar stacked from its extension font's bar piece (cmex's `vextendsingle`, code 12, a
control character in the text layer), no top or bottom piece. Cleaning strips the pieces, so the
matrix pass wrote every determinant as `pmatrix`, and curation dropped hefferon's cofactor
expansions ("(−1)^{2+3} \\begin{pmatrix} 1 & 0 \\\\ 0 & 2 \\end{pmatrix} = −2") as a matrix equal
to a number. A stack of rows with a tall bar on each side is now a `vmatrix`; the same rows with
a bar on one side only, or with none, stay a `pmatrix`.

Drawn with `test_parse_stacked_bars`' writer (the pieces where TeX hangs them); the truth is what
the generator drew."""

from __future__ import annotations

from test_parse_stacked_bars import PIECE, Writer
from test_parse_stacked_delimited import AXIS, EXT, S
from test_pdf_notation import parse_lines

PITCH = 1.2 * S  # a matrix's rows, a line apart


def _rows(w: Writer, x: float, y: float, rows: list[str]) -> float:
    """Rows one under the other from baseline y, left-aligned at x; returns where the widest ends."""
    return max(w.text(x, y + k * PITCH, row) for k, row in enumerate(rows))


def _fence(w: Writer, x: float, y: float, rows: int, code: int = 12) -> float:
    """A bar from above the first row (baseline y) to under the last, of whole pieces."""
    pieces = round((rows * PITCH + 0.4 * S) / (PIECE * S))
    middle = y - AXIS * S + (rows - 1) * PITCH / 2
    top = middle - pieces * PIECE * S / 2
    for k in range(pieces):
        w.ext(x, top + k * PIECE * S, code)
    return x + EXT[code][1] / 1000 * S


def _determinant(w: Writer, x: float, y: float, rows: list[str], left: bool = True, right: bool = True) -> float:
    x = _fence(w, x, y, len(rows)) + 2 if left else x + 6
    x = _rows(w, x, y, rows) + 2
    return _fence(w, x, y, len(rows)) if right else x + 4


def test_rows_between_two_tall_bars_are_a_vmatrix(tmp_path):
    EXT.setdefault(12, ("vextendsingle", 333, 0, 600))
    w = Writer()
    x = w.text(72, 100, "(a) (−1)^4 ")
    x = _determinant(w, x + 2, 100, ["−1 1", "0 2"])
    w.text(x + 3, 100 + PITCH / 2, "= −2")
    x = _determinant(w, 72, 200, ["3 1 2", "0 1 4", "0 0 −2"])
    w.text(x + 3, 200 + PITCH, "= −6")
    text = "\n".join(parse_lines(w.save(tmp_path / "det.pdf")))
    assert r"\begin{vmatrix} −1 & 1 \\ 0 & 2 \end{vmatrix}" in text, text
    assert r"\begin{vmatrix} 3 & 1 & 2 \\ 0 & 1 & 4 \\ 0 & 0 & −2 \end{vmatrix}" in text, text
    assert "pmatrix" not in text, text


def test_rows_with_a_bar_on_one_side_or_none_stay_a_pmatrix(tmp_path):
    EXT.setdefault(12, ("vextendsingle", 333, 0, 600))
    w = Writer()
    w.text(72, 60, "Which of these are determinants?")  # (text first: the writer's font then stays on the page)
    _determinant(w, 72, 100, ["1 2", "3 4"], right=False)
    _determinant(w, 72, 200, ["5 6", "7 8"], left=False)
    _rows(w, 72, 300, ["1 0", "0 1"])
    text = "\n".join(parse_lines(w.save(tmp_path / "open.pdf")))
    for body in (r"1 & 2 \\ 3 & 4", r"5 & 6 \\ 7 & 8", r"1 & 0 \\ 0 & 1"):
        assert rf"\begin{{pmatrix}} {body} \end{{pmatrix}}" in text, text
    assert "vmatrix" not in text, text


def _cell_rows(w: Writer, x: float, y: float, rows: list[list[str]]) -> float:
    """Rows of cells, each cell a text run of its own, columns 1.2 em apart (as TeX sets an array)."""
    widths = [max(w.width(row[c]) for row in rows) for c in range(len(rows[0]))]
    end = x
    for k, row in enumerate(rows):
        cx = x
        for c, cell in enumerate(row):
            w.text(cx + widths[c] - w.width(cell), y + k * PITCH, cell)  # right-aligned, as numbers are
            cx += widths[c] + 1.2 * S
        end = cx - 1.2 * S
    return end


def test_cells_that_are_expressions_are_one_entry_each(tmp_path):
    """A characteristic matrix: "10 − x" is one entry, not two (hefferon's answers)."""
    EXT.setdefault(12, ("vextendsingle", 333, 0, 600))
    w = Writer()
    x = w.text(72, 100, "This 0 = ")
    x = _fence(w, x + 2, 100, 2) + 2
    x = _cell_rows(w, x, 100, [["10 − x", "−9"], ["4", "−2 − x"]]) + 2
    x = _fence(w, x, 100, 2)
    w.text(x + 3, 100 + PITCH / 2, "= (10 − x)(−2 − x) − (−36)")
    _cell_rows(w, 72, 200, [["1", "2"], ["3", "4"]])  # plain entries: as before
    text = "\n".join(parse_lines(w.save(tmp_path / "cells.pdf")))
    assert r"\begin{vmatrix} 10 − x & −9 \\ 4 & −2 − x \end{vmatrix}" in text, text
    assert r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}" in text, text


def test_a_determinant_in_a_tx_font_whose_bar_piece_is_called_barex(tmp_path):
    """The tx/px fonts (lebl's `txexs`) name the bar piece `barex`, not cmex's `vextendsingle`."""
    EXT.setdefault(20, ("barex", 333, 0, 600))
    w = Writer()
    x = w.text(72, 100, "A common notation for the determinant: ")
    x = _fence(w, x + 2, 100, 2, code=20) + 2
    x = _cell_rows(w, x, 100, [["a", "b"], ["c", "d"]]) + 2
    _fence(w, x, 100, 2, code=20)
    text = "\n".join(parse_lines(w.save(tmp_path / "barex.pdf")))
    assert r"\begin{vmatrix} a & b \\ c & d \end{vmatrix}" in text, text
