"""Scripts the blind labelling round found flattened (issues 15/16, round 7): a script of a
script (lebl's `e^{t^3}`, hefferon's `(x − λ_1)^{q_1}`), an exponent holding more glyphs than
the line's text (lebl's `2e^{cos(2x)+1} + 1` read "2ecos(2x)+1 + 1": its size was taken for the
text's), and a small fraction set as an exponent (thompson's `at^{\\frac{3}{2}}` read "at
\\frac{3}{2}": the fraction's null delimiter space before it was taken for a word space). The PDFs
are drawn here (Helvetica, TeX's script sizes and shifts), or the glyphs built; the truth is what
was drawn."""

from __future__ import annotations

from test_pdf_notation import FONT, S, Writer, parse_lines

from rlclimb.stages.documents.parse_glyph_pool import Glyph, rewrite_line

SCRIPT, SCRIPTSCRIPT = 0.7 * S, 0.5 * S
UP = 0.36 * S  # TeX's superscript shift (sup1), in the text's units
UP2 = 0.36 * SCRIPT  # a script's own superscript, over the script's baseline
DOWN2 = 0.2 * SCRIPT  # a script's subscript, under the script's baseline


def test_a_script_of_a_script_is_nested(tmp_path):
    w = Writer()
    x = w.text(72, 100, "1. x = e")
    x = w.text(x, 100 - UP, "t", SCRIPT)
    x = w.text(x, 100 - UP - UP2, "3", SCRIPTSCRIPT)
    w.text(x + 2, 100, " + 1")
    x = w.text(72, 150, "2. m(x) = (x − λ)")
    x = w.text(x, 150 - UP, "q", SCRIPT)
    x = w.text(x, 150 - UP + DOWN2, "1", SCRIPTSCRIPT)
    w.text(x + 2, 150, " is minimal.")
    # (a subscript whose line reaches lower than a plain line sends the page to the span pass:
    # Helvetica's line box is taller than these raised scripts)
    w.text(w.text(w.text(72, 200, "Let a"), 202, "n", SCRIPT), 200, " be given.")
    w.text(72, 230, "Plain text.")
    lines = parse_lines(w.save(tmp_path / "nested.pdf"))
    assert lines == ["1. x = e^{t^3} + 1", "2. m(x) = (x − λ)^{q_1} is minimal.", "Let a_n be given.",
                     "Plain text."], lines


def test_an_exponent_longer_than_its_line_is_still_the_exponent(tmp_path):
    w = Writer()
    x = w.text(72, 100, "y= 2e")
    x = w.text(x, 100 - UP, "cos(2x)+1", SCRIPT)
    w.text(x + 2, 100, " + 1")
    # a line of footnote-sized text on a baseline of its own is text, whatever size it is
    w.text(72, 150, "A note in small type, on its own line.", SCRIPT)
    w.text(72, 200, "Plain text.")
    lines = parse_lines(w.save(tmp_path / "long.pdf"))
    assert lines == ["y= 2e^{cos(2x)+1} + 1", "A note in small type, on its own line.", "Plain text."], lines


def test_a_small_fraction_set_as_an_exponent(tmp_path):
    w = Writer()
    # TeX sets \nulldelimiterspace (1.2 pt) before a fraction: more than the pass's gap for a space
    x = w.text(72, 100, "and u = t")
    x = w.text(x, 100 - UP, "−", SCRIPT)
    w.fraction(x + 1.2, 100 - UP, "1", "3", SCRIPT)
    # a fraction at text size beside a letter is no script of it
    x = w.text(72, 170, "so x")
    w.fraction(x + 1.2 + FONT.text_length(" ", fontsize=S), 170, "1", "2")
    lines = parse_lines(w.save(tmp_path / "exponent.pdf"))
    assert lines == ["and u = t^{−\\frac{1}{3}}", "so x \\frac{1}{2}"], lines


def _glyph(text: str, x0: float, x1: float, oy: float, size: float, atom: bool = False) -> Glyph:
    return Glyph(text, x0, x1, oy, size, "" if atom else "Helvetica", 0, top=oy - 0.7 * size, bottom=oy,
                 atom=atom, y0=oy - 0.8 * size, y1=oy + 0.2 * size)


def test_a_rebuilt_fraction_right_after_its_base_is_its_exponent():
    # thompson p55's glyphs as the fraction pass leaves them: "a", "t" at 12 pt, the rebuilt
    # \frac{3}{2} at 7 pt 4.6 pt up, 1.19 pt after the "t" (TeX's null delimiter space)
    line = {"text": "", "font": {"name": "Helvetica", "size": 12}, "bbox": {}}
    members = [_glyph("a", 138.15, 144.30, 268.7, 12.0), _glyph("t", 144.30, 148.53, 268.7, 12.0),
               _glyph("\\frac{3}{2}", 149.72, 153.70, 264.1, 7.0, atom=True), _glyph(")", 155.39, 159.94, 268.7, 12.0)]
    rewrite_line(line, members)
    assert line["text"] == "at^{\\frac{3}{2}})"
    # a fraction on the row (a text fraction a gap after a letter) stays apart from it
    members[2] = _glyph("\\frac{3}{2}", 151.0, 155.0, 268.7, 12.0, atom=True)
    rewrite_line(line, members)
    assert line["text"] == "at \\frac{3}{2})"


def test_a_small_fraction_whose_denominator_runs_on_into_the_text(tmp_path):
    # ostp p125: "(b) 16ρ_wgbh^3" for (b) \frac{1}{6}ρ_w g b h^3: MuPDF ran the denominator's line on
    # into the text after it, the numerator a line of its own at its left: no cue for the pass.
    # TeX's text-style fraction as ostp has it (12 pt text, 8 pt rows): numerator 0.39 of the text
    # size over the row's baseline, denominator 0.26 under it, the bar on the axis
    w = Writer()
    x = w.text(72, 100, "(b)") + 7  # (ostp's gap: MuPDF makes the label a line of its own)
    small = 2 / 3 * S
    width = FONT.text_length("6", fontsize=small)
    w.text(x, 100 - 0.39 * S, "1", small)
    w.text(x, 100 + 0.26 * S, "6", small)
    w.rule(x, x + width, 100 - 0.25 * S)
    w.text(x + width + 1, 100, "ρgbh")
    w.text(72, 150, "Plain text.")
    lines = parse_lines(w.save(tmp_path / "runon.pdf"))
    assert lines[0] == "(b) \\frac{1}{6}ρgbh", lines
