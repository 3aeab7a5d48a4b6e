"""Display fractions and radicals that hold other rebuilt pieces (issue 16's flattened golds):
a denominator whose parentheses are set bigger than its letters, fractions set side by side
under one overline, a radicand's row far under a tall overline, and a root's index beside the
exponent of the glyph before the sign. Every PDF is drawn here (Helvetica text, rules with
draw_line); the truth is what the generator drew."""

from __future__ import annotations

from test_pdf_notation import FONT, S, Writer, parse_lines


def test_a_denominator_with_big_parentheses_and_a_fraction_inside(tmp_path):
    # ω = mv / ((½M + m)R): the row at 12 pt, the fraction's parts at 8 pt, its parentheses at 12
    w = Writer()
    y, small = 103.0, 8.0  # (placed as TeX placed ostp's: the numerator 1.5 pt over the bar)
    x = w.text(72, y, "(b) w = ", 12) + 4
    bar = y - 3.0
    den_y = bar + 8.9
    d = w.text(x, den_y + 1, "(", 12)
    d = w.fraction(d + 0.5, bar + 7.5, "1", "2", 6.0)
    d = w.text(d + 0.5, den_y, "M + m", small)
    d = w.text(d, den_y + 1, ")", 12)
    end = w.text(d, den_y, "R", small)
    w.text(x + (end - x - FONT.text_length("mv", fontsize=small)) / 2, bar - 1.5, "mv", small)
    w.rule(x, end, bar)
    lines = parse_lines(w.save(tmp_path / "nested.pdf"))
    assert lines == ["(b) w = \\frac{mv}{(\\frac{1}{2}M + m)R}"], lines


def test_fractions_side_by_side_under_one_overline(tmp_path):
    # v = √( qe/(2m) · 1/d ): the two bars a thin space apart, the radicand's row far under the
    # overline (a tall sign), so neither fraction's row is taken for text running past the other's
    w = Writer()
    y = 150.0
    x = w.text(72, y, "v = ")
    sign = w.text(x, y - 1.5 * S, "√", 1.8 * S)  # (hung from the overline, as TeX's big signs are)
    first = w.fraction(sign + 0.5, y, "qe", "2m")
    end = w.fraction(first + 1.0, y, "1", "d")
    w.rule(sign, end + 0.5, y - 1.5 * S)
    lines = parse_lines(w.save(tmp_path / "side.pdf"))
    assert lines == ["v = \\sqrt{\\frac{qe}{2m}\\frac{1}{d}}"], lines


def test_an_index_is_not_joined_by_the_exponent_before_the_sign(tmp_path):
    # w^i ∛A: the exponent ends just left of the sign, the index is kerned into it, higher
    w = Writer()
    y = 100.0
    x = w.text(72, y, "z = w")
    x = w.text(x, y - 0.3 * S, "i", 0.7 * S)
    w.text(x + 1.2, y - 0.65 * S, "3", 0.6 * S)
    end = w.text(x + 0.3, y, "√")
    over = w.text(end, y, "A")
    w.rule(end, over, y - 0.8 * S)
    lines = parse_lines(w.save(tmp_path / "index.pdf"))
    assert lines == ["z = w^i\\sqrt[3]{A}"], lines


def test_a_radicand_of_big_parentheses_around_fractions(tmp_path):
    # √((a/b)^2 + 1), as hefferon's norm: the big parentheses (an extension font's, hung from
    # their tops) no longer set the radicand's row, so the "+ 1" on the row is read too; a piece of
    # a tall bracket is never a radical sign
    from test_parse_stacked_delimited import AXIS, EXT
    from test_parse_stacked_delimited import S as ES
    from test_parse_stacked_delimited import Writer as ExtWriter

    EXT.setdefault(18, ("parenleftbigg", 600, 40, 2360))  # codes 0x12, 0x13: what real books' text layers hold
    EXT.setdefault(19, ("parenrightbigg", 600, 40, 2360))
    w = ExtWriter()
    y = 200.0
    x = w.text(72, y, "n = ")
    top = y - AXIS * ES - 1.2 * ES  # (code 18's box: 2.4 em tall, centred on the axis)
    over = top - 0.45 * ES  # (TeX leaves a gap over the radicand box)
    sign = w.text(x, over + 0.5 * ES, "√", ES)  # at the overline (TeX hangs its big signs from it)
    left = w.centred(sign + 0.5, y, 18)
    end = w.stack(left, y, "a", "b", 0.677 * ES, 0.686 * ES, ES)
    w.rule(left, end, y - AXIS * ES)
    right = w.centred(end, y, 19)
    x = w.text(right + 0.5, y - 1.2 * ES, "2", 0.7 * ES)
    end = w.text(x, y, " + 1")
    w.rule(sign, end + 0.5, over)
    lines = parse_lines(w.save(tmp_path / "norm.pdf"))
    assert [ln.replace(" ", "") for ln in lines] == ["n=\\sqrt{(\\frac{a}{b})^2+1}"], lines
