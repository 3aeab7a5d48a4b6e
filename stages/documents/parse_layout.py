"""Page layout -> reading-order lines: what the parse stage does with a MuPDF text page.

MuPDF's structured text (blocks of lines of characters, with fonts and boxes) is printed as JSON
by MuPDF itself, which is 2-3x cheaper than building Python dicts span by span
(`page.get_text("dict")`); a fallback reads `extractDICT` where that binding is missing.
Two repairs happen here, before anyone reads the text:
- fragments of one visual line (MuPDF splits a line at wide gaps: a bold label and its text,
  the columns of a small table) are joined left to right;
- a label drawn apart from its text ("b)" in a cell of a part grid, in its own block after the
  text) joins the line that starts right of it (`_hang_labels`);
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
from .parse_matrix import bar_fences, rebuild_matrices

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
                # the gap to the row's nearest side: a piece left of the row (a label set after its
                # text) is as near as its first piece, however far the row's last piece is
                row = group[k]
                if f[0] - max(p[2] for p in row) > reach or min(p[0] for p in row) - f[2] > reach:
                    continue
                group[k].append(f)
                break
        else:
            group.append([f])
            order.append(group[-1])
    order = _hang_labels(_split_at_labels(order))
    raw: list[str] = []
    celled: set[int] = set()  # rows whose fragments may be a matrix's cells (`_cells`)
    for k, row in enumerate(order):
        if len(row) == 1:
            raw.append(row[0][4])
            continue
        row.sort(key=lambda f: f[0])
        if min(f[5] for f in row) < 0.9 * max(f[5] for f in row) and (pieces := join_row(row)) is not None:
            raw.append("".join(pieces))  # a script or small fraction set as its own fragment
            continue
        if len(row) <= 12:
            celled.add(k)
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
    for k, (row, text) in enumerate(zip(order, cleaned, strict=True)):
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
        if k in celled and len(text) <= 80:
            out[-1]["cells"] = _cells(row)
    if gutter is not None:
        out = _column_order(out, gutter)
    return _grid_order(rebuild_matrices(out, bar_fences(blocks))), "\n".join(raw)


def _cells(row: list[tuple]) -> list[str]:
    """A row's fragments (in x order) as the cells a matrix pass may read them as: TeX sets each
    cell of an array as a run of its own, a column gap (about an em) from the next; fragments
    closer than half an em are one cell."""
    cells, last = [], None
    for f in row:
        text = clean_text(f[4])
        if not text:
            continue
        if last is not None and f[0] - last[2] < 0.5 * max(f[5], 1.0):
            cells[-1] += (" " if f[0] - last[2] > 0.1 * max(f[5], 1.0) else "") + text
        else:
            cells.append(text)
        last = f
    return cells


# an enumeration label alone: "a)", "(b)", "(iv)", "3." -- the cells of a part grid start with one
_LABEL_ONLY = re.compile(r"\(?(?:[a-zA-Z]|[ivx]{1,4}|\d{1,2})\)|\d{1,2}\.|[a-z]\.")


def _split_at_labels(order: list[list[tuple]]) -> list[list[tuple]]:
    """A row that runs over a wide gap holding a label ("a) Trouvez x.   b) Quelle ...": the
    cells of a part grid, drawn at one height) is cut there: the label starts a cell."""
    labels = [row[0] for row in order if len(row) == 1 and _LABEL_ONLY.fullmatch(row[0][4].strip())]
    labels += [f for row in order if len(row) > 1 for f in row if _LABEL_ONLY.fullmatch(f[4].strip())]
    if not labels:
        return order
    out: list[list[tuple]] = []
    for row in order:
        if len(row) < 2:
            out.append(row)
            continue
        pieces = sorted(row, key=lambda f: f[0])
        cut = [pieces[0]]
        for prev, cur in zip(pieces, pieces[1:], strict=False):
            gap_x0, gap_x1 = prev[2], cur[0]
            if gap_x1 - gap_x0 >= cur[5] and any(
                    lab[0] >= gap_x0 - 0.5 and lab[2] <= gap_x1 + 0.5 and min(lab[3], cur[3]) > max(lab[1], cur[1])
                    for lab in labels) or (cur[0] - prev[2] >= cur[5] and _LABEL_ONLY.fullmatch(cur[4].strip())
                                          and cur is not pieces[-1]):
                out.append(cut)
                cut = []
            cut.append(cur)
        out.append(cut)
    return out


def _hang_labels(order: list[list[tuple]]) -> list[list[tuple]]:
    """A label drawn apart from its text (its own block, after the text: part grids set "b)" in a
    cell of its own) joins the line that starts just right of it at its height, wherever that
    line's block is; left alone, it would stand after the text it labels and give it to the
    label before. A label whose line has a taller piece stacked above its text (a fraction's
    numerator read as its own line before it) goes before that piece instead."""
    out = order
    for row in order:
        if len(row) != 1 or not _LABEL_ONLY.fullmatch(row[0][4].strip()):
            continue
        lab = row[0]
        x1, y0, y1, size = lab[2], lab[1], lab[3], lab[5]
        best, gap = None, 2.0 * size  # a label's text starts within two ems of it
        for other in out:
            if other is row:
                continue
            left = min(other, key=lambda f: f[0])
            if left[0] < x1 - 0.5 or left[0] - x1 > gap:
                continue
            top, bottom = left[1], left[3]
            overlap = min(bottom, y1) - max(top, y0)
            if overlap > 0.5 * min(bottom - top, y1 - y0):
                best, gap = other, left[0] - x1
        if best is None or _inner_row(best, out, size):
            continue  # (a label beside a matrix overlaps its middle row: rows stacked above it are the matrix's)
        out = [r for r in out if r is not row]
        i = out.index(best)
        prev = out[i - 1] if i else None
        if prev is not None and _stacked_over(prev, best, x1, size):
            out.insert(i - 1, row)  # before the numerator: the label leads the whole stacked cell
        else:
            best.append(lab)  # row order is by x when the line is joined
    return out


def _inner_row(row: list[tuple], rows: list[list[tuple]], size: float) -> bool:
    """A row with another right above it, starting where it starts: a matrix's or a system's
    inner row, not the first line of a part's text."""
    x0, top = min(f[0] for f in row), min(f[1] for f in row)
    for other in rows:
        if other is row:
            continue
        bottom = max(f[3] for f in other)
        if abs(min(f[0] for f in other) - x0) < size and top - 0.6 * size <= bottom <= top + 0.5 * size:
            return True
    return False


