"""Matrices from page layout: rows of numbers stacked at one horizontal position become one
LaTeX `pmatrix`, before anyone joins lines into running text.

A PDF draws a matrix as a column of lines ("2 0 0 0", "3 2 0 0", ...) with bracket glyphs
around them; read as text it flattens into "2 0 0 0 3 2 0 0 ..." and nobody can tell its rows
from its columns again (curation drops such items as `flattened_layout`). Here the rows are
still separate lines with boxes, so they are easy to keep apart. Rows must hold the same number
of entries (numbers, or single letters with an optional index: `a`, `x1`); a stack of single
entries (a column vector) must be numeric. Once cleaning has removed the delimiter glyphs, a
matrix is a `pmatrix`, unless a tall vertical bar stands on each side of its rows: a determinant
(`vmatrix`; `Vmatrix` for double bars). TeX stacks such a bar from its extension font's bar
piece (no top or bottom piece), so the text layer has it as a fragment of its own whose text is
that piece's code repeated ("\x0c\x0c\x0c\x0c" in cmex), as tall as the rows it fences:
`bar_fences` finds those before cleaning strips them (a `\big|` no taller than a row of text is
`parse_pieces.vertical_bars`' and already reads as "|")."""

from __future__ import annotations

import re

from .parse_extension import PIECES
from .parse_glyph_pool import document_fonts

# an entry: a number, a fraction, or a letter with an optional index ("a", "x1", "x_1", "h_{2,3}")
_ENTRY = r"[−-]?(?:\d+(?:[./]\d+)?|\d*[a-zA-Z](?:\d{0,2}|_\d{1,2}|_\{\d{1,2}(?:,\d{1,2})?\}))"
_ROW = re.compile(rf"^{_ENTRY}(?: {_ENTRY})*$")
_NUMERIC = re.compile(r"^[−-]?\d+(?:[./]\d+)?(?: [−-]?\d+(?:[./]\d+)?)*$")
_ENTRY_ONLY = re.compile(rf"^{_ENTRY}$")
# a cell: entries joined by + and − ("10 −x", "−2 −x", "y + z")
_CELL = re.compile(rf"^{_ENTRY}(?:\s*[+−-]\s*{_ENTRY.replace('[−-]?', '', 1)})*$")
# The label beside a matrix ("A =") sits at the height of a row and may be joined to it.
_LABELLED = re.compile(rf"^(.{{0,40}}?=) ({_ENTRY}(?: {_ENTRY})*)$")


Fence = tuple[float, float, float, str]  # a tall bar: its x, its top and bottom, "|" or "‖"
_ENVIRONMENT = {"|": "vmatrix", "‖": "Vmatrix"}


def bar_fences(blocks: list[dict]) -> list[Fence]:
    """The tall vertical bars of a page's text blocks (stext lines, before cleaning): a fragment
    that starts with two or more bar pieces of an extension font (MuPDF may run the text after
    a right bar on into its fragment: "\x0c\x0c\x0c\x0c = −2"), at least 1.5 of its size tall."""
    codes = document_fonts().piece_codes
    if not codes:
        return []
    out = []
    for block in blocks:
        for ln in block["lines"]:
            text, font = ln["text"], ln["font"]
            if len(text) < 2 or text[0] != text[1]:
                continue
            table = codes.get(font.get("name", "").split("+", 1)[-1], ())
            part = table.get(text[0]) if table else PIECES.get(text[0])
            bb, size = ln["bbox"], font["size"]
            if part is not None and part[0] in _ENVIRONMENT and bb["h"] >= 1.5 * size:
                out.append((bb["x"], bb["y"], bb["y"] + bb["h"], part[0]))
    return out


