"""Textstyle binomials on consecutive lines of a list (issues 15/16, round 9): levin's answers
print "(a) (6 4) = 15." over "(b) (3 1) = 3.", each binomial in \\big parentheses a line apart.
The binomial reading looked for its rows down to a \\Bigg delimiter's depth (3.1 of its size)
under any pair, so the next line's binomial gave the first four rows: it stayed "\\frac{6}{4}"
(the span pass's small stack) and "3" / "1" on lines of their own. A pair holds rows only down to
its own size class's depth (`parse_extension`'s: \\big 1.2).

Drawn with `test_parse_stacked_delimited`'s writer (Helvetica text, a generated extension font
named as TeX names its glyphs). The truth is what the generator drew."""

from __future__ import annotations

from test_parse_stacked_delimited import S, Writer
from test_pdf_notation import parse_lines


def test_binomials_a_line_apart_are_each_their_own(tmp_path):
    w = Writer()
    pitch = 1.7 * S  # levin's list lines: 19.6 pt at 11.5 pt
    for k, (top, bottom, value) in enumerate((("6", "4", "15"), ("3", "1", "3"), ("10", "3", "120"))):
        y = 100 + k * pitch
        x = w.text(72, y, f"({'abc'[k]}) ")
        x = w.binomial(x, y, top, bottom)
        w.text(x + 2, y, f" = {value}.")
    lines = parse_lines(w.save(tmp_path / "binomials.pdf"))
    assert lines == ["(a) \\binom{6}{4} = 15.", "(b) \\binom{3}{1} = 3.", "(c) \\binom{10}{3} = 120."], lines


def test_a_display_binomial_still_reaches_its_rows(tmp_path):
    w = Writer()
    x = w.text(72, 100, "Then ")
    x = w.binomial(x, 100, "n", "k", display=True)
    w.text(x + 2, 100, " = 1.")
    x = w.text(72, 100 + 2.6 * S, "(b) ")
    x = w.binomial(x, 100 + 2.6 * S, "5", "2")
    w.text(x + 2, 100 + 2.6 * S, " = 10.")
    assert parse_lines(w.save(tmp_path / "display.pdf")) == ["Then \\binom{n}{k} = 1.", "(b) \\binom{5}{2} = 10."]


def test_runs_of_binomials_on_consecutive_lines_are_each_read(tmp_path):
    # levin 1.3.9: "(a) (20 4)(16 4)(12 4)(8 4)(4 4)." over "(b) 5!(15 3)(12 3)(9 3)(6 3)(3 3)."; the
    # second line's parentheses stand between the first line's, a line lower: a parenthesis that
    # opens there is the next line's, not one inside this pair
    w = Writer()
    pitch = 1.7 * S
    rows = (("(a) ", [("20", "4"), ("16", "4"), ("12", "4"), ("8", "4"), ("4", "4")]),
            ("(b) 5!", [("15", "3"), ("12", "3"), ("9", "3"), ("6", "3"), ("3", "3")]))
    for k, (head, pairs) in enumerate(rows):
        y = 100 + k * pitch
        x = w.text(72, y, head)
        for top, bottom in pairs:
            x = w.binomial(x, y, top, bottom)
        w.text(x, y, ".")
    lines = ["".join(line.split()) for line in parse_lines(w.save(tmp_path / "runs.pdf"))]  # (spacing aside)
    assert lines == ["(a)\\binom{20}{4}\\binom{16}{4}\\binom{12}{4}\\binom{8}{4}\\binom{4}{4}.",
                     "(b)5!\\binom{15}{3}\\binom{12}{3}\\binom{9}{3}\\binom{6}{3}\\binom{3}{3}."], lines
