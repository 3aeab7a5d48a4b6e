"""Running headers, footers and page numbers: found by repetition across nearby pages.

A line in the top or bottom band of a page is page furniture when it is a bare page number
("12", "xiv", "Page 3 of 90"), or when a line with the same signature (digits masked, case and
spaces dropped) sits at about the same height on another page within a window of pages
(books alternate left/right headers, so the window covers both parities). A header that names
the page's own section appears on a page or two only, so two more cues say "furniture" without
repetition: the line shares its row with the page number ("CHAPTER 3. GROUPS   29"), or it
ends with the page's printed number ("0.2 Exercises 13"), the offset between printed and PDF
page numbers being learned from the document's own margin numbers. A roman page number must
agree with a neighbour's (a lone "x" atop a page is a variable). The filter holds only that
window of pages (and a counter of offsets), so memory does not grow with the document.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterator

from .structure_patterns import roman_value

_PAGE_NUMBER = re.compile(
    r"^(?:[-–—]\s*)?(?:page\s*)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*\d{1,4})?(?:\s*[-–—])?$", re.IGNORECASE
)
# a page number at either end of a line, also glued to the header's words when the text layer
# lost the space ("154CHAPITRE4. SÉRIES DE FOURIER")
_EDGE_NUMBER = re.compile(r"^\s*(?:\d{1,4}|[ivxlc]{1,6})\b|^\s*\d{1,4}(?=[^\W\d_])|\b(?:\d{1,4}|[ivxlc]{1,6})\s*$",
                          re.IGNORECASE)
_NON_WORD = re.compile(r"[\W_]+")
# words, then the number (glued when the text layer lost the space): not "x = 13"
_TRAILING_NUMBER = re.compile(r"^[^=+<>^\\−]*[^\W\d_][^=+<>^\\−]*(?:\s|(?<=[^\W\d_]{3}))(\d{1,4})$")
_LEADING_NUMBER = re.compile(r"^(\d{1,4})(?:\s+\D|(?=[^\W\d_]))")  # "32 Chapter 1", "154CHAPITRE": not "13. Find"


def signature(text: str) -> str:
    """A line's identity across pages: its page number (first or last token) masked, case,
    spaces and punctuation dropped. Other digits stay: "Hint. (a) 2" is not "Hint. (a) 292"."""
    return _NON_WORD.sub("", _EDGE_NUMBER.sub("#", text.lower()))


_ROMAN_PAGE = re.compile(r"^(?:[-–—]\s*)?(?:page\s*)?([ivxlcdm]{1,7})(?:\s*[-–—])?$", re.IGNORECASE)


def _roman(text: str) -> int | None:
    """The value of a roman page number ("xiv", "Page IX"), else None."""
    m = _ROMAN_PAGE.match(text.strip())
    return roman_value(m.group(1).upper()) if m else None


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


def _margin_numbers(text: str) -> set[int]:
    """The page numbers a margin line may carry: the whole line ("12"), its last token ("0.2
    Exercises 13") or a first token followed by words ("32 Chapter 1")."""
    t = text.strip()
    if t.isdigit() and len(t) <= 4:
        return {int(t)}
    return {int(m.group(1)) for m in (_TRAILING_NUMBER.search(t), _LEADING_NUMBER.match(t)) if m}


def _same_row(a: dict, b: dict) -> bool:
    """Two lines of text on one row: their vertical extents overlap by half the smaller one, and
    neither is twice as tall as the other (a display formula beside a page number is no header)."""
    ha, hb = a["y1"] - a["y0"], b["y1"] - b["y0"]
    overlap = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
    return overlap >= 0.5 * min(ha, hb) > 0 and max(ha, hb) <= 2 * min(ha, hb)


def _set_apart(ln: dict, lines: list[dict]) -> bool:
    """No other line within a line's height above or below it (a header stands apart from the
    text; the last line of a paragraph that ends with a number does not)."""
    h = ln["y1"] - ln["y0"]
    return not any(o is not ln and not _same_row(o, ln) and o["y0"] < ln["y1"] + h and o["y1"] > ln["y0"] - h
                   for o in lines)


class FurnitureFilter:
    """Feed pages (DocPage dicts) of one document in order; get them back, furniture removed,
    once their neighbors have been seen. `band` is the share of the page height at top and
    bottom where furniture lives; `lines` is how many lines from each edge are candidates."""

    def __init__(self, window: int = 4, band: float = 0.12, lines: int = 2):
        self.window, self.band, self.edge = window, band, lines
        self.pages: deque[tuple[dict, list[tuple[int, str, float]]]] = deque()
        self.done = 0  # index (in the deque) of the next page to release
        self.offsets: Counter[int] = Counter()  # PDF page - printed page number, one vote per page
        self.voting_pages = 0

    def _vote(self, page: dict, cands: list[tuple[int, str, float]]) -> None:
        """The printed page numbers in this page's margins vote for the document's offset."""
        number = (page.get("source") or {}).get("page")
        if number is None:
            return
        votes = {number - n for i, sig, _ in cands if sig is not None for n in _margin_numbers(page["lines"][i]["text"])}
        if votes:
            self.voting_pages += 1
            self.offsets.update(votes)

    def _printed_number(self, page: dict) -> int | None:
        """This page's printed number, when the document's margins agree on an offset."""
        number = (page.get("source") or {}).get("page")
        if number is None or not self.offsets:
            return None
        offset, votes = self.offsets.most_common(1)[0]
        return number - offset if votes >= 3 and votes >= 0.5 * self.voting_pages else None

    def _candidates(self, page: dict) -> list[tuple[int, str | None, float]]:
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
                # large type at the top is a chapter number or title, not furniture, unless it
                # shares the page number's row (checked in `_release`: no signature marks it)
                out.append((i, None, (ln["y0"] + ln["y1"]) / 2))
                continue
            out.append((i, signature(ln["text"]), (ln["y0"] + ln["y1"]) / 2))
        return out

    def feed(self, page: dict) -> Iterator[dict]:
        cands = self._candidates(page)
        self._vote(page, cands)
        self.pages.append((page, cands))
        while self.done < len(self.pages) and len(self.pages) - 1 - self.done >= self.window:
            yield self._release()

    def flush(self) -> Iterator[dict]:
        while self.done < len(self.pages):
            yield self._release()
        self.pages.clear()
        self.done = 0

    def _numbering_agrees(self, page: dict, text: str) -> bool:
        """A roman page number ("xiv") must agree with its neighbours' numbering: another page
        in the window carries the roman number its distance predicts (front matter runs i, ii,
        iii, ...). A lone "x" at the top of a page of body text is a formula's variable. Arabic
        numbers are taken as they are."""
        roman = _roman(text)
        if roman is None:
            return True
        number = (page.get("source") or {}).get("page")
        for other, ocands in self.pages:
            o = (other.get("source") or {}).get("page")
            if other is page or o is None or number is None:
                continue
            for i, sig, _ in ocands:
                if sig is not None and _roman(other["lines"][i]["text"]) == roman + (o - number):
                    return True
        return False

    def _release(self) -> dict:
        page, cands = self.pages[self.done]
        h = page.get("height") or 792.0
        drop = {i for i, sig, _ in cands if sig is not None and is_page_number(page["lines"][i]["text"])
                and self._numbering_agrees(page, page["lines"][i]["text"])}
        printed = self._printed_number(page)
        # the row cue trusts only an arabic page number (a lone "x" may be a formula's variable)
        # that agrees with the document's numbering when that is known
        rows = [ln for i in drop if (ns := _margin_numbers((ln := page["lines"][i])["text"]))
                and (printed is None or printed in ns)]
        for i, sig, y in cands:
            if i in drop:
                continue
            ln = page["lines"][i]
            if any(_same_row(ln, r) for r in rows) or (
                    sig is not None and printed in _margin_numbers(ln["text"]) and _set_apart(ln, page["lines"])):
                drop.add(i)  # beside the page number, or ending with it: the running header
                continue
            if sig is None or len(sig) < 4:
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
