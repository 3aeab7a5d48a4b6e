"""Parsed pages built by hand for the structure stage's tests: lines with the geometry and font
cues the parse stage gives them (DocPage dicts)."""

from __future__ import annotations


def line(text: str, y: float, x: float = 72.0, size: float = 10.0, bold: bool = False) -> dict:
    """A line of `text` at (x, y), about 5 pt per character wide."""
    return {"text": text, "x0": x, "y0": y, "x1": x + 5 * len(text), "y1": y + size, "size": size,
            "bold": bold, "block": 0, "line": None}


def page(n: int, lines: list[dict], backend: str = "text", pages: int = 0) -> dict:
    """Page `n` of "b.pdf" (US letter), read by `backend` ("tesseract": OCR'd, no type sizes)."""
    return {"id": str(n), "source": {"document": "b.pdf", "page": n}, "pages": pages, "width": 612.0,
            "height": 792.0, "backend": backend, "quality": 1.0, "lines": lines}
