"""Accents over letters, from glyph positions: `\\vec{p}`, `\\hat{x}`, `\\bar{x}` (and a text accent
TeX built from two glyphs, an OT1 "é").

TeX sets an accented letter as two glyphs, the accent first, then the letter under it, and the
text layer keeps both in that order: `\\vec{p}` reads "⃗p", a combining arrow that Unicode
attaches to the glyph *before* it ("where⃗p" shows the arrow over the "e"), and a spacing
accent (ˆ ¯ ˜ ˙) reads as a stray glyph beside its letter. Cues that do not depend on one book:
- a combining mark (Unicode category Mn: MuPDF gives it no width) belongs to the glyph drawn
  right after it, when that one starts just right of the mark's origin on about its baseline;
- a spacing accent belongs to the letter whose box holds its middle, on a baseline at or under
  its own: no two glyphs of running text overlap so.
The letter then reads `\\name{letter}`, unless it is set in the page's running-text font and the
pair has a precomposed character (a text accent: "é"). Only pages whose lines hold an accent
character pay (for the raw dict, shared with the other glyph passes).

A line another pass rewrote, or one whose raw glyphs and text disagree, cannot be read glyph by
glyph: MuPDF hangs the mark of a line's first letter on the end of the line before, which its raw
dict then lacks. `attach_marks` reads what is left from the text, after the scripts are built:
a combining mark is its next letter's accent (TeX's drawing order), across a line break too, and
a spacing accent right after a lone letter (not inside a word) is that letter's (a pass that
ordered glyphs by their middles put it there).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections import Counter
from typing import Any

from .parse_glyph_pool import Glyph, Rule, page_glyphs, rewrite_line, span_text
from .parse_math import GlyphMap

# accent character -> (LaTeX accent, the combining mark that composes it)
_ACCENTS: dict[str, tuple[str, str]] = {}
for _name, _mark, _chars in (
    ("vec", "\u20d7", "\u20d7\u2192"),
    ("hat", "\u0302", "\u0302\u02c6^"),
    ("bar", "\u0304", "\u0304\u00af\u02c9"),
    ("tilde", "\u0303", "\u0303\u02dc~"),
    ("dot", "\u0307", "\u0307\u02d9"),
    ("ddot", "\u0308", "\u0308\u00a8"),
    ("acute", "\u0301", "\u0301\u00b4\u02ca"),
    ("grave", "\u0300", "\u0300`\u02cb"),
    ("check", "\u030c", "\u030c\u02c7"),
    ("breve", "\u0306", "\u0306\u02d8"),
    ("mathring", "\u030a", "\u030a\u02da"),
):
    for _c in _chars:
        _ACCENTS[_c] = (_name, _mark)
ACCENT_CHARS = frozenset(_ACCENTS)
# What sends a page to the pass: an accent character, but an ASCII "^", "~" or "`" only right before
# a letter (an OT1 font's accents read so: "min`ute", TeX drawing the accent first), not in "x^2"
# or a rebuilt "x^{2}", which most math pages hold; and a spacing arrow "→" only where it can sit
# over a letter: touching one (drawn before its letter, or after it, with no gap between: the two
# overlap) or alone on a line of its own (raised over a tall letter), not between spaces ("f: A → B",
# a function arrow on the baseline: most arrows of a math book). On a page the pass reads, all are looked at
_TRIGGERS = ACCENT_CHARS - frozenset("^~`\u2192")
_IN_CONTEXT = re.compile(r"[\^~`][^\W\d_]|[^\W_]\u2192|\u2192[^\W_]|^[\s\u2212\-\u2192]*\u2192[\s\u2212\-\u2192]*$")


def _wants_accents(text: str) -> bool:
    return bool(_TRIGGERS.intersection(text)) or _IN_CONTEXT.search(text) is not None


def rebuild_accents(textpage: Any, blocks: list[dict], glyphs: GlyphMap | None) -> int:
    """Rewrite, in place, the lines of `blocks` holding an accent over a letter. Returns how many
    accents were placed. `textpage`: a MuPDF text page or a `parse_math.PageExtraction` of it."""
    # (or a code some font's glyph names make an accent: pxsys's `vec` reads "®")
    named = {font: frozenset(c for c, t in table.items() if t in _ACCENTS) for font, table in (glyphs or {}).items()}
    codes = frozenset().union(*named.values())
    if not any(_wants_accents(ln["text"]) or codes and not codes.isdisjoint(ln["text"]) for b in blocks for ln in b["lines"]):
        return 0
    raw = textpage.extractRAWDICT()["blocks"]
    leading = _unhang(blocks, raw)
    # a span's glyphs are looked at one by one only when its text (joined in C) holds an accent,
    # or a code its font's glyph names make one
    seeds = [Rule(c["bbox"][0], c["bbox"][2] + 1, c["origin"][1]) for b in raw for ln in b.get("lines", ())
             for s in ln["spans"] if not ACCENT_CHARS.isdisjoint(text := span_text(s))
             or not named.get(s["font"], frozenset()).isdisjoint(text)
             for c in s["chars"] if c["c"] in _ACCENTS or c["c"] in named.get(s["font"], ())]
    if not seeds:
        return 0
    lines, chars = page_glyphs(blocks, raw, glyphs or {}, seeds)
    text_font = Counter(g.font for g in chars if g.text.isalpha()).most_common(1)
    body = text_font[0][0] if text_font else ""
    touched: set[int] = set()
    placed = 0
    firsts = {}  # line index -> its first glyph, for the marks the line before held
    for g in chars:
        if not g.blank and g.line not in firsts:
            firsts[g.line] = g
    for li, ln in enumerate(lines):
        if "_mark" in ln and li in firsts:
            mark = Glyph(ln.pop("_mark"), firsts[li].x0, firsts[li].x0, firsts[li].oy, firsts[li].size, "", li)
            chars.insert(chars.index(firsts[li]), mark)
    letters = _Letters(chars)
    in_line: _InLine | None = None
    for i, mark in enumerate(chars):
        if mark.text not in _ACCENTS:
            continue
        base = _base(mark, i, chars, letters)
        if base is None:
            continue
        name, combining = _ACCENTS[mark.text]
        composed = unicodedata.normalize("NFC", base.text + combining)
        base.text = composed if len(composed) == 1 and base.font == body and name != "vec" \
            else f"\\{name}{{{base.text}}}"
        touched |= {mark.line, base.line}
        in_line = in_line or _InLine(chars)  # (built when the first accent is placed)
        _drop_mark(mark, base, in_line)
        placed += 1
    if not placed:
        return leading
    by_line: dict[int, list[Glyph]] = {li: [] for li in touched}
    for g in chars:
        if g.line in by_line and g.text:
            by_line[g.line].append(g)
    for li in touched:
        rewrite_line(lines[li], by_line[li])
    return placed


def _unhang(blocks: list[dict], raw: list[dict]) -> int:
    """A combining mark ending a JSON line that its raw line lacks is the next line's first
    letter's (MuPDF hung it on the line before, in this block or the last one): it leaves the line
    (which then agrees with its raw glyphs again) and waits, as "_mark", on the next one. Returns
    how many moved."""
    raw_text = [b for b in raw if b.get("type", 0) == 0]
    if len(raw_text) != len(blocks):
        return 0
    pairs = [(jl, rl) for jb, rb in zip(blocks, raw_text, strict=True) if len(jb["lines"]) == len(rb.get("lines", []))
             for jl, rl in zip(jb["lines"], rb["lines"], strict=True)]
    moved = 0
    for (jl, rl), (nxt, _) in zip(pairs, pairs[1:], strict=False):
        text = jl["text"]
        if text and text[-1] in _COMBINING and "".join(c["c"] for s in rl["spans"] for c in s["chars"]) == text[:-1]:
            jl["text"] = text[:-1]
            nxt["_mark"] = text[-1]
            moved += 1
    return moved


def _is_letter(g: Glyph) -> bool:
    return len(g.text) == 1 and g.text.isalnum()


class _Letters:
    """The page's letters by baseline, for the spacing accents' search: a letter's place and size
    do not change in the pass (one stops being a letter once it takes an accent)."""

    def __init__(self, chars: list[Glyph]) -> None:
        self.chars = chars
        self.oys: list[float] | None = None  # built on the first question (most pages ask none)

    def between(self, lo: float, hi: float) -> list[Glyph]:
        """Letters (still letters) with a baseline in [lo, hi], in the page's glyph order."""
        if self.oys is None:
            got = sorted((g.oy, i, g) for i, g in enumerate(self.chars) if _is_letter(g))  # (i: no tie reaches g)
            self.oys = [t[0] for t in got]
            self.order = [(t[1], t[2]) for t in got]
        got = self.order[bisect_left(self.oys, lo):bisect_right(self.oys, hi)]
        got.sort(key=lambda t: t[0])
        return [g for _, g in got if _is_letter(g)]


