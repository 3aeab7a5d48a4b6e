"""Glyphs of a TeX math font whose names the Adobe Glyph List does not know (issues 15/16, round
9): MuPDF reads such a glyph as its code's Latin-1 character, so levin's `txsyc` `nequal` (code
44) printed "f (1) , a" for f(1) ≠ a, and lebl's `pxsys` `vec` accent (code 174) "A®x" for A⃗x.
The font's own glyph names say what they are: a negated relation (`nequal`, `nelement`,
`notsubseteql`: the relation with U+0338, composed) and the vector arrow (an accent over the letter
its box covers).

The PDF is drawn here: text in Helvetica, and a symbol font built in the test (a CFF font, its
glyphs named as txfonts names them, no ToUnicode map), each glyph where TeX puts it. The truth is
what the generator drew."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from fontTools.misc.psCharStrings import T1CharString
from fontTools.t1Lib import T1Font
from test_pdf_notation import parse_lines

from rlclimb.stages.documents.parse_extension import tex_name, with_extension
from rlclimb.stages.documents.parse_glyphs import font_tables

S = 11.0
FONT = pymupdf.Font("helv")
# code -> (glyph name, advance in 1/1000 em): txsyc's and pxsys's codes
SYMBOLS = {44: ("nequal", 666), 60: ("nelement", 666), 42: ("notsubseteql", 777), 174: ("vec", 480)}


def _symbol_font() -> bytes:
    """A Type 1 font program (as TeX's fonts are embedded) whose own encoding names the glyphs
    above: boxes of their advances."""
    enc = [".notdef"] * 256
    strings = {".notdef": T1CharString(program=[0, 500, "hsbw", "endchar"])}
    for code, (name, w) in SYMBOLS.items():
        enc[code] = name
        strings[name] = T1CharString(program=[0, w, "hsbw", 60, 0, "rmoveto", w - 120, "hlineto", 500, "vlineto",
                                              -(w - 120), "hlineto", "closepath", "endchar"])
    font = T1Font.__new__(T1Font)  # (written from a font dict: no file to read)
    font.font = {"FontInfo": {"FullName": "QXSYC"}, "FontName": "QXSYC", "PaintType": 0, "FontType": 1,
                 "FontMatrix": [0.001, 0, 0, 0.001, 0, 0], "Encoding": enc, "FontBBox": [0, -200, 1000, 800],
                 "Private": {"BlueValues": [], "lenIV": 4, "password": 5839, "MinFeature": (16, 16)},
                 "CharStrings": strings}
    font.encoding = "ascii"
    return font.createData()


class Writer:
    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = self.doc.new_page()
        self.ops: list[str] = []  # (text and symbols in drawing order, as TeX writes them)

    def text(self, x: float, y: float, text: str) -> float:
        self.ops.append(f"BT /HV {S} Tf {x:.2f} {self.page.rect.height - y:.2f} Td ({text}) Tj ET")
        return x + FONT.text_length(text, fontsize=S)

    def sym(self, x: float, y: float, code: int) -> float:
        self.ops.append(f"BT /SY {S} Tf {x:.2f} {self.page.rect.height - y:.2f} Td <{code:02x}> Tj ET")
        return x + SYMBOLS[code][1] / 1000 * S

    def vec(self, x: float, y: float, letter: str) -> float:
        """\\vec{letter} as pxfonts sets it: the accent first, over the letter, then the letter."""
        w = FONT.text_length(letter, fontsize=S)
        self.sym(x + (w - 0.48 * S) / 2, y - 0.25 * S, 174)
        return self.text(x, y, letter)

    def save(self, path: Path) -> Path:
        doc, page = self.doc, self.page
        program = doc.get_new_xref()
        doc.update_object(program, "<<>>")
        doc.update_stream(program, _symbol_font())
        descriptor = doc.get_new_xref()
        doc.update_object(descriptor, "<</Type/FontDescriptor/FontName/QXSYC/Flags 4/FontBBox[0 -200 1000 800]"
                                      f"/ItalicAngle 0/Ascent 800/Descent -200/CapHeight 700/StemV 50/FontFile {program} 0 R>>")
        widths = " ".join(str(SYMBOLS[c][1] if c in SYMBOLS else 0) for c in range(256))
        font = doc.get_new_xref()
        doc.update_object(font, f"<</Type/Font/Subtype/Type1/BaseFont/QXSYC/FirstChar 0/LastChar 255/Widths[{widths}]"
                                f"/FontDescriptor {descriptor} 0 R>>")
        helvetica = doc.get_new_xref()
        doc.update_object(helvetica, "<</Type/Font/Subtype/Type1/BaseFont/Helvetica/Encoding/WinAnsiEncoding>>")
        doc.xref_set_key(page.xref, "Resources", f"<</Font<</SY {font} 0 R/HV {helvetica} 0 R>>>>")
        contents = doc.get_new_xref()
        doc.update_object(contents, "<<>>")
        doc.update_stream(contents, "\n".join(self.ops).encode())
        doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
        doc.save(path)
        return path


def test_tex_glyph_names_the_glyph_list_lacks():
    assert tex_name("nequal") == "≠" and tex_name("nelement") == "∉" and tex_name("nequivalence") == "≢"
    assert tex_name("notsubseteql") == "⊈" and tex_name("vec") == "→"
    # names MuPDF reads itself, and names that are no negated relation, stay as they are
    assert tex_name("notequal") == "" and tex_name("equal") == "" and tex_name("negationslash") == ""
    assert tex_name("nabla") == "" and tex_name("notdef") == "" and tex_name("napprox") == ""


def test_negated_relations_and_vector_arrows_read_as_their_glyph_names_say(tmp_path):
    w = Writer()
    x = w.text(72, 100, "(b) f (1) ")
    x = w.sym(x, 100, 44)
    x = w.text(x, 100, " a or f (2) ")
    x = w.sym(x, 100, 60)
    w.text(x, 100, " B?")
    x = w.text(72, 180, "Solve A")
    x = w.vec(x, 180, "x")
    x = w.text(x, 180, " = ")
    x = w.vec(x, 180, "b")
    w.text(x, 180, " for the vector.")
    path = w.save(tmp_path / "names.pdf")
    doc = pymupdf.open(path)
    # the document's glyph table: each code as MuPDF reads it (Latin-1) -> what its name says
    # (this generated CFF font's `nequal` reads U+FFFD in MuPDF, levin's Type 1 one ","; the
    # table is asked of the code's character either way)
    glyphs, _ = with_extension(font_tables(doc), doc)
    assert glyphs["QXSYC"] == {",": "≠", "<": "∉", "*": "⊈", "®": "→"}
    lines = parse_lines(path)
    assert lines[0] == "(b) f (1) ≠ a or f (2) ∉ B?", lines
    assert lines[-1] == "Solve A\\vec{x} = \\vec{b} for the vector.", lines
