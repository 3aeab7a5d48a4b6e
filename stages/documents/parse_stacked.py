"""Display fractions and radicals from rules and glyph positions: `\\frac{num}{den}`, `\\sqrt{x}`.

A text layer reads a display fraction row by row ("f(p/q) = p + 1" then "p −2") and a radical as
a stray "√" before its radicand; both are drawn with a rule (a thin horizontal line or filled
rectangle, `page.get_cdrawings()`) that the text layer does not have. The cues, none of them
tied to one book or font:
- a fraction bar is a rule with a row of glyphs sitting right on it and a row hanging right
  under it, both horizontally centred on the bar and no wider than it, the wider one spanning
  most of it, each holding a glyph of the fraction's text size, neither row continued just
  beyond the bar's ends (an underline, a footnote or table rule has text running past it), split
  by a wide gap (table cells) or stacked on further rows of its kind (column vectors);
- a radical is a "√" glyph (or any glyph of a math-extension font: TeX's big radicals read as
  letters) whose right edge touches the left end of a rule (its overline) at the glyph's top,
  with no extension glyph at the rule's other end (a brace's pieces); the radicand is what lies
  under the overline, an index ("∛") is a small glyph over the sign's left part.
Rules are taken narrowest first, so a radical inside a fraction (or a fraction inside a
radicand) is rebuilt before what holds it; each result is one piece of text placed in the line
of the glyph it follows on its row, lines left holding the rest of that row join it, and the
lines it took glyphs from are rewritten from what is left (`parse_math.line_text`, so scripts
inside a numerator, and a fraction in an exponent, are kept). Only pages with the cues pay for
this (`wants_stacked`, then rules next to text boxes): a "√" in the text, or a short line
stacked just above or below another line and centred in it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .parse_math import GlyphMap, line_text

# a math extension font (TeX's cmex, its clones): its big radicals read as a letter ("q") or a
# raw code, so any glyph of it touching an overline's left end is taken as the sign
_EXTENSION = re.compile(r"(?:^|\+)(?:cm|lm|tx|px|ntx|npx|eu)?ex(?:\d+|[-_][\w-]*)?$|extension", re.I)


@lru_cache(maxsize=1024)
def _extension(font: str) -> bool:
    """A math extension font's name (asked per glyph, many times: cached per name)."""
    return bool(_EXTENSION.search(font))


_TOP = 0.7  # a glyph's visual top above its baseline, in units of its size (cap height: ~0.7)


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


def wants_stacked(blocks: list[dict]) -> bool:
    """Cues for a fraction or radical on the page, from the text alone: a "√", or a short line
    alone on its row, stacked within ~1.7 of its size above or below another line and inside its extent, not
    aligned with it on the left (a paragraph's last line is; a denominator is centred), or
    two short lines of the same extent stacked so ("dy" over "dx")."""
    lines = []
    for b in blocks:
        for ln in b["lines"]:
            if "√" in ln["text"]:
                return True
            bb = ln["bbox"]
            lines.append((ln["y"], bb["x"], bb["x"] + bb["w"], ln["font"]["size"] or 1.0))
    lines.sort()
    for i, (y, x0, x1, size) in enumerate(lines):
        if x1 - x0 > 14 * size:
            continue
        window = range(max(i - 6, 0), min(i + 7, len(lines)))
        if any(k != i and abs(lines[k][0] - y) < 0.2 * size and lines[k][1] - 1.5 * size < x1
               and x0 < lines[k][2] + 1.5 * size for k in window):
            continue  # a piece of a running line (a formula set apart by MuPDF), not a row of its own
        for k in window:
            oy, ox0, ox1, _ = lines[k]
            if k == i or not 0.3 * size < abs(oy - y) < 1.7 * size:
                continue
            inside = ox0 + 0.5 * size < x0 and x1 < ox1 + 0.5 * size  # centred under or over it
            same = abs(ox0 - x0) < 0.5 * size and abs(ox1 - x1) < 0.5 * size and ox1 - ox0 < 14 * size
            if inside or same:
                return True
    return False