def _stacked_over(piece: list[tuple], row: list[tuple], x: float, size: float) -> bool:
    """`piece` sits right above `row`'s start, within its width, right of x: a numerator or an
    upper limit read as a line of its own."""
    p0, p1 = min(f[0] for f in piece), max(f[2] for f in piece)
    r0, r1 = min(f[0] for f in row), max(f[2] for f in row)
    top, bottom = min(f[1] for f in piece), max(f[3] for f in piece)
    row_top = min(f[1] for f in row)
    return p0 >= x - 0.5 and p0 - r0 < 2 * size and p1 <= r1 + 0.5 * size and top < row_top \
        and bottom > row_top - 0.3 * size and bottom - top < 2.5 * size


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


_PART_LABEL = re.compile(r"\(?([a-h])\)(?:\s|$)")


def _grid_order(lines: list[dict]) -> list[dict]:
    """Reading order inside a grid of parts ("a) ...  b) ..." side by side, "c) ...  d) ..." below):
    cell by cell, each cell's lines in the stream's order, instead of line by line across the grid
    (which hands the second line of b) to a)). A grid: two or more lines led by part labels at
    one height, letters going up left to right; its columns start at those labels' x. The
    grid's lines are those between the lines that start left of its first column or cross a
    column's edge; each is given to the column it starts in and, within the column, to the
    label of its block of lines (blocks split at vertical gaps wider than half a line). Cells go
    in their letters' order, so a grid filled down its columns (a c / b d) reads a, b, c, d too."""
    anchors = [(i, ln) for i, ln in enumerate(lines) if _PART_LABEL.match(ln["text"])]
    if len(anchors) < 2:
        return lines
    done: set[int] = set()
    out = list(lines)
    for i, ln in anchors:
        if i in done:
            continue
        mid = (ln["y0"] + ln["y1"]) / 2
        same = sorted((a for a in anchors if a[1]["y0"] <= mid <= a[1]["y1"] and a[0] not in done), key=lambda a: a[1]["x0"])
        letters = [_PART_LABEL.match(a[1]["text"]).group(1) for a in same]
        if len(same) < 2 or letters != sorted(set(letters)) or same[0][1] is not ln:
            continue
        cols = [a[1]["x0"] for a in same]
        if min(b - a for a, b in zip(cols, cols[1:], strict=False)) < 3 * ln["size"]:
            continue
        region = _grid_region(out, [a[0] for a in same], cols)
        if region is None:
            continue
        lo, hi, cells = region
        done.update(range(lo, hi))
        out[lo:hi] = cells
    return out