class _InLine:
    """The glyphs of each line, in the page's glyph order, kept so as a mark moves into its
    letter's line."""

    def __init__(self, chars: list[Glyph]) -> None:
        self.where = {id(g): i for i, g in enumerate(chars)}
        self.lines: dict[int, list[tuple[int, Glyph]]] = {}
        for i, g in enumerate(chars):
            self.lines.setdefault(g.line, []).append((i, g))

    def of(self, line: int) -> list[Glyph]:
        """The glyphs now in `line`, in the page's glyph order."""
        return [g for _, g in self.lines.get(line, ())]

    def move(self, g: Glyph, line: int) -> None:
        if g.line == line:
            return
        i = self.where[id(g)]
        old = self.lines[g.line]
        old.pop(bisect_left(old, i, key=lambda t: t[0]))
        new = self.lines.setdefault(line, [])
        new.insert(bisect_left(new, i, key=lambda t: t[0]), (i, g))
        g.line = line


def _base(mark: Glyph, i: int, chars: list[Glyph], letters: _Letters) -> Glyph | None:
    """The letter `mark` sits over, or None."""
    size = mark.size
    if mark.x1 - mark.x0 < 0.05 * size:  # a combining mark: the glyph drawn next
        nxt = next((g for g in chars[i + 1:i + 3] if not g.blank), None)
        if nxt is not None and len(nxt.text) == 1 and nxt.text not in _ACCENTS and -0.2 * size <= nxt.x0 - mark.x0 <= 0.8 * size \
                and abs(nxt.oy - mark.oy) < 0.6 * size:
            return nxt
        return None
    mid = mark.mid
    under = [g for g in letters.between(mark.oy - 0.06 * size, mark.oy + 1.01 * size) if g is not mark
             and g.size >= 0.7 * size and g.x0 - 0.05 * size <= mid <= g.x1 + 0.05 * size
             and -0.05 * size <= g.oy - mark.oy <= 1.0 * size]
    return min(under, key=lambda g: abs(g.mid - mid), default=None)