def rebuild_stacked(page: Any, textpage: Any, blocks: list[dict], glyphs: GlyphMap | None = None) -> int:
    """Rewrite, in place, the lines of `blocks` (MuPDF's JSON lines of `textpage`) that hold
    display fractions or radicals. Returns how many were rebuilt. Each step runs only where the
    one before found cues: the text's (`wants_stacked`), then rules with text boxes right above
    and below them (or a "√" at their left end), then the glyph-level rebuild. `textpage`: a
    MuPDF text page, or a `parse_math.PageExtraction` of it (which keeps the glyphs for the span pass)."""
    if not wants_stacked(blocks):
        return 0
    rules = _near_text(page_rules(page), blocks)
    if not rules:
        return 0
    return rebuild_from(blocks, textpage.extractRAWDICT()["blocks"], rules, glyphs)


def _near_text(rules: list[Rule], blocks: list[dict]) -> list[Rule]:
    """Rules that text boxes reach from above and from below, or that start at a line with a "√"."""
    boxes = []
    for b in blocks:
        for ln in b["lines"]:
            bb = ln["bbox"]
            boxes.append((bb["x"], bb["y"], bb["x"] + bb["w"], bb["y"] + bb["h"], ln["font"]["size"] or 1.0,
                          "√" in ln["text"] or bool(_extension(ln["font"].get("name", "")))))
    keep = []
    for r in rules:
        above = below = False
        for x0, y0, x1, y1, size, sign in boxes:
            if x1 < r.x0 - size or x0 > r.x1 + size or y1 < r.y - 2 * size or y0 > r.y + 2 * size:
                continue
            if sign and x0 - size <= r.x0 <= x1 + size:
                above = below = True
            above = above or (y0 < r.y - 0.3 * size and y1 > r.y - 1.2 * size)
            below = below or (y1 > r.y + 0.3 * size and y0 < r.y + 1.2 * size)
            if above and below:
                keep.append(r)
                break
    return keep


def _on_row(g: Glyph, row: float, size: float, reach: float) -> bool:
    """A glyph sits in the row whose baseline is `row`: its baseline within `reach` sizes; an
    extension glyph (a big ∫ or ∑: MuPDF gives it a line of its own) hangs from its origin,
    which lies above the row's baseline by up to about two sizes."""
    if _extension(g.font) and not g.atom:
        return row - 2.2 * size < g.oy < row
    return abs(g.oy - row) < reach * size


