"""Structure: a document's pages -> its numbered items (exercises, worked examples, answer-key
entries, shared instructions), each placed in the document's hierarchy.

A global stage that streams: it reads pages in order, one document at a time, holding only a
small window of pages (for running-header detection) and the item being read. Per page:
- drop pages with nothing to learn from (blank, table of contents, prose without any math);
- strip running headers, footers and page numbers (`structure_headers`);
- read lines as a state machine (`structure_patterns` holds the rules):
  headings update the numbering path (chapter / section / subsection, by font size and
  numbering) and the zone (body, exercises, answer key, back matter); labels start items;
  "In Exercises 5-11, ..." instructions attach to the items they govern; everything else
  continues the open item, across columns and page breaks (so numbering split over pages is
  repaired by construction).
Items inside an exercise zone must continue the label sequence (3 after 2, or a bold label),
which keeps equations and numbered sub-lists from posing as exercises. An item ends at the
next label, at a heading (placed or not: a short title line in bold or large type ends it
even when the rules cannot tell which heading it is), at a running header (removed first), at
a licence block (back matter), at prose after a paragraph gap (`_ends_paragraph`: several
layout cues measured against the page's own line spacing and text width) and, on an OCR'd page
without type sizes, at the next section's numbered heading. Footnotes (small type ending the
page, opened by a mark) are skipped, not appended.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from .structure_headers import FurnitureFilter
from .structure_patterns import (
    Heading,
    Label,
    could_be_structural,
    has_stem_signal,
    instruction_range,
    is_caption,
    is_contents_page,
    is_title_line,
    key_number,
    looks_like_instruction,
    maybe_heading,
    merge_path,
    number_tokens,
    opens_legal_block,
    opens_numbered_block,
    parse_heading,
    parse_label,
    printed_path,
    split_inline_keys,
    strip_end_mark,
)
from .structure_records import DocUnit, unit_id

_SUBPART = re.compile(r"^(?:\([a-z]{1,2}\)|\([ivx]{1,4}\)|\(\d{1,2}\)|[a-z]\)|•|–\s)")
_OWN_LINE = re.compile(r"^(?:Solution|SOLUTION|Answer|ANSWER|Ans\.|Sol\.|Hint|Proof|Réponse|Lösung|Solución|Решение|Ответ)\b")


def _style(label: Label) -> str:
    """How a label is written: keyword, "(3)", "T 3" (prefixed), "1.17" (dotted) or "3." (plain)."""
    if label.keyword:
        return "keyword"
    if label.printed.lstrip("✓✔*†‡?• ").startswith("("):
        return "paren"
    if label.printed[:1].isalpha() and label.number.isdigit():
        return "prefix:" + label.printed[0]  # "T 5": its own series, apart from plain "5." ("A.1.101" is dotted)
    return "dotted" if "." in label.number else "plain"


_PAREN_INSIDE = re.compile(r"\s+\((\d{1,3})\)\s")
_PLAIN_INSIDE = re.compile(r"(?<=[.;])\s+(\d{1,3})\.\s+(?=[A-Za-z(])")


def _next_key_inside(text: str, last: int, style: str | None) -> int | None:
    """Where the next answer's label ("(n)" / "n." with n = last+1 or last+2, in the key's own
    style, after a sentence or formula end) starts inside a line, if it does."""
    rx = _PAREN_INSIDE if style == "paren" else _PLAIN_INSIDE if style == "plain" else None
    if rx is None:
        return None
    for m in rx.finditer(text):
        if int(m.group(1)) in (last + 1, last + 2) and m.start() > 0:
            return m.start() + len(m.group(0)) - len(m.group(0).lstrip())
    return None


def _page_geometry(lines: list[dict], body: float) -> tuple[float, float, float]:
    """A page's own line spacing (the median white space between consecutive lines of body type
    that follow each other closely), its text width and left edge (of its body-type lines): the
    yardsticks of a paragraph gap, a full line and a column."""
    plain = [ln for ln in lines if abs(ln["size"] - body) <= 0.15 * body]
    gaps = sorted(g for a, b in zip(plain, plain[1:], strict=False) if 0 <= (g := b["y0"] - a["y1"]) < body)
    lead = gaps[len(gaps) // 2] if gaps else 0.3 * body
    left = min((ln["x0"] for ln in plain), default=0.0)
    width = max(ln["x1"] for ln in plain) - left if plain else 0.0
    return lead, width, left


_FOOTNOTE_MARK = re.compile(r"^(?:[∗*†‡§¶]|\d{1,2}(?=[A-Za-z][a-z]{2,}\b)|\d{1,2}\s+(?=[A-Z][a-z]+\b))")


def footnote_lines(lines: list[dict], body: float, height: float) -> set[int]:
    """The page's footnotes: from a line in small type in the page's lower part that opens with
    a footnote mark ("∗. Charles Émile Picard ...", "8from Problem Solving ...", "4The results
    ..."), when every line below it is in small type too (the block ends the page)."""
    small = [ln["size"] <= 0.85 * body for ln in lines]
    for i, ln in enumerate(lines):
        if small[i] and ln["y0"] > 0.7 * height and _FOOTNOTE_MARK.match(ln["text"].lstrip()):
            below = [k for k, o in enumerate(lines) if o["y0"] >= ln["y0"] - 1]
            if all(small[k] for k in below):
                return set(below)
    return set()


def join_lines(lines: list[str]) -> str:
    """Lines -> running text: hyphenated words rejoined; sub-parts "(a)" and answer markers
    ("Solution.") start new lines."""
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if not out:
            out = line
        elif out.endswith("-") and out[-2:-1].isalpha() and line[:1].islower():
            out = out[:-1] + line
        elif _SUBPART.match(line) or _OWN_LINE.match(line):
            out += "\n" + line
        else:
            out += " " + line
    return out


class StructureConfig(StageConfig):
    header_window: int = 4  # pages on each side compared for running headers
    margin_band: float = 0.12  # share of the page height where headers and footers live
    min_page_chars: int = 20  # fewer: a blank page
    drop_non_stem: bool = True  # drop prose-only pages outside exercises and answer keys
    emit_text: bool = False  # also emit running text as "text" units (for LLM extraction)
    # an exercise / answer-zone page where no item label was recognized becomes a "text" unit
    # (for extract.method=fallback) instead of a `zone_page_without_items` drop
    emit_zone_text: bool = False
    text_chunk_chars: int = 3000
    answer_documents: list[str] = []  # glob patterns (file names) of answer books


class StructureDocument(Stage):
    name = "structure"
    version = "1"
    kind = "global"
    Config = StructureConfig
    output_model = DocUnit

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        builder: DocumentBuilder | None = None
        furniture: FurnitureFilter | None = None
        for page in records:
            document = page["source"]["document"]
            if builder is None or builder.document != document:
                if builder is not None and furniture is not None:
                    yield from _drain(builder, furniture)
                builder = DocumentBuilder(document, self.config)
                furniture = FurnitureFilter(self.config.header_window, self.config.margin_band)
            for ready in furniture.feed(page):
                yield from builder.page(ready)
        if builder is not None and furniture is not None:
            yield from _drain(builder, furniture)


def _drain(builder: DocumentBuilder, furniture: FurnitureFilter) -> Iterator[Any]:
    for ready in furniture.flush():
        yield from builder.page(ready)
    yield from builder.finish()


class DocumentBuilder:
    """The reading state of one document."""

    def __init__(self, document: str, config: StructureConfig):
        self.document, self.config = document, config
        name = document.rsplit("/", 1)[-1]
        answer_book = any(fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(document, pat) for pat in config.answer_documents)
        self.zone = "answers" if answer_book else "body"
        self.stack: list[tuple[float, str, list[str]]] = []  # (font size, heading kind, tokens)
        self.path: list[str] = []
        self.section_title: str | None = None
        self.sizes: Counter[float] = Counter()  # font size -> characters, for the body size
        self.unit: dict | None = None  # the open item
        self.seq_prefix: list[str] | None = None  # label sequence in the current zone
        self.seq_last: int | None = None
        self.seq_style: str | None = None
        self.prev_text = ""  # the previous line: does a label start a sentence?
        self.instructions: list[tuple[int, int, str]] = []
        self.zone_instruction: str | None = None
        self.order = 0
        self.text_lines: list[str] = []
        self.text_start: tuple[int, Any] | None = None
        self.out: list[Record] = []
        self.page_units = 0
        self.lines_on_page = 0
        self.next_line: dict | None = None
        self.page_lines: list[dict] = []
        self.page_lead, self.page_width, self.page_left = 0.0, 0.0, 0.0  # this page's line spacing, text width, left edge
        self.prev_right = 0.0
        self.page_number: int | None = None
        self.page_continued = False  # this page's lines continued an open item
        self.zone_size = 0.0  # font size of the heading that opened the current zone
        self.answers_in_chapter = False  # the answer zone was opened under a larger chapter heading
        self.exercise_places: set[tuple[str, ...]] = set()  # heading paths that had an exercise list
        self.exercise_numbers: set[str] = set()  # printed numbers of the exercises seen so far (for key alignment)

    # ---- pages ---------------------------------------------------------------------------
    def page(self, page: dict) -> Iterator[Record | tuple[Record, Drop]]:
        number = page["source"]["page"]
        lines = page["lines"]
        texts = [ln["text"] for ln in lines]
        all_text = "\n".join(texts)
        where = f"{self.document} page {number}"
        if sum(len(t.replace(" ", "")) for t in texts) < self.config.min_page_chars:
            yield page, Drop("blank_page", f"{where}: no text after removing headers and page numbers")
            return
        if is_contents_page(texts):
            yield page, Drop("table_of_contents", f"{where}: a table of contents")
            return
        may_drop = (self.config.drop_non_stem and self.zone in ("body", "other") and self.unit is None
                    and not has_stem_signal(all_text))
        ocr = page.get("backend") in ("tesseract", "vlm")
        if not ocr:
            for ln in lines:
                self.sizes[round(ln["size"] * 2) / 2] += len(ln["text"])
        body = self.sizes.most_common(1)[0][0] if self.sizes else 10.0
        self.page_units = 0
        self.page_lines = lines
        self.page_number = number
        self.prev_right = self.page_left + self.page_width  # the previous page's right edge
        self.page_lead, self.page_width, self.page_left = _page_geometry(lines, body)
        self.page_continued = False
        text_before = len(self.text_lines)
        notes = set() if ocr else footnote_lines(lines, body, page.get("height") or 792.0)
        for i, ln in enumerate(lines):
            self.lines_on_page = i
            self.next_line = lines[i + 1] if i + 1 < len(lines) else None
            if i not in notes:  # a footnote is no item's text (the item may go on overleaf)
                self._line(ln, page, body, ocr)
        if may_drop and self.page_units == 0 and self.unit is None:
            self.text_lines.clear()
            yield from self._take()
            yield page, Drop("no_stem_content", f"{where}: prose without numbers, formulas or exercises")
            return
        yield from self._take()
        if self.page_units == 0 and not self.page_continued and len(self.text_lines) == text_before and not any(
                u["source"]["page"] == number for u in self.out):
            # every page ends as units or as a ledgered drop: this one gave nothing to any item
            if self.zone in ("exercises", "answers") and self.config.emit_zone_text and lines:
                first = lines[0]
                u = {"page": number, "last_page": number, "line": first.get("line"),
                     "span": f"{first['x0']:.0f},{first['y0']:.0f},{first['x1']:.0f},{first['y1']:.0f}",
                     "backends": {page.get("backend", "text")}, "quality": page.get("quality", 1.0)}
                self._emit("text", join_lines(texts), u, path=list(self.path))
                yield from self._take()  # the LLM fallback reads it (extract.method=fallback)
                return
            if self.zone in ("exercises", "answers"):
                reason, why = "zone_page_without_items", (
                    f"{where}: in an {self.zone} zone but no item label was recognized "
                    "(a layout the rules do not read: try extract.method=fallback with an LLM)")
            else:
                reason, why = "no_items", f"{where}: running text ({self.zone}) with no exercise, example or answer"
            yield page, Drop(reason, why)

    def finish(self) -> Iterator[Record]:
        self._close()
        self._flush_text()
        yield from self._take()

    def _take(self) -> Iterator[Record]:
        out, self.out = self.out, []
        yield from out

    # ---- lines -------------------------------------------------------------------------------
    def _line(self, ln: dict, page: dict, body: float, ocr: bool) -> None:
        text, ended = strip_end_mark(ln["text"])
        if not text.strip():
            if ended:
                self._close()
            return
        try:
            self._classify(text, ended, ln, page, body, ocr)
        finally:
            self.prev_text = text.rstrip()

    def _classify(self, text: str, ended: bool, ln: dict, page: dict, body: float, ocr: bool) -> None:
        if self.zone == "answers" and self.unit is not None and self.seq_last is not None:
            # two answer columns read as one line ("dx = 13x12. (2) dy"): the next key inside the
            # line starts the next answer
            m = _next_key_inside(text, self.seq_last, self.seq_style)
            if m is not None:
                self._append(text[:m].rstrip(), page)
                self._classify(text[m:], ended, ln, page, body, ocr)
                return
        big = not ocr and ln["size"] >= 1.12 * body and len(text) <= 130
        bold = bool(ln.get("bold")) and not ocr
        if opens_legal_block(text):
            # a licence ("*** END OF THIS PROJECT GUTENBERG EBOOK", "THE FULL ... LICENSE") in any
            # type: back matter, whatever zone it interrupts (its "1.A." is no answer key)
            self._heading(Heading("title", [], None, text.strip(), "other"), ln["size"], page)
            return
        if self.unit is not None and not (big or bold) and not could_be_structural(text):
            if not self._ends_paragraph(text, ln, ocr):
                self._append(text, page, ln)  # the common case: the open item's text goes on
                if ended:
                    self._close()
                return
            self._close()  # the item was its paragraph; the prose below belongs to no item
        if big and (h := parse_heading(text, big, bold)) is not None and self._plausible_heading(h, text, bold, big, ln, body):
            self._heading(self._aligned_key_heading(h, text), ln["size"], page)
            return
        if ocr and (h := parse_heading(text, True)) is not None and h.kind == "section" and self._next_section(h, text):
            self._heading(h, ln["size"], page)  # an OCR'd page has no type sizes: the numbering says
            return
        if self.zone == "exercises" and (rng := instruction_range(text)) is not None:
            self._close()
            self._open("instruction", None, text, ln, page, instruction_range=rng)
            return
        label = parse_label(text, self.zone, bold)
        if label is not None and self._accept(label, bold):
            self._start_item(label, ln, page, bold)
            if ended:
                self._close()
            return
        h = parse_heading(text, big, bold) if (big or bold or maybe_heading(text)) else None
        if h is not None and self._plausible_heading(h, text, bold, big, ln, body):
            self._heading(self._aligned_key_heading(h, text) if (big or bold) else h, ln["size"], page)
            return
        if self.unit is None and self.zone == "exercises" and self.seq_last is None and looks_like_instruction(text):
            self._open("instruction", None, text, ln, page)
            return
        if self.unit is not None and (big or bold) and (is_title_line(text, big) or opens_numbered_block(text)):
            # a heading the rules could not place (a run-in title in bold, a heading set in a
            # size they did not take for a section): the item ends here, and the prose below it
            # belongs to no item
            self._close()
            return
        if self.unit is not None and self._ends_paragraph(text, ln, ocr):
            self._close()
        if self.unit is not None:
            self._append(text, page, ln)
            if ended:
                self._close()
        elif self.config.emit_text:
            if not self.text_lines:
                self.text_start = (page["source"]["page"], ln)
            self.text_lines.append(text)
            if sum(map(len, self.text_lines)) >= self.config.text_chunk_chars:
                self._flush_text()

    def _ends_paragraph(self, text: str, ln: dict, ocr: bool) -> bool:
        """Does this line open prose after an exercise has ended? In running text an exercise
        ("Exercice 2.5.1 : Vérifiez que ..." inside a section) is one paragraph; in an exercise
        list the next paragraph is as often the exercise's own question ("Find an expression
        ...", "Assume that ...") as prose after the list, so there the gap must be wider than
        a paragraph's (a blank line and a half: the space or rule that closes a list) and the
        list's numbering must not go on below. Several cues must agree besides: the item's
        previous line (on this page) is at the item's left edge (not a centred display formula)
        and ended a sentence; this line starts at that edge too (a paragraph indent allowed),
        in a capital, and runs half the text width or more (prose, not a formula's "Then"), and is
        no caption (a figure leaves a wide gap above its caption); the item carries no worked
        solution ("Solution:": its paragraphs are the item's). An item set in a right-hand
        column ends, after a gap, at a line that runs across the columns from the page's left.
        Overleaf (no gap to see) a running-text exercise ends when its last line on the page
        before was short and ended a sentence: a paragraph's last line."""
        u = self.unit
        prev = u.get("last_ln")
        if ocr or prev is None or u["kind"] != "exercise" or self.zone not in ("body", "exercises"):
            return False
        size, left = ln["size"], u["left"]
        t = text.strip()
        if not t[:1].isupper() or _OWN_LINE.match(t) or is_caption(t) or ln["x1"] - ln["x0"] < 0.5 * self.page_width:
            return False
        if u["ln_page"] != self.page_number:
            if self.zone != "body":
                return False
            # overleaf in running text: the previous page's last line of the item was a short
            # one that ended a sentence (a paragraph's last line), this one starts at the edge
            return (self.prev_text.endswith((".", "?", "!")) and prev["x1"] < self.prev_right - 3 * size
                    and abs(ln["x0"] - left) <= 2.5 * size and abs(prev["x0"] - left) <= 2.5 * size
                    and not any(_OWN_LINE.match(line) for line in u["lines"]))
        lead = ln["y0"] - prev["y1"] - self.page_lead
        across = (left > self.page_left + 0.3 * self.page_width and ln["x0"] < left - 2.5 * size
                  and ln["x1"] > left + size and lead >= 0.5 * size)
        if not across and (
                not self.prev_text.endswith((".", "?", "!")) or lead < (0.5 if self.zone == "body" else 1.5) * size
                or abs(ln["x0"] - left) > 2.5 * size or abs(prev["x0"] - left) > 2.5 * size):
            return False
        if any(_OWN_LINE.match(line) for line in u["lines"]):
            return False
        if self.zone == "exercises" and self.seq_last is not None:
            for below in self.page_lines[self.lines_on_page + 1:]:
                label = parse_label(below["text"], self.zone, bool(below.get("bold")))
                if label is not None and number_tokens(label.number)[-1] == str(self.seq_last + 1):
                    return False
        return True

    # ---- headings and zones --------------------------------------------------------------------
    def _plausible_heading(self, h: Heading, text: str, bold: bool, big: bool, ln: dict | None = None,
                           body: float = 10.0) -> bool:
        """Filter the heading candidates that figures and wrapped sentences produce."""
        if h.bare:
            # a bare number or letter in large type is a chapter opener if it tops the page and a
            # title in the same type follows (and numbers go up); otherwise a figure label
            nxt = self.next_line
            if ln is None or self.lines_on_page != 0 or ln["size"] < 1.6 * body or nxt is None:
                return False
            if abs(nxt["size"] - ln["size"]) > 0.2 * ln["size"] or not nxt["text"][:1].isupper():
                return False
            current = self.path[0] if self.path else None
            return not (h.number.isdigit() and current and current.isdigit() and int(h.number) <= int(current))
        if h.kind == "title" and h.zone:
            return True  # "Answers to Exercises", "Index": parse_heading already judged the wording
        if h.kind == "title":
            words = text.split()
            if self.zone in ("exercises", "answers") and ln is not None and ln["size"] <= self.zone_size + 0.5:
                return False  # a figure label inside an exercise, not a new part
            return (big and ln is not None and ln["size"] >= 1.3 * body and text[:1].isupper()
                    and (len(words) >= 2 or len(text) >= 4) and not text.endswith((".", ",", ";")))
        if h.zone == "exercises" and not (bold or big):
            if not text[:1].isupper():
                return False
            # a short title line, or a longer one ("Exercises IV. (See p. 252 for Answers.)")
            # confirmed by a second cue: numbering restarts at 1 right below it
            return (not text.endswith((".", ",", ";")) and len(text.split()) <= 4) or self._numbering_restarts()
        if h.zone or h.kind in ("chapter", "named"):
            return True
        return h.kind == "section" and (bold or big)

    def _next_section(self, h: Heading, text: str) -> bool:
        """On a page read by OCR (no type sizes), is this line the heading of the section that
        comes next ("A.5 Inner product and projections" in A.4, "3.1 ..." at the end of chapter
        2)? The number must continue the current path and the rest read as a title (short, no
        sentence end, not an instruction "Show that ...")."""
        path, tokens = [t.removeprefix("app-") for t in self.path], h.tokens
        if not 2 <= len(tokens) <= len(path) + 1 or not tokens[-1].isdigit():
            return False
        t = h.title.strip()
        if t.endswith((".", "?", ":", ",", ";")) or looks_like_instruction(t) or not is_title_line(t, True):
            return False
        k = len(tokens) - 1
        if k < len(path) and path[k].isdigit() and tokens[:k] == path[:k]:
            return int(tokens[k]) == int(path[k]) + 1  # the next section at the same level
        return bool(tokens[0].isdigit() and path and path[0].isdigit() and int(tokens[0]) == int(path[0]) + 1
                and tokens[1:] == ["1"] * (len(tokens) - 1))  # the next chapter's first section

    def _aligned_key_heading(self, h: Heading, text: str, within: int = 10) -> Heading:
        """A heading in a language (or a garbled font) the word lists do not know opens an answer
        key when the lines below it are keyed by the numbers of exercises seen earlier in the
        book ("1.2.101:" after "Exercice 1.2.101"): numbering alignment, not wording."""
        if h.zone or self.zone == "answers" or h.kind not in ("title", "section", "chapter") or not self.exercise_numbers:
            return h
        below = self.page_lines[self.lines_on_page + 1 : self.lines_on_page + 1 + within]
        keys = [k for ln in below if (k := key_number(ln["text"])) is not None]
        hits = sum(k in self.exercise_numbers for k in keys)
        if hits >= 2 and hits >= 0.6 * len(keys) and len(keys) >= 0.3 * len(below):
            return Heading("title", [], None, text, "answers")
        return h

    def _numbering_restarts(self, within: int = 6) -> bool:
        """Does an item numbered 1 start within the next few lines (or does the page end first:
        the list then starts on the next page)?"""
        below = self.page_lines[self.lines_on_page + 1 : self.lines_on_page + 1 + within]
        for ln in below:
            label = parse_label(ln["text"], "exercises", bool(ln.get("bold")))
            if label is not None:
                return number_tokens(label.number)[-1] == "1"
        return len(below) < within  # the page ended first: nothing below says otherwise

    def _heading(self, h: Heading, size: float, page: dict) -> None:
        self._close()
        self._flush_text()
        if self.zone == "answers":
            if h.zone == "other":
                self.zone = "other"
            elif h.kind == "chapter" and not h.zone and self.answers_in_chapter and size > self.zone_size + 0.5:
                # answers at the end of a chapter (opened inside it): the next chapter's heading,
                # larger than the answers heading, ends them
                self.zone, self.answers_in_chapter = "body", False
        elif h.zone == "answers":
            self.zone = "answers"
            if self.stack and self.stack[0][1] == "chapter" and self.stack[0][0] > size + 0.5:
                # answers at the end of a chapter (a heading smaller than the chapter's): the
                # chapter's number is their context
                self.stack = self.stack[:1]
                self.path = merge_path([], self.stack[0][2])
                self.answers_in_chapter = True
            else:
                self.stack, self.path = [], []  # the key builds its own context from its headings
        elif h.zone in ("exercises", "other"):
            self.zone = h.zone
        else:
            self.zone = "body"
        if h.zone:
            self.zone_size = size
        self.seq_prefix, self.seq_last, self.seq_style = None, None, None
        self.instructions, self.zone_instruction = [], None
        if h.zone == "exercises" and not h.tokens:
            place = tuple(self.path)
            if place in self.exercise_places and h.title:
                # a second exercise list in the same section ("Homework Problems" after
                # "Exercises"): its own place, so its numbers do not meet the first list's keys
                h = Heading("named", ["z:" + re.sub(r"[^a-z0-9]+", "", h.title.lower())], None, h.title, h.zone)
            self.exercise_places.add(place)
        if h.tokens and self.path[-len(h.tokens):] != h.tokens:  # "Exercises 2.1" under 2.1: same place
            if h.kind == "chapter":
                self.stack = [(size, h.kind, h.tokens)]
            else:
                while self.stack and self.stack[-1][1] != "chapter" and self.stack[-1][0] <= size + 0.5:
                    self.stack.pop()
                self.stack.append((size, h.kind, h.tokens))
            path: list[str] = []
            for _, _, tokens in self.stack:
                path = merge_path(path, tokens)
            self.path = path
        if h.title and not h.zone:
            self.section_title = h.title

    # ---- items ------------------------------------------------------------------------------------
    def _accept(self, label: Label, bold: bool) -> bool:
        if label.kind in ("exercise", "example") or label.keyword:
            # in running text "... as in\nExercise 34." is a cross-reference: a label in body type
            # must start a sentence
            return bold or self.zone in ("exercises", "answers") or self.prev_text.endswith(
                (".", "?", "!", ":", "□", "■", "∎")) or not self.prev_text
        tokens = number_tokens(label.number)
        if not tokens[-1].isdigit():
            return False
        n, prefix = int(tokens[-1]), tokens[:-1]
        if self.seq_last is None:
            return True  # the first item of a zone (exercise lists often continue a counter)
        if _style(label) != self.seq_style and not (bold and n == self.seq_last + 1):
            return False  # "(1)" inside exercise 2.20 numbered "2.20" is a sub-part
        if label.kind == "answer-key":  # a dotted key: "1.4.17", "One.I.1.17"
            if prefix == self.seq_prefix:
                return n > self.seq_last or bold
            # a new prefix whose numbering restarts ("1.1.1." after "0.3.15.") opens the next
            # section's keys even when its heading was lost (read as a running header)
            # or a key that names an exercise printed earlier ("1.2.101" after "1.1.104": Lebl
            # numbers answered exercises from 101)
            return (bold or n <= 3 or merge_path(self.path, tokens) != self.path + tokens
                    or label.number in self.exercise_numbers)
        if prefix != self.seq_prefix:
            return n == 1 or (bold and n <= 3)
        if self.zone == "answers":
            return self.seq_last < n <= self.seq_last + 60
        return n == self.seq_last + 1 or (bold and self.seq_last < n <= self.seq_last + 3)

    def _start_item(self, label: Label, ln: dict, page: dict, bold: bool) -> None:
        self._close()
        tokens = number_tokens(label.number)
        if tokens[-1].isdigit():
            self.seq_prefix, self.seq_last, self.seq_style = tokens[:-1], int(tokens[-1]), _style(label)
        kind = {"answer-key": "answer", "example": "example"}.get(label.kind)
        if kind is None:
            kind = "answer" if self.zone == "answers" else "exercise"
        if kind == "answer" and label.kind == "number" and tokens[-1].isdigit():
            parts = split_inline_keys(label.rest, int(tokens[-1]))
            for number, rest in parts[:-1]:
                self._open("answer", label.printed if number == label.number else f"{number}.", rest, ln, page,
                           number=number)
                self._close()
            number, rest = parts[-1]
            if number != label.number:
                self.seq_last = int(number)
            self._open("answer", label.printed if number == label.number else f"{number}.", rest, ln, page,
                       number=number)
            return
        if kind == "exercise":
            self.exercise_numbers.add(label.number.rstrip("."))
            self.exercise_numbers.add(printed_path(merge_path(self.path, tokens)))
        self._open(kind, label.printed, label.rest, ln, page, number=label.number)

    def _instruction_for(self, number: str | None) -> str | None:
        if number and number.split(".")[-1].isdigit():
            n = int(number.split(".")[-1])
            for lo, hi, text in reversed(self.instructions):
                if lo <= n <= hi:
                    return text
        return self.zone_instruction

    def _open(self, kind: str, label: str | None, text: str, ln: dict, page: dict, number: str | None = None,
              instruction_range: tuple[int, int] | None = None) -> None:
        src = page["source"]
        path = merge_path(self.path, number_tokens(number)) if number else list(self.path)
        self.unit = {
            "kind": kind, "label": label, "number": number, "path": path, "lines": [text] if text else [],
            "page": src["page"], "last_page": src["page"], "line": ln.get("line"),
            "span": f"{ln['x0']:.0f},{ln['y0']:.0f},{ln['x1']:.0f},{ln['y1']:.0f}",
            "backends": {page.get("backend", "text")}, "quality": page.get("quality", 1.0),
            "instruction": self._instruction_for(number) if kind in ("exercise", "example") and self.zone == "exercises" else None,
            "range": instruction_range,
            "last_ln": ln if ln.get("y1") is not None else None, "ln_page": src["page"], "left": ln.get("x0", 0.0),
        }
        self.page_units += 1

    def _append(self, text: str, page: dict, ln: dict | None = None) -> None:
        u = self.unit
        u["lines"].append(text)
        self.page_continued = True
        u["last_ln"], u["ln_page"] = ln, page["source"]["page"]  # the last line's geometry, and its page
        if page["source"]["page"] != u["last_page"]:
            u["last_page"] = page["source"]["page"]
            u["backends"].add(page.get("backend", "text"))
            u["quality"] = min(u["quality"], page.get("quality", 1.0))

    def _close(self) -> None:
        u, self.unit = self.unit, None
        if u is None:
            return
        text = join_lines(u["lines"])
        if u["kind"] == "instruction":
            if u["range"]:
                self.instructions.append((*u["range"], text))
            else:
                self.zone_instruction = text
        self._emit(u["kind"], text, u, label=u["label"], number=u["number"], path=u["path"],
                   instruction=u["instruction"])

    def _flush_text(self) -> None:
        if not self.text_lines or self.text_start is None:
            self.text_lines = []
            return
        page_no, ln = self.text_start
        u = {"page": page_no, "last_page": page_no, "line": ln.get("line"),
             "span": f"{ln['x0']:.0f},{ln['y0']:.0f},{ln['x1']:.0f},{ln['y1']:.0f}", "backends": set(), "quality": 1.0}
        self._emit("text", join_lines(self.text_lines), u, path=list(self.path))
        self.text_lines = []

    def _emit(self, kind: str, text: str, u: dict, label=None, number=None, path=None, instruction=None) -> None:
        self.order += 1
        self.out.append({  # a DocUnit row (built as a dict: thousands per book, validated by its Arrow schema)
            "id": unit_id(self.document, self.order, text), "kind": kind, "zone": self.zone, "path": path or [],
            "section": printed_path(self.path) or None, "section_title": self.section_title, "label": label,
            "number": number, "text": text, "instruction": instruction,
            "source": {"document": self.document, "page": u["page"], "section": None, "number": None,
                       "span": u["span"], "url": None, "commit": None, "line": u["line"], "license": None},
            "last_page": u["last_page"], "backends": sorted(u["backends"]), "quality": u["quality"],
            "order": self.order, "provenance": [],
        })
