"""Math notation from glyph geometry: superscripts, subscripts and small stacked fractions.

A text layer flattens `292^{3171}` into "2923171" and `a_n = 2·5^{n−1}` into "an 2 · 5n−1": the
digits are all there, the notation is gone, and a gold answer read from it is wrong for the
question as printed. The glyphs still say what was meant, by several cues at once: a script is
set smaller than the text around it (size) and on a raised or lowered baseline (origin); MuPDF
also flags raised spans (`flags & 1`). A small raised run directly above a small lowered run
(their x ranges overlap) is a textstyle fraction, written `\\frac{p}{q}` as display fractions are
(`parse_stacked`, which also rebuilds radicals).

Two places see scripts:
- inside one MuPDF line (most scripts): `line_text` rebuilds the line from its spans, which only
  the slower span-level extraction gives, so the parse stage asks for it only on pages with a
  candidate line (`wants_spans`: a line box taller than its font, or a raw glyph code);
- as separate fragments joined into one visual row (`join_row`, from the fragments' boxes).
Raw glyph codes (a glyph without Unicode) are mapped back here from the font's glyph names
(`parse_glyphs`), per font: the span says which font drew them.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from operator import itemgetter
from typing import Any

_SMALL = 0.9  # a script's size is at most this share of the text's size
_RAISED = 0.12  # baseline raised by this share of the text size: superscript (TeX: ~0.35)
_LOWERED = 0.06  # lowered by this share: subscript (TeX: ~0.15)
_PLAIN = frozenset("′″‴∗*'°")  # raised marks that are not exponents

GlyphMap = dict[str, dict[str, str]]  # font name -> {text-layer char: text} (`parse_glyphs`)
_RAW = "\x00-\x08\x0b-\x1f"


def glyph_pattern(glyphs: GlyphMap) -> re.Pattern:
    """Characters that send a line to the span-level pass: raw codes, and any character some
    font's glyph-name table rewrites."""
    extra = "".join(sorted({re.escape(c) for t in glyphs.values() for c, v in t.items() if c >= " " and v != "\u21a6"}))
    # a \mapsto bar's code (a digit) only with the arrow it is set on
    bars = "".join(sorted({f"|{re.escape(c)}\u2212*\u2192" for t in glyphs.values() for c, v in t.items() if v == "\u21a6"}))
    return re.compile(f"[{_RAW}{extra}]{bars}")


def wants_spans(blocks: list[dict], pattern: re.Pattern) -> bool:
    """Some line of the page may hold scripts or glyphs to rename: worth the span-level pass.
    A superscript lifts its line's top above the baseline (a subscript its bottom below it)
    further than a plain line in the same font reaches (compared per font, in units of its
    size: a heading's size alone does not count)."""
    reach: dict[str, tuple[set, set]] = {}
    for b in blocks:
        for ln in b["lines"]:
            if pattern.search(ln["text"]):
                return True
            size, bb = ln["font"]["size"] or 1.0, ln["bbox"]
            up, down = reach.setdefault(ln["font"]["name"], (set(), set()))
            up.add(round((ln["y"] - bb["y"]) / size, 1))
            down.add(round((bb["y"] + bb["h"] - ln["y"]) / size, 1))
    # MuPDF's line box comes from the font's ascender and descender, whatever the glyphs: the
    # least reach in a font on the page is that font's plain line
    usual = {name: (min(up), min(down)) for name, (up, down) in reach.items()}
    for b in blocks:
        for ln in b["lines"]:
            size, bb = ln["font"]["size"] or 1.0, ln["bbox"]
            up, down = usual[ln["font"]["name"]]
            if len(ln["text"]) > 1 and ((ln["y"] - bb["y"]) / size > up + 0.25
                                        or (bb["y"] + bb["h"] - ln["y"]) / size > down + 0.15):
                return True
    return False


def _script(text: str) -> str:
    core = text.strip()
    return core if len(core) == 1 else "{" + core + "}"


def _kind(span: dict, size: float, base: float) -> str:
    if not span["text"].strip() or span["size"] > _SMALL * size:
        return ""
    dy = span["origin"][1] - base
    if dy < -_RAISED * size or (span["flags"] & 1 and dy < 0):
        return "^"
    if dy > _LOWERED * size:
        return "_"
    return ""


