"""Matrices from page layout: rows of numbers stacked at one horizontal position become one
LaTeX `pmatrix`, before anyone joins lines into running text.

A PDF draws a matrix as a column of lines ("2 0 0 0", "3 2 0 0", ...) with bracket glyphs
around them; read as text it flattens into "2 0 0 0 3 2 0 0 ..." and nobody can tell its rows
from its columns again (curation drops such items as `flattened_layout`). Here the rows are
still separate lines with boxes, so they are easy to keep apart. Rows must hold the same number
of entries (numbers, or single letters with an optional index: `a`, `x1`); a stack of single
entries (a column vector) must be numeric. Brackets cannot be told from determinant bars once
the glyphs are gone, so every matrix is written as `pmatrix`."""

from __future__ import annotations

import re

_ENTRY = r"[−-]?(?:\d+(?:[./]\d+)?|\d*[a-zA-Z]\d{0,2})"
_ROW = re.compile(rf"^{_ENTRY}(?: {_ENTRY})*$")
_NUMERIC = re.compile(r"^[−-]?\d+(?:[./]\d+)?(?: [−-]?\d+(?:[./]\d+)?)*$")
# The label beside a matrix ("A =") sits at the height of a row and may be joined to it.
_LABELLED = re.compile(rf"^(.{{0,40}}?=) ({_ENTRY}(?: {_ENTRY})*)$")


def _row(text: str, width: int | None) -> tuple[str, str] | None:
    """(label, row entries) when `text` is a matrix row (optionally after "A ="), else None."""
    if _ROW.match(text):
        label, entries = "", text
    elif "=" in text and (m := _LABELLED.match(text)) is not None:
        label, entries = m.group(1), m.group(2)
    else:
        return None
    if width is not None and entries.count(" ") + 1 != width:
        return None
    return label, entries


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


def _matrix(rows: list[dict], parts: list[tuple[str, str]]) -> dict:
    labels = [label for label, _ in parts if label]
    body = r" \\ ".join(" & ".join(entries.split()) for _, entries in parts)
    text = rf"\begin{{pmatrix}} {body} \end{{pmatrix}}"
    return {
        **rows[0],
        "text": f"{labels[0]} {text}" if labels else text,
        "x0": min(r["x0"] for r in rows),
        "x1": max(r["x1"] for r in rows),
        "y1": rows[-1]["y1"],
    }


def rebuild_matrices(lines: list[dict]) -> list[dict]:
    """Lines in reading order -> the same lines with each stack of matrix rows merged into one."""
    out: list[dict] = []
    i, n = 0, len(lines)
    while i < n:
        first = lines[i]
        text = first["text"]
        # cheap test first (this runs on every line of every page): rows end in a short entry
        short_tail = len(text) <= 6 or text.rfind(" ") >= len(text) - 7
        head = _row(text, None) if short_tail and text[-1:].isalnum() else None
        if head is not None:
            width = head[1].count(" ") + 1
            parts, j = [head], i + 1
            while j < n and _stacked(first, lines[j - 1], lines[j]):
                part = _row(lines[j]["text"], width)
                if part is None or (part[0] and any(label for label, _ in parts)):
                    break
                parts.append(part)
                j += 1
            if len(parts) >= 2 and (width > 1 or all(_NUMERIC.match(e) for _, e in parts)):
                out.append(_matrix(lines[i:j], parts))
                i = j
                continue
        out.append(first)
        i += 1
    return out
