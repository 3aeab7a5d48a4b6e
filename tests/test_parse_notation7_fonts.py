"""A document's math extension fonts are its own (issues 15/16): what a worker read from one
book's fonts must not change how it reads the next. Two generated PDFs embed a font of one name,
`QXMATHB`: in the first it is a math extension font whose codes "h"/"i" are \\Big[ \\Big]
(`test_pdf_notation_inline`'s font, as lebl's `txexs` has them); in the second it is a text font
whose codes "h"/"i" are the letters. The second one must read the same alone and after the first
(it read as a matrix in big brackets after it: the font name, the delimiter codes and their
depths were kept per process)."""

from __future__ import annotations

import test_pdf_notation_inline as inline
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
