"""Big delimiters around a rebuilt fraction or radical: `R_0(a + \\frac{b}{2\\sqrt{t}})`.

TeX sets the parentheses around a display fraction as glyphs of its math extension font, a size
variant (`parenleftbigg`) or, taller than `\\Bigg`, a run of pieces (`parse_pieces`). The text
layer has them as raw codes (or private-use pieces) on lines of their own; the fraction pass
(`parse_stacked`) takes those lines into the row it rebuilds, where cleaning later drops the
codes: "R_0 a + \\frac{b}{2\\sqrt{t}}", the bracket gone. Here, once the row's fractions are built,
a pair of one font, size and height whose reach under its origin spans a rebuilt piece, with one
row of text and pieces between them and nothing else (no stacked rows: a matrix's, a vector's;
no gap wider than math spacing: cells), becomes one piece: the pair's symbols around that row's
text, with the small glyphs right after the closing one as its scripts (`(...)^{2}`).
"""

from __future__ import annotations

from .parse_delimited import _limits as operator_limits
from .parse_extension import OPERATORS, PIECES
from .parse_glyph_pool import (
    Glyph,
    GlyphPool,
    Rule,
    document_fonts,
    glyph_spans,
    is_extension,
    on_row,
    reading_order,
)
from .parse_math import GlyphMap, line_text
from .parse_pieces import tall_delimiters

_PAIRS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⌊": "⌋", "⌈": "⌉"}
_CLOSING = frozenset(_PAIRS.values())


def has_delimiters(chars: list[Glyph]) -> bool:
    """Any glyph this module reads: an extension font's whole delimiters, pieces or operators
    (the cheap test: most pages with fractions have none)."""
    fonts = document_fonts()
    return any(is_extension(g.font) and (g.text in fonts.delimiters.get(g.font, ()) or g.text in PIECES
                                         or g.text in OPERATORS or g.text in fonts.piece_codes.get(g.font, ()))
               for g in chars)


def operators_beside(pool: GlyphPool, chars: list[Glyph]) -> list[tuple[Glyph, list[Glyph]]]:
    """Big operators (an extension font's ∫, ∑) on the row of a rebuilt piece next to them, with
    their limits (`parse_delimited._limits`): the row is rewritten here, so the delimiter pass,
    which reads only lines that agree with their glyphs, would find the sign in a rewritten line
    and its limits on lines of their own (lebl's `a_n = \\frac{1}{L} ∫_{−L}^{L} f(t) ...`). Then
    the other operators with limits on the rows so taken (their row is rewritten too)."""
    ops = sorted((g for g in chars if g.text in OPERATORS and is_extension(g.font)), key=lambda g: g.x0)
    out: list[tuple[Glyph, list[Glyph]]] = []

    def take(op: Glyph, both: bool = False) -> None:
        found = operator_limits(op, pool.near(op.oy), ops)
        if found is None or len(found[1]) < 2 or both and not ("_{" in found[0].text and "^{" in found[0].text):
            return  # the sign alone is left as the other passes have it (and half of the limits)
        pool.take(*found)
        out.append(found)

    for op in ops:
        size = op.size
        if any(on_row(op, a.oy, a.size, 0.25) and (0 <= op.x0 - a.x1 < 3 * size or 0 <= a.x0 - op.x1 < 3 * size)
               for a in pool.atoms if id(a) not in pool.gone):
            take(op)
    taken = [atom for atom, _ in out]
    for op in ops:
        if id(op) not in pool.gone and any(on_row(op, a.oy, a.size, 0.25) and abs(op.x0 - a.x0) < 40 * op.size
                                           for a in taken):
            take(op, both=True)  # (farther from a bar, this pass may not have read one of its limits)
    return out


def delimiter_seeds(blocks: list[dict], rules: list[Rule], glyphs: GlyphMap) -> list[Rule]:
    """Where the fraction pass must also read glyphs: lines that are only an extension font's
    delimiters or operators (MuPDF gives a big parenthesis or ∫ a line of its own) on a rule's row,
    up to 15 of their sizes from it: the closing one of a pair may stand farther from the bar than
    the pass reads, an operator's integrand and limits lie beside it. `glyphs`: the glyph map
    (operators are named in it)."""
    out = []
    fonts = document_fonts()
    for b in blocks:
        for ln in b["lines"]:
            text = ln["text"].strip()
            font = ln["font"].get("name", "").split("+", 1)[-1]
            if not text or not is_extension(font):
                continue
            # (the line's font is its first glyph's: an operator's line may go on with its limits,
            # a delimiter's with its script, in fonts of their own)
            first, named = text[0], glyphs.get(font, {})
            if not (named.get(first) in OPERATORS or len(text) <= 8 and (
                    first in fonts.delimiters.get(font, ()) or first in PIECES
                    or first in fonts.piece_codes.get(font, ()))):
                continue
            bb, size = ln["bbox"], ln["font"]["size"] or 1.0
            x0, x1, y0, y1 = bb["x"], bb["x"] + bb["w"], bb["y"], bb["y"] + bb["h"]
            if any(y0 - size < r.y < y1 + 3 * size and x0 - 15 * size < r.x1 and r.x0 < x1 + 15 * size for r in rules):
                out.append(Rule(x0, x1, (y0 + y1) / 2))
    return out


