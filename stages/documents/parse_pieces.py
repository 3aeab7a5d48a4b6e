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
from .parse_glyph_pool import Glyph

_ORDER = {"tp": 0, "ex": 1, "mid": 1, "bt": 2}


def tall_delimiters(chars: list[Glyph], ext: set[str]) -> list[tuple[Glyph, str, list[Glyph], float]]:
    """(the top piece, which now reads as the whole delimiter; its text-layer text; the other
    pieces; its reach under its origin, in units of its size) for each complete run of pieces."""
    pieces = sorted((g for g in chars if g.text in PIECES and g.font in ext and not g.synthetic), key=lambda g: g.oy)
    out = []
    used: set[int] = set()
    for top in pieces:
        symbol, part, depth = PIECES[top.text]
        if part != "tp" or id(top) in used:
            continue
        size, run, at, mids = top.size, [top], top.oy + depth * top.size, 0
        while True:  # the piece whose origin is where this one ends, right under it
            nxt = next((g for g in pieces if id(g) not in used and g is not run[-1] and g.font == top.font
                        and abs(g.size - size) < 0.05 * size and abs(g.x0 - top.x0) < 0.1 * size
                        and abs(g.oy - at) < 0.15 * size and symbol in PIECES[g.text][0]), None)
            if nxt is None or _ORDER[PIECES[nxt.text][1]] == 0:
                break
            run.append(nxt)
            at = nxt.oy + PIECES[nxt.text][2] * size
            mids += PIECES[nxt.text][1] == "mid"
            if PIECES[nxt.text][1] == "bt":
                break
        if PIECES[run[-1].text][1] != "bt" or mids != (1 if symbol in "{}" else 0):
            continue  # not a whole delimiter (a piece the pass cannot read: left as it is)
        used.update(id(g) for g in run)
        text = top.text
        top.text, top.blank = symbol, False
        top.y1 = max(g.y1 for g in run)
        out.append((top, text, run[1:], (at - top.oy) / size))
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
