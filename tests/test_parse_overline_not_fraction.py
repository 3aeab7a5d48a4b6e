"""An overline over the start of a list line (a set's complement, levin p22: "(b) \\overline{(A ∪
B)}" under "(a) A ∪ \\overline{B}") is no fraction bar, though the line above it sits over it
within an em and the overlined text hangs right under it: each row begins left of the rule with a
label of its own on its own baseline, the labels start together, and nothing stands on the row
between them (a fraction's text sits on its axis). The fraction pass read the two lines as
`\\frac{A + B}{(A + B)}` and left "(b)" empty. A real fraction on the same page, after a label and
text on its axis, is still rebuilt. The PDF is drawn here with levin's geometry (in units of the
text size: the lines 1.57 apart, the overline 0.9 over the lower baseline)."""

from __future__ import annotations

from test_pdf_notation import FONT, S, Writer, parse_lines


def test_an_overline_under_the_line_above_is_no_fraction(tmp_path):
    w = Writer()
    pitch = 1.57 * S
    y1, y2 = 100.0, 100.0 + pitch
    x = w.text(72, y1, "(a)") + 8
    w.text(x, y1, "A + B")
    w.text(w.text(72, y2, "(b)") + 8, y2, "(A + B)")
    w.rule(x, x + FONT.text_length("(A + B)", fontsize=S), y2 - 0.9 * S)  # the complement's overline
    w.text(72, y2 + pitch, "(c) A")
    # a real fraction after a label and text on its axis
    w.fraction(w.text(72, 200, "(d) x = "), 200, "1", "2")
    w.text(72, 250, "Plain text.")
    lines = parse_lines(w.save(tmp_path / "overline.pdf"))
    assert lines[:3] == ["(a) A + B", "(b) (A + B)", "(c) A"], lines
    assert "(d) x = \\frac{1}{2}" in lines, lines
