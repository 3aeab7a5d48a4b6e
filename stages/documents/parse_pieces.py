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
