"""Delimiters taller than TeX's biggest whole one, read back from the pieces they are stacked from.

TeX builds a delimiter taller than `\\Bigg` (a display matrix's parentheses or brackets, a
`cases` brace) from its extension font's pieces: a top, as many extension pieces as it needs, a
brace's middle piece, a bottom, one under the other at one x. The text layer has each piece as a
glyph of its own (`parse_extension.PIECES`), so the rows between them read as lines of their own
and the delimiter as stray glyphs. Here a vertical run of pieces of one font and size (the same
x, each one's origin where the one above it ends, top .. bottom) becomes one delimiter glyph:
the top piece takes the delimiter's symbol, and its reach under its origin is the run's, so
`parse_delimited` reads what it holds as it reads a whole big delimiter's.
"""

from __future__ import annotations

from .parse_extension import PIECES
from .parse_glyph_pool import Glyph, document_fonts


def tall_delimiters(chars: list[Glyph], ext: set[str]) -> list[tuple[Glyph, str, list[Glyph], float]]:
    """(the top piece, which now reads as the whole delimiter; its text-layer text; the other
    pieces; its reach under its origin, in units of its size) for each complete run of pieces."""
    codes = document_fonts().piece_codes
    parts = {id(g): part for g in chars if g.font in ext and not g.synthetic
             and (part := codes.get(g.font, {}).get(g.text) or PIECES.get(g.text)) is not None}
    pieces = sorted((g for g in chars if id(g) in parts), key=lambda g: g.oy)
    out = []
    used: set[int] = set()
    for top in pieces:
        symbol, part = parts[id(top)]
        if part != "tp" or id(top) in used:
            continue
        size, run, mids = top.size, [top], 0
        while True:  # the next piece right under this one (the fonts differ in how long a piece is)
            last = run[-1]
            nxt = next((g for g in pieces if id(g) not in used and g.font == top.font
                        and abs(g.size - size) < 0.05 * size and abs(g.x0 - top.x0) < 0.1 * size
                        and 0.05 * size < g.oy - last.oy < 2.0 * size), None)
            if nxt is None or symbol not in parts[id(nxt)][0] or parts[id(nxt)][1] == "tp":
                break
            run.append(nxt)
            mids += parts[id(nxt)][1] == "mid"
            if parts[id(nxt)][1] == "bt":
                break
        if len(run) < 2 or parts[id(run[-1])][1] != "bt" or mids != (1 if symbol in "{}" else 0):
            continue  # not a whole delimiter (a piece the pass cannot read: left as it is)
        used.update(id(g) for g in run)
        # where it starts: cmex's pieces hang from their origin, so the step from one to the next
        # is the upper one's length and the top (longer than an extension piece) comes first;
        # some fonts' pieces stand on it (txexs's `parenlefttpA`), the bottom's step coming last
        first, last_step = run[1].oy - top.oy, run[-1].oy - run[-2].oy
        standing = first < last_step - 0.05 * size
        upper = top.oy - last_step if standing else top.oy
        lower = run[-1].oy if standing else run[-1].oy + first
        text = top.text
        top.text, top.blank, top.oy = symbol, False, upper
        top.y1 = max(g.y1 for g in run)
        out.append((top, text, run[1:], (lower - upper) / size))
    return out


def vertical_dots(chars: list[Glyph]) -> None:
    """TeX's `\\vdots` (a matrix's or vector's "and so on" row) is three periods one over the other,
    which the text layer reads as "..." on one line: the lowest (on the row's baseline) becomes "⋮",
    the two above it blank, so a matrix's rows read it as the one glyph of its row."""
    dots = sorted((g for g in chars if g.text == "." and not g.atom), key=lambda g: (round(g.x0), g.oy))
    for a, b, c in zip(dots, dots[1:], dots[2:], strict=False):
        size = a.size
        if a.blank or not (abs(a.x0 - b.x0) < 0.05 * size and abs(a.x0 - c.x0) < 0.05 * size):
            continue
        if 0.25 * size < b.oy - a.oy < 0.55 * size and abs((c.oy - b.oy) - (b.oy - a.oy)) < 0.05 * size:
            c.text, c.y0 = "⋮", a.y0
            c.top = a.top
            for g in (a, b):
                g.text, g.blank = " ", True


def vertical_bars(chars: list[Glyph], ext: set[str]) -> set[int]:
    """A bar taller than the text's (`\\big|`, `\\Bigm|`: a set-builder's, an evaluation's) is a run
    of its extension piece only, one under the other at one x (hefferon's `{ (a b) | a, b ∈ R }`
    read "{ (a b) a, b ∈ R }": the pieces' raw codes are control characters): the run's top piece
    reads as the bar, the others as nothing, where it is no taller than a `\\big` delimiter (1.2 of
    its size: a bar in a row of text; a taller one fences stacked rows, a determinant's, which
    this pass does not read), and not one of a pair a few glyphs apart (fences: |4|). Returns the
    lines they are in."""
    codes = document_fonts().piece_codes
    bars = sorted((g for g in chars if g.font in ext and not g.synthetic
                   and (part := codes.get(g.font, {}).get(g.text)) is not None and part[0] in "|‖"),
                  key=lambda g: (round(g.x0), g.oy))
    lines: set[int] = set()
    used: set[int] = set()
    runs = []
    for top in bars:
        if id(top) in used:
            continue
        size, run = top.size, [top]
        for g in bars:  # (sorted by x, then down: the run's next pieces follow it)
            if id(g) not in used and g is not run[-1] and g.font == top.font and abs(g.x0 - top.x0) < 0.1 * size \
                    and abs(g.size - size) < 0.05 * size and 0.05 * size < g.oy - run[-1].oy < 1.0 * size:
                run.append(g)
        used.update(id(g) for g in run)
        step = run[1].oy - run[0].oy if len(run) > 1 else 0.6 * size  # (cmex's piece: 0.6 of its size)
        if run[-1].oy + step - run[0].oy > 1.3 * size:
            continue  # taller than \\big: a fence around stacked rows (a determinant), left as it was
        runs.append(run)
    for run in runs:
        top, size = run[0], run[0].size
        if any(other is not run and abs(other[0].oy - top.oy) < 0.1 * size and len(other) == len(run)
               and 0 < abs(other[0].x0 - top.x0) < 4 * size for other in runs):
            continue  # a pair a few glyphs apart fences them (|4|, a matrix of minors): left as it was
        # (its origin stays: an extension glyph hangs from it, over the row it stands in)
        top.text, top.blank = codes[top.font][top.text][0], False
        for g in run[1:]:
            g.text, g.blank = "", True
        lines.update(g.line for g in run)
    return lines
