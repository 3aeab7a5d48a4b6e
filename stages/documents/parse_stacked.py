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
inside a numerator, and a fraction in an exponent, are kept). Only pages with rules next to text
boxes pay for this.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from .parse_extension import PIECES
from .parse_glyph_pool import (
    TOP,
    Glyph,
    GlyphPool,
    Rule,
    document_fonts,
    glyph_spans,
    is_extension,
    on_row,
    page_glyphs,
    page_rules,
    reading_order,
    rewrite_line,
)
from .parse_math import GlyphMap, line_text
from .parse_wrap import delimiter_seeds, has_delimiters, operators_beside, wrap_rebuilt


def rebuild_stacked(page: Any, textpage: Any, blocks: list[dict], glyphs: GlyphMap | None = None) -> int:
    """Rewrite, in place, the lines of `blocks` (MuPDF's JSON lines of `textpage`) that hold
    display fractions or radicals. Returns how many were rebuilt. The glyph-level rebuild runs
    only where there are rules with text boxes right above and below them (or a "√" at their left
    end): a page that draws no path has none, and costs nothing. (A cue read from the text alone,
    a short line stacked on another, missed the fractions set inline in prose, "l'équation
    logistique dx/dt = kx(M − x)", "a = 7/3 and b = −1/3": 9 pages of the 8 PDFs.) `textpage`: a
    MuPDF text page, or a `parse_math.PageExtraction` of it (which keeps the glyphs for the span pass)."""
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
                          "√" in ln["text"] or bool(is_extension(ln["font"].get("name", "")))))
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


def rebuild_from(blocks: list[dict], raw_blocks: list[dict], rules: list[Rule], glyphs: GlyphMap | None) -> int:
    # (and the lines of big delimiters on a bar's row: a pair around a fraction, `parse_wrap`)
    lines, chars = page_glyphs(blocks, raw_blocks, glyphs or {}, rules + delimiter_seeds(blocks, rules, glyphs or {}))
    if not chars:
        return 0
    pool = GlyphPool(chars)
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
    if pool.atoms and has_delimiters(chars):  # big operators and parentheses beside what was rebuilt (`parse_wrap`)
        for atom, members in operators_beside(pool, chars) + wrap_rebuilt(pool, chars):
            sources[id(atom)] = {g.line for g in members}
            touched.update(sources[id(atom)] | {atom.line})
    for atom in sorted(pool.atoms, key=lambda a: a.x0):  # rows made whole once every piece is built
        if id(atom) not in pool.gone:
            touched |= pool.absorb(atom, sources[id(atom)])
            touched |= _join_script_line(pool, atom)
    by_line = pool.of_lines(touched)
    for li in touched:
        rewrite_line(lines[li], by_line[li])
    return len(pool.atoms)


def _join_script_line(pool: GlyphPool, atom: Glyph) -> set[int]:
    """A piece set as a script (a radical in an exponent: `e^{\\sqrt{2}x}`) in a line that MuPDF
    began at it (it broke the row before the raised sign) joins the line ending right before it on
    its line's own row, so the piece is read as the script it is. Returns the lines changed."""
    mine = [g for g in pool.of_lines({atom.line})[atom.line] if not g.blank and not g.atom
            and not is_extension(g.font) and g.size > 1.1 * atom.size]
    if not mine:
        return set()
    size = max(g.size for g in mine)
    row = Counter(round(g.oy, 1) for g in mine if g.size >= 0.9 * size).most_common(1)[0][0]
    if abs(atom.oy - row) < 0.15 * size or any(g.x1 <= atom.x0 + 0.1 * size for g in mine):
        return set()  # on its line's row (not a script), or the line holds the row before it
    before = {g.line for g in pool.near(row) if g.line != atom.line and not g.blank and on_row(g, row, size, 0.25)
              and atom.x0 - 1.5 * size < g.x1 <= atom.x0 + 0.2 * size}
    if len(before) != 1:
        return set()
    (li, rest), = pool.of_lines(before).items()
    ink = [g for g in rest if not g.blank]
    if not ink or max(g.x1 for g in ink) > atom.x0 + 0.2 * size \
            or not all(on_row(g, row, size, 0.25 if g.atom or g.size >= 0.9 * size else 0.6) for g in ink):
        return set()
    gone = atom.line  # the earlier line takes it (the page's reading order is the lines')
    for g in pool.of_lines({gone})[gone]:
        g.line = li
    return {gone, li}