def _fenced(rows: list[dict], fences: list[Fence]) -> str:
    """The environment for a matrix of these rows: `vmatrix` when a bar stands just left of its
    first column and one just right of its last, both reaching over its top and bottom rows."""
    if not fences:
        return "pmatrix"
    x0, x1 = min(r["x0"] for r in rows), max(r["x1"] for r in rows)
    top, bottom = (rows[0]["y0"] + rows[0]["y1"]) / 2, (rows[-1]["y0"] + rows[-1]["y1"]) / 2
    size = max(rows[0]["size"], 4.0)
    sides = {}
    for x, y0, y1, symbol in fences:
        if y0 <= top and y1 >= bottom:
            if x0 - 1.5 * size <= x <= x0:
                sides.setdefault("left", symbol)
            elif x1 <= x <= x1 + 1.5 * size:
                sides.setdefault("right", symbol)
    left, right = sides.get("left"), sides.get("right")
    return _ENVIRONMENT[left] if left is not None and left == right else "pmatrix"


def _row(line: dict, width: int | None) -> tuple[str, list[str]] | None:
    """(label, row entries) when `line` is a matrix row (optionally after "A ="), else None. An
    entry is a number or an indexed letter; where the text layer set the row's cells apart (its
    `cells`: TeX sets each cell of an array as a run of its own, a column gap apart), a cell may
    be a short expression of them ("10 −x", "y + z": a characteristic matrix's entries)."""
    text, cells = line["text"], line.get("cells")
    if cells and len(cells) >= 2:
        label = cells[0] if cells[0].endswith("=") and len(cells[0]) <= 40 else ""
        entries = cells[1:] if label else cells
        if entries and all(_CELL.match(c) for c in entries) and any(" " in c or not _ENTRY_ONLY.match(c) for c in entries):
            return (label, entries) if width is None or len(entries) == width else None
    if _ROW.match(text):
        label, entries = "", text
    elif "=" in text and (m := _LABELLED.match(text)) is not None:
        label, entries = m.group(1), m.group(2)
    else:
        return None
    if width is not None and entries.count(" ") + 1 != width:
        return None
    return label, entries.split()


def _stacked(first: dict, prev: dict, cur: dict) -> bool:
    """`cur` is the next row under `prev`, in the same column of entries as `first`."""
    height = max(prev["y1"] - prev["y0"], 1.0)
    if not (
        0 <= cur["y0"] - prev["y1"] <= 0.9 * height or 0 < cur["y0"] - prev["y0"] <= 1.9 * height
    ):
        return False
    tol = max(cur["size"], 4.0)
    return (
        abs(cur["x0"] - first["x0"]) <= tol
        or abs(cur["x1"] - first["x1"]) <= tol
        or abs((cur["x0"] + cur["x1"]) - (first["x0"] + first["x1"])) <= 2 * tol
    )


def _matrix(rows: list[dict], parts: list[tuple[str, list[str]]], fences: list[Fence]) -> dict:
    labels = [label for label, _ in parts if label]
    body = r" \\ ".join(" & ".join(entries) for _, entries in parts)
    env = _fenced(rows, fences)
    text = rf"\begin{{{env}}} {body} \end{{{env}}}"
    return {
        **rows[0],
        "text": f"{labels[0]} {text}" if labels else text,
        "x0": min(r["x0"] for r in rows),
        "x1": max(r["x1"] for r in rows),
        "y1": rows[-1]["y1"],
    }


def rebuild_matrices(lines: list[dict], fences: list[Fence] = ()) -> list[dict]:
    """Lines in reading order -> the same lines with each stack of matrix rows merged into one
    (`fences`: the page's tall bars, `bar_fences`)."""
    out: list[dict] = []
    i, n = 0, len(lines)
    while i < n:
        first = lines[i]
        text = first["text"]
        # cheap test first (this runs on every line of every page): rows end in a short entry
        short_tail = len(text) <= 6 or text.rfind(" ") >= len(text) - 7
        head = _row(first, None) if short_tail and text[-1:].isalnum() else None
        if head is not None:
            width = len(head[1])
            parts, j = [head], i + 1
            while j < n and _stacked(first, lines[j - 1], lines[j]):
                part = _row(lines[j], width)
                if part is None or (part[0] and any(label for label, _ in parts)):
                    break
                parts.append(part)
                j += 1
            if len(parts) >= 2 and (width > 1 or all(_NUMERIC.match(" ".join(e)) for _, e in parts)):
                out.append(_matrix(lines[i:j], parts, fences))
                i = j
                continue
        out.append(first)
        i += 1
    return out
