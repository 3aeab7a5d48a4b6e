"""The glyph machinery the glyph-level passes share (`parse_stacked`: fractions and radicals,
`parse_delimited`: binomials, big operators, big delimiters): a page's glyphs read from MuPDF's raw
dict for the lines near its rules, the pool a pass takes glyphs from into rebuilt pieces, and the
rewriting of a JSON line from the glyphs and pieces it holds."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import Any

from .parse_math import GlyphMap, line_text

# a math extension font (TeX's cmex, its clones): its big radicals read as a letter ("q") or a
# raw code, so any glyph of it touching an overline's left end is taken as the sign
_EXTENSION_FONT = re.compile(r"(?:^|\+)(?:cm|lm|tx|px|ntx|npx|eu)?ex(?:\d+|[-_][\w-]*)?$|extension", re.I)


@dataclass(slots=True)
class ExtensionFonts:
    """One document's math extension fonts, by font name (subset prefix dropped), as its font
    programs' glyph names say (`parse_extension.extension_tables`). Per document, never shared:
    two books may embed same-named subsets of one font with different codes, so what a worker
    read from one must not change how it reads the next."""

    named: set[str] = field(default_factory=set)  # extension fonts by their glyph names, whatever they are called
    # font -> {char: delimiter}: kept out of the glyph maps (`parse_extension.with_extension`)
    delimiters: dict[str, dict[str, str]] = field(default_factory=dict)
    # font -> {char: how far a whole delimiter reaches under its origin, in units of its size}
    depths: dict[str, dict[str, float]] = field(default_factory=dict)
    # font -> {text-layer char: (delimiter, part)} for pieces whose names MuPDF does not know
    piece_codes: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)

    def knows(self, font: str) -> bool:
        return font in self.named or _extension_name(font)


# the document whose page is being read (`reading`, set by the parse stage around a page's
# passes); outside one, no font is known by its glyph names
_READING: ContextVar[ExtensionFonts | None] = ContextVar("extension_fonts", default=None)
_NONE = ExtensionFonts()  # (never filled)


def document_fonts() -> ExtensionFonts:
    """The extension fonts of the document being read (empty outside `reading`)."""
    return _READING.get() or _NONE


@contextmanager
def reading(fonts: ExtensionFonts) -> Iterator[ExtensionFonts]:
    """Read a page of the document whose extension fonts are `fonts` (reset on the way out)."""
    token = _READING.set(fonts)
    try:
        yield fonts
    finally:
        _READING.reset(token)


def is_extension(font: str) -> bool:
    """A math extension font, by its glyph names (the document being read) or its name (asked
    per glyph, many times)."""
    return font in (_READING.get() or _NONE).named or _extension_name(font)


@lru_cache(maxsize=1024)
def _extension_name(font: str) -> bool:
    return bool(_EXTENSION_FONT.search(font))


TOP = 0.7  # a glyph's visual top above its baseline, in units of its size (cap height: ~0.7)


@dataclass(slots=True, eq=False)
class Glyph:
    """One glyph (or a rebuilt fraction/radical: `atom`) of a page, in the JSON line `line`."""

    text: str
    x0: float
    x1: float
    oy: float  # baseline
    size: float
    font: str
    line: int
    top: float = 0.0  # visual top and bottom (atoms: their extent; glyphs: from size and baseline)
    bottom: float = 0.0
    atom: bool = False
    y0: float = 0.0  # MuPDF's box (for the rewritten line's box)
    y1: float = 0.0
    synthetic: bool = False  # a space MuPDF added at a gap (it takes a neighbour's font)
    blank: bool = field(init=False, default=False)

    @property
    def mid(self) -> float:
        return (self.x0 + self.x1) / 2

    def __post_init__(self) -> None:
        self.blank = not self.text.strip()


def reading_order(g: Glyph) -> float:
    """Where a glyph comes in its row: its middle (a kerned glyph may start before the end of the
    one before it: "ff" then "e" in "different"); a rebuilt piece, wide, by its start."""
    return g.x0 if g.atom else (g.x0 + g.x1) / 2


@dataclass(slots=True)
class Rule:
    x0: float
    x1: float
    y: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0


def page_rules(page: Any) -> list[Rule]:
    """Thin horizontal strokes and filled rectangles of a page (not white fills: backgrounds)."""
    rules = []
    widest = 0.5 * page.rect.width  # wider: a frame's edge or a section rule, not a fraction bar
    for path in page.get_cdrawings():
        x0, y0, x1, y1 = path["rect"]
        if y1 - y0 > 1.6 or not 2.0 <= x1 - x0 <= widest:
            continue
        color = path.get("color") if path.get("type") == "s" else path.get("fill")
        if color is not None and min(color) > 0.9:
            continue
        rules.append(Rule(x0, x1, (y0 + y1) / 2))
    return rules


def on_row(g: Glyph, row: float, size: float, reach: float) -> bool:
    """A glyph sits in the row whose baseline is `row`: its baseline within `reach` sizes; an
    extension glyph (a big ∫ or ∑: MuPDF gives it a line of its own) hangs from its origin,
    which lies above the row's baseline by up to about two sizes."""
    if is_extension(g.font) and not g.atom:
        return row - 2.2 * size < g.oy < row
    return abs(g.oy - row) < reach * size