def wrap_rebuilt(pool: GlyphPool, chars: list[Glyph]) -> list[tuple[Glyph, list[Glyph]]]:
    """Take, out of `pool`, each big delimiter pair around one row holding a rebuilt piece (inner
    pairs first) and put its piece in. Returns (piece, the glyphs it took) in the order built."""
    fonts = document_fonts()
    delims: dict[int, tuple[str, float]] = {}  # glyph -> (symbol, reach under its origin in sizes)
    for g in chars:
        symbol = fonts.delimiters.get(g.font, {}).get(g.text) if is_extension(g.font) and not g.synthetic else None
        if symbol is not None and (symbol in _PAIRS or symbol in _CLOSING):
            delims[id(g)] = (symbol, fonts.depths.get(g.font, {}).get(g.text, 3.0))
    saved = {id(g): (g.text, g.blank, g.oy, g.y1) for g in chars if g.text in PIECES
             or g.text in fonts.piece_codes.get(g.font, ())}
    rest: dict[int, list[Glyph]] = {}
    if saved:  # a run of pieces reads as its top piece (restored below where no pair takes it)
        for top, _, others, depth in tall_delimiters(chars, {g.font for g in chars if id(g) in saved}):
            delims[id(top)] = (top.text, depth)
            rest[id(top)] = others
    glyph = {id(g): g for g in chars}
    lefts = [glyph[k] for k, (symbol, _) in delims.items() if symbol in _PAIRS]
    out = []
    ends = [glyph[k] for k in delims]  # (a partner is one of them: asked of them, not of every glyph)
    for left in sorted(lefts, key=lambda g: _width(g, delims, ends)):
        if id(left) in pool.gone:
            continue
        got = _wrap(left, delims, pool)
        if got is not None:
            atom, members = got
            members += [p for g in members if id(g) in rest for p in rest[id(g)]]
            pool.take(atom, members)
            out.append((atom, members))
    for k, (text, blank, oy, y1) in saved.items():
        g = glyph[k]
        if k not in pool.gone:
            g.text, g.blank, g.oy, g.y1 = text, blank, oy, y1
    return out


def _partner(left: Glyph, delims: dict[int, tuple[str, float]], near: list[Glyph]) -> Glyph | None:
    """The delimiter closing `left`: the nearest of its font, size and height to its right."""
    symbol, depth = delims[id(left)]
    close, size = _PAIRS[symbol], left.size
    rights = [g for g in near if id(g) in delims and delims[id(g)][0] == close and g.font == left.font
              and abs(g.oy - left.oy) < 0.05 * size and abs(g.size - size) < 0.05 * size
              and abs(delims[id(g)][1] - depth) < 0.3 and g.x0 > left.x1]
    return min(rights, key=lambda g: g.x0, default=None)


def _width(left: Glyph, delims: dict[int, tuple[str, float]], chars: list[Glyph]) -> float:
    right = _partner(left, delims, chars)
    return right.x0 - left.x1 if right is not None else float("inf")


