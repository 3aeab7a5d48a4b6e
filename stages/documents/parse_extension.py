"""What a math extension font's glyphs are, from their glyph names: big delimiters and operators.

TeX sets a delimiter taller than the text ( `\\big(`, `\\binom`'s parentheses, a matrix's
brackets) and a display operator (∑, ∏, ∫, ⋃) with glyphs of its math extension font (cmex and
its clones: txex, pxex, lmex...). Their glyph names say what they are (`parenleftBig`,
`summationdisplay`, `radicalbig`), but the Adobe Glyph List knows none of them, so the text
layer carries the glyph's raw code: "X" for a display sum, "Z" for an integral, "!" for a big
right parenthesis, a space or a control character for a left one (`\\binom{n}{0}^2` reads
"n 0 !2").

The names come from the font itself (a Type 1 program's built-in encoding, the font dict's
/Differences, a CFF font's encoding), so no font or book is named here. Only glyphs that are
whole are mapped: a size variant of a delimiter, an operator, a radical sign; the pieces a
taller delimiter is stacked from (`parenlefttp`, `braceex`) stay as they are (a matrix's
brackets; `parse_matrix` reads its rows). A font with a ToUnicode map is left alone: its text
layer says what its glyphs are.
"""

from __future__ import annotations

import io
import re
import unicodedata
from typing import Any

from .parse_glyph_pool import ExtensionFonts
from .parse_glyphs import _builtin, _differences, document_fonts

_DELIMITERS = {"parenleft": "(", "parenright": ")", "bracketleft": "[", "bracketright": "]",
               "braceleft": "{", "braceright": "}", "angleleft": "⟨", "angleright": "⟩",
               "angbracketleft": "⟨", "angbracketright": "⟩",
               "floorleft": "⌊", "floorright": "⌋", "ceilingleft": "⌈", "ceilingright": "⌉",
               "slash": "/", "backslash": "\\"}
_OPERATORS = {"summation": "∑", "product": "∏", "coproduct": "∐", "integral": "∫", "contintegral": "∮",
              "union": "⋃", "intersection": "⋂", "unionmulti": "⊎", "unionsq": "⊔", "logicaland": "⋀",
              "logicalor": "⋁", "circledot": "⨀", "circleplus": "⨁", "circlemultiply": "⨂"}
_SIZED = re.compile(r"^([a-z]+?)(big|Big|bigg|Bigg)x?$")  # `parenleftbigx`: a clone's variant
_OPERATOR = re.compile(r"^([a-z]+?)(text|display)$")
# the pieces a tall delimiter or radical is stacked from (cmex's names, kept by its clones)
_PIECE = re.compile(r"^(?:paren|bracket|brace|radical|arrow)\w*(?:tp|bt|ex|mid|vertex)$")
EXTENSION_NAMES = 3  # glyphs so named that make a font a math extension font: no text font has one
OPERATORS = frozenset(_OPERATORS.values())
_SYMBOLS = frozenset(_DELIMITERS.values())
# (a document's whole delimiters go to its `ExtensionFonts.delimiters`, out of the glyph maps:
# alone a big delimiter's text would break the rows of a matrix (`parse_matrix` reads them without
# brackets) and MuPDF's own spaces take the font of a glyph next to them (code 32 is
# `parenleftBigg`); `parse_delimited` reads them where they hold a binomial. Their `depths` are
# TeX's size classes (cmex's \big 1.2, \Big 1.8, \bigg 2.4, \Bigg 3.0; its clones keep them), so
# the rows a pair holds are told from the next line's)
_CLASS = {"big": 1.2, "Big": 1.8, "bigg": 2.4, "Bigg": 3.0}