# TeX's \mapsto is two glyphs: cmsy's zero-width bar `mapsto` (read "↦" by `parse_extension.tex_name`;
# MuPDF, not knowing the name, gave its code "7") set on the arrow after it (`\longmapsto`: on
# "−→"). The pair is one arrow
_MAPSTO = re.compile("\u21a6(\u2212+)?\u2192")


def _mapsto(text: str) -> str:
    if "\u21a6" not in text:
        return text
    return _MAPSTO.sub(lambda m: "\u27fc" if m.group(1) else "\u21a6", text)


def line_text(spans: list[dict], glyphs: GlyphMap | None = None, size: float | None = None) -> str:
    """The text of one MuPDF line with its scripts written `x^2`, `a_{n+1}`, fractions `\\frac{p}{q}`,
    and raw glyph codes mapped through `glyphs` where the font's glyph names say what they are.
    `size`: the text size when the caller knows it (a radicand "x^{-5}" has more script glyphs
    than text ones); else the size most of the line's characters have."""
    sizes = [s["size"] for s in spans if s["text"].strip()]
    if sizes and min(sizes) > _SMALL * round(max(sizes), 1):  # (round is monotonic: the max rounded)
        # no span is smaller than the line's text (whichever size that is): no script, no
        # fraction, the line as its spans say (most lines; skips the runs below)
        if not glyphs:
            return _mapsto("".join(s["text"] for s in spans))
        return _mapsto("".join("".join(map(t.get, s["text"], s["text"])) if (t := glyphs.get(s["font"])) else s["text"]
                               for s in spans))
    weights: Counter = Counter()
    for s in spans:
        weights[round(s["size"], 1)] += len(s["text"].strip())
    if not weights:
        return "".join(s["text"] for s in spans)
    size = round(size, 1) if size else _text_size(spans, weights)
    bases = Counter(round(s["origin"][1], 1) for s in spans if round(s["size"], 1) == size and s["text"].strip())
    base = bases.most_common(1)[0][0] if bases else spans[0]["origin"][1]
    # runs of spans of one kind: ("", text) or ("^"/"_", text, x0, x1)
    runs: list[list] = []  # (and the spans of each)
    for s in spans:
        text = s["text"]
        if glyphs and (table := glyphs.get(s["font"])):
            text = "".join(table.get(c, c) for c in text)
        kind = _kind(s, size, base)
        if runs and runs[-1][0] == kind and (kind == "" or not text[:1].isspace()):
            runs[-1][1] += text
            runs[-1][3] = s["bbox"][2]
            runs[-1][4].append(s)
        else:
            runs.append([kind, text, s["bbox"][0], s["bbox"][2], [s]])
    for run in runs:
        # a script of a script (lebl's e^{t^3}, hefferon's (...)^{p_1}): smaller again, off the
        # script's own baseline; the script read as a line of its own, at its size
        if run[0] and len(run[4]) > 1 and (inner := [x["size"] for x in run[4] if x["text"].strip()]) \
                and min(inner) < _SMALL * max(inner):
            lead = run[1][: len(run[1]) - len(run[1].lstrip())]
            trail = run[1][len(run[1].rstrip()):] if run[1].strip() else ""
            run[1] = lead + line_text(run[4], glyphs, size=max(inner)).strip() + trail
    out: list[str] = []
    i = 0
    while i < len(runs):
        kind, text, x0, x1, _ = runs[i]
        if kind == "^" and i + 1 < len(runs) and runs[i + 1][0] == "_" and _overlap(x0, x1, *runs[i + 1][2:4]):
            out.append(f"\\frac{{{text.strip()}}}{{{runs[i + 1][1].strip()}}}")  # small stacked numerator/denominator
            i += 2
            continue
        attached = bool(out) and _base(out[-1][-1:]) and not text[:1].isspace()
        if kind and attached and text.strip() not in _PLAIN:  # a script sits on a base, no gap
            lead = text[: len(text) - len(text.lstrip())]
            trail = text[len(text.rstrip()):]
            out.append(f"{lead}{kind}{_script(text)}{trail}")
        else:
            out.append(text)
        i += 1
    return _mapsto("".join(out))


