"""Inline notation the rebuild got wrong on a real book (lebl's French diffyqs, issues 15/16):
a math extension font that no name pattern knows (`txexs`: its big brackets read as the letters
"h" and "i"), column vectors in big brackets, big parentheses around one row, a small fraction
whose denominator MuPDF runs on into the text after it, and an exponent that holds a radical.

The PDFs are drawn here with `test_parse_stacked_delimited`'s writer; the extension font is built
with fontTools and named `QXMATHB` (nothing in its name says "extension": only its glyph names,
`bracketleftBig`, `parenleftbig`, `bracketlefttp`, do). The truth is what the generator drew."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import test_parse_stacked_delimited as sd
from test_parse_stacked_delimited import AXIS, S, Writer
from test_pdf_notation import parse_lines

from rlclimb.stages.documents.parse_extension import extension_tables, glyph_symbol
from rlclimb.stages.documents.parse_glyph_pool import ExtensionFonts, is_extension, reading

NAME = "QXMATHB"
# code -> (glyph name, advance, height over the origin, depth under it), 1/1000 em (cmex's metrics);
# codes as txexs has them: "h"/"i" for \Big[ \Big], "\x00"/"\x01" for \big( \big)
CODES = {0: ("parenleftbig", 460, 40, 1160), 1: ("parenrightbig", 460, 40, 1160),
         104: ("bracketleftBig", 470, 40, 1760), 105: ("bracketrightBig", 470, 40, 1760),
         20: ("bracketleftbigg", 530, 40, 2360), 21: ("bracketrightbigg", 530, 40, 2360),
         16: ("parenleftBig", 600, 40, 1760), 17: ("parenrightBig", 600, 40, 1760),
         50: ("bracketlefttp", 670, 40, 1760), 52: ("bracketleftbt", 670, 40, 1760),
         # the pieces a taller delimiter is stacked from (cmex's codes and metrics)
         48: ("parenlefttp", 880, 0, 1800), 64: ("parenleftbt", 880, 0, 1800), 66: ("parenleftex", 880, 0, 600),
         49: ("parenrighttp", 880, 0, 1800), 65: ("parenrightbt", 880, 0, 1800), 67: ("parenrightex", 880, 0, 600),
         51: ("bracketrighttp", 670, 0, 1800), 53: ("bracketrightbt", 670, 0, 1800),
         54: ("bracketleftex", 670, 0, 600), 55: ("bracketrightex", 670, 0, 600),
         # txexs's parenthesis pieces: names MuPDF does not know (raw codes in the text layer),
         # standing on their origin instead of hanging from it
         100: ("parenlefttpA", 880, 1800, 0), 101: ("parenleftexA", 880, 600, 0), 102: ("parenleftbtA", 880, 1800, 0),
         97: ("parenrighttpA", 880, 1800, 0), 98: ("parenrightexA", 880, 600, 0), 99: ("parenrightbtA", 880, 1800, 0)}


class NamelessWriter(Writer):
    """The writer of `test_parse_stacked_delimited`, its extension font called `QXMATHB`."""

    def save(self, path: Path) -> Path:
        saved = dict(sd.EXT)
        sd.EXT.clear()
        sd.EXT.update(CODES)
        try:
            super().save(path)
        finally:
            sd.EXT.clear()
            sd.EXT.update(saved)
        doc = pymupdf.open(path)
        for xref in range(1, doc.xref_length()):  # the font's names: base font, descriptor
            obj = doc.xref_object(xref)
            if "CMEX10" in obj:
                doc.update_object(xref, obj.replace("CMEX10", NAME))
        widths = " ".join(str(CODES[c][1] if c in CODES else 0) for c in range(106))
        font = next(x for x in range(1, doc.xref_length()) if f"/BaseFont /{NAME}" in doc.xref_object(x))
        doc.xref_set_key(font, "LastChar", "105")
        doc.xref_set_key(font, "Widths", f"[{widths}]")
        doc.save(path.with_suffix(".named.pdf"))
        return path.with_suffix(".named.pdf")

    def ext(self, x: float, y: float, code: int, size: float = S) -> float:
        self.ops.append(f"BT /EX {size} Tf {x:.2f} {self.page.rect.height - y:.2f} Td <{code:02x}> Tj ET")
        return x + CODES[code][1] / 1000 * size

    def centred(self, x: float, y: float, code: int, size: float = S) -> float:
        _, _, h, d = CODES[code]
        top = y - AXIS * S - (h + d) / 2000 * size
        return self.ext(x, top + h / 1000 * size, code, size)

    def column(self, x: float, y: float, rows: list[tuple[str, str]], size: float = 0.7 * S,
               parens: bool = False) -> float:
        """\\Big[ rows \\Big] (\\bigg for three; \\Big( \\Big) with `parens`): rows at script size (base,
        exponent; cells apart by spaces), a line apart, centred on the axis and on each other;
        returns the end."""
        left, right = (16, 17) if parens else (104, 105) if len(rows) < 3 else (20, 21)
        x = self.centred(x, y, left) + 1
        widths = [self.width(b, size) + self.width(e, 0.7 * size) for b, e in rows]
        w = max(widths)
        first = y - AXIS * S - (len(rows) - 1) / 2 * 1.2 * size + 0.35 * size
        for k, ((base, exp), width) in enumerate(zip(rows, widths, strict=True)):
            at = first + k * 1.2 * size
            end = self.text(x + (w - width) / 2, at, base, size)
            if exp:
                self.text(end, at - 0.4 * size, exp, 0.7 * size)
        return self.centred(x + w + 1, y, right)

    def tall(self, x: float, y: float, rows: list[str], brackets: bool = False, standing: bool = False) -> float:
        """A display matrix in a delimiter stacked from pieces (top, extension pieces, bottom: as
        TeX builds one taller than \\Bigg): rows at text size a line apart, centred on the axis
        (cells apart by spaces); returns the end."""
        left, right = ((50, 54, 52), (51, 55, 53)) if brackets else ((48, 66, 64), (49, 67, 65))
        if standing:
            left, right = (100, 101, 102), (97, 98, 99)
        pitch = 1.2 * S
        height = len(rows) * pitch + 0.2 * S
        extensions = max(0, round((height - 3.6 * S) / (0.6 * S) + 0.49))
        total = (3.6 + 0.6 * extensions) * S
        top = y - AXIS * S - total / 2

        def delimiter(x: float, codes: tuple[int, int, int]) -> float:
            at = top
            for code in (codes[0], *[codes[1]] * extensions, codes[2]):
                _, _, up, down = CODES[code]
                end = self.ext(x, at + up / 1000 * S, code)
                at += (up + down) / 1000 * S
            return end

        x = delimiter(x, left) + 1
        w = max(self.width(r) for r in rows)
        first = y - AXIS * S - (len(rows) - 1) / 2 * pitch + 0.35 * S
        for k, row in enumerate(rows):
            if row == "⋮":  # \\vdots: three periods one over the other, the lowest on the baseline
                for j in range(3):
                    self.text(x + (w - self.width(".")) / 2, first + k * pitch - j * 0.4 * S, ".")
            else:
                self.text(x + (w - self.width(row)) / 2, first + k * pitch, row)
        return delimiter(x + w + 1, right)

    def tall_around(self, x: float, y: float, inner: list[tuple[str, list[str]]]) -> float:
        """\\left( ... \\right) stacked from standing pieces around a row of text and bracket
        matrices (`inner`: (text before, the matrix's rows) each); returns the end."""
        codes = ((100, 101, 102), (97, 98, 99))
        top = y - AXIS * S - 2.3 * S  # a top and a bottom piece, one extension piece: 4.2 S

        def delimiter(x: float, codes: tuple[int, int, int]) -> float:
            at = top
            for code in codes:
                _, _, up, down = CODES[code]
                end = self.ext(x, at + up / 1000 * S, code)
                at += (up + down) / 1000 * S
            return end

        x = delimiter(x, codes[0]) + 1
        for text, rows in inner:
            x = self.text(x, y, text) if text else x
            x = self.tall(x + 1, y, rows, brackets=True) + 1
        return delimiter(x, codes[1])


def test_an_extension_font_is_known_by_its_glyph_names_not_its_name(tmp_path):
    w = NamelessWriter()
    x = w.text(72, 100, "Is ")
    w.column(x, 100, [("e", "2t"), ("e", "t")])
    doc = pymupdf.open(w.save(tmp_path / "names.pdf"))
    assert not is_extension(NAME + "-other")  # the name alone says nothing
    assert glyph_symbol("summationdisplay.1") == "∑"  # txexs's variant names
    fonts = ExtensionFonts()
    table = extension_tables(doc, fonts)
    assert NAME in fonts.named and not is_extension(NAME)  # known to this document's reading only
    with reading(fonts):
        assert is_extension(NAME)
    assert not is_extension(NAME)
    assert table[NAME] == {"\x00": "(", "\x01": ")", "h": "[", "i": "]", "\x14": "[", "\x15": "]",
                           "\x10": "(", "\x11": ")"}


def test_column_vectors_in_big_brackets_become_one_matrix(tmp_path):
    # lebl p112: "Est-ce que h e2t e^t i et h e^t e2t i sont ..." before (one line per row)
    w = NamelessWriter()
    x = w.text(72, 100, "1. Are ")
    x = w.column(x, 100, [("e", "2t"), ("e", "t")])
    x = w.text(x + 3, 100, " and ")
    x = w.column(x, 100, [("cosh(t)", ""), ("1", "")])
    w.text(x + 3, 100, " independent?")
    # three rows, and prose on the next line that must stay out of it
    x = w.text(72, 200, "2. Take ")
    x = w.column(x, 200, [("x", ""), ("y", "2"), ("3", "")])
    w.text(x + 3, 200, " here.")
    w.text(72, 200 + 2.2 * S, "The next line of prose runs on under the vector.")
    # a small matrix: its column gap narrower than a table's, but at one place in every row; an
    # operator with spaces around it is no column of its own
    x = w.text(72, 300, "3. Then ")
    x = w.column(x, 300, [("1  3", ""), ("3  1", "")])
    x = w.text(x + 3, 300, " and ")
    x = w.column(x, 300, [("x  +  1", ""), ("y  −  2", "")])
    lines = parse_lines(w.save(tmp_path / "columns.pdf"))
    assert lines[3] == ("3. Then \\begin{pmatrix} 1 & 3 \\\\ 3 & 1 \\end{pmatrix} and "
                        "\\begin{pmatrix} x+1 \\\\ y−2 \\end{pmatrix}"), lines
    assert lines[0] == ("1. Are \\begin{pmatrix} e^{2t} \\\\ e^t \\end{pmatrix} and "
                        "\\begin{pmatrix} cosh(t) \\\\ 1 \\end{pmatrix} independent?"), lines
    assert lines[1] == "2. Take \\begin{pmatrix} x \\\\ y^2 \\\\ 3 \\end{pmatrix} here.", lines
    assert lines[2] == "The next line of prose runs on under the vector.", lines


def test_big_parentheses_around_one_row_keep_their_symbols(tmp_path):
    # lebl's answer 1.1.103: "x= sin^{−1} t+ 1" before (the \big( \big) read as raw codes)
    w = NamelessWriter()
    x = w.text(72, 100, "x = sin")
    x = w.text(x, 100 - 0.4 * S, "−1", 0.7 * S)
    x = w.centred(x + 1, 100, 0)
    x = w.text(x, 100, "t + 1")
    w.centred(x, 100, 1)
    assert parse_lines(w.save(tmp_path / "paren.pdf")) == ["x = sin^{−1}(t + 1)"]


def _small_fraction(w: Writer, x: float, y: float, num: str, den: str) -> float:
    """A textstyle fraction (rows at script size, TeX's num2/denom2 shifts); returns its end."""
    size = 0.7 * S
    width = max(w.width(num, size), w.width(den, size)) + 1
    w.text(x + (width - w.width(num, size)) / 2, y - 0.55 * S, num, size)
    w.text(x + (width - w.width(den, size)) / 2, y + 0.4 * S, den, size)
    w.rule(x, x + width, y - AXIS * S)
    return x + width


def test_a_small_fraction_whose_denominator_runs_on_into_the_text(tmp_path):
    # lebl's answers 0.3.102 and 1.1.101: "y= b(x)" / "a(x)." and "y= e^x+ x2" / "2 + 9" before:
    # MuPDF puts the period (or "+ 9") in the denominator's line, so no row stood alone
    w = NamelessWriter()
    x = w.text(72, 100, "solution: y = ")
    x = _small_fraction(w, x, 100, "b(x)", "a(x)")
    w.text(x + 0.5, 100, ".")
    x = w.text(72, 150, "so y = x + ")
    x = _small_fraction(w, x, 150, "x", "2")
    w.text(x + 2, 150, "+ 9")
    lines = parse_lines(w.save(tmp_path / "small.pdf"))
    assert lines == ["solution: y = \\frac{b(x)}{a(x)}.", "so y = x + \\frac{x}{2} + 9"], lines


def test_an_exponent_holding_a_radical_is_raised_whole(tmp_path):
    # lebl's answer 2.5.105: "C_1e" / "\sqrt{2}x+ C_2e^{−\sqrt{2}x}" before. The sign is drawn
    # high in a run of its own, so MuPDF puts a space where it stands in the row below, and TeX's
    # thin space before "x" reads as one too: "e^{\sqrt{2}} x" with the sign's space taken along
    w = NamelessWriter()
    small = 0.7 * S
    height = w.page.rect.height
    x = w.text(72, 100, "y = C e")
    w.ops.append(f"BT /F0 {small} Tf {x:.2f} {height - (100 - 1.0 * S):.2f} Td "
                 f"<{sd.FONT.has_glyph(ord('√')):04x}> Tj ET")
    start = x + w.width("√", small)
    end = w.text(start, 100 - 0.4 * S, "2", small)
    w.rule(start, end, 100 - 0.4 * S - 0.75 * small)
    x = w.text(end + 0.2 * small, 100 - 0.4 * S, "x", small)
    w.text(x + 2, 100, " + 1")
    lines = parse_lines(w.save(tmp_path / "exp.pdf"))
    assert lines == ["y = C e^{\\sqrt{2}x} + 1"], lines


def test_two_rows_in_parentheses_are_a_vector_where_the_page_sets_matrices_so(tmp_path):
    # hefferon's answers: "(5 4; 0 1) (b_1; b_2) = x · (b_1; b_2)": the vectors were left as rows
    # (no binomial's spacing, not numbers); a matrix in the same parentheses at the same pitch
    # says what they are. A page with no such matrix leaves "(n; k)" to the binomial rule
    w = NamelessWriter()
    x = w.text(72, 100, "Then ")
    x = w.column(x, 100, [("5    4", ""), ("0    1", "")], parens=True)
    x = w.column(x + 2, 100, [("b", ""), ("c", "")], parens=True)
    w.text(x + 2, 100, " = x")
    lines = parse_lines(w.save(tmp_path / "vector.pdf"))
    assert lines == ["Then \\begin{pmatrix} 5 & 4 \\\\ 0 & 1 \\end{pmatrix} \\begin{pmatrix} b \\\\ c \\end{pmatrix} = x"], lines
    w = NamelessWriter()
    x = w.text(72, 100, "Count ")
    x = w.column(x, 100, [("n", ""), ("k", "")], parens=True)
    w.text(x + 2, 100, " ways")
    assert "pmatrix" not in " ".join(parse_lines(w.save(tmp_path / "alone.pdf")))


def test_tall_delimiters_stacked_from_pieces_hold_one_matrix(tmp_path):
    # hefferon's '\\vec{u} + \\vec{v} =' then 'u_1', '...', 'u_n', '+', ... one line per row, its
    # parentheses (parenlefttp, parenleftex, parenleftbt) stray private-use glyphs; lebl's tall
    # brackets likewise. Prose a line under the matrix stays out of it
    w = NamelessWriter()
    x = w.text(72, 150, "Take v = ")
    x = w.tall(x, 150, ["x", "y + 1", "3"])
    x = w.text(x + 2, 150, " + ")
    x = w.tall(x, 150, ["a    b", "c    d", "e    f", "g    h"], brackets=True)
    w.text(x + 2, 150, " here.")
    w.text(72, 150 + 4.0 * S, "The next line of prose runs on under it.")
    lines = parse_lines(w.save(tmp_path / "tall.pdf"))
    assert lines == ["Take v = \\begin{pmatrix} x \\\\ y+1 \\\\ 3 \\end{pmatrix} + "
                     "\\begin{pmatrix} a & b \\\\ c & d \\\\ e & f \\\\ g & h \\end{pmatrix} here.",
                     "The next line of prose runs on under it."], lines


def test_pieces_standing_on_their_origin_and_vdots_rows(tmp_path):
    # lebl's "det ©\xad" / "«" / "2 −λ 1 1" ...: txexs's parenthesis pieces read as raw codes
    # (©, \xad, «) around bracket matrices, and hefferon's 's_1', '...', 's_n' vectors
    w = NamelessWriter()
    x = w.text(72, 150, "det ")
    x = w.tall_around(x, 150, [("", ["a    1", "1    a"]), (" − λ ", ["1    0", "0    1"])])
    w.text(x + 2, 150, " = 0")
    x = w.text(72, 300, "so s = ")
    x = w.tall(x, 300, ["s1", "⋮", "sn"])
    w.text(x + 2, 300, " and ")
    lines = [ln.replace("( ", "(") for ln in parse_lines(w.save(tmp_path / "standing.pdf"))]  # (a gap, no glyph)
    assert lines == ["det (\\begin{pmatrix} a & 1 \\\\ 1 & a \\end{pmatrix} − λ "
                     "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}) = 0",
                     "so s = \\begin{pmatrix} s1 \\\\ ⋮ \\\\ sn \\end{pmatrix} and"], lines


def test_scripts_after_a_tall_delimiter_are_the_matrix_s(tmp_path):
    # lebl p209: "−1" on a line of its own over "[d_1 0 0; 0 d_2 0; 0 0 d_3] = ..."
    w = NamelessWriter()
    x = w.text(72, 150, "so ")
    rows = ["a    0    0", "0    b    0", "0    0    c"]
    end = w.tall(x, 150, rows, brackets=True)
    top = 150 - AXIS * S - 2.1 * S  # (three rows: a top, an extension and a bottom piece)
    end = w.text(end + 0.5, top + 0.5 * S, "−1", 0.7 * S)
    end = w.text(end + 3, 150, " = ")
    w.tall(end, 150, ["x    0    0", "0    y    0", "0    0    z"], brackets=True)
    lines = parse_lines(w.save(tmp_path / "scripts.pdf"))
    assert lines == ["so \\begin{pmatrix} a & 0 & 0 \\\\ 0 & b & 0 \\\\ 0 & 0 & c \\end{pmatrix}^{−1} = "
                     "\\begin{pmatrix} x & 0 & 0 \\\\ 0 & y & 0 \\\\ 0 & 0 & z \\end{pmatrix}"], lines


def test_a_spacing_accent_left_at_a_line_end_goes_on_the_next_lines_letter():
    # a line the delimiter pass rewrote keeps hefferon's "Rep ˆ" (its glyph pass cannot read it),
    # the accented letter starting the next line
    from rlclimb.stages.documents.parse_accents import attach_marks

    blocks = [{"lines": [{"text": "Rep \u02c6"}, {"text": "B,B(id) = 1"}, {"text": "and x\u02c6 + y"}]}]
    attach_marks(blocks)
    assert [ln["text"] for ln in blocks[0]["lines"]] == ["Rep ", "\\hat{B},B(id) = 1", "and \\hat{x} + y"]