def _drop_mark(mark: Glyph, base: Glyph, in_line: _InLine) -> None:
    """The mark leaves its line. Where it stood in a gap before its letter (MuPDF put no space
    there: the mark filled it), it becomes that space, in the letter's line."""
    before = [g for g in in_line.of(base.line) if g is not mark and g is not base
              and g.x1 <= base.x0 + 0.1 * base.size and abs(g.oy - base.oy) < 0.5 * base.size]
    prev = max(before, key=lambda g: g.x1, default=None)
    if prev is not None and not prev.blank and base.x0 - prev.x1 > 0.25 * base.size:
        mark.text, mark.blank = " ", True
        in_line.move(mark, base.line)
        mark.x0, mark.x1, mark.oy, mark.size, mark.font = prev.x1, base.x0, base.oy, base.size, prev.font
    else:
        mark.text, mark.blank = "", True


_COMBINING = "".join(c for c in _ACCENTS if unicodedata.category(c) == "Mn")
_COMBINING_SET = frozenset(_COMBINING)  # (asked of every line: a set's test runs in C)
# a mark before a letter (and its script); a word right before it had a space the mark filled
_MARKED = re.compile(rf"(?P<word>[^\W\d_]{{2}})?[{_COMBINING}](?P<letter>[^\s{_COMBINING}])")