def _grid_region(lines: list[dict], anchor_idx: list[int], cols: list[float]) -> tuple[int, int, list[dict]] | None:
    """The lines around one row of a grid (indices lo..hi in reading order) in cell order."""
    size = max(lines[i]["size"] for i in anchor_idx)
    first = lines[anchor_idx[0]]

    def inside(ln: dict) -> bool:  # starts in a column and stays in it; a cell's other lines start past its label
        if ln["x0"] < cols[0] - 1:
            return False
        k = max(j for j, c in enumerate(cols) if ln["x0"] >= c - 1)
        if not _PART_LABEL.match(ln["text"]) and ln["x0"] < cols[k] + 0.8 * size:
            return False  # (a formula wrapped back to the margin under the grid is no cell's)
        return k + 1 == len(cols) or ln["x1"] <= cols[k + 1] + 1

    lo = hi = min(anchor_idx)
    while lo > 0 and inside(lines[lo - 1]) and lines[lo - 1]["y1"] > first["y0"] - 3 * size:
        lo -= 1
    hi = max(anchor_idx) + 1
    while hi < len(lines) and inside(lines[hi]):
        hi += 1
    block = lines[lo:hi]
    if not all(inside(ln) for ln in block):
        return None
    anchors = [ln for ln in block if _PART_LABEL.match(ln["text"])]
    by_col: dict[int, list[dict]] = {}
    for ln in block:
        by_col.setdefault(max(j for j, c in enumerate(cols) if ln["x0"] >= c - 1), []).append(ln)
    cells: list[tuple[dict, int, list[dict]]] = []  # (anchor line, column, lines)
    for k, col in by_col.items():
        col.sort(key=lambda ln: ln["y0"])
        runs: list[list[dict]] = [[col[0]]]
        for ln in col[1:]:
            if ln["y0"] - max(x["y1"] for x in runs[-1]) > 0.5 * size:
                runs.append([])
            runs[-1].append(ln)
        owned, loose = [], []
        for run in runs:
            own = [ln for ln in run if any(ln is a for a in anchors)]
            if len(own) > 1:
                return None  # two labels in one block of lines: not cells we can tell apart
            (owned if own else loose).append((own[0] if own else None, run))
        if not owned:
            return None
        for _, run in loose:  # unlabelled lines (a system centred on its label): the nearest labelled block
            top, bottom = run[0]["y0"], max(ln["y1"] for ln in run)
            near = min(owned, key=lambda o: max(o[1][0]["y0"] - bottom, top - max(ln["y1"] for ln in o[1])))
            near[1].extend(run)
        cells.extend((a, k, run) for a, run in owned)
    letters = [_PART_LABEL.match(c[0]["text"]).group(1) for c in cells]
    if len(set(letters)) == len(letters):  # in letter order: across rows (a b / c d) or down columns (a c / b d)
        ordered = [c for _, c in sorted(zip(letters, cells, strict=True), key=lambda lc: lc[0])]
    else:  # row by row (grid rows: labels at one height), left to right
        rows: list[list[tuple[dict, int, list[dict]]]] = []
        for cell in sorted(cells, key=lambda c: (c[0]["y0"] + c[0]["y1"]) / 2):
            mid = (cell[0]["y0"] + cell[0]["y1"]) / 2
            if rows and any(c[0]["y0"] <= mid <= c[0]["y1"] for c in rows[-1]):
                rows[-1].append(cell)
            else:
                rows.append([cell])
        ordered = [c for row in rows for c in sorted(row, key=lambda c: c[1])]
    out: list[dict] = []
    at = {id(ln): i for i, ln in enumerate(block)}
    for _, _, run in ordered:
        cell = sorted(run, key=lambda ln: at[id(ln)])  # a cell's own lines keep the stream's order
        k = next(j for j, ln in enumerate(cell) if any(ln is a for a in anchors))
        if k:  # the label is centred on its cell (a system of equations): it still leads the cell
            m = _PART_LABEL.match(cell[k]["text"])
            rest = cell[k]["text"][m.end():].strip()
            label = {**cell[k], "text": m.group(0).strip()}
            cell = [label, *cell[:k], *([{**cell[k], "text": rest}] if rest else []), *cell[k + 1:]]
        out.extend(cell)
    return lo, hi, out

