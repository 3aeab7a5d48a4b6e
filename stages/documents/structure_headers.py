"""Running headers, footers and page numbers: found by repetition across nearby pages.

A line in the top or bottom band of a page is page furniture when it is a bare page number
("12", "xiv", "Page 3 of 90"), or when a line with the same signature (digits masked, case and
spaces dropped) sits at about the same height on another page within a window of pages
(books alternate left/right headers, so the window covers both parities). The filter holds only
that window of pages, so memory does not grow with the document.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator

_PAGE_NUMBER = re.compile(
    r"^(?:[-–—]\s*)?(?:page\s*)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*\d{1,4})?(?:\s*[-–—])?$", re.IGNORECASE
)
_EDGE_NUMBER = re.compile(r"^\s*(?:\d{1,4}|[ivxlc]{1,6})\b|\b(?:\d{1,4}|[ivxlc]{1,6})\s*$", re.IGNORECASE)
_NON_WORD = re.compile(r"[\W_]+")


def signature(text: str) -> str:
    """A line's identity across pages: its page number (first or last token) masked, case,
    spaces and punctuation dropped. Other digits stay: "Hint. (a) 2" is not "Hint. (a) 292"."""
    return _NON_WORD.sub("", _EDGE_NUMBER.sub("#", text.lower()))


def is_page_number(text: str) -> bool:
    return bool(_PAGE_NUMBER.match(text.strip()))


def _body_size(lines: list[dict]) -> float:
    """The font size of most of the page's characters (not of most lines: a table of small
    numbers has many short lines)."""
    by_size = sorted((ln["size"], len(ln["text"])) for ln in lines)
    half, seen = sum(n for _, n in by_size) / 2, 0
    for size, n in by_size:
        seen += n
        if seen >= half:
            return size
    return by_size[-1][0]


class FurnitureFilter:
    """Feed pages (DocPage dicts) of one document in order; get them back, furniture removed,
    once their neighbors have been seen. `band` is the share of the page height at top and
    bottom where furniture lives; `lines` is how many lines from each edge are candidates."""

    def __init__(self, window: int = 4, band: float = 0.12, lines: int = 2):
        self.window, self.band, self.edge = window, band, lines
        self.pages: deque[tuple[dict, list[tuple[int, str, float]]]] = deque()
        self.done = 0  # index (in the deque) of the next page to release

    def _candidates(self, page: dict) -> list[tuple[int, str, float]]:
        lines, h = page["lines"], page.get("height") or 0.0
        if not lines or page.get("backend") == "source":
            return []  # text sources have no running headers
        by_y = sorted(range(len(lines)), key=lambda i: lines[i]["y0"])
        picks = set(by_y[: self.edge]) | set(by_y[-self.edge :])
        median = _body_size(lines)
        out = []
        for i in picks:
            ln = lines[i]
            if h and self.band * h < ln["y0"] and ln["y1"] < (1 - self.band) * h:
                continue  # not in a margin band
            if ln["size"] > 1.25 * median:
                continue  # large type at the top is a chapter number or title, not furniture
            out.append((i, signature(ln["text"]), (ln["y0"] + ln["y1"]) / 2))
        return out

    def feed(self, page: dict) -> Iterator[dict]:
        self.pages.append((page, self._candidates(page)))
        while self.done < len(self.pages) and len(self.pages) - 1 - self.done >= self.window:
            yield self._release()

    def flush(self) -> Iterator[dict]:
        while self.done < len(self.pages):
            yield self._release()
        self.pages.clear()
        self.done = 0

    def _release(self) -> dict:
        page, cands = self.pages[self.done]
        h = page.get("height") or 792.0
        drop = set()
        for i, sig, y in cands:
            text = page["lines"][i]["text"]
            if is_page_number(text):
                drop.add(i)
                continue
            if len(sig) < 4:
                continue
            need = 1 if len(sig) >= 12 else 2  # a short line must repeat twice to be furniture
            seen = 0
            for j, (other, ocands) in enumerate(self.pages):
                if j == self.done or other is page:
                    continue
                if any(s == sig and abs(oy - y) <= 0.02 * h for _, s, oy in ocands):
                    seen += 1
                    if seen >= need:
                        drop.add(i)
                        break
        self.done += 1
        while self.done > self.window:  # keep `window` released pages as left context
            self.pages.popleft()
            self.done -= 1
        if drop:
            page = dict(page, lines=[ln for k, ln in enumerate(page["lines"]) if k not in drop])
        return page
