"""Digit groups set apart by a thin space read as one number: "s = 25 857" is 25857.

Many style guides (SI, siunitx, French typography, hefferon's answers) separate a long number's
digit groups with a thin space, not a comma. TeX sets it as a kern, and the text layer reads the
gap as a space, so "25 857" reads as two numbers side by side (curation then drops the item as
layout damage, or a checker compares the wrong value). The text cannot tell a thin space from a
word space; the glyphs can: a thin space is 1/6 em, and a word space never shrinks under 2/9 em
in TeX's fonts, so a space narrower than 0.2 of its size between digit groups (1-3 digits, then
groups of exactly 3) is a separator. Only pages whose text has such a pattern pay (for the raw
dict, shared with the other glyph passes).
"""

from __future__ import annotations

import re
from typing import Any

_CANDIDATE = re.compile(r"(?<![\d.,])\d{1,3} \d{3}(?!\d)")  # cheap test on a line's text
_THIN = "\u2009"
_GROUPED = re.compile(rf"(?<![\d.,{_THIN}])\d{{1,3}}(?:{_THIN}\d{{3}})+(?![\d{_THIN}])")
_SPACED = re.compile(r"(?<![\d.,\u2009])\d{1,3}(?: \d{3})+(?![\d\u2009])")  # the same, a word space apart
_NARROW = 0.2  # em: a thin space is 1/6 em; TeX's word spaces shrink to 2/9 em at most


def _marked(line: dict) -> str:
    """A raw line's text with each narrow space between two digits as a thin space."""
    chars = [(c["c"], c["bbox"][2] - c["bbox"][0], s["size"]) for s in line["spans"] for c in s["chars"]]
    out = []
    for k, (c, width, size) in enumerate(chars):
        if c == " " and 0 < k < len(chars) - 1 and chars[k - 1][0].isdigit() and chars[k + 1][0].isdigit() \
                and width < _NARROW * size:
            c = _THIN
        out.append(c)
    return "".join(out)


def join_digit_groups(textpage: Any, blocks: list[dict]) -> int:
    """Rewrite, in place, each number of `blocks` whose digit groups the page sets apart with thin
    spaces as one number. Returns how many were joined. `textpage`: a MuPDF text page or a
    `parse_math.PageExtraction` of it. The glyph passes before this one move text between lines,
    so a grouping is looked for on the whole page, and one the page also prints with a word space
    ("pages 25 857") is left alone everywhere."""
    lines = [ln for b in blocks for ln in b["lines"]]
    if not any(_CANDIDATE.search(ln["text"]) for ln in lines):
        return 0
    grouped: dict[str, str] = {}  # as the text reads it -> the number
    spaced: set[str] = set()  # as the text reads it, printed with a word space somewhere
    for b in textpage.extractRAWDICT()["blocks"]:
        for ln in b.get("lines", ()):
            marked = _marked(ln)
            for m in _GROUPED.finditer(marked):
                grouped[m.group(0).replace(_THIN, " ")] = m.group(0).replace(_THIN, "")
            spaced.update(m.group(0) for m in _SPACED.finditer(marked))
    for printed in [k for k in grouped if any(w in k or k in w for w in spaced)]:
        del grouped[printed]
    if not grouped:
        return 0
    pattern = re.compile(r"(?<![\d.,])(?:" + "|".join(map(re.escape, sorted(grouped, key=len, reverse=True))) + r")(?!\d)")
    joined = 0
    for ln in lines:
        text, n = pattern.subn(lambda m: grouped[m.group(0)], ln["text"])
        if n:
            ln["text"], joined = text, joined + n
    return joined