def _em(rule: Rule, chars: list[Glyph]) -> float:
    """The text size of a fraction's rows: the biggest size of the glyphs sitting on the bar or
    hanging under it (its scripts are smaller, and may be more: "r^{3/2}"; lines of prose
    farther off do not count), leaving out extension-font glyphs (big operators), and brackets and
    rebuilt pieces where there is other text: a denominator's "(" may be set bigger than its
    letters ("mv" over "(½M + m)R", its "½" hosted by the "(")."""
    sizes = [(g.atom or g.text in _BRACKETS, round(g.size, 1)) for g in chars
             if not g.blank and rule.x0 <= g.mid <= rule.x1 and not is_extension(g.font)
             and (0.05 * g.size < rule.y - g.oy < 0.85 * g.size
                  or -0.3 * g.size < g.oy - TOP * g.size - rule.y < 0.55 * g.size)]
    return max((s for other, s in sizes if not other), default=max((s for _, s in sizes), default=0.0))


_BRACKETS = frozenset("()[]{}|")


def _row(members: list[Glyph]) -> float:
    """The baseline most of a row's glyphs sit on."""
    return Counter(round(g.oy, 1) for g in members if not g.blank).most_common(1)[0][0]


def _text(members: list[Glyph]) -> str:
    """A numerator's (radicand's...) text, its scripts written as `parse_math` writes them; its
    text size is its biggest glyphs' (few glyphs: "x^{-5}" has more in the script)."""
    delimiters = document_fonts().delimiters
    big = [g for g in members if not g.synthetic and is_extension(g.font) and g.text in delimiters.get(g.font, ())]
    if big:  # a big delimiter in it ("(\frac{1}{d} − \frac{1}{D})") is its symbol, on the text's row
        # (in a text font: a script after it, "]^{\frac{1}{2}}", is read as one)
        text = [g for g in members if g not in big and not g.blank and not g.atom] or members
        row, font = _row(text), Counter(g.font for g in text).most_common(1)[0][0]
        members = [replace(g, text=delimiters[g.font][g.text], oy=row, font=font) if g in big else g for g in members]
    size = max((g.size for g in members if not g.blank), default=None)
    ordered = sorted(members, key=reading_order)
    if size:  # a script's own space before it ("]", " ", "\frac{1}{2}" raised) would part it from its base
        ordered = [g for i, g in enumerate(ordered) if not (
            g.blank and g.size < 0.9 * size and 0 < i < len(ordered) - 1 and not ordered[i - 1].blank
            and ordered[i - 1].size >= 0.9 * size and ordered[i + 1].size < 0.9 * size
            and ordered[i - 1].oy - ordered[i + 1].oy > 0.12 * size)]
    spans = glyph_spans(ordered)
    return " ".join(line_text(spans, size=size).split())


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
    others = [r for r in rules if r is not rule]
    # rows that run past the bar (on any baseline of the part; a big bracket beside it does not
    # count, nor a glyph of another bar's rows: fractions set side by side, "\frac{qe}{m_e}\frac{1}{d}")
    for part in (ink_num, ink_den):
        a, b = min(g.x0 for g in part), max(g.x1 for g in part)
        rows = {g.oy for g in part}
        for g in chars:
            if id(g) not in taken and not g.blank and not g.atom and not is_extension(g.font) \
                    and (a - 0.4 * em < g.x1 <= a + 0.1 * em or b - 0.1 * em <= g.x0 < b + 0.4 * em) \
                    and any(abs(g.oy - row) < 0.15 * em for row in rows) \
                    and not any(r.x0 <= g.mid <= r.x1 and -1.0 * em < g.oy - r.y < 1.5 * em for r in others):
                return None
    if _two_lines(rule, chars, taken, num_row, den_row, em, others):
        return None  # an overline over a list line's start under the line above (levin's complements)
    if _more_rows(inside, chars, taken, num_row, -1, em, others) or _more_rows(inside, chars, taken, den_row, 1, em,
                                                                              others):
        return None  # a numerator or denominator of several rows (vectors, determinants): not rebuilt
    # and each part's big delimiters, in pairs, centred on its row on its side of the bar and
    # within the bar's ends ("d[(a − x)x]^{\frac{1}{2}}" over "dx"): read with it, not tested as it
    num, den = num + _big_pairs(chars, taken, num_row, rule, lo, hi, em, True), \
        den + _big_pairs(chars, taken, den_row, rule, lo, hi, em, False)
    members = num + den
    text = f"\\frac{{{_text(num)}}}{{{_text(den)}}}"
    axis = rule.y + 0.25 * em  # the baseline of the row the fraction sits in
    host = _beside(chars, taken, axis, rule.x0, rule.x1, em)
    line = host.line if host is not None else min(ink_num, key=lambda g: g.x0).line
    oy, size = (host.oy, host.size) if host is not None else (axis, em)
    return _atom(text, members, line, oy, size, rule), members