class GlyphPool:
    """The page's glyphs by baseline (a rule looks only at its neighbourhood), less those taken
    into rebuilt pieces, plus those pieces."""

    def __init__(self, chars: list[Glyph]) -> None:
        self.chars = sorted(chars, key=lambda g: g.oy)
        self.oys = [g.oy for g in self.chars]
        self.atoms: list[Glyph] = []
        self.gone: set[int] = set()
        self.reach = 3 * max(g.size for g in chars)

    def near(self, y: float, below: float = 0.0) -> list[Glyph]:
        """The glyphs within reach of y, and down to `below` under it (a tall delimiter's rows)."""
        lo, hi = bisect_left(self.oys, y - self.reach), bisect_right(self.oys, y + max(self.reach, below))
        got = [g for g in self.chars[lo:hi] if id(g) not in self.gone]
        return got + [a for a in self.atoms if id(a) not in self.gone and -self.reach < a.oy - y < max(self.reach, below)]

    def take(self, atom: Glyph, members: list[Glyph]) -> None:
        self.gone.update(id(g) for g in members)
        self.atoms.append(atom)

    def absorb(self, atom: Glyph, lines: set[int], boxes: Sequence[tuple[float, float, float, float]] = ()) -> set[int]:
        """What is left of the lines a piece took glyphs from, and lines that end right before
        it or start right after it, join the piece's line when all they hold is on its row
        (MuPDF set "√", "3" and ", 5)" as lines of their own, and a fraction's row goes on in
        lines of their own), but not out of a box (x0, x1, y0, y1) of `boxes` the piece is not in
        (a cell of the matrix beside it). Returns the lines emptied so."""
        walls = [b for b in boxes if not (b[0] <= atom.mid <= b[1] and b[2] <= atom.oy <= b[3])]
        size = atom.size
        beside = {g.line for g in self.near(atom.oy) if not g.blank and on_row(g, atom.oy, size, 0.25)
                  and (-0.2 * size < g.x0 - atom.x1 < size or -0.2 * size < atom.x0 - g.x1 < size)}
        moved = set()
        others = (lines | beside) - {atom.line}
        by_line = self.of_lines(others)
        for li in others:
            rest = by_line[li]
            ink = [g for g in rest if not g.blank]
            all_on_row = all(on_row(g, atom.oy, size, 0.25 if g.atom or g.size >= 0.9 * size else 0.6)
                             for g in ink)  # scripts ride above or below it
            if walls and any(not g.atom and x0 < g.mid < x1 and y0 < g.oy < y1 for g in ink for x0, x1, y0, y1 in walls):
                continue
            if ink and all_on_row and (-0.2 * size < min(g.x0 for g in ink) - atom.x1 < 1.5 * size
                                       or -0.2 * size < atom.x0 - max(g.x1 for g in ink) < 1.5 * size):
                for g in rest:
                    g.line = atom.line
                moved.add(li)
        return moved

    def of_lines(self, wanted: set[int]) -> dict[int, list[Glyph]]:
        """The glyphs (and pieces, after them) left in each of the lines `wanted`: one pass."""
        out: dict[int, list[Glyph]] = {li: [] for li in wanted}
        for g in [g for g in (*self.chars, *self.atoms) if g.line in wanted and id(g) not in self.gone]:
            out[g.line].append(g)
        return out


_CHAR = itemgetter("c")


def span_text(span: dict) -> str:
    """A raw-dict span's text (joined in C; `PageExtraction` may have joined it already)."""
    text = span.get("text")
    return "".join(map(_CHAR, span["chars"])) if text is None else text


def page_glyphs(blocks: list[dict], raw_blocks: list[dict], table: GlyphMap,
            rules: list[Rule]) -> tuple[list[dict], list[Glyph]]:
    """JSON lines near a rule that agree with their raw-dict line, and the glyphs of those lines
    (only those: a page holds thousands)."""
    raw_text = [b for b in raw_blocks if b.get("type", 0) == 0]
    lines: list[dict] = []
    out: list[Glyph] = []
    if len(raw_text) != len(blocks):
        return lines, out
    by_y = sorted(rules, key=attrgetter("y"))  # a line asks only the rules within its reach in y
    ys = [r.y for r in by_y]
    for jb, rb in zip(blocks, raw_text, strict=True):
        if len(jb["lines"]) != len(rb.get("lines", [])):
            continue
        for jl, rl in zip(jb["lines"], rb["lines"], strict=True):
            x0, y0, x1, y1 = rl["bbox"]
            reach = 3 * (jl["font"]["size"] or 1.0)
            near = by_y[bisect_right(ys, y0 - reach):bisect_left(ys, y1 + reach)]
            if not any(y0 - reach < r.y < y1 + reach and x0 - reach < r.x1 and r.x0 < x1 + reach for r in near):
                continue
            if "".join([span_text(s) for s in rl["spans"]]) != jl["text"]:
                continue  # the two must agree
            li = len(lines)
            lines.append(jl)
            for s in rl["spans"]:
                fmap = table.get(s["font"], {})
                size, font = s["size"], s["font"]
                high = TOP * size
                for c in s["chars"]:  # (positional: this loop makes every glyph of the lines read)
                    bx0, by0, bx1, by1 = c["bbox"]
                    oy = c["origin"][1]
                    ch = c["c"]
                    out.append(Glyph(fmap.get(ch, ch), bx0, bx1, oy, size, font, li, oy - high, oy, False, by0, by1,
                                     c.get("synthetic", False)))
    return lines, out


