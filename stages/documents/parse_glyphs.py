"""Glyph names vs ToUnicode: what a glyph without Unicode is, read from its font's glyph names.

A simple font maps codes to glyph names (its PDF `/Encoding /Differences`, else the embedded
Type 1 program's own encoding). MuPDF turns a name into Unicode through the Adobe Glyph List;
a name the list does not know (TeX math fonts: `equalx` for "=", `minus.alt`, `uni2212.sc`)
leaves the glyph with no Unicode, and the text layer carries its raw code (a control
character). Those names still say what the glyph is: the AGL rules with a suffix after "." or
"_" removed, `uniXXXX` / `uXXXXX` names, or a known name plus a short variant tail (`equalx`).
The table is learned once per document, per font (codes clash across fonts: code 3 is "=" in
one and a bracket piece in another), and only for codes whose name the AGL alone cannot map.
"""

from __future__ import annotations

import re
from typing import Any

_DUP = re.compile(rb"dup\s+(\d+)\s*/([^\s/\[\]()<>{}]+)\s+put")
_ASTRAL = re.compile(r"^u([0-9A-Fa-f]{5,6})$")  # "u1D453": MATHEMATICAL ITALIC SMALL F
_VARIANT_TAIL = re.compile(r"^[a-z]{1,3}$|^\d{1,2}$")
# a delimiter's size variants and extensible pieces (`parenlefttp`, `bracketleftbig`) are drawn in
# several glyphs stacked up: mapped to "(" each they would be noise; they stay unmapped (counted)
_DELIMITERS = frozenset("()[]{}|‖⟨⟩⌈⌉⌊⌋∣∥/\\")


def name_to_text(name: str) -> str:
    """Unicode text for a glyph name, or "" when its name does not say."""
    from fontTools import agl

    text = agl.toUnicode(name)
    if text and "\ufffd" not in text:
        return text
    base = re.split(r"[._]", name, maxsplit=1)[0]
    if base and base != name and (text := agl.toUnicode(base)) and "\ufffd" not in text:
        return "" if text in _DELIMITERS else text
    # a known name with a short variant tail: "equalx", "plusx", "minus1"
    for cut in range(len(base) - 1, 1, -1):
        head, tail = base[:cut], base[cut:]
        if _VARIANT_TAIL.match(tail) and head in agl.AGL2UV:
            text = chr(agl.AGL2UV[head])
            return "" if text in _DELIMITERS else text
    return ""


def _differences(doc: Any, font_xref: int) -> dict[int, str]:
    """code -> glyph name from the font dict's /Encoding /Differences."""
    kind, value = doc.xref_get_key(font_xref, "Encoding")
    if kind == "xref":
        enc = int(value.split()[0])
        kind, value = doc.xref_get_key(enc, "Differences")
    elif kind == "dict":
        m = re.search(r"/Differences\s*(\[.*?\])", value, re.S)
        kind, value = ("array", m.group(1)) if m else ("null", "")
    if kind != "array":
        return {}
    out, code = {}, 0
    for tok in re.findall(r"/[^\s/\[\]]+|\d+", value):
        if tok.startswith("/"):
            out[code] = tok[1:]
            code += 1
        else:
            code = int(tok)
    return out


def _builtin(doc: Any, font_xref: int) -> dict[int, str]:
    """code -> glyph name from an embedded Type 1 program's own /Encoding."""
    try:
        _, ext, _, buf = doc.extract_font(font_xref)
    except Exception:
        return {}
    if ext not in ("pfa", "pfb") or not buf:
        return {}
    head = buf[:buf.find(b"eexec")] if b"eexec" in buf else buf[:20000]
    return {int(c): n.decode("latin-1") for c, n in _DUP.findall(head)}


def document_fonts(doc: Any) -> list[tuple]:
    """`doc.get_page_fonts` of every page, each font (xref) once, in the order the pages first
    list it: read once per document for `font_tables` and `parse_extension.extension_tables`."""
    seen: set[int] = set()
    out = []
    for pno in range(doc.page_count):
        for font in doc.get_page_fonts(pno):
            if font[0] not in seen:
                seen.add(font[0])
                out.append(font)
    return out


def font_tables(doc: Any, listed: list[tuple] | None = None) -> dict[str, dict[str, str]]:
    """font name (as MuPDF names it in spans: no subset prefix) -> {text-layer char: text}:
    - codes below 32 (raw codes: no Unicode) whose glyph names the AGL cannot map but the rules
      above can;
    - glyphs named `uXXXXX` beyond the Basic Multilingual Plane, which MuPDF reads without
      their plane digit ("u1D453", math italic f, comes out as the Hangul syllable U+D453):
      a substitution for this font only, since U+D453 in another font is a real syllable."""
    from fontTools import agl

    seen: set[int] = set()
    out: dict[str, dict[str, str]] = {}
    for xref, _ext, ftype, basefont, *_ in document_fonts(doc) if listed is None else listed:
        if xref in seen or ftype not in ("Type1", "MMType1", "TrueType", "Type3"):
            continue
        seen.add(xref)
        names = {**_builtin(doc, xref), **_differences(doc, xref)}
        table = {}
        for code, name in names.items():
            if (m := _ASTRAL.match(name)) and (value := int(m.group(1), 16)) > 0xFFFF:
                table[chr(value & 0xFFFF)] = chr(value)  # MuPDF dropped the plane digit
                continue
            if code >= 32 or agl.toUnicode(name):
                continue
            if text := name_to_text(name):
                table[chr(code)] = text
        if table:
            out.setdefault(basefont.split("+", 1)[-1], {}).update(table)
    return out
