"""Accents over letters (`\\vec{p}`, `\\hat{x}`, a text accent TeX built from two glyphs: "é"),
rebuilt from glyph positions (issues 15/16), and their look-alikes that must stay as they are
(an arrow between letters, a lone circumflex).

The PDFs are drawn here: text in Helvetica, the accents in a font built in the test (a TrueType
font with a zero-width combining arrow U+20D7, as TeX's math italic \\vec reads, and spacing
circumflex and acute accents), each accent drawn as TeX draws it: before its letter, over it,
on the letter's baseline. The truth is what the generator drew."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from test_pdf_notation import parse_lines

from rlclimb.stages.documents.parse_accents import _wants_accents, attach_marks

S = 11.0
HELV = pymupdf.Font("helv")
# glyph name -> (code point, advance, ink x0..x1, ink y0..y1), 1/1000 em
MARKS = {"arrowvec": (0x20D7, 0, (-380, 20), (560, 700)), "circumflex": (0x02C6, 500, (120, 380), (560, 720)),
         "acute": (0x00B4, 333, (120, 260), (560, 720)), "arrowright": (0x2192, 1000, (60, 940), (200, 400))}


def _mark_font() -> bytes:
    order = [".notdef", *MARKS]
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(order)
    fb.setupCharacterMap({cp: name for name, (cp, *_rest) in MARKS.items()})
    glyphs, metrics = {}, {".notdef": (500, 0)}
    for name in order:
        pen = TTGlyphPen(None)
        if name != ".notdef":
            _, adv, (x0, x1), (y0, y1) = MARKS[name]
            pen.moveTo((x0, y0))
            pen.lineTo((x1, y0))
            pen.lineTo((x1, y1))
            pen.lineTo((x0, y1))
            pen.closePath()
            metrics[name] = (adv, min(x0, 0))
        glyphs[name] = pen.glyph()
    fb.setupGlyf(glyphs)
    fb.setupHorizontalMetrics(metrics)
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupOS2()
    fb.setupPost()
    fb.setupNameTable({"familyName": "TestMathItalic", "styleName": "Regular"})
    return _save(fb)


def _save(fb: FontBuilder) -> bytes:
    import io

    buf = io.BytesIO()
    fb.save(buf)
    return buf.getvalue()


class Writer:
    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = self.doc.new_page()
        self.page.insert_font(fontname="F0", fontbuffer=HELV.buffer)
        self.page.insert_font(fontname="F1", fontbuffer=_mark_font())

    def text(self, x: float, y: float, text: str, size: float = S) -> float:
        self.page.insert_text((x, y), text, fontname="F0", fontsize=size)
        return x + HELV.text_length(text, fontsize=size)

    def accented(self, x: float, y: float, letter: str, mark: str, size: float = S) -> float:
        """`mark` drawn first, centred over `letter` (as TeX's \\accent does), then the letter."""
        w = HELV.text_length(letter, fontsize=size)
        cp, adv, (x0, x1), _ = MARKS[mark]
        ink_mid = (x0 + x1) / 2000 * size
        self.page.insert_text((x + w / 2 - ink_mid, y), chr(cp), fontname="F1", fontsize=size)
        return self.text(x, y, letter, size)

    def save(self, path: Path) -> Path:
        self.doc.save(path)
        return path


def test_vector_arrows_hats_and_text_accents_are_read_onto_their_letters(tmp_path: Path) -> None:
    w = Writer()
    space = HELV.text_length(" ", fontsize=S)
    truth = []
    # "where \vec{p} is": the arrow in the word gap (MuPDF puts no space there)
    x = w.text(72, 100, "where")
    x = w.accented(x + space, 100, "p", "arrowvec")
    w.text(x + space, 100, "is any vector")
    truth.append("where \\vec{p} is any vector")
    # c_1\vec{u}_1 + c_2\vec{u}_2: scripts after the accented letter
    x = 72
    for k in "12":
        x = w.text(x, 130, "c")
        x = w.text(x, 132.5, k, size=0.7 * S)
        x = w.accented(x, 130, "u", "arrowvec")
        x = w.text(x, 132.5, k, size=0.7 * S)
        if k == "1":
            x = w.text(x + space, 130, "+") + space
    truth.append("c_1\\vec{u}_1 + c_2\\vec{u}_2")
    # a hat over x, on a line of its own words
    x = w.text(72, 160, "the unit vector")
    x = w.accented(x + space, 160, "x", "circumflex")
    w.text(x + space, 160, "points east")
    truth.append("the unit vector \\hat{x} points east")
    # a text accent built from two glyphs over a letter of the running text: composed
    x = w.text(72, 190, "a caf")
    x = w.accented(x, 190, "e", "acute")
    w.text(x + space, 190, "in the text font")
    truth.append("a café in the text font")
    # look-alikes: an arrow between letters, a circumflex standing on its own
    x = w.text(72, 220, "f: A ")
    w.page.insert_text((x, 220), "\u2192", fontname="F1", fontsize=S)
    w.text(x + S + space, 220, "B maps")
    x = w.text(72, 250, "the sign ")
    w.page.insert_text((x, 250), "\u02c6", fontname="F1", fontsize=S)
    w.text(x + 0.5 * S + space, 250, "alone")
    lines = parse_lines(w.save(tmp_path / "accents.pdf"))
    for want in truth:
        assert want in lines, (want, lines)
    assert not any("\\vec" in ln or "\\hat" in ln for ln in lines[4:]), lines
    assert any("→" in ln and "B maps" in ln for ln in lines), lines
    assert any("ˆ" in ln and "alone" in ln for ln in lines), lines


def test_a_mark_hung_on_the_line_before_goes_to_the_next_lines_first_letter() -> None:
    # MuPDF's lines of a real page (Hefferon's linear algebra, p. 31): the arrow over the second
    # line's first letter ends the first line
    blocks = [{"lines": [{"text": "the number of vectors \\vec{β}_1, . . . ,\u20d7"}]},
              {"lines": [{"text": "β_k equals the number of free variables"}, {"text": "shorten\u20d7p + c"}]}]
    assert attach_marks(blocks) == 2
    assert [ln["text"] for b in blocks for ln in b["lines"]] == [
        "the number of vectors \\vec{β}_1, . . . ,", "\\vec{β}_k equals the number of free variables",
        "shorten \\vec{p} + c"]


def test_a_spacing_accent_after_a_lone_letter_is_its_accent_and_one_in_a_word_is_not() -> None:
    # lines as the fraction pass wrote them on a real page (OSTP's physics library, p. 141): it
    # ordered the glyphs by their middles, and an accent over an italic letter is skewed right
    blocks = [{"lines": [{"text": "Answer:\\vec{E} = \\frac{\\sqrt{2}kQ}{L^2} xˆ + yˆ"}, {"text": "tˆ_{1,φ(1)} · fˆ(θ)"},
                         {"text": "the sign ˆ alone, aˆb"}]}]
    assert attach_marks(blocks) == 4
    assert [ln["text"] for ln in blocks[0]["lines"]] == [
        "Answer:\\vec{E} = \\frac{\\sqrt{2}kQ}{L^2} \\hat{x} + \\hat{y}", "\\hat{t}_{1,φ(1)} · \\hat{f}(θ)",
        "the sign ˆ alone, aˆb"]


def test_only_accent_characters_send_a_page_to_the_pass():
    # an ASCII caret, tilde or backquote is an accent only right before a letter (an OT1 font's
    # accents: "min`ute"); "x^2" and a rebuilt "x^{2}", on most math pages, are not
    assert not any(map(_wants_accents, ["x^2 + y^2 = r^2", "e^{x} and a_{n}", "~ 3 cm", "a plain line"]))
    assert all(map(_wants_accents, ["one min`ute", "^e", "where \u20d7p", "x\u02c6 + y\u02c6", "caf\u00b4e"]))


def test_a_spacing_arrow_over_a_letter_is_a_vector_and_one_between_spaced_letters_sends_no_page(tmp_path: Path) -> None:
    w = Writer()
    space = HELV.text_length(" ", fontsize=S)
    x = w.text(72, 100, "the velocity")
    x = w.accented(x + space, 100, "v", "arrowright")  # "→" (U+2192) centred over its letter
    w.text(x + space, 100, "grows")
    x = w.text(72, 130, "the map f: A ")
    w.page.insert_text((x, 130), "\u2192", fontname="F1", fontsize=S)
    w.text(x + S + space, 130, "B maps")
    assert parse_lines(w.save(tmp_path / "arrows.pdf")) == ["the velocity \\vec{v} grows", "the map f: A →B maps"]
    # the page-level cue: an arrow touching a letter or digit, or on a line of its own, may be an
    # accent; one with a gap on both sides (a function arrow) is not looked at glyph by glyph
    for text in ("the velocity→v grows", "p→ and", "−−→", "→ →"):
        assert _wants_accents(text), text
    for text in ("f: A → B", "x ↦ y", "maps 1 → 2,"):
        assert not _wants_accents(text), text