# a mark before the opening or close of a piece another pass rebuilt ("⃗\\frac{v", "s⃗}{s",
# "\\frac{m}{M+m⃗}v"): MuPDF gives a combining mark the place of the glyph before it in the
# content stream, so the fraction pass put the mark of a numerator's (denominator's, the next
# glyph's) first letter on the row before; TeX drew it right before its letter, which comes next
_ACROSS = re.compile(rf"[{_COMBINING}](?P<skip>\s*(?:\\frac\{{|\}}\{{?)+)(?P<letter>[^\W_])")


# a spacing accent right after a lone letter, where a pass that ordered glyphs by their middles
# put it (an accent over an italic letter is skewed right of it): "xˆ + yˆ", "tˆ_{1}"
_SPACING = "\u02c6\u02dc\u00af\u02c9\u02d9\u02c7\u02d8\u00a8"
_SPACING_SET = frozenset(_SPACING)
_AFTER = re.compile(rf"(?<![^\W\d_])(?P<letter>[^\W\d_])(?P<mark>[{_SPACING}])(?![^\W\d_])")
# or right before one, alone (TeX's drawing order, kept in a line another pass rewrote: "Rep ˆB,B")
_BEFORE = re.compile(rf"(?<![^\W\d_])(?P<mark>[{_SPACING}])(?P<letter>[^\W\d_])(?![^\W\d_])")


def attach_marks(blocks: list[dict]) -> int:
    """Combining accent marks still in the lines' text go onto the letter after them, in the
    line or at the start of the next line (MuPDF left the mark on the line before).
    Returns how many were placed."""
    placed = 0

    def accent(m: re.Match) -> str:
        nonlocal placed
        placed += 1
        return f"{m['word'] + ' ' if m['word'] else ''}\\{_ACCENTS[m[0][-2]][0]}{{{m['letter']}}}"

    def across(m: re.Match) -> str:
        nonlocal placed
        placed += 1
        return f"{m['skip']}\\{_ACCENTS[m[0][0]][0]}{{{m['letter']}}}"

    def after(m: re.Match) -> str:
        nonlocal placed
        placed += 1
        return f"\\{_ACCENTS[m['mark']][0]}{{{m['letter']}}}"

    lines = [ln for b in blocks for ln in b["lines"]]
    for k, ln in enumerate(lines):
        text = ln.pop("_mark", "") + ln["text"]
        if not text or _COMBINING_SET.isdisjoint(text) and text[-1] not in _SPACING:
            ln["text"] = text
            continue
        # (a spacing accent alone at a line's end too: a pass that rewrote the line left it there)
        hangs = text[-1] in _COMBINING or text[-1] in _SPACING and not text[-2:-1].isalnum()
        if hangs and k + 1 < len(lines) and lines[k + 1]["text"][:1].strip():
            lines[k + 1]["_mark"] = text[-1] + lines[k + 1].get("_mark", "")  # the next line's first letter's
            text = text[:-1] if text[-1] in _SPACING else text[:-1].rstrip()  # (its word ended before it)
        ln["text"] = _MARKED.sub(accent, _ACROSS.sub(across, text))
    for ln in lines:
        if not _SPACING_SET.isdisjoint(ln["text"]):
            ln["text"] = _BEFORE.sub(after, _AFTER.sub(after, ln["text"]))
    return placed
