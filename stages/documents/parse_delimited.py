"""Binomials and big operators with their limits, from glyph positions: `\\binom{n}{k}`, `\\sum_{k=1}^{n}`.

A text layer reads `\\binom{n}{0}^2` as the rows "n", "0" and a stray "!2", and `\\sum_{k=1}^{n}`
as "X", "n" and "k=1" on three lines; a textstyle binomial's two small stacked rows even read
as a small fraction. The glyphs of a math extension font say which are delimiters and operators
(`parse_extension`: their glyph names); the rest is geometry, with cues that do not depend on
one book:
- a binomial is a left and a right parenthesis of one size, with exactly two rows between them
  and nothing else: stacked (their centres aligned), each one run of glyphs with no table gap,
  no rule between them (that is a fraction in parentheses, `parse_stacked`'s), spaced as TeX
  spaces a binomial's rows and not as it spaces a two-row column vector's: TeX puts the rows of
  a display binomial ~1.36 of their size apart (its fonts' num1 + denom1 parameters), of a
  textstyle one (rows at script size) ~1.1, and a matrix's rows a line apart (1.2-1.33 in the
  books measured), and numbers that can be a binomial coefficient's (not 2 over 3). A column
  vector set with a binomial's spacing (Hefferon's inline vectors) cannot be told from one by
  geometry, and is read as one. Anything else stays as it is;
- a big operator's limits are small rows centred on it right above its top (the glyph's origin:
  extension glyphs hang from it) and right under the row it sits in; an integral's are small
  glyphs just right of it, raised (upper) or lowered (lower).
- a big pair around a line the fraction pass rewrote (its glyphs are no longer readable) and
  nothing else: one piece wrapping that line's text, with the small glyphs right after the right
  one as its scripts (`(1 + \\frac{1}{n})^{n}`); the right one may be in that line as a raw code.
Each result is one piece in the line of the glyph it follows (`parse_stacked`'s pool, which
also rewrites the lines it took glyphs from). Only pages that use an extension font pay.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable
from typing import Any

from .parse_extension import OPERATORS, PIECES
from .parse_glyph_pool import (
    Glyph,
    GlyphPool,
    Rule,
    document_fonts,
    glyph_spans,
    is_extension,
    page_glyphs,
    page_rules,
    reading_order,
    rewrite_line,
)
from .parse_math import GlyphMap, line_text
from .parse_pieces import tall_delimiters, vertical_bars, vertical_dots

_DISPLAY_GAP = (1.33, 1.42)  # a display binomial's row distance, in units of its rows' size
_TEXT_GAP = (0.98, 1.2)  # a textstyle binomial's (rows at script size: smaller than the parentheses)
_SCRIPT = 0.85  # a row this much smaller than its parentheses is at script size


def rebuild_delimited(page: Any, textpage: Any, blocks: list[dict], glyphs: GlyphMap | None) -> int:
    """Rewrite, in place, the lines of `blocks` that hold math extension glyphs: binomials and
    operators with limits rebuilt, the other whole glyphs (big delimiters) as their symbols.
    Returns how many pieces were rebuilt. `textpage`: a MuPDF text page or a
    `parse_math.PageExtraction` of it."""
    fonts = document_fonts()
    ext = {font for font in (*(glyphs or ()), *fonts.delimiters) if is_extension(font)}
    if not ext or not ext & {f[3].split("+", 1)[-1] for f in page.get_fonts()}:
        return 0
    raw = textpage.extractRAWDICT()["blocks"]
    seeds = []  # where the extension glyphs are: the lines near them are read glyph by glyph
    for b in raw:
        for ln in b.get("lines", ()):
            for s in ln["spans"]:
                if s["font"] not in ext:
                    continue
                x0, y0, x1, y1 = s["bbox"]
                codes = fonts.piece_codes.get(s["font"], ())
                if any(c["c"] in PIECES or c["c"] in codes for c in s["chars"]):
                    # a piece: the matrix it bounds may be wider than the reach of its glyphs
                    # (its partner's seeds reach the other half), and its scripts sit at its ends
                    wide = 12 * s["size"]
                    seeds += [Rule(x0 - wide, x1 + wide, y) for y in (y0, (y0 + y1) / 2, y1)]
                elif any(c["c"] in OPERATORS or c["c"] in fonts.delimiters.get(s["font"], ())
                         or c["c"] in (glyphs or {}).get(s["font"], ()) for c in s["chars"]):
                    # (a left brace's cases run on to its right: their conditions a quad or more off)
                    brace = any(fonts.delimiters.get(s["font"], {}).get(c["c"]) == "{" for c in s["chars"])
                    seeds.append(Rule(x0, x1 + (12 * s["size"] if brace else 0), (y0 + y1) / 2))
    if not seeds:
        return 0
    lines, chars = page_glyphs(blocks, raw, glyphs, seeds)
    if not chars:
        return 0
    raw_text = _delimiters(chars, ext)
    tall = tall_delimiters(chars, ext)  # delimiters stacked from pieces: the top piece stands for each
    if tall:
        vertical_dots(chars)  # a tall matrix's "and so on" rows
    rest = {id(g): others for g, _, others, _ in tall}  # its other pieces go wherever it goes
    raw_text.update({g: (text, g.line) for g, text, _, _ in tall})
    bars = vertical_bars(chars, ext)  # (before the pool: a bar is a glyph of its row)
    pool = GlyphPool(chars)
    touched = {g.line for g in chars if g.font in ext and g.text in OPERATORS} | bars
    sources: dict[int, set[int]] = {}
    rules: list[Rule] | None = None

    def place(found: tuple[Glyph, list[Glyph]] | None) -> None:
        if found is not None:
            atom, members = found
            members = members + [p for g in members if id(g) in rest for p in rest[id(g)]]
            pool.take(atom, members)
            sources[id(atom)] = {g.line for g in members}
            touched.update(sources[id(atom)] | {atom.line})

    # operators first (a sum inside parentheses is one piece of their row), then binomials, then
    # the other delimiter pairs around one row, narrowest first (inner pairs before outer ones)
    ops = sorted((g for g in chars if g.font in ext and g.text in OPERATORS), key=lambda g: g.x0)
    for op in ops:
        found = _limits(op, pool.near(op.oy), ops)
        if found is None and _before_rebuilt(op, lines, blocks, pool):
            continue
        place(found)
    lefts = sorted((g for g in raw_text if g.text in _PAIRS), key=lambda g: g.x0)
    depths = {id(g): fonts.depths.get(g.font, {}).get(raw, 3.1) for g, (raw, _) in raw_text.items()}
    depths.update({id(g): depth for g, _, _, depth in tall})

    def reach(left: Glyph) -> float:  # how far under its origin a delimiter's rows may lie
        return (depths[id(left)] + 0.5) * left.size
    read = {id(ln) for ln in lines}
    unread = [(bb["x"] + bb["w"] / 2, ln["y"]) for b in blocks for ln in b["lines"]
              if id(ln) not in read and ln["text"].strip() and (bb := ln["bbox"])]
    # the page's evidence for its two-row stacks in parentheses: the pitch it sets stacks of 3+
    # rows at in them (vectors, matrices); a two-row stack at that pitch is a vector, not \binom
    # where delimiters stacked from pieces enclose what they hold: no glyph inside one is a host
    # of a piece outside it (a matrix's cell on the row of the matrix beside it)
    delims = list(raw_text)  # (a delimiter's partner is one of them: asked of them, not of every glyph)
    tops = [g for g, *_ in tall]
    boxes = [(left.x1, right.x0, left.oy, left.oy + depths[id(left)] * left.size) for left in tops
             if left.text in _PAIRS and (right := _partner(left, tops)) is not None]
    pitches = [got[2] for left in lefts if left.text == "("
               and (got := _stack(left, pool.near(left.oy, reach(left)), depths[id(left)], unread, boxes, shape=True)) is not None
               and (got[3] >= 3 or got[4] >= 2)]
    for left in lefts:
        if left.text == "(" and id(left) not in pool.gone:
            near = pool.near(left.oy, reach(left))
            if pitches and (vector := _column(left, near, depths[id(left)], pitches, unread, boxes)) is not None:
                place(vector)
                continue
            found = _binomial(left, near, depths[id(left)])
            if found is not None:
                rules = page_rules(page) if rules is None else rules
                if _ruled(found[1], rules):
                    found = None  # a fraction in parentheses
            place(found)
    for left in sorted(lefts, key=lambda g: _width(g, delims)):
        if id(left) not in pool.gone:
            near = pool.near(left.oy, reach(left))
            pieces = _pair(left, near, depths[id(left)]) or list(filter(None, [_column(left, near, depths[id(left)], pitches, unread, boxes)]))
            for piece in pieces or filter(None, [_around_rebuilt(left, near, lines, blocks)]):
                place(piece)
    for left in lefts:  # a left brace alone: `cases`
        if left.text == "{" and id(left) not in pool.gone:
            place(_cases(left, pool.near(left.oy, reach(left)), depths[id(left)], unread))
    for atom in sorted(pool.atoms, key=lambda a: a.x0):
        if id(atom) not in pool.gone:
            touched |= pool.absorb(atom, sources[id(atom)], boxes)
    for g, (text, line) in raw_text.items():
        # delimiters no piece took stay as the text layer has them, unless a piece's row took them in
        if id(g) not in pool.gone and g.line == line:
            g.text, g.blank = text, not text.strip()
    by_line = pool.of_lines(touched)
    for li in touched:
        rewrite_line(lines[li], by_line[li])
    return len(pool.atoms)


def _delimiters(chars: list[Glyph], ext: set[str]) -> dict[Glyph, tuple[str, int]]:
    """Extension glyphs that are whole delimiters get their symbol (for `_binomial`); returns
    their text-layer text and line. Code 32 (`parenleftBigg`) reads as a space, as the spaces MuPDF adds
    at gaps read (in a neighbour's font): those are flagged synthetic."""
    raw: dict[Glyph, tuple[str, int]] = {}
    delimiters = document_fonts().delimiters
    for g in chars:
        symbol = delimiters.get(g.font, {}).get(g.text) if g.font in ext and not g.synthetic else None
        if symbol is None:
            continue
        raw[g] = (g.text, g.line)
        g.text, g.blank = symbol, False
    return raw


Boxes = list[tuple[float, float, float, float]] | tuple[()]  # (x0, x1, y0, y1) each
_OPERATOR_SIGNS = frozenset("+−-=·×±<>≤≥")
_PAIRS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⌊": "⌋", "⌈": "⌉"}


def _partner(left: Glyph, near: list[Glyph]) -> Glyph | None:
    """The delimiter closing `left`: the nearest of its font, size and height to its right."""
    close = _PAIRS[left.text]
    rights = [g for g in near if g.text == close and g.font == left.font and abs(g.oy - left.oy) < 0.05 * left.size
              and abs(g.size - left.size) < 0.05 * left.size and g.x0 > left.x1]
    return min(rights, key=lambda g: g.x0, default=None)


def _width(left: Glyph, chars: list[Glyph]) -> float:
    right = _partner(left, chars) if left.text in _PAIRS else None
    return right.x0 - left.x1 if right is not None else float("inf")


def _pair(left: Glyph, near: list[Glyph], depth: float = 3.0) -> list[tuple[Glyph, list[Glyph]]]:
    """A big delimiter pair around one row of text (`\\Big( x + 1 \\Big)^2`): each delimiter a
    piece of that row; none around several rows (a matrix: `parse_matrix` reads its rows). `depth`:
    how far it reaches under its origin (a delimiter stacked from pieces reaches farther)."""
    right = _partner(left, near)
    if right is None:
        return []
    size = left.size
    reach, axis = max(3.1, depth + 0.1), max(2.0, 0.67 * depth)
    # between the pair, down to a \\Bigg one's depth
    inside = [g for g in near if not g.blank and g is not left and g is not right
              and left.x1 - 0.1 * size <= g.mid <= right.x0 + 0.1 * size
              and left.oy - 0.3 * size < g.oy < left.oy + reach * size and not is_extension(g.font)]
    # the row: a delimiter is centred on its row's axis, so the row's baseline lies from a little
    # under its top (a \\big one) to ~1.8 of its size under it (a \\Bigg one), about 2/3 down a taller one
    full = [g for g in inside if (g.atom or g.size >= 0.8 * size) and g.oy < left.oy + axis * size]
    if not full:
        return []
    row = Counter(round(g.oy, 1) for g in full).most_common(1)[0][0]
    em = max(g.size for g in full)
    # a line of text passing above or below (not the row's own) runs on outside the pair
    passing = {(g.line, round(g.oy)) for g in near if not g.blank and (g.x1 < left.x0 or g.x0 > right.x1)
               and abs(g.oy - row) > 0.2 * em and left.oy - 0.3 * size < g.oy < left.oy + reach * size}
    inside = [g for g in inside if (g.line, round(g.oy)) not in passing]
    if any(abs(g.oy - row) > 0.2 * em for g in inside if g.atom or g.size >= 0.8 * size):
        return []  # rows stacked inside: a matrix, a vector
    ordered = sorted(inside, key=lambda g: g.x0)
    # (around a delimiter stacked from pieces, rebuilt pieces in lines of their own may join one
    # line of glyphs: lebl's det([..] − λ[..]))
    own = {g.line for g in inside if not g.atom} if depth > 3.1 else {g.line for g in inside}
    if len(own) > 1 or any(b.x0 - a.x1 > 0.8 * em for a, b in zip(ordered, ordered[1:], strict=False)):
        return []  # cells apart (a row vector's), or MuPDF's lines of its own: left as they are
    host = ordered[0]
    out = []
    for d in (left, right):  # with the space MuPDF put where the delimiter stands (else "( t")
        members = [d, *(g for g in near if g.blank and d.x0 <= g.mid <= d.x1 and d.oy - 0.3 * size < g.oy < row + 0.3 * em)]
        out.append((_piece(d.text, members, host.line, row, em, d.x0, d.x1), members))
    return out


def _column(left: Glyph, near: list[Glyph], depth: float, pitches: list[float],
            unread: list[tuple[float, float]], boxes: Boxes = ()) -> tuple[Glyph, list[Glyph]] | None:
    """A big pair around rows stacked one over the other and nothing else (a column vector or a
    small matrix set inline: `\\Big[ e^{2t} \\\\ e^{t} \\Big]`, which MuPDF reads as the rows "e2t",
    "et" between two stray codes): one `pmatrix` piece, as `parse_matrix` writes a matrix. Two
    single rows in parentheses are a vector only at the pitch the page sets its taller stacks in
    parentheses at (`pitches`): else they may be a binomial (`_binomial`'s, or left as they are)."""
    def kept(pitch: float, rows: int, cells: int) -> bool:  # (no piece read for a stack dropped below)
        return not (left.text == "(" and rows == 2 and cells == 1 and not any(abs(pitch - p) < 0.06 for p in pitches))
    got = _stack(left, near, depth, unread, boxes, kept=kept)
    if got is None:
        return None
    piece, members, pitch, rows, cells = got
    if left.text == "(" and rows == 2 and cells == 1 and not any(abs(pitch - p) < 0.06 for p in pitches):
        return None
    return piece, members


def _stack(left: Glyph, near: list[Glyph], depth: float, unread: list[tuple[float, float]],
           boxes: Boxes = (), shape: bool = False,
           kept: Callable[[float, int, int], bool] | None = None) -> tuple[Glyph | None, list[Glyph], float, int, int] | None:
    """`_column`'s reading: the piece, its glyphs, its rows' pitch (in units of their size), how many
    rows and cells per row (`shape`: only those three, no piece: the page's pitch evidence asks every
    "(" for them, and finding a piece's host is the costly part); each row holds the same number of cells (runs apart by a table gap),
    its cells centred over the row below's, all of them within the delimiter's reach under its
    origin (`depth`, its size class: the next line is no row of it), and no line this pass did
    not read (`unread`: middles and baselines of MuPDF lines that disagree with their raw glyphs)
    inside: part of what it holds would be missing."""
    right = _partner(left, near)
    if right is None:
        return None
    size = left.size
    if any(left.x1 < x < right.x0 and left.oy < y < left.oy + depth * size for x, y in unread):
        return None
    inside = [g for g in near if not g.blank and g is not left and g is not right
              and left.x1 - 0.1 * size <= g.mid <= right.x0 + 0.1 * size
              and left.oy - 0.3 * size < g.oy < left.oy + (depth + 0.1) * size]
    # (a line of prose runs on right past the pair's edges; the next matrix's rows start farther off)
    passing = {(g.line, round(g.oy)) for g in near if not g.blank and not g.atom
               and (left.x0 - size < g.x1 < left.x0 or right.x1 < g.x0 < right.x1 + size)
               and left.oy - 0.3 * size < g.oy < left.oy + 3.1 * size and not is_extension(g.font)}
    inside = [g for g in inside if (g.line, round(g.oy)) not in passing]
    # another big delimiter hanging lower down is the next line's: what is under its top is not ours
    lower = min((g.oy for g in inside if is_extension(g.font) and g.oy > left.oy + 0.3 * size), default=None)
    if lower is not None:
        inside = [g for g in inside if g.oy < lower - 0.1 * size]
    if len(inside) < 2 or any(is_extension(g.font) and not g.atom for g in inside):
        return None
    em = max(g.size for g in inside if not g.atom) if any(not g.atom for g in inside) else size
    rows = [sorted(r, key=reading_order) for r in _rows(inside, em)]
    if len(rows) < 2 or not all(rows):
        return None
    # cells apart by a table gap, or by a narrower one every row has at the same place (a small
    # matrix's column gap: lebl's inline [1 3; 3 1]) that leaves no operator alone in a cell
    gaps = [[(a.x1, b.x0) for a, b in zip(row, row[1:], strict=False) if b.x0 - a.x1 > 0.3 * em] for row in rows]
    shared = [(x0, x1) for x0, x1 in gaps[0] if all(any(a < x1 and x0 < b for a, b in other) for other in gaps[1:])]
    table = []
    for row in rows:
        cells: list[list[Glyph]] = [[row[0]]]
        for k, (a, b) in enumerate(zip(row, row[1:], strict=False)):
            # a sign that starts a cell (a negative entry: lebl's [9 −2 −6]) is set tight against
            # what follows it; a binary operator has space after it too (text style), or none
            # before it (script style)
            signed = b.text in _OPERATOR_SIGNS and k + 2 < len(row) and row[k + 2].x0 - b.x1 < 0.1 * em
            narrow = b.x0 - a.x1 > 0.3 * em and a.text not in _OPERATOR_SIGNS \
                and (b.text not in _OPERATOR_SIGNS or signed) and any(x0 < b.x0 and a.x1 < x1 for x0, x1 in shared)
            if b.x0 - a.x1 > 0.8 * em or narrow:
                cells.append([])
            cells[-1].append(b)
        table.append(cells)
    if len({len(cells) for cells in table}) != 1:
        return None
    for column in zip(*table, strict=True):  # a column's cells centred on each other (TeX centres them)
        mids = [(min(g.x0 for g in c) + max(g.x1 for g in c)) / 2 for c in column]
        width = max(max(g.x1 for g in c) - min(g.x0 for g in c) for c in column)
        if max(mids) - min(mids) > 0.2 * width + 0.3 * em:
            return None
    bases = [max(g.oy for g in row if g.atom or g.size >= 0.9 * em) for row in rows]
    if any(not 0.8 * em < b - a < 2.2 * em for a, b in zip(bases, bases[1:], strict=False)):
        return None  # rows a line apart, no more (text above and below is no row of it)
    pitch = (bases[-1] - bases[0]) / (len(bases) - 1) / em
    if shape or kept is not None and not kept(pitch, len(rows), len(table[0])):
        return None, [], pitch, len(rows), len(table[0])
    for row, base in zip(rows, bases, strict=True):  # the spaces between a row's glyphs are its own
        a, b = min(g.x0 for g in row), max(g.x1 for g in row)
        row += [g for g in near if g.blank and a < g.mid < b and abs(g.oy - base) < 0.15 * em]
    body = " \\\\ ".join(" & ".join(_text(c) for c in cells) for cells in table)
    members = [left, *(g for row in rows for g in row), right]
    # scripts after the right one (`(...)^{-1}`, `[...]_{B}`): small glyphs right after it, an
    # exponent over its first row's baseline, a subscript under its last row's
    small = sorted((g for g in near if not (g.blank or g.atom or is_extension(g.font)) and g.size < 0.85 * em
                    and right.x1 - 0.1 * em <= g.x0 <= right.x1 + em), key=lambda g: g.x0)
    bottom = left.oy + depth * size
    exponent = _alone(_run([g for g in small if left.oy - 0.5 * size < g.oy < bases[0] - 0.2 * em], right.x1, em, 0.4), near)
    below = _alone(_run([g for g in small if bases[-1] + 0.2 * em < g.oy < bottom + 0.5 * size], right.x1, em, 0.4), near)
    scripts = (f"_{{{_text(below)}}}" if below else "") + (f"^{{{_text(exponent)}}}" if exponent else "")
    members += [*exponent, *below]
    # the row it sits in lies between its rows (not on one: a matrix beside it is no host)
    # the glyph it follows hosts it, else the one after it (the line the text goes on in: a label
    # before it is bold, and the line keeps what it starts with)
    # (and not an entry of a matrix beside it: a glyph with rows over and under it)
    taken = {id(g) for g in members}
    lo, hi = bases[0] + 0.2 * em, bases[-1] - 0.2 * em
    cands = [g for g in near if lo < g.oy < hi and id(g) not in taken and not g.blank and not g.atom
             and g.size >= 0.8 * size
             and (left.x0 - 3 * size <= g.x1 <= left.x0 + 0.2 * size or right.x1 - 0.2 * size <= g.x0 <= right.x1 + 3 * size)
             and not is_extension(g.font)]
    # (and not inside another tall pair that does not hold this one: `boxes`)
    outer = [b for b in boxes if not (b[0] <= left.x0 and right.x1 <= b[1] and b[2] <= left.oy <= b[3])]
    cands = [g for g in cands if not any(x0 < g.mid < x1 and y0 < g.oy < y1 for x0, x1, y0, y1 in outer)]
    if cands:
        a, b = min(g.mid for g in cands) - em, max(g.mid for g in cands) + em
        full = [g for g in near if a < g.mid < b and not g.blank and not is_extension(g.font) and g.size >= 0.9 * em]
        cands = [g for g in cands if not any(h is not g and abs(h.mid - g.mid) < 0.5 * em
                                             and 0.6 * em < abs(h.oy - g.oy) < 1.5 * em for h in full)]
    host = _host([g for g in cands if g.x1 <= left.x0 + 0.2 * size], taken, left, right.x1, lo, hi) \
        or _host(cands, taken, left, right.x1, lo, hi)
    line = host.line if host is not None else left.line
    oy = host.oy if host is not None else (bases[0] + bases[-1]) / 2
    piece = _piece(f"\\begin{{pmatrix}} {body} \\end{{pmatrix}}{scripts}", members, line, oy,
                   host.size if host is not None else size, left.x0, max(g.x1 for g in members))
    return piece, members, pitch, len(rows), len(table[0])


def _around_rebuilt(left: Glyph, near: list[Glyph], lines: list[dict], blocks: list[dict]) -> tuple[Glyph, list[Glyph]] | None:
    """A big pair around a line another pass rebuilt and nothing else (`\\Big(1 + \\frac{1}{n}\\Big)^n`:
    the fraction pass rewrote the line, so its glyphs are not read here): one piece, the pair and
    that line's text, with the scripts after the right one, in the left one's line (where its row
    joins it); the line is emptied. The right one may be in that line (the other pass took it in)."""
    right = _partner(left, near)
    size = left.size
    top, depth = left.oy - 0.3 * size, left.oy + 3.1 * size  # a delimiter hangs from its origin
    read = {id(ln) for ln in lines}
    end = right.x0 + 0.3 * size if right is not None else float("inf")
    held = sorted((ln for b in blocks for ln in b["lines"] if id(ln) not in read and ln["text"].strip()
                   and left.x1 - 0.3 * size <= ln["bbox"]["x"] and ln["bbox"]["x"] + ln["bbox"]["w"] <= end
                   and top < ln["y"] < depth), key=lambda ln: ln["bbox"]["x"])
    if right is None:  # the nearest rebuilt line right after it
        held = [ln for ln in held[:1] if ln["bbox"]["x"] <= left.x1 + size]
    if len(held) != 1 or "\\" not in held[0]["text"]:
        return None  # not one rebuilt line
    line = held[0]
    box = line["bbox"]
    if right is None:
        end = box["x"] + box["w"] + 0.3 * size
    if any(not g.blank and g is not left and g is not right and top < g.oy < depth
           and left.x1 - 0.3 * size <= g.x0 and g.x1 <= end for g in near):
        return None  # glyphs read inside: `_pair`'s, a matrix's, or another pair left as it is
    # delimiters of the font the other pass took in read as their raw codes (control characters)
    codes = {c: t for c, t in document_fonts().delimiters.get(left.font, {}).items() if unicodedata.category(c) == "Cc"}
    inner = "".join(codes.get(c, c) for c in line["text"])
    close = _PAIRS[left.text]
    if right is None:
        if not inner.endswith(close):
            return None
        inner = inner[: -len(close)]
        x = box["x"] + box["w"]
        right = Glyph(close, x, x, left.oy, size, left.font, left.line, top=left.top, bottom=left.bottom,
                      y0=left.y0, y1=left.y1)
    if any(unicodedata.category(c) == "Cc" for c in inner) or inner.count(close) != inner.count(left.text):
        return None  # something unread inside, or pairs that do not balance
    em = line["font"]["size"] or size
    # the row's baseline: the text's just before or after the pair (the rebuilt line's own "y" may
    # be its numerator's)
    beside = [g for g in near if not (g.blank or g.atom or is_extension(g.font)) and g.size >= 0.9 * em
              and top < g.oy < depth and (0 <= left.x0 - g.x1 < 1.5 * em or 0 <= g.x0 - right.x1 < 1.5 * em)]
    row = min(beside, key=lambda g: min(abs(left.x0 - g.x1), abs(g.x0 - right.x1))).oy if beside else line["y"]
    # scripts after the right one: small glyphs right after it, raised up to its top or lowered
    small = sorted((g for g in near if not (g.blank or g.atom or is_extension(g.font)) and g.size < 0.9 * em
                    and right.x1 - 0.1 * em <= g.x0), key=lambda g: g.x0)
    exponent = _run([g for g in small if top < g.oy < row - 0.2 * em], right.x1, em, 0.4)
    below = _run([g for g in small if row + 0.1 * em < g.oy < depth], right.x1, em, 0.4)  # `\\Big]_0^r`
    text = (f"{left.text}{inner}{right.text}" + (f"_{{{_text(below)}}}" if below else "")
            + (f"^{{{_text(exponent)}}}" if exponent else ""))
    members = [left, right, *exponent, *below]
    piece = _piece(text, members, left.line, row, em, left.x0, max(g.x1 for g in members))
    line["text"] = ""
    return piece, [g for g in members if g.line >= 0 and g in near]


def _cases(left: Glyph, near: list[Glyph], depth: float, unread: list[tuple[float, float]]) -> tuple[Glyph, list[Glyph]] | None:
    """A left brace with no right one, before 2+ rows stacked within its reach that start at one x
    right after it (TeX sets `cases` rows flush left, a quad between a value and its condition) and
    nothing else on their baselines: one `\\begin{cases}` piece, cells apart by a wide gap, in the
    line of the glyph before it."""
    size = left.size
    if _partner(left, near) is not None:
        return None  # a pair (set-builder braces): not a case split
    top, bottom = left.oy, left.oy + (depth + 0.1) * size
    if any(x > left.x1 and top < y < bottom for x, y in unread):
        return None  # a line another pass rewrote inside: part of it would be missing
    right_of = [g for g in near if g.x0 >= left.x1 - 0.1 * size and top < g.oy < bottom and not is_extension(g.font)]
    ink = [g for g in right_of if not g.blank]
    if len(ink) < 2:
        return None
    em = max(g.size for g in ink if not g.atom) if any(not g.atom for g in ink) else size
    # (a comma or period after the whole construct, on its axis, is no row of it)
    rows = [sorted(r, key=reading_order) for r in _rows(ink, em) if not all(g.text in ",.;" for g in r)]
    if len(rows) < 2 or not all(rows):
        return None
    # each row: a value, then (a quad or more off) its condition; a row ends at a gap wider than
    # any between them (prose beyond it is no part of it)
    table = []
    for row in rows:
        cells: list[list[Glyph]] = [[row[0]]]
        for a, b in zip(row, row[1:], strict=False):
            if b.x0 - a.x1 > 8.0 * em:
                break
            if b.x0 - a.x1 > 0.8 * em:
                cells.append([])
            cells[-1].append(b)
        table.append(cells)
    if any(len(cells) > 2 for cells in table):
        return None  # more than a value and its condition: a table
    starts = [cells[0][0].x0 for cells in table]
    if max(starts) - min(starts) > 0.3 * em or min(starts) - left.x1 > 1.5 * em:
        return None  # not flush left right after the brace
    conditions = [cells[1][0].x0 for cells in table if len(cells) == 2]
    if conditions and max(conditions) - min(conditions) > 0.5 * em:
        return None  # the conditions not in one column
    bases = [max(g.oy for c in cells for g in c if g.atom or g.size >= 0.9 * em) for cells in table]
    if any(not 0.8 * em < b - a < 2.5 * em for a, b in zip(bases, bases[1:], strict=False)):
        return None
    # the brace is centred on its rows: they lie around its middle (not all above or under it)
    middle = left.oy + depth * size / 2
    if not (bases[0] - 0.3 * em < middle + 0.3 * em and middle - 0.3 * em < bases[-1] + 0.3 * em):
        return None
    if any(g.x1 > left.x0 - 0.1 * em and g.x0 < left.x0 and not g.blank and not is_extension(g.font)
           and any(abs(g.oy - b) < 0.15 * em for b in bases) for g in near):
        return None  # a row's word touching or crossing it: a line passing through, not its rows
    cells_text, kept = [], []
    for cells, base in zip(table, bases, strict=True):
        for cell in cells:  # the spaces between a cell's glyphs are its own
            a, b = cell[0].x0, cell[-1].x1
            cell += [g for g in right_of if g.blank and a < g.mid < b and abs(g.oy - base) < 0.15 * em]
        cells_text.append(" & ".join(_text(cell) for cell in cells))
        kept.append([g for cell in cells for g in cell])
    members = [left, *(g for run in kept for g in run)]
    taken = {id(g) for g in members}
    # (on the brace's axis, between its rows: not a row of a system beside it)
    host = _host([g for g in near if g.x1 <= left.x0 + 0.2 * size], taken, left, left.x1, bases[0] + 0.2 * em, bases[-1] - 0.2 * em)
    line = host.line if host is not None else kept[0][0].line
    oy = host.oy if host is not None else (bases[0] + bases[-1]) / 2
    body = " \\\\ ".join(cells_text)
    piece = _piece(f"\\begin{{cases}} {body} \\end{{cases}}", members, line, oy, host.size if host is not None else em,
                   left.x0, max(g.x1 for g in members))
    return piece, members


def _rows(glyphs: list[Glyph], em: float) -> list[list[Glyph]]:
    """Glyphs grouped by the baseline of their full-size glyphs; a script joins the row whose
    baseline it is nearest to (few glyphs: a linear pass is enough)."""
    full = sorted((g for g in glyphs if g.size >= 0.9 * em), key=lambda g: g.oy)
    bases: list[float] = []
    for g in full:
        if not bases or g.oy - bases[-1] > 0.15 * em:
            bases.append(g.oy)
    rows: list[list[Glyph]] = [[] for _ in bases]
    for g in glyphs:
        if bases:
            rows[min(range(len(bases)), key=lambda k: abs(bases[k] - g.oy))].append(g)
    return rows


def _text(members: list[Glyph]) -> str:
    """A row's text, its scripts written as `parse_math` writes them."""

    spans = glyph_spans(sorted(members, key=reading_order))
    size = max(g.size for g in members)
    return " ".join(line_text(spans, size=size).split())


def _binomial(left: Glyph, near: list[Glyph], depth: float = 3.0) -> tuple[Glyph, list[Glyph]] | None:
    """`depth`: how far the parentheses reach under their origin (their size class: a \\big pair
    holds no row a line lower, the next line's binomial)."""
    size = left.size
    rights = [g for g in near if g.text == ")" and g.font == left.font and abs(g.oy - left.oy) < 0.05 * size
              and abs(g.size - size) < 0.05 * size and g.x0 > left.x1]
    if not rights:
        return None
    right = min(rights, key=lambda g: g.x0)
    if any(g.text == "(" and g.font == left.font and left.x1 <= g.x0 < right.x0 and abs(g.oy - left.oy) < depth * size for g in near):
        return None  # another big parenthesis opens inside: not one stack (one on the line below is the next line's)
    # between the two, from the parentheses' top (their origin) down to their depth
    inside = [g for g in near if not g.blank and g is not left and g is not right
              and left.x1 - 0.1 * size <= g.mid <= right.x0 + 0.1 * size
              and left.oy - 0.3 * size < g.oy < left.oy + (depth + 0.1) * size]
    # a line of text passing above or below the parentheses runs on outside them
    passing = {(g.line, round(g.oy)) for g in near if not g.blank and (g.x1 < left.x0 or g.x0 > right.x1)
               and left.oy - 0.3 * size < g.oy < left.oy + 3.1 * size and abs(g.size - size) < 0.3 * size}
    inside = [g for g in inside if (g.line, round(g.oy)) not in passing]
    if len(inside) < 2 or any(g.atom or is_extension(g.font) for g in inside):
        return None
    em = max(g.size for g in inside)
    rows = _rows(inside, em)
    if len(rows) != 2 or not all(rows):
        return None
    top, bottom = rows
    gap = (min(g.oy for g in bottom if g.size >= 0.9 * em) - max(g.oy for g in top if g.size >= 0.9 * em)) / em
    lo, hi = _TEXT_GAP if em < _SCRIPT * size else _DISPLAY_GAP
    if not lo <= gap <= hi:
        return None  # spaced as matrix rows (or not stacked at all)
    spans = []
    for row in rows:
        ordered = sorted(row, key=lambda g: g.x0)
        if any(b.x0 - a.x1 > 0.8 * em for a, b in zip(ordered, ordered[1:], strict=False)):
            return None  # a gap between cells: a matrix row
        spans.append((ordered[0].x0, ordered[-1].x1))
    (a0, a1), (b0, b1) = spans
    if abs((a0 + a1) - (b0 + b1)) / 2 > 0.2 * max(a1 - a0, b1 - b0) + 0.15 * em:
        return None  # not centred on each other
    for row in rows:  # the spaces between a row's glyphs are its own
        a, b, base = min(g.x0 for g in row), max(g.x1 for g in row), max(g.oy for g in row if g.size >= 0.9 * em)
        row += [g for g in near if g.blank and a < g.mid < b and abs(g.oy - base) < 0.15 * em]
    members = [left, *top, *bottom, right]
    upper, under = _text(top), _text(bottom)
    if upper.isdigit() and under.isdigit() and int(upper) < int(under):
        return None  # no binomial coefficient has more below than above: a column vector
    text = f"\\binom{{{upper}}}{{{under}}}"
    host = _host(near, {id(g) for g in members}, left, right.x1, max(g.oy for g in top), max(g.oy for g in bottom))
    line = host.line if host is not None else left.line
    oy = host.oy if host is not None else max(g.oy for g in top)
    return _piece(text, members, line, oy, host.size if host is not None else size, left.x0, right.x1), members


def _ruled(members: list[Glyph], rules: list[Rule]) -> bool:
    """A rule runs between the parentheses, under the top row: a fraction bar."""
    x0, x1 = min(g.x1 for g in members), max(g.x0 for g in members)
    y0, y1 = min(g.oy for g in members), max(g.oy for g in members)
    return any(r.x0 < x1 and r.x1 > x0 and y0 - 2 < r.y < y1 for r in rules)


def _host(near: list[Glyph], taken: set[int], mark: Glyph, x1: float, lo: float, hi: float) -> Glyph | None:
    """The full-size glyph nearest a piece spanning mark.x0..x1 on the row it sits in, its
    baseline between `lo` and `hi`: its line hosts the piece, its baseline is the row's.
    Extension glyphs hang from their origin, so the row's baseline is below it."""
    size = mark.size
    row = [g for g in near if id(g) not in taken and not g.blank and not g.atom and not is_extension(g.font)
           and g.size >= 0.8 * size and lo < g.oy < hi
           and (mark.x0 - 3 * size <= g.x1 <= mark.x0 + 0.2 * size or x1 - 0.2 * size <= g.x0 <= x1 + 3 * size)]
    return min(row, key=lambda g: min(abs(g.x1 - mark.x0), abs(g.x0 - x1)), default=None)


def _limits(op: Glyph, near: list[Glyph], ops: list[Glyph]) -> tuple[Glyph, list[Glyph]] | None:
    """An operator with its limits: small rows centred over and under it, or (an integral's)
    small glyphs right after it, raised and lowered; with none, the sign alone, placed in the
    row it sits in (MuPDF gives the hanging glyph a line of its own)."""
    size = op.size
    host = _host(near, {id(op)}, op, op.x1, op.oy, op.oy + 1.6 * size)
    if host is None:
        return None  # no row to place it in: the symbol alone (the glyph map) is safer
    base, em = host.oy, host.size
    # operators side by side (a double sum) share the small glyphs: each takes those nearest it
    row = [o for o in ops if abs(o.oy - op.oy) < 0.5 * size]
    # (a rebuilt piece of script size may be part of one: `θ = \\frac{π}{2}`)
    scripts = [g for g in near if g is not op and not g.blank and not is_extension(g.font) and g.size < 0.9 * em]
    small = [g for g in scripts if min(row, key=lambda o: abs(o.mid - g.mid)) is op]
    following = min((o.x0 for o in row if o.x0 > op.x0), default=float("inf"))  # the next operator's start
    width = op.x1 - op.x0
    full = [g for g in near if not (g.blank or g.atom or is_extension(g.font)) and g.size >= 0.9 * em]
    integral = op.text in "∫∮"  # TeX sets an integral's limits after it, others' over and under
    upper = [] if integral else _centred([g for g in small if op.oy - 1.0 * em < g.oy < op.oy + 0.25 * em],
                                         op, width, em, full)
    lower = [] if integral else _centred([g for g in small if base + 0.2 * em < g.oy - 0.7 * g.size
                                          and g.oy < base + 1.7 * em], op, width, em, full)
    if not (upper or lower):  # an integral's limits, or a textstyle operator's: scripts after it
        kern = 0.6 if integral else 0.1  # an integral's lower limit tucks under its slant
        after = sorted((g for g in scripts if op.x1 - kern * em <= g.x0 <= op.x1 + 3 * em and g.x1 <= following),
                       key=lambda g: g.x0)
        # (an integral's ink overhangs its advance: its upper limit starts past it)
        lead = 0.7 if integral else 0.3
        upper = _run([g for g in after if base - 1.8 * em < g.oy < base - 0.3 * em], op.x1, em, lead)
        lower = _run([g for g in after if base + 0.05 * em < g.oy < base + 1.4 * em], op.x1, em, lead)
    text = op.text + (f"_{{{_text(lower)}}}" if lower else "") + (f"^{{{_text(upper)}}}" if upper else "")
    members = [op, *upper, *lower]
    right = max(g.x1 for g in members)
    return _piece(text, members, host.line, base, em, min(g.x0 for g in members), right), members


def _before_rebuilt(op: Glyph, lines: list[dict], blocks: list[dict], pool: GlyphPool) -> bool:
    """An operator alone on its line, before a line another pass rebuilt (`\\frac{1}{k}`: its
    glyphs are not read here), goes at that line's start. Returns whether it did."""
    size, own = op.size, lines[op.line]
    if any(g is not op and not g.blank for g in pool.of_lines({op.line})[op.line]):
        return False
    read = {id(ln) for ln in lines}
    after = [ln for b in blocks for ln in b["lines"] if id(ln) not in read and ln["text"].strip()
             and op.x1 - 0.2 * size <= ln["bbox"]["x"] <= op.x1 + 3 * size and op.oy < ln["y"] < op.oy + 1.6 * size]
    if not after:
        return False
    target = min(after, key=lambda ln: ln["bbox"]["x"])
    box = target["bbox"]
    target["text"] = f"{op.text} {target['text']}"
    target["bbox"] = {**box, "x": op.x0, "w": box["x"] + box["w"] - op.x0}
    own["text"] = ""
    pool.gone.add(id(op))
    return True


def _centred(glyphs: list[Glyph], op: Glyph, width: float, em: float, full: list[Glyph]) -> list[Glyph]:
    """The one row of `glyphs` centred on the operator (no wider than a few of it) and alone on
    its baseline (a subscript of the line above or below has its line's text beside it), or []."""
    if not glyphs:
        return []
    mid = op.mid
    runs: list[list[Glyph]] = []  # runs split at gaps: the limits of the operators beside it are others
    for g in sorted(glyphs, key=lambda g: g.x0):
        if runs and g.x0 - runs[-1][-1].x1 <= 0.5 * em:
            runs[-1].append(g)
        else:
            runs.append([g])
    row = next((r for r in runs if r[0].x0 <= mid <= r[-1].x1), [])
    if not row or max(g.oy for g in row) - min(g.oy for g in row) > 0.5 * em:
        return []
    lo, hi = min(g.oy for g in row), max(g.oy for g in row)
    if any(lo - 0.4 * em < g.oy < hi + 0.4 * em and row[0].x0 - 2 * em < g.mid < row[-1].x1 + 2 * em for g in full):
        return []
    a, b = row[0].x0, row[-1].x1
    return row if abs((a + b) / 2 - mid) < 0.25 * max(b - a, width) + 0.1 * em else []


def _alone(run: list[Glyph], near: list[Glyph]) -> list[Glyph]:
    """`run` if it is all its lines hold (a script MuPDF set on a line of its own), else [] (the
    start of a smaller line of text: a footnote under a matrix)."""
    lines, ids = {g.line for g in run}, {id(g) for g in run}
    return run if run and not any(g.line in lines and not g.blank and id(g) not in ids for g in near) else []


def _run(glyphs: list[Glyph], start: float, em: float, lead: float) -> list[Glyph]:
    """The glyphs that follow `start` (the first within `lead` ems) with no gap wider than a
    thin space, in order."""
    out: list[Glyph] = []
    end = start
    for g in glyphs:
        if g.x0 - end > (0.3 if out else lead) * em:
            break
        out.append(g)
        end = g.x1
    return out


def _piece(text: str, members: list[Glyph], line: int, oy: float, size: float, x0: float, x1: float) -> Glyph:
    # the box of what it holds, less extension glyphs (theirs is the font's ascent to descent)
    ink = [g for g in members if not (g.blank or is_extension(g.font))] or [g for g in members if not g.blank]
    return Glyph(text, x0, x1, oy, size, "", line, top=min(g.top for g in ink), bottom=oy, atom=True,
                 y0=min(g.y0 for g in ink), y1=max(g.y1 for g in ink))