def _wrap(left: Glyph, delims: dict[int, tuple[str, float]], pool: GlyphPool) -> tuple[Glyph, list[Glyph]] | None:
    size, depth = left.size, delims[id(left)][1]
    bottom = left.oy + (depth + 0.3) * size  # it hangs from its origin
    near = pool.near(left.oy, bottom - left.oy)
    right = _partner(left, delims, near)
    if right is None:
        return None
    between = [g for g in near if g is not left and g is not right and left.x1 - 0.1 * size <= g.mid <= right.x0 + 0.1 * size
               and left.oy - 0.3 * size < g.oy < bottom]
    if any(is_extension(g.font) and not g.atom and not g.blank for g in between):
        return None  # an operator (it hangs from its origin, as the pair does) or a lone delimiter inside
    inside = [g for g in between if g.oy > left.oy + 0.1 * size]  # (a baseline over its top: the line above)
    ink = [g for g in inside if not g.blank]
    atoms = [g for g in ink if g.atom]
    # (with no rebuilt piece inside, one right beside the pair: this pass rewrites their row, so
    # the delimiter pass, which would read the pair, can read its row no more: lebl's
    # `∫_a^b \\frac{d}{dt} (x_2'x_1 − x_2x_1') dt`)
    if not atoms and not (ink and any(
            a.atom and id(a) not in pool.gone and left.oy < a.oy < bottom
            and (0 <= left.x0 - a.x1 < 3 * size or 0 <= a.x0 - right.x1 < 3 * size) for a in near)):
        return None  # no rebuilt piece in it or beside it: `parse_delimited`'s
    if any(a.top < left.oy - 0.3 * size or a.y1 > bottom for a in atoms):
        return None  # the pair does not span what it would hold (glyph tops: a box reaches to the ascender)
    full = [g for g in ink if not g.atom and not is_extension(g.font)]
    em = max((g.size for g in full), default=0.0)
    if atoms and em < 0.9 * max(a.size for a in atoms):
        em = max(a.size for a in atoms)
    bases = [g.oy for g in full if g.size >= 0.9 * em] or [a.oy for a in atoms]
    if not bases:
        return None
    row = max(set(round(b, 1) for b in bases), key=[round(b, 1) for b in bases].count)
    if not left.oy < row < bottom:
        return None
    if not all(on_row(g, row, em, 0.25 if g.atom or g.size >= 0.9 * em else 0.6) for g in ink):
        return None  # rows stacked inside (a matrix, a vector), or a line passing through
    inside = [g for g in inside if not g.blank or abs(g.oy - row) < 0.3 * em]  # (a space of another row is not its)
    ordered = sorted(ink, key=lambda g: g.x0)
    if any(b.x0 - a.x1 > 1.0 * em for a, b in zip(ordered, ordered[1:], strict=False)):
        return None  # cells apart by a table's gap
    # scripts after the closing one: small glyphs (or a small rebuilt piece: `^{\\frac{1}{2}}`) right
    # after it, raised or lowered
    small = sorted((g for g in near if not (g.blank or is_extension(g.font)) and g.size < 0.9 * em
                    and right.x1 - 0.1 * em <= g.x0 <= right.x1 + 3 * em), key=lambda g: g.x0)
    exponent = _run([g for g in small if left.oy - 0.3 * size < g.oy < row - 0.2 * em], right.x1, em)
    # (not an exponent of the row under it: a matrix's next row, its baseline just under the glyph)
    rows_under = [h for h in near if not (h.blank or is_extension(h.font)) and (h.atom or h.size >= 0.9 * em)
                  and h.oy > row + 0.5 * em]
    below = _run([g for g in small if row + 0.1 * em < g.oy < bottom and not any(
        0 < h.oy - g.oy < 1.0 * em and g.x0 - 3 * em < h.x1 and h.x0 < g.x1 + em for h in rows_under)], right.x1, em)
    body = line_text(glyph_spans(sorted(inside, key=reading_order), size=em), size=em)
    text = (f"{delims[id(left)][0]}{' '.join(body.split())}{delims[id(right)][0]}"
            + (f"_{{{_text(below)}}}" if below else "") + (f"^{{{_text(exponent)}}}" if exponent else ""))
    members = [left, *inside, right, *exponent, *below]
    host = _host(near, {id(g) for g in members}, row, left.x0, right.x1, em)
    line = host.line if host is not None else min(ordered, key=lambda g: g.x0).line
    ink_box = [g for g in members if not (g.blank or is_extension(g.font))]
    piece = Glyph(text, left.x0, max(g.x1 for g in members), row, em, "", line, top=min(g.top for g in ink_box),
                  bottom=row, atom=True, y0=min(g.y0 for g in ink_box), y1=max(g.y1 for g in ink_box))
    return piece, members


def _run(glyphs: list[Glyph], start: float, em: float) -> list[Glyph]:
    """The glyphs that follow `start` (the first within 0.4 em) with no gap wider than a thin space."""
    out: list[Glyph] = []
    end = start
    for g in glyphs:
        if g.x0 - end > (0.3 if out else 0.4) * em:
            break
        out.append(g)
        end = g.x1
    return out


def _text(members: list[Glyph]) -> str:
    spans = glyph_spans(sorted(members, key=reading_order))
    return " ".join(line_text(spans, size=max(g.size for g in members)).split())


def _host(near: list[Glyph], taken: set[int], row: float, x0: float, x1: float, em: float) -> Glyph | None:
    """The glyph the piece follows on its row (its line hosts it), else the one it precedes."""
    beside = [g for g in near if id(g) not in taken and not g.blank and abs(g.oy - row) < 0.3 * em
              and (g.atom or g.size >= 0.9 * em) and not is_extension(g.font)]
    before = [g for g in beside if x0 - 2 * em <= g.x1 <= x0 + 0.2 * em]
    after = [g for g in beside if x1 - 0.2 * em <= g.x0 <= x1 + 2 * em]
    return max(before, key=lambda g: g.x1, default=None) or min(after, key=lambda g: g.x0, default=None)
