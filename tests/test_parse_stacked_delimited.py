"""Binomials, big operators with limits and radical indexes, rebuilt from glyph geometry and the
glyph names of a math extension font (issues 15/16), and their look-alikes that must stay as
they are (a two-row column vector, a fraction in parentheses, an exponent before a root).

The PDFs are drawn here: text in Helvetica, and a math extension font built in the test (a CFF
font named like TeX's, its glyphs named as TeX names them, `parenleftbig`, `summationdisplay`,
with no ToUnicode map: its text layer holds raw codes, as real books' does), each glyph placed
as TeX places it (hanging from its origin, centred on the math axis). The truth is what the
generator drew."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.t2CharStringPen import T2CharStringPen
from test_pdf_notation import parse_lines

from rlclimb.stages.documents.parse_extension import extension_tables, glyph_symbol
from rlclimb.stages.documents.parse_glyph_pool import ExtensionFonts

S = 11.0  # text size
FONT = pymupdf.Font("helv")
AXIS = 0.25  # the math axis above the baseline, in units of the text size
# code -> (glyph name, advance, height over the origin, depth under it), 1/1000 em (TeX's cmex metrics)
EXT = {0: ("parenleftbig", 460, 40, 1160), 1: ("parenrightbig", 460, 40, 1160),
       32: ("parenleftBigg", 790, 40, 2960), 33: ("parenrightBigg", 790, 40, 2960),
       88: ("summationdisplay", 1440, 0, 1400), 90: ("integraldisplay", 560, 0, 2220),
       48: ("parenlefttp", 880, 0, 1800)}


def _extension_font() -> bytes:
    """A CFF font program whose glyphs are boxes of the sizes above."""
    order = [".notdef", *(name for name, *_ in EXT.values())]
    metrics = {name: (w, h, d) for name, w, h, d in EXT.values()}
    fb = FontBuilder(1000, isTTF=False)
    fb.setupGlyphOrder(order)
    fb.setupCharacterMap({})
    strings = {}
    for name in order:
        w, h, d = metrics.get(name, (500, 0, 0))
        pen = T2CharStringPen(w, None)
        if name != ".notdef":
            pen.moveTo((60, -d))
            pen.lineTo((w - 60, -d))
            pen.lineTo((w - 60, h))
            pen.lineTo((60, h))
            pen.closePath()
        strings[name] = pen.getCharString()
    fb.setupCFF("CMEX10", {"FullName": "CMEX10"}, strings, {})
    fb.setupHorizontalMetrics({n: (metrics.get(n, (500,))[0], 0) for n in order})
    fb.setupHorizontalHeader(ascent=40, descent=-2960)
    fb.setupOS2()
    fb.setupPost()
    fb.setupNameTable({"familyName": "CMEX10", "styleName": "Regular"})
    return fb.font["CFF "].compile(fb.font)


class Writer:
    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = self.doc.new_page()
        self.page.insert_font(fontname="F0", fontbuffer=FONT.buffer)
        self.ops: list[str] = []

    def text(self, x: float, y: float, text: str, size: float = S) -> float:
        self.page.insert_text((x, y), text, fontname="F0", fontsize=size)
        return x + FONT.text_length(text, fontsize=size)

    def width(self, text: str, size: float = S) -> float:
        return FONT.text_length(text, fontsize=size)

    def ext(self, x: float, y: float, code: int, size: float = S) -> float:
        """An extension glyph with its origin at (x, y) (page coordinates); returns its end."""
        self.ops.append(f"BT /EX {size} Tf {x:.2f} {self.page.rect.height - y:.2f} Td <{code:02x}> Tj ET")
        return x + EXT[code][1] / 1000 * size

    def centred(self, x: float, y: float, code: int, size: float = S) -> float:
        """A delimiter or operator centred on the axis of the row whose baseline is y."""
        _, _, h, d = EXT[code]
        top = y - AXIS * S - (h + d) / 2000 * size
        return self.ext(x, top + h / 1000 * size, code, size)

    def stack(self, x: float, y: float, top: str, bottom: str, up: float, down: float, size: float) -> float:
        """Two rows centred on each other, baselines `up` above and `down` under y; returns the end."""
        w = max(self.width(top, size), self.width(bottom, size))
        self.text(x + (w - self.width(top, size)) / 2, y - up, top, size)
        self.text(x + (w - self.width(bottom, size)) / 2, y + down, bottom, size)
        return x + w

    def binomial(self, x: float, y: float, top: str, bottom: str, display: bool = False) -> float:
        """TeX's \\binom: textstyle rows at script size (num3, denom2), display ones at text size
        (num1, denom1), in parentheses of the size TeX picks."""
        if display:
            x = self.centred(x, y, 32)
            x = self.stack(x, y, top, bottom, 0.677 * S, 0.686 * S, S)
            return self.centred(x, y, 33)
        x = self.centred(x, y, 0)
        x = self.stack(x, y, top, bottom, 0.443 * S, 0.344 * S, 0.7 * S)
        return self.centred(x, y, 1)

    def rule(self, x0: float, x1: float, y: float) -> None:
        self.page.draw_line((x0, y), (x1, y), width=0.4)

    def save(self, path: Path) -> Path:
        doc, page = self.doc, self.page
        program = doc.get_new_xref()
        doc.update_object(program, "<</Subtype/Type1C>>")
        doc.update_stream(program, _extension_font())
        descriptor = doc.get_new_xref()
        doc.update_object(descriptor, f"<</Type/FontDescriptor/FontName/CMEX10/Flags 4/FontBBox[0 -3000 1500 100]"
                                      f"/ItalicAngle 0/Ascent 40/Descent -2960/CapHeight 0/StemV 50/FontFile3 {program} 0 R>>")
        widths = " ".join(str(EXT[c][1] if c in EXT else 0) for c in range(91))
        differences = " ".join(f"{c} /{EXT[c][0]}" for c in sorted(EXT))
        font = doc.get_new_xref()
        doc.update_object(font, f"<</Type/Font/Subtype/Type1/BaseFont/CMEX10/FirstChar 0/LastChar 90/Widths[{widths}]"
                                f"/Encoding<</Type/Encoding/Differences[{differences}]>>/FontDescriptor {descriptor} 0 R>>")
        page.clean_contents()
        doc.xref_set_key(page.xref, "Resources/Font/EX", f"{font} 0 R")
        contents = page.get_contents()[0]
        doc.update_stream(contents, doc.xref_stream(contents) + ("\n" + "\n".join(self.ops)).encode())
        doc.save(path)
        return path


def test_extension_glyph_names_say_what_a_glyph_is(tmp_path):
    assert glyph_symbol("parenleftbigg") == "(" and glyph_symbol("parenrightbigx") == ")"
    assert glyph_symbol("summationdisplay") == "∑" and glyph_symbol("integraltext") == "∫"
    assert glyph_symbol("radicalBig") == "√"
    assert glyph_symbol("parenlefttp") == "" and glyph_symbol("braceex") == ""  # pieces of a taller one
    w = Writer()
    w.ext(72, 100, 88)
    fonts = ExtensionFonts()
    table = extension_tables(pymupdf.open(w.save(tmp_path / "names.pdf")), fonts)
    assert table == {"CMEX10": {"\x00": "(", "\x01": ")", " ": "(", "!": ")", "X": "∑", "Z": "∫"}}


def test_binomials_are_rebuilt_textstyle_and_display(tmp_path):
    w = Writer()
    # textstyle: its small rows read as a small fraction before
    x = w.text(72, 100, "1. Prove that ")
    x = w.binomial(x, 100, "n", "k")
    x = w.text(x + 2, 100, " = ")
    x = w.binomial(x, 100, "n − 1", "k − 1")
    w.text(x + 2, 100, " holds.")
    # display, squared: read "n", "0" and a stray "!2" before
    x = w.text(72, 200, "Then ")
    x = w.binomial(x, 200, "n", "0", display=True)
    x = w.text(x + 0.5, 200 - 0.6 * S, "2", 0.7 * S)
    w.text(x + 2, 200, " + 1.")
    lines = parse_lines(w.save(tmp_path / "binom.pdf"))
    assert lines == ["1. Prove that \\binom{n}{k} = \\binom{n − 1}{k − 1} holds.", "Then \\binom{n}{0}^2 + 1."]


def test_column_vectors_and_fractions_in_parentheses_are_no_binomials(tmp_path):
    w = Writer()
    # a two-row column vector: its rows a line apart (1.2 of their size), not a binomial's 1.36
    x = w.text(72, 100, "so v = ")
    x = w.centred(x, 100, 32)
    x = w.stack(x, 100, "3", "2", 0.6 * S, 0.6 * S, S)
    w.centred(x, 100, 33)
    # a display fraction in parentheses: spaced as a binomial, but a bar between its rows
    x = w.text(72, 200, "and u = ")
    x = w.centred(x, 200, 32)
    end = w.stack(x, 200, "a", "b", 0.677 * S, 0.686 * S, S)
    w.rule(x, end, 200 - AXIS * S)
    w.centred(end, 200, 33)
    text = "\n".join(parse_lines(w.save(tmp_path / "vectors.pdf")))
    assert "\\binom" not in text
    assert "\\frac{a}{b}" in text


def test_big_operators_take_their_limits(tmp_path):
    w = Writer()
    # a display sum: limits centred over and under it
    x = w.text(72, 100, "1. Find ")
    op = w.centred(x, 100, 88)
    w.stack(x, 100, "n", "k=1", 0.7 * S + 0.25 * S + 0.2 * S, 0.45 * S + 0.2 * S + 0.55 * S, 0.7 * S)
    w.text(op + 2, 100, "k^2 for n = 3.")
    # an integral: its limits after it, raised and lowered
    x = w.text(72, 200, "2. Compute ")
    op = w.centred(x, 200, 90)
    w.text(op - 1, 200 - 1.0 * S, "1", 0.7 * S)
    w.text(op - 4, 200 + 0.9 * S, "0", 0.7 * S)
    w.text(op + 6, 200, "x dx.")
    # a sum with nothing over or under it: the sign alone ("X" before)
    x = w.text(72, 300, "3. The sign ")
    op = w.centred(x, 300, 88)
    w.text(op + 2, 300, "is a sum.")
    lines = parse_lines(w.save(tmp_path / "ops.pdf"))
    assert lines == ["1. Find ∑_{k=1}^{n} k^2 for n = 3.", "2. Compute ∫_{0}^{1} x dx.", "3. The sign ∑ is a sum."]


def test_a_radical_index_is_a_glyph_over_the_sign_not_an_exponent_before_it(tmp_path):
    w = Writer()
    x = w.text(72, 100, "f = 2")
    x = w.text(x, 100 - 0.4 * S, "n", 0.7 * S)  # 2^n, then the root: read as \sqrt[n]{5} before
    end = w.text(x, 100, "√")
    over = w.text(end, 100, "5")
    w.rule(end, over, 100 - 0.8 * S)
    x = w.text(72, 150, "g = ")
    w.text(x + 1, 150 - 0.45 * S, "3", 0.6 * S)  # an index kerned into the sign
    end = w.text(x, 150, "√")
    over = w.text(end, 150, "27")
    w.rule(end, over, 150 - 0.8 * S)
    lines = parse_lines(w.save(tmp_path / "index.pdf"))
    assert lines == ["f = 2^n\\sqrt{5}", "g = \\sqrt[3]{27}"]


def test_big_parentheses_around_a_rebuilt_fraction_keep_their_place_and_exponent(tmp_path):
    # (1 + \frac{1}{n})^n as TeX writes it: the text, the big parenthesis, the row, the fraction and
    # the exponent in drawing order (so MuPDF makes the parenthesis a line of its own between the
    # prose and the row, as in real books); the fraction pass rewrites the row's line, whose glyphs
    # the delimiter pass then cannot read
    EXT.setdefault(18, ("parenleftbigg", 600, 40, 2360))
    EXT.setdefault(19, ("parenrightbigg", 600, 40, 2360))
    w = Writer()
    height = w.page.rect.height

    def text(x: float, y: float, s: str, size: float = S) -> float:  # F0 is Identity-H: glyph ids
        gids = "".join(f"{FONT.has_glyph(ord(c)):04x}" for c in s)
        w.ops.append(f"BT /F0 {size} Tf {x:.2f} {height - y:.2f} Td <{gids}> Tj ET")
        return x + w.width(s, size)

    y = 200
    x = text(72, y, "the expression ")
    x = w.centred(x, y, 18)
    x = text(x, y, "1 + ")
    end = w.stack(x, y, "1", "n", 0.677 * S, 0.686 * S, S)
    w.rule(x, end, y - AXIS * S)
    x = w.centred(end, y, 19)
    x = text(x + 0.5, y - 0.9 * S, "n", 0.7 * S)
    text(x, y, " grows")
    lines = parse_lines(w.save(tmp_path / "paren.pdf"))
    assert "the expression (1 + \\frac{1}{n})^{n} grows" in lines, lines
