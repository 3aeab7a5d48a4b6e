"""TeX's \\mapsto (issues 15/16, round 10): two glyphs of cmsy, the zero-width bar `mapsto` (code
55) set on the arrow after it (`arrowright`; `\\longmapsto` on `minus` + `arrowright`). The AGL
does not know `mapsto`, so MuPDF reads the bar as its code, "7": hefferon and judson printed
"(a, b) 7→a ◦ b" (1,017 bars over the three PDFs). The font's glyph name says it is the bar; the
pair reads as one arrow.

The PDF is drawn here: text in Helvetica, and a symbol font built in the test (a Type 1 program
whose own encoding names its glyphs as cmsy does, no ToUnicode map), each glyph where TeX puts
it (the bar at the arrow's origin). The truth is what the generator drew."""

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
# code -> (glyph name, advance in 1/1000 em): cmsy10's codes and widths
SYMBOLS = {0: ("minus", 778), 33: ("arrowright", 1000), 55: ("mapsto", 0)}


def _symbol_font() -> bytes:
    """A Type 1 font program whose own encoding names the glyphs above (boxes; the bar a
    stroke left of its zero advance, as cmsy draws it)."""
    enc = [".notdef"] * 256
    strings = {".notdef": T1CharString(program=[0, 500, "hsbw", "endchar"])}
    for code, (name, w) in SYMBOLS.items():
        enc[code] = name
        ink = max(w - 120, 40)
        strings[name] = T1CharString(program=[55, w, "hsbw", 0, 0, "rmoveto", ink, "hlineto", 500, "vlineto",
                                              -ink, "hlineto", "closepath", "endchar"])
    font = T1Font.__new__(T1Font)  # (written from a font dict: no file to read)
    font.font = {"FontInfo": {"FullName": "QMSY10"}, "FontName": "QMSY10", "PaintType": 0, "FontType": 1,
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

    def text(self, x: float, y: float, text: str, size: float = S) -> float:
        self.ops.append(f"BT /HV {size} Tf {x:.2f} {self.page.rect.height - y:.2f} Td ({text}) Tj ET")
        return x + FONT.text_length(text, fontsize=size)

    def sym(self, x: float, y: float, *codes: int) -> float:
        """Symbol glyphs in one run (as TeX writes `\\mapsto`: the bar, then the arrow)."""
        hexes = "".join(f"{c:02x}" for c in codes)
        self.ops.append(f"BT /SY {S} Tf {x:.2f} {self.page.rect.height - y:.2f} Td <{hexes}> Tj ET")
        return x + sum(SYMBOLS[c][1] for c in codes) / 1000 * S

    def mapsto(self, x: float, y: float, long: bool = False) -> float:
        x = self.text(x, y, " ")
        x = self.sym(x, y, 55, 0, 33) if long else self.sym(x, y, 55, 33)
        return self.text(x, y, " ")

    def save(self, path: Path) -> Path:
        doc, page = self.doc, self.page
        program = doc.get_new_xref()
        doc.update_object(program, "<<>>")
        doc.update_stream(program, _symbol_font())
        descriptor = doc.get_new_xref()
        doc.update_object(descriptor, "<</Type/FontDescriptor/FontName/QMSY10/Flags 4/FontBBox[0 -200 1000 800]"
                                      f"/ItalicAngle 0/Ascent 800/Descent -200/CapHeight 700/StemV 50/FontFile {program} 0 R>>")
        widths = " ".join(str(SYMBOLS[c][1] if c in SYMBOLS else 0) for c in range(256))
        font = doc.get_new_xref()
        doc.update_object(font, f"<</Type/Font/Subtype/Type1/BaseFont/QMSY10/FirstChar 0/LastChar 255/Widths[{widths}]"
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


def test_mapsto_bar_is_named_by_its_glyph():
    assert tex_name("mapsto") == "↦"


def test_mapsto_reads_as_one_arrow(tmp_path):
    w = Writer()
    x = w.text(72, 100, "A law of composition (a, b)")
    x = w.mapsto(x, 100)
    w.text(x, 100, "a o b on 17 elements.")
    x = w.text(72, 140, "the map x")  # a script on the line: the span pass's own runs
    x = w.text(x, 136, "2", size=0.7 * S)
    x = w.mapsto(x + 1, 140, long=True)
    x = w.text(x, 140, "x + 7")
    w.text(x, 136, "3", size=0.7 * S)
    path = w.save(tmp_path / "mapsto.pdf")
    doc = pymupdf.open(path)
    glyphs, _ = with_extension(font_tables(doc), doc)
    assert glyphs["QMSY10"] == {"7": "↦"}  # (MuPDF reads `minus` and `arrowright` itself)
    lines = parse_lines(path)
    assert lines[0] == "A law of composition (a, b) ↦ a o b on 17 elements.", lines
    assert lines[1] == "the map x^2 ⟼ x + 7^3", lines