# the pieces a delimiter taller than \\Bigg is stacked from (top, extension pieces repeated as
# needed, a brace's middle, bottom), as the text layer has them: MuPDF reads cmex's piece names
# (`parenlefttp`, `braceex`) as Adobe's private-use code points for them, whatever the font's
# codes. char -> (the delimiter, its part); how long a piece is differs between fonts (cmex's top
# is three of txexs's), so `parse_pieces` measures it
PIECES: dict[str, tuple[str, str]] = {
    "\uf8eb": ("(", "tp"), "\uf8ec": ("(", "ex"), "\uf8ed": ("(", "bt"),
    "\uf8f6": (")", "tp"), "\uf8f7": (")", "ex"), "\uf8f8": (")", "bt"),
    "\uf8ee": ("[", "tp"), "\uf8ef": ("[", "ex"), "\uf8f0": ("[", "bt"),
    "\uf8f9": ("]", "tp"), "\uf8fa": ("]", "ex"), "\uf8fb": ("]", "bt"),
    "\uf8f1": ("{", "tp"), "\uf8f2": ("{", "mid"), "\uf8f3": ("{", "bt"),
    "\uf8fc": ("}", "tp"), "\uf8fd": ("}", "mid"), "\uf8fe": ("}", "bt"),
    "\uf8f4": ("{}", "ex"),  # one extension piece serves both braces
}
# (pieces whose names MuPDF does not know keep their raw codes in the text (txexs's
# `parenlefttpA`: "©"): a document's `ExtensionFonts.piece_codes`)
_PIECE_NAME = re.compile(r"^(paren|bracket|brace)(left|right)?(tp|ex|bt|mid)[A-Z]?$")
_PIECE_SYMBOL = {("paren", "left"): "(", ("paren", "right"): ")", ("bracket", "left"): "[",
                 ("bracket", "right"): "]", ("brace", "left"): "{", ("brace", "right"): "}", ("brace", None): "{}"}


# a vertical bar taller than the text's (`\\big|`, a set-builder's `\\bigm|`) is only extension
# pieces, one under the other (`parse_pieces.vertical_bars`)
# (cmex's names; the tx/px fonts', lebl's `txexs`, call them `barex`, `bardblex`)
_BAR_PIECES = {"vextendsingle": "|", "vextenddouble": "‖", "barex": "|", "bardblex": "‖"}


def piece_part(name: str) -> tuple[str, str] | None:
    """(delimiter, part) for a delimiter piece's glyph name (`parenlefttp`, `braceex`, a bar's
    `vextendsingle`), else None."""
    if (bar := _BAR_PIECES.get(name.split(".", 1)[0])) is not None:
        return bar, "ex"
    m = _PIECE_NAME.match(name.split(".", 1)[0])
    if m is None or (symbol := _PIECE_SYMBOL.get((m.group(1), m.group(2)))) is None:
        return None
    return symbol, m.group(3)


def glyph_depth(name: str) -> float | None:
    """A sized delimiter's reach under its origin (units of its size), from its name."""
    m = _SIZED.match(name)
    return _CLASS[m.group(2)] if m is not None and m.group(1) in _DELIMITERS else None


def glyph_symbol(name: str) -> str:
    """The text for a math extension glyph name, or "" for a piece or an unknown name. A variant
    suffix after "." is no part of it (txexs's `summationdisplay.1`)."""
    name = name.split(".", 1)[0]
    if (m := _SIZED.match(name)) is not None:
        if m.group(1) == "radical":
            return "√"
        return _DELIMITERS.get(m.group(1), "")
    if (m := _OPERATOR.match(name)) is not None:
        return _OPERATORS.get(m.group(1), "")
    return ""


def _cff_names(doc: Any, xref: int) -> dict[int, str]:
    """code -> glyph name from an embedded CFF font's encoding."""
    try:
        _, ext, _, buf = doc.extract_font(xref)
        if ext != "cff" or not buf:
            return {}
        from fontTools.cffLib import CFFFontSet

        fonts = CFFFontSet()
        fonts.decompile(io.BytesIO(buf), None)
        encoding = fonts.topDictIndex[0].Encoding
    except Exception:  # a font program fontTools cannot read: its glyphs stay as they are
        return {}
    return {code: name for code, name in enumerate(encoding) if name != ".notdef"} if isinstance(encoding, list) else {}


