"""A document's math extension fonts are its own (issues 15/16): what a worker read from one
book's fonts must not change how it reads the next. Two generated PDFs embed a font of one name,
`QXMATHB`: in the first it is a math extension font whose codes "h"/"i" are \\Big[ \\Big]
(`test_pdf_notation_inline`'s font, as lebl's `txexs` has them); in the second it is a text font
whose codes "h"/"i" are the letters. The second one must read the same alone and after the first
(it read as a matrix in big brackets after it: the font name, the delimiter codes and their
depths were kept per process)."""

from __future__ import annotations

import test_pdf_notation_inline as inline
from test_parse_stacked_delimited import AXIS, S
from test_pdf_notation import parse_lines
from test_pdf_notation_inline import NamelessWriter

# the second document's QXMATHB: the same codes and boxes, named as letters (no extension name)
LETTERS = {104: ("h", 470, 40, 1760), 105: ("i", 470, 40, 1760), 0: ("e", 460, 40, 1160)}


def _draw(w: NamelessWriter) -> None:
    x = w.text(72, 100, "1. Are ")
    x = w.column(x, 100, [("e", "2t"), ("e", "t")])
    w.text(x + 3, 100, " independent?")
    x = w.text(72, 200, "2. Take ")
    x = w.column(x, 200, [("x", "2"), ("y", "")])
    w.text(x + 3, 200, " here.")


def test_a_documents_extension_fonts_do_not_outlive_it(tmp_path, monkeypatch):
    first = NamelessWriter()
    _draw(first)
    a = first.save(tmp_path / "a.pdf")
    with monkeypatch.context() as m:
        m.setattr(inline, "CODES", LETTERS)
        second = NamelessWriter()
        _draw(second)
        b = second.save(tmp_path / "b.pdf")
    alone = parse_lines(b)
    # (the first reads as matrices: the font is an extension font there)
    assert parse_lines(a)[0] == "1. Are \\begin{pmatrix} e^{2t} \\\\ e^t \\end{pmatrix} independent?"
    after = parse_lines(b)
    assert after == alone
    assert not any("pmatrix" in ln for ln in alone), alone  # letters there: no brackets to read
    assert parse_lines(a)[0].startswith("1. Are \\begin{pmatrix}")  # and the first still reads so after it


def _matrix(w: NamelessWriter, x: float, y: float, rows: list[list[str]], size: float = 0.7 * S) -> float:
    """A small matrix in \\bigg[ \\bigg] (`column`'s geometry), each column's cells centred on
    each other a table gap apart (as TeX's array sets them); returns the end."""
    x = w.centred(x, y, 20) + 1
    widths = [max(w.width(row[j], size) for row in rows) for j in range(len(rows[0]))]
    gap = 0.6 * size
    first = y - AXIS * S - (len(rows) - 1) / 2 * 1.2 * size + 0.35 * size
    for k, row in enumerate(rows):
        at = x
        for cell, width in zip(row, widths, strict=True):
            w.text(at + (width - w.width(cell, size)) / 2, first + k * 1.2 * size, cell, size)
            at += width + gap
    return w.centred(at - gap + 1, y, 21)


def test_negative_entries_start_cells_of_a_small_matrix(tmp_path):
    # lebl p107 (ex. 3.2.8, 3.2.101): "h 9 −2 −6" then the two other rows as a matrix and a lone
    # "i" before: a minus right after a column gap read as a binary operator, so the first row
    # held one cell and the pair was left as its raw codes
    w = NamelessWriter()
    x = w.text(72, 100, "1. Solve ")
    x = _matrix(w, x, 100, [["9", "−2", "−6"], ["−8", "3", "6"], ["10", "−2", "−6"]])
    w.text(x + 3, 100, " x = b.")
    x = w.text(72, 200, "2. Compute ")
    x = _matrix(w, x, 200, [["1", "1", "1"], ["2", "3", "−5"], ["1", "−1", "0"]])
    w.text(x + 3, 200, " now.")
    lines = parse_lines(w.save(tmp_path / "signed.pdf"))
    assert lines[0] == ("1. Solve \\begin{pmatrix} 9 & −2 & −6 \\\\ −8 & 3 & 6 \\\\ 10 & −2 & −6 \\end{pmatrix} "
                        "x = b."), lines
    assert lines[1] == "2. Compute \\begin{pmatrix} 1 & 1 & 1 \\\\ 2 & 3 & −5 \\\\ 1 & −1 & 0 \\end{pmatrix} now.", lines