def glyph_spans(ordered: list[Glyph], size: float | None = None) -> list[dict]:
    """MuPDF-like spans of glyphs in order: one per run of one font, size and baseline; a gap
    next to a rebuilt piece or an extension glyph (it had a line of its own) becomes a space,
    except inside a script (`size`: the line's text)."""
    spans: list[dict] = []
    prev: Glyph | None = None
    base: Glyph | None = None  # the last glyph that is no script of the one before it
    for g in ordered:
        last = spans[-1] if spans else None
        in_script = size is not None and max(g.size, prev.size if prev else 0) < 0.9 * size
        # a rebuilt piece set as a script of the glyph before it (a small fraction in an
        # exponent: thompson's `at^{\frac{3}{2}}`, `t^{−\frac{1}{3}}`) is apart from it by the
        # fraction's own null delimiter space (1.2 pt), no word space
        script = base is not None and _script_of(g, base)
        if prev is not None and (g.atom or prev.atom or is_extension(g.font) or is_extension(prev.font)) \
                and not (g.blank or prev.blank or in_script or script and g.atom) and g.x0 - prev.x1 > 0.15 * g.size:
            spans.append({"text": " ", "size": g.size, "font": "", "flags": 0, "origin": (prev.x1, g.oy),
                          "bbox": [prev.x1, g.y0, g.x0, g.y1], "atom": True})  # the gap a rebuilt piece had
            last = None
        prev = g
        if not g.blank and not script:
            base = g
        if last is not None and not g.atom and not last["atom"] and last["font"] == g.font \
                and last["size"] == g.size and abs(last["origin"][1] - g.oy) < 0.05 * g.size:
            last["text"] += g.text
            last["bbox"][2] = g.x1
            continue
        spans.append({"text": g.text, "size": g.size, "font": g.font, "flags": 0, "origin": (g.x0, g.oy),
                      "bbox": [g.x0, g.y0, g.x1, g.y1], "atom": g.atom})
    return spans


def _script_of(g: Glyph, base: Glyph) -> bool:
    """`g` is set as a script of `base`: smaller, its baseline off base's (as `parse_math` tells scripts)."""
    return g.size < 0.9 * base.size and abs(g.oy - base.oy) > 0.12 * base.size and not is_extension(base.font)


def rewrite_line(line: dict, members: list[Glyph]) -> None:
    """A JSON line's text and box from the glyphs (and rebuilt pieces) it now holds."""
    if not members or all(g.blank for g in members):
        line["text"] = ""
        return
    # glyph names were applied when the glyphs were read: no table here. The line's text size is
    # its biggest glyphs' (a rebuilt piece's long text must not make "u^{-1/2}" all script)
    # (of those near the biggest, the size most have: a big delimiter from a symbol font is not the text's)
    big = max((g.size for g in members if not (g.blank or g.atom or is_extension(g.font))), default=None)
    sizes = Counter(round(g.size, 2) for g in members
                    if not (g.blank or g.atom or is_extension(g.font)) and g.size >= 0.9 * (big or 0))
    top = max(sizes.values(), default=0)
    size = max((s for s, n in sizes.items() if n == top), default=None)
    line["text"] = line_text(glyph_spans(sorted(members, key=reading_order), size), size=size)
    if size:  # the line is now of its text's size (it may have started with a script)
        line["font"] = {**line["font"], "size": int(size)}  # whole points, as MuPDF's JSON sizes (truncated)
    x0, x1 = min(g.x0 for g in members), max(g.x1 for g in members)
    # an extension glyph's box is its font's ascent to descent, whatever it draws: not the line's
    ink = [g for g in members if not (g.blank or is_extension(g.font))] or members
    y0, y1 = min(g.y0 for g in ink), max(g.y1 for g in ink)
    # whole points, as MuPDF's JSON boxes are (truncated): a label's x is compared with others'
    line["bbox"] = {"x": int(x0), "y": int(y0), "w": int(x1 - x0), "h": int(y1 - y0)}