def extension_tables(doc: Any, fonts: ExtensionFonts, relations: dict[str, dict[str, str]] | None = None,
                     listed: list[tuple] | None = None) -> dict[str, dict[str, str]]:
    """font name (no subset prefix) -> {text-layer char: text} for the whole glyphs of the
    document's math extension fonts (read once per document, like `parse_glyphs.font_tables`).
    A font is one by its glyph names (sized delimiters, display operators, delimiter pieces),
    whatever it is called (lebl's `txexs` fits no name pattern): it joins `fonts.named`, and
    its delimiters' depths and its pieces' codes go to `fonts` (the document's own). Any font's
    glyphs that `tex_name` knows and MuPDF does not go to `relations` (when given)."""
    seen: set[int] = set()
    out: dict[str, dict[str, str]] = {}
    for xref, _ext, ftype, basefont, *_ in document_fonts(doc) if listed is None else listed:
        name = basefont.split("+", 1)[-1]
        if xref in seen or ftype not in ("Type1", "MMType1", "Type1C"):
            continue
        seen.add(xref)
        if doc.xref_get_key(xref, "ToUnicode")[0] != "null":
            continue
        names = {**_builtin(doc, xref), **_differences(doc, xref)} or _cff_names(doc, xref)
        if relations is not None and (known := {chr(code): text for code, glyph in names.items()
                                                if (33 <= code < 127 or 160 <= code < 256) and (text := tex_name(glyph))}):
            relations.setdefault(name, {}).update(known)
        if not fonts.knows(name):
            if sum(1 for g in names.values() if glyph_symbol(g) or _PIECE.match(g)) < EXTENSION_NAMES:
                continue
            fonts.named.add(name)
        table = {chr(code): text for code, glyph in names.items() if (text := glyph_symbol(glyph))}
        depths = {chr(code): depth for code, glyph in names.items() if (depth := glyph_depth(glyph))}
        if depths:
            fonts.depths.setdefault(name, {}).update(depths)
        pieces = {chr(code): part for code, glyph in names.items() if (part := piece_part(glyph))}
        if pieces:  # (those whose names MuPDF maps read as `PIECES` instead: both are asked)
            fonts.piece_codes.setdefault(name, {}).update(pieces)
        if table:
            out.setdefault(name, {}).update(table)
    return out


# TeX fonts' names for glyphs the Adobe Glyph List lacks; MuPDF, not knowing a name, reads the
# glyph as its code's Latin-1 character (txsyc's `nequal` at 44: "f (1) , a" for f(1) ≠ a;
# pxsys's `vec` accent at 174: "u®"). `vec` is the spacing arrow `parse_accents` puts over a letter;
# cmsy's `mapsto` at 55 ("x 7→ y") is \mapsto's bar, which `parse_math.line_text` joins to its arrow
_TEX_NAMES = {"vec": "\u2192", "mapsto": "\u21a6"}


def tex_name(name: str) -> str:
    """The text of a glyph of a TeX math font whose name the AGL (so MuPDF) does not know, or "":
    a negated relation (`n` or `not` before an AGL relation's name, perhaps a variant's "l": the
    relation with U+0338, where Unicode composes the two into one character) or a `_TEX_NAMES` one."""
    from fontTools import agl

    if agl.toUnicode(name):
        return ""  # MuPDF reads it
    if name in _TEX_NAMES:
        return _TEX_NAMES[name]
    for prefix in ("not", "n"):
        rest = name[len(prefix):] if name.startswith(prefix) else ""
        for base in filter(None, (rest, rest[:-1] if rest.endswith("l") else "")):
            text = agl.toUnicode(_ALIASES.get(base, base))
            if len(text) == 1 and len(neg := unicodedata.normalize("NFC", text + "\u0338")) == 1:
                return neg
    return ""


_ALIASES = {"subseteq": "reflexsubset", "supseteq": "reflexsuperset"}  # TeX's names for AGL's


def with_extension(table: dict[str, dict[str, str]], doc: Any,
                   listed: list[tuple] | None = None) -> tuple[dict[str, dict[str, str]], ExtensionFonts]:
    """`table` (glyph-name substitutions per font) with the extension fonts' operators and
    radical signs added, and the document's `ExtensionFonts` (its delimiters go there). The
    glyph passes read the latter inside `parse_glyph_pool.reading`. The glyphs `tex_name` reads
    (a negated relation, a vector accent) join `table` too, in place: its characters are what
    sends a line to the span pass, and a "," that is a "≠" may be a page's only cue."""
    out = {font: dict(t) for font, t in table.items()}
    fonts = ExtensionFonts()
    relations: dict[str, dict[str, str]] = {}
    for font, ext in extension_tables(doc, fonts, relations, listed).items():
        fonts.delimiters[font] = {c: t for c, t in ext.items() if t in _SYMBOLS}
        out.setdefault(font, {}).update({c: t for c, t in ext.items() if t not in _SYMBOLS})
    for font, known in relations.items():
        out.setdefault(font, {}).update(known)
        table.setdefault(font, {}).update(known)
    return out, fonts