def _big_pairs(chars: list[Glyph], taken: set[int], row: float, rule: Rule, lo: float, hi: float, em: float,
               above: bool) -> list[Glyph]:
    """A fraction part's big delimiters (an extension font's): each spans the part's row, its box
    centred on the row's text (not a display's on the next line reaching up to it), all of them
    on the part's side of the bar, between the bar's ends, and paired."""
    delimiters = document_fonts().delimiters
    centre = row - 0.3 * em
    big = [g for g in chars if id(g) not in taken and not g.synthetic and g.text in delimiters.get(g.font, ()) and g.y0 < row < g.y1
           and abs((g.y0 + g.y1) / 2 - centre) < 0.4 * em and lo <= g.x0 and g.x1 <= hi
           and (g.y1 < rule.y + 0.15 * em if above else g.y0 > rule.y - 0.15 * em)]
    symbols = "".join(delimiters[g.font][g.text] for g in sorted(big, key=lambda g: g.x0))
    return big if big and _balanced(symbols) else []


def _balanced(symbols: str) -> bool:
    """Each opening delimiter closed after it, in order ("[()]", not ")(" or "(")."""
    stack = []
    for c in symbols:
        if c in _OPENING:
            stack.append(_OPENING[c])
        elif not stack or stack.pop() != c:
            return False
    return not stack


_OPENING = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⌊": "⌋", "⌈": "⌉"}


