"""Page layout -> reading-order lines: what the parse stage does with a MuPDF text page.

MuPDF's structured text (blocks of lines of characters, with fonts and boxes) is printed as JSON
by MuPDF itself, which is 2-3x cheaper than building Python dicts span by span
(`page.get_text("dict")`); a fallback reads `extractDICT` where that binding is missing.
Two repairs happen here, before anyone reads the text:
- fragments of one visual line (MuPDF splits a line at wide gaps: a bold label and its text,
  the columns of a small table) are joined left to right;
- two-column pages are put in reading order (left column, then right column, band by band
  between full-width lines), whatever order the PDF's content stream drew them in;
- stacked rows of a matrix become one LaTeX `pmatrix` line (`parse_matrix`);
- a smaller fragment above or below a row's text is a script (`parse_math.join_row`).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from typing import Any

import orjson

from .parse_math import join_row
from .parse_matrix import rebuild_matrices

try:  # MuPDF's own JSON printer (PyMuPDF >= 1.23)
    from pymupdf import mupdf as _mupdf

    _HAS_JSON = hasattr(_mupdf, "fz_print_stext_page_as_json")
except ImportError:  # pragma: no cover - PyMuPDF always ships the mupdf bindings today
    _mupdf, _HAS_JSON = None, False

_STRIP = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ue000-\uf8ff\ufffd-\uffff]")
# runs of spaces -> one space; a lone " " (most of them) is left alone rather than replaced by itself
_SPACES = re.compile(r"(?! (?![ \t\u00a0\u2000-\u200b]))[ \t\u00a0\u2000-\u200b]+")


def dropped_glyphs(raw: str) -> int:
    """How many control / private-use / unmapped glyphs cleaning removes from a page's raw text
    (TeX's delimiter pieces, mostly): counted on the page record, never removed silently."""
    return len(_STRIP.findall(raw))


def clean_text(text: str) -> str:
    """NFKC (ligatures, math letters), no control or private-use glyphs, single spaces."""
    text = unicodedata.normalize("NFKC", text)
    return _SPACES.sub(" ", _STRIP.sub(" ", text)).strip()


def stext_blocks(textpage: Any) -> list[dict]:
    """Text blocks of a MuPDF text page as [{"lines": [{"bbox", "font", "text"}]}]."""
    if _HAS_JSON:
        buf = _mupdf.fz_new_buffer(1 << 16)
        out = _mupdf.FzOutput(buf)
        _mupdf.fz_print_stext_page_as_json(out, textpage.this, 1.0)
        out.fz_close_output()
        return [b for b in orjson.loads(_mupdf.fz_buffer_extract(buf))["blocks"] if b.get("type") == "text"]
    blocks = []
    for b in textpage.extractDICT()["blocks"]:
        lines = []
        for line in b.get("lines", []):
            spans = line["spans"]
            if not spans:
                continue
            x0, y0, x1, y1 = line["bbox"]
            first = spans[0]
            lines.append({
                "bbox": {"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0},
                "font": {"size": first["size"], "weight": "bold" if first["flags"] & 16 else "normal"},
                "text": "".join(s["text"] for s in spans),
            })
        blocks.append({"lines": lines})
    return blocks


def page_lines(blocks: list[dict], width: float) -> tuple[list[dict], str]:
    """Visual lines (PageLine dicts, cleaned text) of a page in reading order, and the raw text
    (for the quality check: cleaning removes the very glyphs it looks for)."""
    frags = []
    for bi, block in enumerate(blocks):
        for li, frag in enumerate(block["lines"]):
            text = frag["text"]
            if text and not text.isspace():
                bb, font = frag["bbox"], frag["font"]
                x0, y0 = bb["x"], bb["y"]
                frags.append((x0, y0, x0 + bb["w"], y0 + bb["h"], text, font["size"], font.get("weight") == "bold", bi, li))
    gutter = _find_gutter(frags, width)
    # fragments of one visual line: same block, same column, vertical overlap >= half a height
    groups: dict[tuple[int, int], list[list[tuple]]] = {}
    order: list[list[tuple]] = []
    for f in frags:
        side = 0 if gutter is None else -1 if f[2] <= gutter else 1 if f[0] >= gutter else 0
        group = groups.setdefault((f[7], side), [])
        y0, y1 = f[1], f[3]
        h = y1 - y0
        reach = 4 * f[5]  # farther apart than this, two pieces at one height are not one line
        for k in range(len(group) - 1, max(len(group) - 9, -1), -1):  # the last 8 rows, newest first
            r = group[k][0]
            top, bottom = r[1], r[3]
            overlap = (bottom if bottom < y1 else y1) - (top if top > y0 else y0)
            if overlap > 0.5 * (bottom - top if bottom - top < h else h):  # inline: this loop is hot
                last = group[k][-1]
                if f[0] - last[2] > reach or last[0] - f[2] > reach:
                    continue
                group[k].append(f)
                break
        else:
            group.append([f])
            order.append(group[-1])
    raw: list[str] = []
    for row in order:
        if len(row) == 1:
            raw.append(row[0][4])
            continue
        row.sort(key=lambda f: f[0])
        if min(f[5] for f in row) < 0.9 * max(f[5] for f in row) and (pieces := join_row(row)) is not None:
            raw.append("".join(pieces))  # a script or small fraction set as its own fragment
            continue
        parts = [row[0][4]]
        for prev, cur in zip(row, row[1:], strict=False):
            parts.append(" " if cur[0] - prev[2] > 0.1 * max(cur[5], 1.0) else "")
            parts.append(cur[4])
        raw.append("".join(parts))
    # clean the whole page at once (one C call per step instead of one per line)
    cleaned = _SPACES.sub(" ", _STRIP.sub(" ", unicodedata.normalize("NFKC", "\n".join(raw)))).split("\n")
    if len(cleaned) != len(raw):  # a line separator inside a fragment: clean line by line
        cleaned = [clean_text(t) for t in raw]
    out: list[dict] = []
    for row, text in zip(order, cleaned, strict=True):
        text = text.strip()
        if not text:
            continue
        if len(row) == 1:
            f = row[0]
            out.append({"text": text, "x0": f[0], "y0": f[1], "x1": f[2], "y1": f[3], "size": f[5], "bold": f[6],
                        "block": f[7], "line": None})
            continue
        x0, y0, x1, y1, size, longest = row[0][0], row[0][1], row[0][2], row[0][3], row[0][5], len(row[0][4])
        for f in row:  # the line's box, and the size of its longest piece of text (inline: hot)
            x0 = f[0] if f[0] < x0 else x0
            y0 = f[1] if f[1] < y0 else y0
            x1 = f[2] if f[2] > x1 else x1
            y1 = f[3] if f[3] > y1 else y1
            if len(f[4]) > longest:
                size, longest = f[5], len(f[4])
        out.append({"text": text, "x0": x0, "y0": y0, "x1": x1, "y1": y1, "size": size, "bold": row[0][6],
                    "block": row[0][7], "line": None})
    if gutter is not None:
        out = _column_order(out, gutter)
    return rebuild_matrices(out), "\n".join(raw)


def _column_order(lines: list[dict], gutter: float) -> list[dict]:
    """Left column then right column, band by band between full-width lines."""
    out: list[dict] = []
    band: list[dict] = []

    def flush() -> None:
        out.extend(sorted((ln for ln in band if ln["x1"] <= gutter), key=lambda ln: (ln["y0"], ln["x0"])))
        out.extend(sorted((ln for ln in band if ln["x1"] > gutter), key=lambda ln: (ln["y0"], ln["x0"])))
        band.clear()

    for ln in sorted(lines, key=lambda ln: (ln["y0"], ln["x0"])):
        if ln["x0"] < gutter < ln["x1"]:  # a full-width line (heading, wide formula) ends the band
            flush()
            out.append(ln)
        else:
            band.append(ln)
    flush()
    return out


def _find_gutter(frags: list[tuple], width: float) -> float | None:
    """Two columns: an x near the middle that few fragments cross, with running text (long
    fragments) on both sides -- not a small two-part table or side-by-side sub-questions."""
    n = len(frags)
    if n < 12 or width <= 0:
        return None
    lo, hi = 0.4 * width, 0.6 * width
    if sum(1 for f in frags if f[0] < lo and f[2] > hi) > 0.3 * n:
        return None  # most lines span the middle: one column
    ends = sorted(f[2] for f in frags)
    starts = sorted(f[0] for f in frags)
    best = None
    for x in range(int(width * 0.35), int(width * 0.65), 2):
        left = bisect_right(ends, x)
        right = n - bisect_left(starts, x)
        crossing = n - left - right
        if min(left, right) >= 3 and left + right >= 10 and crossing <= 0.2 * n:
            score = (crossing, -min(left, right))
            if best is None or score < best[0]:
                best = (score, x)
    if best is None:
        return None
    x = best[1]
    if _median([f[2] - f[0] for f in frags if f[2] <= x]) < 0.25 * width:
        return None
    if _median([f[2] - f[0] for f in frags if f[0] >= x]) < 0.25 * width:
        return None
    return float(x)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0