class _Pool:
    """The page's glyphs by baseline (a rule looks only at its neighbourhood), less those taken
    into rebuilt pieces, plus those pieces."""

    def __init__(self, chars: list[Glyph]) -> None:
        self.chars = sorted(chars, key=lambda g: g.oy)
        self.oys = [g.oy for g in self.chars]
        self.atoms: list[Glyph] = []
        self.gone: set[int] = set()
        self.reach = 3 * max(g.size for g in chars)

    def near(self, y: float) -> list[Glyph]:
        lo, hi = bisect_left(self.oys, y - self.reach), bisect_right(self.oys, y + self.reach)
        got = [g for g in self.chars[lo:hi] if id(g) not in self.gone]
        return got + [a for a in self.atoms if id(a) not in self.gone and abs(a.oy - y) < self.reach]

    def take(self, atom: Glyph, members: list[Glyph]) -> None:
        self.gone.update(id(g) for g in members)
        self.atoms.append(atom)

    def absorb(self, atom: Glyph, lines: set[int]) -> set[int]:
        """What is left of the lines a piece took glyphs from, and lines that end right before
        it or start right after it, join the piece's line when all they hold is on its row
        (MuPDF set "√", "3" and ", 5)" as lines of their own, and a fraction's row goes on in
        lines of their own). Returns the lines emptied so."""
        size = atom.size
        beside = {g.line for g in self.near(atom.oy) if not g.blank and _on_row(g, atom.oy, size, 0.25)
                  and (-0.2 * size < g.x0 - atom.x1 < size or -0.2 * size < atom.x0 - g.x1 < size)}
        moved = set()
        others = (lines | beside) - {atom.line}
        by_line = self.of_lines(others)
        for li in others:
            rest = by_line[li]
            ink = [g for g in rest if not g.blank]
            on_row = all(_on_row(g, atom.oy, size, 0.25 if g.atom or g.size >= 0.9 * size else 0.6)
                         for g in ink)  # scripts ride above or below it
            if ink and on_row and (-0.2 * size < min(g.x0 for g in ink) - atom.x1 < 1.5 * size
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


def rebuild_from(blocks: list[dict], raw_blocks: list[dict], rules: list[Rule], glyphs: GlyphMap | None) -> int:
    lines, chars = _glyphs(blocks, raw_blocks, glyphs or {}, rules)
    if not chars:
        return 0
    pool = _Pool(chars)
    touched: set[int] = set()
    sources: dict[int, set[int]] = {}  # a piece -> the lines it took glyphs from
    for rule in sorted(rules, key=lambda r: r.width):  # narrowest first: what is inside comes first
        near = pool.near(rule.y)
        found = _radical(rule, near) or _fraction(rule, near, rules)
        if found is not None:
            atom, members = found
            pool.take(atom, members)
            sources[id(atom)] = {g.line for g in members}
            touched.update(sources[id(atom)])
            touched.add(atom.line)
    for atom in sorted(pool.atoms, key=lambda a: a.x0):  # rows made whole once every piece is built
        if id(atom) not in pool.gone:
            touched |= pool.absorb(atom, sources[id(atom)])
    by_line = pool.of_lines(touched)
    for li in touched:
        _rewrite(lines[li], by_line[li])
    return len(pool.atoms)


def _glyphs(blocks: list[dict], raw_blocks: list[dict], table: GlyphMap,
            rules: list[Rule]) -> tuple[list[dict], list[Glyph]]:
    """JSON lines near a rule that agree with their raw-dict line, and the glyphs of those lines
    (only those: a page holds thousands)."""
    raw_text = [b for b in raw_blocks if b.get("type", 0) == 0]
    lines: list[dict] = []
    out: list[Glyph] = []
    if len(raw_text) != len(blocks):
        return lines, out
    for jb, rb in zip(blocks, raw_text, strict=True):
        if len(jb["lines"]) != len(rb.get("lines", [])):
            continue
        for jl, rl in zip(jb["lines"], rb["lines"], strict=True):
            x0, y0, x1, y1 = rl["bbox"]
            reach = 3 * (jl["font"]["size"] or 1.0)
            if not any(y0 - reach < r.y < y1 + reach and x0 - reach < r.x1 and r.x0 < x1 + reach for r in rules):
                continue
            if "".join(c["c"] for s in rl["spans"] for c in s["chars"]) != jl["text"]:
                continue  # the two must agree
            li = len(lines)
            lines.append(jl)
            for s in rl["spans"]:
                fmap = table.get(s["font"], {})
                size, font = s["size"], s["font"]
                for c in s["chars"]:
                    bx0, by0, bx1, by1 = c["bbox"]
                    oy = c["origin"][1]
                    out.append(Glyph(fmap.get(c["c"], c["c"]), bx0, bx1, oy, size, font, li,
                                     top=oy - _TOP * size, bottom=oy, y0=by0, y1=by1,
                                     synthetic=c.get("synthetic", False)))
    return lines, out


def _em(rule: Rule, chars: list[Glyph]) -> float:
    """The text size of a fraction's rows: the biggest size of the glyphs sitting on the bar or
    hanging under it (its scripts are smaller, and may be more: "r^{3/2}"; lines of prose
    farther off do not count), leaving out extension-font glyphs (big operators)."""
    return max((round(g.size, 1) for g in chars
                if not g.blank and rule.x0 <= g.mid <= rule.x1 and not _extension(g.font)
                and (0.05 * g.size < rule.y - g.oy < 0.85 * g.size
                     or -0.3 * g.size < g.oy - _TOP * g.size - rule.y < 0.55 * g.size)), default=0.0)


def _row(members: list[Glyph]) -> float:
    """The baseline most of a row's glyphs sit on."""
    return Counter(round(g.oy, 1) for g in members if not g.blank).most_common(1)[0][0]


def _text(members: list[Glyph]) -> str:
    """A numerator's (radicand's...) text, its scripts written as `parse_math` writes them; its
    text size is its biggest glyphs' (few glyphs: "x^{-5}" has more in the script)."""
    spans = _spans(sorted(members, key=reading_order))
    size = max((g.size for g in members if not g.blank), default=None)
    return " ".join(line_text(spans, size=size).split())


def _spans(ordered: list[Glyph], size: float | None = None) -> list[dict]:
    """MuPDF-like spans of glyphs in order: one per run of one font, size and baseline; a gap
    next to a rebuilt piece or an extension glyph (it had a line of its own) becomes a space,
    except inside a script (`size`: the line's text)."""
    spans: list[dict] = []
    prev: Glyph | None = None
    for g in ordered:
        last = spans[-1] if spans else None
        in_script = size is not None and max(g.size, prev.size if prev else 0) < 0.9 * size
        if prev is not None and (g.atom or prev.atom or _extension(g.font) or _extension(prev.font)) \
                and not (g.blank or prev.blank or in_script) and g.x0 - prev.x1 > 0.15 * g.size:
            spans.append({"text": " ", "size": g.size, "font": "", "flags": 0, "origin": (prev.x1, g.oy),
                          "bbox": [prev.x1, g.y0, g.x0, g.y1], "atom": True})  # the gap a rebuilt piece had
            last = None
        prev = g
        if last is not None and not g.atom and not last["atom"] and last["font"] == g.font \
                and last["size"] == g.size and abs(last["origin"][1] - g.oy) < 0.05 * g.size:
            last["text"] += g.text
            last["bbox"][2] = g.x1
            continue
        spans.append({"text": g.text, "size": g.size, "font": g.font, "flags": 0, "origin": (g.x0, g.oy),
                      "bbox": [g.x0, g.y0, g.x1, g.y1], "atom": g.atom})
    return spans


def _full(glyphs: list[Glyph], em: float) -> list[Glyph]:
    """The glyphs of text size (or rebuilt pieces), or all when there are none: not scripts."""
    return [g for g in glyphs if g.atom or g.size >= 0.9 * em] or glyphs


def _gapless(members: list[Glyph], em: float) -> bool:
    """No gap wider than a table's between cells (fractions, radicands: math spacing only)."""
    ink = sorted((g for g in members if not g.blank), key=lambda g: g.x0)
    return all(b.x0 - a.x1 < 1.0 * em for a, b in zip(ink, ink[1:], strict=False))


def _fraction(rule: Rule, chars: list[Glyph], rules: list[Rule]) -> tuple[Glyph, list[Glyph]] | None:
    em = _em(rule, chars)
    if not em or rule.width < 0.3 * em:
        return None
    lo, hi = rule.x0 - 0.15 * em, rule.x1 + 0.15 * em
    inside = [g for g in chars if lo <= g.mid <= hi and (not g.blank or lo <= g.x0 and g.x1 <= hi)]
    # numerator: its lowest row sits on the bar (baseline within ~an em above), scripts over it
    base = [g for g in inside if not g.blank and rule.y - 0.95 * em < g.bottom < rule.y - 0.05 * em]
    if not base:
        return None
    num_row = max(g.oy for g in _full(base, em))  # the lowest baseline above the bar (not a subscript's)
    num = [g for g in inside if num_row - 0.9 * em < g.bottom <= num_row + 0.3 * em and g.bottom < rule.y
           and (abs(g.oy - num_row) < 0.15 * em or g.atom or g.size < 0.9 * em)]
    # denominator: its top row just under the bar, scripts under or beside it
    under = [g for g in inside if not g.blank and g.top > rule.y - 0.3 * em and g.top < rule.y + 0.55 * em]
    if not under:
        return None
    den_row = min(g.oy for g in _full(under, em))  # the highest baseline under it (not an exponent's)
    den = [g for g in inside if g.top > rule.y - 0.3 * em and g.oy < den_row + 0.4 * em
           and (abs(g.oy - den_row) < 0.15 * em or g.atom or g.size < 0.9 * em)]
    ink_num = [g for g in num if not g.blank]
    ink_den = [g for g in den if not g.blank]
    if not ink_num or not ink_den or not all(any(g.atom or g.size >= 0.9 * em for g in part) for part in (ink_num, ink_den)):
        return None  # a row of scripts alone (the next line's exponents under an underline) is no numerator
    widths = []
    for part in (ink_num, ink_den):
        a, b = min(g.x0 for g in part), max(g.x1 for g in part)
        if b - a > rule.width + 0.4 * em or abs((a + b) - (rule.x0 + rule.x1)) / 2 > 0.2 * rule.width + 0.4 * em:
            return None  # not centred on the bar, or wider than it
        widths.append(b - a)
    if max(widths) < 0.55 * rule.width or not (_gapless(ink_num, em) and _gapless(ink_den, em)):
        return None
    members = num + den
    taken = {id(g) for g in members}
    # rows that run past the bar (on any baseline of the part; a big bracket beside it does not count)
    for part in (ink_num, ink_den):
        a, b = min(g.x0 for g in part), max(g.x1 for g in part)
        rows = {g.oy for g in part}
        for g in chars:
            if id(g) not in taken and not g.blank and not g.atom and not _extension(g.font) \
                    and (a - 0.4 * em < g.x1 <= a + 0.1 * em or b - 0.1 * em <= g.x0 < b + 0.4 * em) \
                    and any(abs(g.oy - row) < 0.15 * em for row in rows):
                return None
    others = [r for r in rules if r is not rule]
    if _more_rows(inside, chars, taken, num_row, -1, em, others) or _more_rows(inside, chars, taken, den_row, 1, em,
                                                                              others):
        return None  # a numerator or denominator of several rows (vectors, determinants): not rebuilt
    text = f"\\frac{{{_text(num)}}}{{{_text(den)}}}"
    axis = rule.y + 0.25 * em  # the baseline of the row the fraction sits in
    host = _beside(chars, taken, axis, rule.x0, rule.x1, em)
    line = host.line if host is not None else min(ink_num, key=lambda g: g.x0).line
    oy, size = (host.oy, host.size) if host is not None else (axis, em)
    return _atom(text, members, line, oy, size, rule), members


def _more_rows(inside: list[Glyph], chars: list[Glyph], taken: set[int], row: float, away: int, em: float,
               others: list[Rule]) -> bool:
    """Another row of glyphs over the bar stacked beyond `row` (away from the bar) that, like a
    numerator's, stops at the bar's ends; a line of prose there runs past them, and the next
    row of a display has bars of its own."""
    more = [g for g in inside if id(g) not in taken and g.text.isalnum() and g.size >= 0.9 * em
            and 0.5 * em < (g.oy - row) * away < 1.35 * em
            and not any(r.x0 - 0.2 * em <= g.mid <= r.x1 + 0.2 * em and -0.8 * em < g.oy - r.y < 1.4 * em
                        for r in others)]
    if not more:
        return False
    a, b = min(g.x0 for g in more), max(g.x1 for g in more)
    rows = {g.oy for g in more}
    ids = {id(g) for g in more}
    return not any(id(g) not in ids and not g.blank and (a - 0.6 * em < g.x1 <= a + 0.1 * em or b - 0.1 * em <= g.x0 < b + 0.6 * em)
                   and any(abs(g.oy - r) < 0.15 * em for r in rows) for g in chars)


def _radical(rule: Rule, chars: list[Glyph]) -> tuple[Glyph, list[Glyph]] | None:
    signs = [g for g in chars if (g.text == "√" or len(g.text) == 1 and _extension(g.font))
             and abs(g.x1 - rule.x0) <= 0.3 * g.size
             and g.top - 0.35 * g.size <= rule.y <= g.oy + 0.6 * g.size]
    if not signs:
        return None
    sign = min(signs, key=lambda g: abs(g.x1 - rule.x0))
    em = sign.size
    if sign.text != "√" and any(_extension(g.font) and abs(g.x0 - rule.x1) <= 0.3 * em
                                and abs(g.oy - sign.oy) < 0.5 * em for g in chars):
        return None  # pieces at both ends of the rule: a brace ("{", rule, "z", rule, "}"), not a root
    under = [g for g in chars if g is not sign and rule.x0 - 0.1 * em <= g.mid <= rule.x1 + 0.1 * em
             and g.bottom > rule.y + 0.1 * em and g.top > rule.y - 0.35 * em and g.bottom < rule.y + 1.8 * em]
    ink = [g for g in under if not g.blank]
    if not ink:
        return None
    row = _row(ink)
    radicand = [g for g in under if g.bottom <= row + 0.4 * em]
    index = [g for g in chars if g is not sign and not g.blank and g.size < 0.8 * em and g not in radicand
             and sign.x0 - 0.3 * em <= g.mid <= sign.x0 + 0.6 * (sign.x1 - sign.x0)
             and rule.y - 0.3 * em < g.oy < max(sign.oy + 1.0 * em, row)]
    # TeX kerns an index into the sign: its right edge ends ~0.55 em right of the sign's left
    # edge, whatever its width; an exponent of the glyph before the sign ("2^n√5") ends at it
    if index and not 0.25 * em <= max(g.x1 for g in index) - sign.x0 <= sign.x1 - sign.x0 + 0.1 * em:
        index = []
    inner = _text(radicand)
    text = f"\\sqrt[{_text(index)}]{{{inner}}}" if index else f"\\sqrt{{{inner}}}"
    members = [sign, *radicand, *index]
    host = _beside(chars, {id(g) for g in members}, row, min(g.x0 for g in (sign, *index)), rule.x1, em)
    line = host.line if host is not None else min((g for g in radicand if not g.blank), key=lambda g: g.x0).line
    atom = _atom(text, members, line, row, max(g.size for g in ink), rule)
    # the overline is its top: the sign's glyph box (a big glyph hung from the rule) says little
    atom.top, atom.y0 = rule.y, min(rule.y - 0.1 * em, *(g.y0 for g in ink))
    return atom, members


def _beside(chars: list[Glyph], taken: set[int], row: float, x0: float, x1: float, em: float) -> Glyph | None:
    """The glyph a rebuilt piece spanning x0..x1 on the row at baseline `row` follows in the
    text (the nearest on its left), else the one it precedes (on its right): its line hosts it."""
    near = [g for g in chars if id(g) not in taken and not g.blank and abs(g.oy - row) < 0.3 * em]
    left = [g for g in near if x0 - 2 * em <= g.x1 <= x0 + 0.2 * em]
    right = [g for g in near if x1 - 0.2 * em <= g.x0 <= x1 + 2 * em]
    return max(left, key=lambda g: g.x1, default=None) or min(right, key=lambda g: g.x0, default=None)


def _atom(text: str, members: list[Glyph], line: int, oy: float, size: float, rule: Rule) -> Glyph:
    ink = [g for g in members if not g.blank]  # a space MuPDF put after a glyph is no part of it
    x0 = min(rule.x0, *(g.x0 for g in ink))
    x1 = max(rule.x1, *(g.x1 for g in ink))
    # its bottom is its row's baseline (a fraction over a bar is judged by its row, not by its
    # denominator); its box is its glyphs' boxes
    return Glyph(text, x0, x1, oy, size, "", line, top=min(g.top for g in members), bottom=oy, atom=True,
                 y0=min(g.y0 for g in ink), y1=max(g.y1 for g in ink))


def _rewrite(line: dict, members: list[Glyph]) -> None:
    """A JSON line's text and box from the glyphs (and rebuilt pieces) it now holds."""
    if not members or all(g.blank for g in members):
        line["text"] = ""
        return
    # glyph names were applied when the glyphs were read: no table here. The line's text size is
    # its biggest glyphs' (a rebuilt piece's long text must not make "u^{-1/2}" all script)
    # (of those near the biggest, the size most have: a big delimiter from a symbol font is not the text's)
    big = max((g.size for g in members if not (g.blank or g.atom or _extension(g.font))), default=None)
    sizes = Counter(round(g.size, 2) for g in members
                    if not (g.blank or g.atom or _extension(g.font)) and g.size >= 0.9 * (big or 0))
    top = max(sizes.values(), default=0)
    size = max((s for s, n in sizes.items() if n == top), default=None)
    line["text"] = line_text(_spans(sorted(members, key=reading_order), size), size=size)
    if size:  # the line is now of its text's size (it may have started with a script)
        line["font"] = {**line["font"], "size": int(size)}  # whole points, as MuPDF's JSON sizes (truncated)
    x0, x1 = min(g.x0 for g in members), max(g.x1 for g in members)
    # an extension glyph's box is its font's ascent to descent, whatever it draws: not the line's
    ink = [g for g in members if not (g.blank or _extension(g.font))] or members
    y0, y1 = min(g.y0 for g in ink), max(g.y1 for g in ink)
    # whole points, as MuPDF's JSON boxes are (truncated): a label's x is compared with others'
    line["bbox"] = {"x": int(x0), "y": int(y0), "w": int(x1 - x0), "h": int(y1 - y0)}