def _two_lines(rule: Rule, chars: list[Glyph], taken: set[int], num_row: float, den_row: float, em: float,
               others: list[Rule]) -> bool:
    r"""The bar's two rows are two lines of text, not a fraction's parts: each row is begun left of
    the bar on its own baseline (a list's "(a)" and "(b)"), the two beginnings start together
    (one column's lines), and nothing sits on the row between them where the text a fraction
    stands in would be (its axis), nor a bar of their own (a fraction beside this one). The rule
    is then an overline hugging the lower line's start (a complement: "(b) \overline{(A ∪ B)}"),
    its numerator the line above, a line's distance away."""
    def lead(row: float) -> list[Glyph]:  # the row's glyphs before the bar, as far as they run unbroken
        ink = sorted((g for g in chars if id(g) not in taken and not g.blank and not g.atom
                      and not is_extension(g.font) and g.size >= 0.8 * em and abs(g.oy - row) < 0.15 * em
                      and g.x1 <= rule.x0 + 0.1 * em), key=lambda g: -g.x1)
        run, edge, reach = [], rule.x0, 1.5 * em
        for g in ink:
            if g.x1 < edge - reach:
                break
            run.append(g)
            edge, reach = min(edge, g.x0), 1.0 * em
        return run
    # a line's distance apart (TeX's baselineskip, 1.2 of the size and more; a text fraction's rows
    # are ~0.75 apart, a display's ~1.35), the upper row well clear of the rule (the overline hugs
    # the text under it only; a numerator sits ~0.1 to 0.45 over a bar)
    if den_row - num_row < 1.3 * em or rule.y - num_row < 0.45 * em:
        return False
    above, below = lead(num_row), lead(den_row)
    if not above or not below:
        return False
    start = min(g.x0 for g in above + below)
    if abs(min(g.x0 for g in above) - min(g.x0 for g in below)) > 1.0 * em:
        return False
    if any(id(g) not in taken and not g.blank and start - 3.0 * em <= g.mid <= rule.x0
           and num_row + 0.3 * em < g.oy < den_row - 0.3 * em for g in chars):
        return False  # text on the axis row: the row a fraction stands in
    return not any(r.x0 < rule.x0 - 0.1 * em and r.x1 > start and num_row < r.y < den_row for r in others)


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
    fonts = document_fonts()
    delimiters = fonts.delimiters
    # (an extension glyph its font's names call a delimiter, or a piece of one, is none: lebl's big
    # "(" before "nπ/λ", the top of a matrix's "[" beside a "1/2" cell)
    signs = [g for g in chars if (g.text == "√" or len(g.text) == 1 and not g.synthetic and is_extension(g.font)
                                  and g.text not in delimiters.get(g.font, ()) and g.text not in PIECES
                                  and g.text not in fonts.piece_codes.get(g.font, ()))
             and abs(g.x1 - rule.x0) <= 0.3 * g.size
             and g.top - 0.35 * g.size <= rule.y <= g.oy + 0.6 * g.size]
    if not signs:
        return None
    sign = min(signs, key=lambda g: abs(g.x1 - rule.x0))
    em = sign.size
    if sign.text != "√" and any(is_extension(g.font) and abs(g.x0 - rule.x1) <= 0.3 * em
                                and abs(g.oy - sign.oy) < 0.5 * em for g in chars):
        return None  # pieces at both ends of the rule: a brace ("{", rule, "z", rule, "}"), not a root
    below = [g for g in chars if g is not sign and rule.x0 - 0.1 * em <= g.mid <= rule.x1 + 0.1 * em
             and g.bottom > rule.y + 0.1 * em and g.top > rule.y - 0.35 * em]
    # (a rebuilt piece by its top: a fraction's row sits lower under the overline)
    ink = [g for g in below if not g.blank and (g.bottom < rule.y + 1.8 * em or g.atom and g.top < rule.y + 0.8 * em)]
    if not ink:
        return None
    # its row: the text's and rebuilt pieces' baseline, not a big delimiter's (hung from its top)
    # nor a script's
    row = _row([g for g in ink if not is_extension(g.font) and (g.atom or g.size >= 0.9 * em)] or ink)
    radicand = [g for g in below if g.bottom <= row + 0.4 * em]
    index = [g for g in chars if g is not sign and not g.blank and g.size < 0.8 * em and g not in radicand
             and sign.x0 - 0.3 * em <= g.mid <= sign.x0 + 0.6 * (sign.x1 - sign.x0)
             and rule.y - 0.3 * em < g.oy < max(sign.oy + 1.0 * em, row)]
    # TeX kerns an index into the sign: its right edge ends ~0.55 em right of the sign's left
    # edge, whatever its width; an exponent of the glyph before the sign ("2^n√5") ends at it
    if index and not 0.25 * em <= max(g.x1 for g in index) - sign.x0 <= sign.x1 - sign.x0 + 0.1 * em:
        index = []
    index = _run_from_right(index, em)  # (not the exponent before the sign beside it: "ω^i∛")
    inner = _text(radicand)
    text = f"\\sqrt[{_text(index)}]{{{inner}}}" if index else f"\\sqrt{{{inner}}}"
    # with the space MuPDF put where the sign stands in the row under it (else "e^{\\sqrt{2}} x")
    gap = [g for g in chars if g.blank and g not in radicand and sign.x0 <= g.mid <= sign.x1
           and row - 0.2 * em <= g.oy <= row + 0.6 * em]
    members = [sign, *radicand, *index, *gap]
    host = _beside(chars, {id(g) for g in members}, row, min(g.x0 for g in (sign, *index)), rule.x1, em)
    line = host.line if host is not None else min((g for g in radicand if not g.blank), key=lambda g: g.x0).line
    atom = _atom(text, members, line, row, max(g.size for g in ink), rule)
    # the overline is its top: the sign's glyph box (a big glyph hung from the rule) says little
    atom.top, atom.y0 = rule.y, min(rule.y - 0.1 * em, *(g.y0 for g in ink))
    return atom, members


def _run_from_right(glyphs: list[Glyph], em: float) -> list[Glyph]:
    """The glyphs that run unbroken, on one baseline, leftwards from the rightmost one."""
    ink = sorted((g for g in glyphs if not g.blank), key=lambda g: -g.x1)
    run = ink[:1]
    for g in ink[1:]:
        if run[-1].x0 - g.x1 > 0.2 * em or abs(g.oy - run[0].oy) > 0.25 * em:
            break
        run.append(g)
    return run


def _beside(chars: list[Glyph], taken: set[int], row: float, x0: float, x1: float, em: float) -> Glyph | None:
    """The glyph a rebuilt piece spanning x0..x1 on the row at baseline `row` follows in the
    text (the nearest on its left), else the one it precedes (on its right): its line hosts it."""
    # (not a script: a fraction after "a_n" is no part of the subscript)
    near = [g for g in chars if id(g) not in taken and not g.blank and abs(g.oy - row) < 0.3 * em
            and (g.atom or g.size >= 0.9 * em)]
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