def _text_size(spans: list[dict], weights: Counter) -> float:
    """The size most of a line's characters have, unless they are the scripts of a bigger size's
    glyphs (more glyphs in an exponent than on the line: lebl's `2e^{cos(2x)+1} + 1`): every
    one of them off the baseline of 3+ glyphs of a size they are small beside."""
    size = weights.most_common(1)[0][0]
    for big in sorted((b for b in weights if b * _SMALL > size and weights[b] >= 3), reverse=True):
        rows = Counter(round(s["origin"][1], 1) for s in spans if round(s["size"], 1) == big and s["text"].strip())
        row = rows.most_common(1)[0][0]
        if all(_kind(s, big, row) for s in spans if round(s["size"], 1) == size and s["text"].strip()):
            return big
    return size


def _base(ch: str) -> bool:
    """A character a script can sit on: a letter, digit, closing bracket, bar or ∂ (∂^2u; also the
    math-italic 𝜕 of unicode-math fonts, lebl's \\frac{𝜕^2u}{𝜕t^2}), not "√", "="."""
    return bool(ch) and (ch.isalnum() or ch in ")]}|′∂" or (ch > "\uffff" and unicodedata.normalize("NFKC", ch) == "∂"))


def _overlap(a0: float, a1: float, b0: float, b1: float) -> bool:
    return min(a1, b1) - max(a0, b0) > 0.5 * min(a1 - a0, b1 - b0)


class PageExtraction:
    """A text page's span- and glyph-level extractions, each made at most once per page and
    shared by the passes that need them (a `TextPage` stand-in for both calls): once
    `parse_stacked` has the glyphs (`extractRAWDICT`), the spans (`extractDICT`) are those glyphs
    joined per span: each raw span gets the "text" MuPDF's dict span has (its "chars" stay)."""

    def __init__(self, textpage: Any) -> None:
        self.textpage = textpage
        self._raw: dict | None = None
        self._joined = False

    def extractRAWDICT(self) -> dict:  # noqa: N802 (TextPage's name)
        if self._raw is None:
            self._raw = self.textpage.extractRAWDICT()
        return self._raw

    def extractDICT(self) -> dict:  # noqa: N802
        if self._raw is None:
            return self.textpage.extractDICT()
        if not self._joined:  # in place: cheaper than MuPDF's second extraction only so
            for b in self._raw["blocks"]:
                for ln in b.get("lines", ()):
                    for s in ln["spans"]:
                        s["text"] = "".join(map(_CHAR, s["chars"]))
            self._joined = True
        return self._raw


_CHAR = itemgetter("c")


def rebuild_lines(blocks: list[dict], dict_blocks: list[dict], glyphs: GlyphMap | None = None) -> int:
    """Rewrite, in place, the text of the lines of `blocks` (MuPDF's JSON lines) from the spans of
    the same lines in `dict_blocks` (the same text page's `extractDICT`). Returns lines changed.
    A line whose span text does not equal its JSON text is left as it is (the two must agree)."""
    text_blocks = [b for b in dict_blocks if b.get("type", 0) == 0]
    if len(text_blocks) != len(blocks):
        return 0
    changed = 0
    for jb, db in zip(blocks, text_blocks, strict=True):
        if len(jb["lines"]) != len(db.get("lines", [])):
            continue
        pairs = [(jl, dl) for jl, dl in zip(jb["lines"], db["lines"], strict=True)
                 if "".join([s["text"] for s in dl["spans"]]) == jl["text"]]  # the two must agree (a list: joined faster)
        spans_of = {id(jl): list(dl["spans"]) for jl, dl in pairs}
        changed += _adopt_stacked(pairs, spans_of)
        for jl, _ in pairs:
            spans = spans_of[id(jl)]
            if len(spans) < 2 and not (spans and glyphs and spans[0]["font"] in glyphs):
                continue
            text = line_text(spans, glyphs)
            if text != jl["text"]:
                jl["text"] = text
                changed += 1
    return changed


def _adopt_stacked(pairs: list[tuple[dict, dict]], spans_of: dict[int, list[dict]]) -> int:
    """A denominator (or numerator) MuPDF put on a line of its own: one small span right under
    (over) a small span of another line of the block, at the same x, goes into that line's spans
    after it (where `line_text` pairs the two), and its own line is emptied."""
    moved = 0
    biggest = max((s["size"] for _, dl in pairs for s in dl["spans"]), default=0.0)
    for jl, dl in pairs:
        spans = [s for s in dl["spans"] if s["text"].strip()]
        if len(spans) != 1 or spans[0]["size"] > _SMALL * biggest:
            continue
        lone = spans[0]
        for other, _ in pairs:
            if other is jl:
                continue
            host = spans_of[id(other)]
            sizes = [s["size"] for s in host if s["text"].strip()]
            if not sizes or lone["size"] > _SMALL * max(sizes):
                continue
            for k, s in enumerate(host):
                if (s["text"].strip() and abs(s["size"] - lone["size"]) < 0.5
                        and _overlap(s["bbox"][0], s["bbox"][2], lone["bbox"][0], lone["bbox"][2])
                        and 0 < lone["origin"][1] - s["origin"][1] < 2.5 * lone["size"]):
                    host.insert(k + 1, lone)  # lone is the denominator of s
                    spans_of[id(jl)] = []
                    jl["text"] = ""
                    moved += 1
                    break
            else:
                continue
            break
    return moved


def join_row(row: list[tuple]) -> list[str] | None:
    """Fragments of one visual row (x0, y0, x1, y1, text, size, ...) sorted left to right, as text
    pieces with scripts marked, when some fragment is a script; None when none is (the caller
    joins the row as plain text). A fragment is a script when it is smaller than the row's text
    and sits above (its bottom well above the text's bottom) or below (its top well below)."""
    sizes = Counter()
    for f in row:
        sizes[f[5]] += len(f[4])
    size = sizes.most_common(1)[0][0]
    mains = [f for f in row if f[5] == size]
    bottom = Counter(f[3] for f in mains).most_common(1)[0][0]
    top = Counter(f[1] for f in mains).most_common(1)[0][0]
    kinds = []
    for f in row:  # a fragment's size is its first span's: a long one is a line, not a script
        if f[5] > _SMALL * size or not f[4].strip() or f[4].strip() in _PLAIN or len(f[4].strip()) > 8:
            kinds.append("")
        elif f[3] < bottom - 0.25 * size:
            kinds.append("^")
        elif f[1] > top + 0.25 * size:
            kinds.append("_")
        else:
            kinds.append("")
    for k, f in enumerate(row):  # a script sits on a base with no gap; a small fraction needs none
        stacked = any(kinds[j] and kinds[j] != kinds[k] and _overlap(f[0], f[2], row[j][0], row[j][2])
                      for j in (k - 1, k + 1) if 0 <= j < len(row))
        if kinds[k] and not stacked and (k == 0 or f[0] - row[k - 1][2] > 0.25 * size
                                         or not _base(row[k - 1][4].rstrip()[-1:])):
            kinds[k] = ""
    if not any(kinds):
        return None
    out: list[str] = []
    end: float | None = None  # right edge of what `out` holds
    i = 0
    while i < len(row):
        f, kind = row[i], kinds[i]
        nxt = row[i + 1] if i + 1 < len(row) else None
        if kind and nxt is not None and {kind, kinds[i + 1]} == {"^", "_"} and _overlap(f[0], f[2], nxt[0], nxt[2]):
            num, den = (f, nxt) if kind == "^" else (nxt, f)
            piece, i = f"\\frac{{{num[4].strip()}}}{{{den[4].strip()}}}", i + 2
            gap_from = max(f[2], nxt[2])
        else:
            piece, i = (f"{kind}{_script(f[4])}" if kind else f[4]), i + 1
            gap_from = f[2]
        if end is not None and not kind and _gap(end, f[0], size):
            out.append(" ")
        out.append(piece)
        end = gap_from
    return out


def _gap(prev_end: float, start: float, size: float) -> bool:
    return start - prev_end > 0.1 * max(size, 1.0)
