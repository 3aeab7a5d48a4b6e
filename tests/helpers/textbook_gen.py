"""Generated textbooks with known truth, for the textbook-pdf tests and benchmarks.

`make_textbook(path)` writes a small but realistic STEM textbook with PyMuPDF and returns the
truth: every exercise and worked example (chapter, section, number, text, instruction, answer,
where the answer lives, page). Features, one chapter each (see DEFAULT_CHAPTERS):
- exercises with inline solutions, and a worked example ("Solution." after the statement);
- end-of-section exercises whose odd-numbered answers sit in an appendix answer key, with a
  shared instruction ("In Exercises 5-8, ...") and numbering that runs onto the next page;
- a two-column exercise page whose lines are drawn interleaved (left, right, left, ...), so only
  a layout-aware reader gets the order right; its key prints several answers per line;
- a scanned chapter (pages rasterized into image-only pages: needs OCR);
- a chapter whose fonts carry broken ToUnicode maps (digits come out as Cyrillic letters, or
  letters as other letters: needs OCR).
Every page has a running header and a page number in the footer. Text is drawn line by line
with a bold label ("3.") and a hanging indent, as typeset books do.

Also small builders for bad input: encrypted, corrupt, zero-page, image-only, huge, and
mixed-language PDFs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from math import gcd
from pathlib import Path

import pymupdf

PAGE_W, PAGE_H, MARGIN = 612.0, 792.0, 72.0
BODY, LEADING = 10.0, 13.5
FONT, BOLD, ITALIC = "helv", "hebo", "heit"


@dataclass(frozen=True)
class Style:
    """Typography and wording that vary between generated books (picked by seed)."""

    font: str = FONT
    bold: str = BOLD
    italic: str = ITALIC
    label: str = "{n}."  # exercise labels: "3." or "3)"
    key_title: str = "Appendix A: Answers to Odd-Numbered Exercises"
    garble: str | None = None  # broken-font mode for garbled chapters (None: the chapter's own)


STYLES = [
    Style(),
    Style("tiro", "tibo", "tiit", "{n})", "Appendix B: Hints and Answers to Selected Exercises", "shuffle"),
    Style(FONT, BOLD, ITALIC, "{n}.", "Answers to Selected Exercises", "unmapped"),
]


# ---- truth ----------------------------------------------------------------------------------------
@dataclass
class TruthItem:
    chapter: int
    section: str  # "2.1"
    number: str  # as printed: "7", or "2.3" for worked examples
    text: str  # statement as printed (without label and without the shared instruction)
    answer: str | None  # the answer the book gives (inline or in the key), None if none
    where: str | None  # "inline", "key" or None
    instruction: str | None = None  # shared instruction governing the item
    kind: str = "exercise"  # or "example"
    page: int = 0  # 1-based page of the label
    last_page: int = 0  # page of the statement's last line
    ocr: bool = False  # the page is scanned or garbled: text comes from OCR

    @property
    def question(self) -> str:
        return f"{self.instruction} {self.text}" if self.instruction else self.text


@dataclass
class GeneratedBook:
    path: Path
    items: list[TruthItem]
    pages: int
    scanned_pages: list[int] = field(default_factory=list)
    garbled_pages: list[int] = field(default_factory=list)
    two_column_pages: list[int] = field(default_factory=list)

    @property
    def answered(self) -> list[TruthItem]:
        return [t for t in self.items if t.answer]


# ---- exercise content -------------------------------------------------------------------------------
def _exercise(rng: random.Random, ocr_safe: bool) -> tuple[str, str]:
    """A (statement, answer) pair; OCR-safe ones avoid ^ and primes, which OCR misreads."""
    a, b, c, d = (rng.randint(2, 9) for _ in range(4))
    kinds = ["rect", "sum", "train", "gcd", "marbles", "subsets", "simplify", "det", "convert"]
    if not ocr_safe:
        kinds += ["deriv", "critical", "solve"]
    k = rng.choice(kinds)
    if k == "rect":
        length, width = rng.randint(3, 40), rng.randint(2, 30)
        return (f"A rectangular garden is {length} m long and {width} m wide. Compute its area and the "
                f"length of fence needed to enclose it.", f"Area {length * width} square meters; fence {2 * (length + width)} m.")
    if k == "sum":
        n = rng.randint(10, 200)
        return f"Evaluate the sum of the first {n} positive integers.", f"{n * (n + 1) // 2}"
    if k == "train":
        t, v, t2 = rng.randint(2, 6), rng.randint(40, 120), rng.randint(2, 9)
        return (f"A train travels {v * t} km in {t} hours at constant speed. How far does it travel in "
                f"{t2} hours at the same speed?", f"{v * t2} km")
    if k == "gcd":
        m, n = rng.randint(2, 30) * c, rng.randint(2, 30) * c
        return f"Find the greatest common divisor of {m} and {n}.", f"{gcd(m, n)}"
    if k == "marbles":
        r, bl = rng.randint(2, 15), rng.randint(2, 15)
        return (f"A bag holds {r} red and {bl} blue marbles. One marble is drawn at random. What is the "
                f"probability that it is red?", f"{r}/{r + bl}")
    if k == "subsets":
        n = rng.randint(3, 12)
        return f"How many subsets does a set with {n} elements have? Explain your answer.", f"{2 ** n}, since each element is either in a subset or not."
    if k == "simplify":
        return f"Simplify the expression ({a}x + {b}) + ({c}x - {d}).", f"{a + c}x + {b - d}"
    if k == "det":
        return (f"Compute the determinant of the 2 by 2 matrix with rows ({a}, {b}) and ({c}, {d}).",
                f"{a * d - b * c}")
    if k == "convert":
        deg = rng.choice([30, 45, 60, 90, 120, 135, 150, 180, 270])
        return f"Convert an angle of {deg} degrees to radians.", f"{deg}/180 pi radians"
    if k == "deriv":
        return (f"Find the derivative of f(x) = {a}x^3 + {b}x^2 - {c}x + {d}.",
                f"f'(x) = {3 * a}x^2 + {2 * b}x - {c}")
    if k == "critical":
        return (f"Consider the function g(t) = {a}t^2 - {2 * a * b}t + {c} on the interval [0, {2 * b}]. "
                f"(a) Find the critical points of g. (b) Determine the absolute maximum and the absolute "
                f"minimum of g on the interval. (c) Explain why the extreme value theorem applies here.",
                f"(a) t = {b}. (b) The minimum is g({b}) = {c - a * b * b}; the maximum is g(0) = {c}. "
                f"(c) g is continuous on a closed interval.")
    x = rng.randint(1, 12)
    return f"Solve the equation {a}x + {b} = {a * x + b} for x and check your answer.", f"x = {x}"


def _short_equation(rng: random.Random) -> tuple[str, str]:
    a, x, b = rng.randint(2, 9), rng.randint(1, 12), rng.randint(1, 20)
    return f"{a}x + {b} = {a * x + b}", f"x = {x}"


PROSE = (
    "In this section we collect the facts we need and illustrate them with examples. The reader "
    "should work through every example before attempting the exercises at the end of the section; "
    "the exercises marked with odd numbers have short answers in the appendix, while the even ones "
    "are left for discussion in class. Throughout, all numbers are real unless we say otherwise, and "
    "every function is defined on an interval of the real line."
)


# ---- layout ------------------------------------------------------------------------------------------
@dataclass
class _Line:
    x: float
    y: float
    text: str
    font: str
    size: float


class _Layout:
    """Flows text onto pages (one or two columns) and draws running headers and page numbers."""

    def __init__(self, doc: pymupdf.Document, chapter_title, style: Style = Style()):
        self.doc, self.style = doc, style
        self.chapter_title = chapter_title  # callable: -> header text for the current page
        self.pages: list[list[_Line]] = []
        self.modes: list[dict] = []  # per page: columns, interleave, garble font, scanned
        self.mode = {"columns": 1, "interleave": False, "garble": None, "scan": False}
        self.headers: list[str] = []
        self.col = 0
        self.y = MARGIN
        self.new_page()

    # pages and columns
    def new_page(self) -> None:
        self.pages.append([])
        self.modes.append(dict(self.mode))
        self.headers.append(self.chapter_title())
        self.col, self.y = 0, MARGIN + 10

    @property
    def page_no(self) -> int:
        return len(self.pages)

    def set_mode(self, **mode) -> None:
        """Change layout mode; starts a new page unless the current one is still empty."""
        self.mode.update(mode)
        if self.pages[-1]:
            self.new_page()
        else:
            self.modes[-1] = dict(self.mode)
            self.headers[-1] = self.chapter_title()

    def _col_x(self) -> tuple[float, float]:
        if self.mode["columns"] == 1:
            return MARGIN, PAGE_W - MARGIN
        width = (PAGE_W - 2 * MARGIN - 24) / 2
        x0 = MARGIN + self.col * (width + 24)
        return x0, x0 + width

    def _advance(self, height: float) -> None:
        if self.y + height > PAGE_H - MARGIN:
            if self.mode["columns"] == 2 and self.col == 0:
                self.col, self.y = 1, MARGIN + 10
            else:
                self.new_page()

    def space(self, h: float) -> None:
        self.y += h

    # text
    def _font(self, font: str) -> str:
        g = self.mode["garble"]
        return {self.style.font: "GL", self.style.bold: "GB"}.get(font, font) if g else font

    def _put(self, x: float, text: str, font: str, size: float) -> None:
        self.pages[-1].append(_Line(x, self.y, text, self._font(font), size))

    def heading(self, text: str, size: float) -> int:
        self._advance(size * 2.4)
        self.y += size
        x0, _ = self._col_x()
        self._put(x0, text, self.style.bold, size)
        self.y += size * 0.9
        return self.page_no

    def paragraph(self, text: str, label: str | None = None, indent: float = 18.0, size: float = BODY,
                  label_font: str | None = None, end_mark: bool = False) -> tuple[int, int]:
        """Wrap `text` after an optional bold label (and end it with a QED box, drawn in a font
        that has the glyph); returns (first page, last page)."""
        x0, x1 = self._col_x()  # both columns have the same width
        text_x = x0 + (indent if label else 0)
        words, lines, cur = text.split(), [], ""
        for w in words:
            trial = f"{cur} {w}".strip()
            if pymupdf.get_text_length(trial, fontname=self.style.font, fontsize=size) > x1 - text_x and cur:
                lines.append(cur)
                cur = w
            else:
                cur = trial
        lines.append(cur)
        first = None
        for i, line in enumerate(lines):
            self._advance(LEADING)
            self.y += LEADING
            if first is None:
                first = self.page_no
            x0, _ = self._col_x()  # the column may have changed
            if i == 0 and label:
                self._put(x0, label, label_font or self.style.bold, size)
            self._put(x0 + (indent if label else 0), line, self.style.font, size)
        if end_mark:
            _, x1 = self._col_x()
            self._put(x1 - size, "□", "china-s", size)
        self.y += 3
        return first or self.page_no, self.page_no

    # output
    def render(self) -> None:
        for n, (lines, mode, header) in enumerate(zip(self.pages, self.modes, self.headers, strict=True), 1):
            page = self.doc.new_page(width=PAGE_W, height=PAGE_H)
            if mode["garble"]:
                page.insert_font(fontname="GL", fontbuffer=pymupdf.Font(self.style.font).buffer)
                page.insert_font(fontname="GB", fontbuffer=pymupdf.Font(self.style.bold).buffer)
            if header:
                page.insert_text((MARGIN, 40), header, fontname=self.style.italic, fontsize=9)
            if n > 1:
                page.insert_text((PAGE_W / 2 - 6, PAGE_H - 36), str(n), fontname=self.style.font, fontsize=9)
            order = sorted(lines, key=lambda ln: (round(ln.y), ln.x)) if mode["interleave"] else lines
            for ln in order:
                page.insert_text((ln.x, ln.y), ln.text, fontname=ln.font, fontsize=ln.size)


# ---- broken fonts and scans ------------------------------------------------------------------------
_CYRILLIC = [chr(c) for c in range(0x0416, 0x0420)]


def _garble_map(mode: str) -> dict[int, int]:
    if mode == "digits":  # a broken ToUnicode map: digits come out as Cyrillic letters
        return {ord(str(d)): ord(_CYRILLIC[d]) for d in range(10)}
    if mode == "shuffle":  # letters come out as other letters
        letters = "abcdefghijklmnopqrstuvwxyz"
        perm = list(letters)
        random.Random(7).shuffle(perm)
        table = {ord(a): ord(b) for a, b in zip(letters, perm, strict=True)}
        table.update({ord(a.upper()): ord(b.upper()) for a, b in zip(letters, perm, strict=True)})
        return table
    if mode == "unmapped":  # every glyph maps to U+FFFD
        return {c: 0xFFFD for c in range(0x21, 0x7F)}
    if mode == "coptic":  # digits come out as Coptic letters ("ϭ.ϯ" for 1.3), as in issue 15's book
        return {ord(str(d)): 0x03E6 + d for d in range(10)}
    if mode == "nodigits":  # the map has no entries for the digits: MuPDF sees glyphs without Unicode
        return {ord(str(d)): -1 for d in range(10)}
    if mode == "ligature":  # a glyph comes out as a Latin Extended-B letter, as "ti" did as "Ɵ"
        return {ord("q"): 0x019F, ord("k"): 0x01A5}
    if mode == "latin1":  # a heading font whose map is shifted into Latin-1 ("SÊ½çã®ÊÄ" for "Solution")
        return {c: 0x00A2 + (c - 0x41) % 0x5D for c in range(0x41, 0x7B)}
    raise ValueError(mode)


def break_tounicode(doc: pymupdf.Document, mode: str, font: str | None = None) -> int:
    """Rewrite the ToUnicode CMaps of all embedded Type0 fonts (or those whose BaseFont contains
    `font`); returns how many were changed."""
    remap = _garble_map(mode)
    changed = 0
    for xref in range(1, doc.xref_length()):
        obj = doc.xref_object(xref)
        m = re.search(r"/ToUnicode (\d+) 0 R", obj)
        if not m or "/Type0" not in obj:  # only the embedded (garbled) fonts are Type0 here
            continue
        if font and font not in obj:
            continue
        cmap_xref = int(m.group(1))
        mapping = _parse_cmap(doc.xref_stream(cmap_xref).decode("latin-1"))
        entries = sorted((gid, remap.get(u, u)) for gid, u in mapping.items() if remap.get(u, u) >= 0)
        doc.update_stream(cmap_xref, _write_cmap(entries).encode())
        changed += 1
    return changed


def _parse_cmap(text: str) -> dict[int, int]:
    mapping, section = {}, None
    for line in text.splitlines():
        if line.endswith("beginbfrange"):
            section = "range"
        elif line.endswith("beginbfchar"):
            section = "char"
        elif line.startswith("end"):
            section = None
        else:
            hexes = [int(h, 16) for h in re.findall(r"<([0-9a-fA-F]+)>", line)]
            if section == "range" and len(hexes) == 3:
                for k in range(hexes[0], hexes[1] + 1):
                    mapping[k] = hexes[2] + k - hexes[0]
            elif section == "char" and len(hexes) == 2:
                mapping[hexes[0]] = hexes[1]
    return mapping


def _write_cmap(entries: list[tuple[int, int]]) -> str:
    out = ["/CIDInit /ProcSet findresource begin", "12 dict begin", "begincmap",
           "/CIDSystemInfo <</Registry(Adobe)/Ordering(UCS)/Supplement 0>> def",
           "/CMapName /Adobe-Identity-UCS def", "/CMapType 2 def",
           "1 begincodespacerange", "<0000> <FFFF>", "endcodespacerange"]
    for i in range(0, len(entries), 100):
        chunk = entries[i : i + 100]
        out.append(f"{len(chunk)} beginbfchar")
        out += [f"<{g:04x}> <{u:04x}>" for g, u in chunk]
        out.append("endbfchar")
    out += ["endcmap", "CMapName currentdict /CMap defineresource pop", "end", "end"]
    return "\n".join(out)


def rasterize_pages(src: pymupdf.Document, pages: set[int], dpi: int = 200) -> pymupdf.Document:
    """A copy of `src` where the given 1-based pages are image-only (scans)."""
    out = pymupdf.open()
    for i in range(src.page_count):
        if i + 1 in pages:
            page = src[i]
            pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            new = out.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, pixmap=pix)
        else:
            out.insert_pdf(src, from_page=i, to_page=i)
    return out


# ---- the book -------------------------------------------------------------------------------------
@dataclass
class ChapterSpec:
    title: str
    answers: str  # "inline" | "key"
    exercises: int = 8
    columns: int = 1
    scanned: bool = False
    garble: str | None = None  # "digits" | "shuffle" | "unmapped"
    instruction: tuple[int, int] | None = None  # shared instruction over this exercise range
    example: bool = False  # a worked example with a solution
    prose: int = 1  # paragraphs of prose before the exercises
    long_first: bool = False  # start with long exercises (multi-line statements)


DEFAULT_CHAPTERS = [
    ChapterSpec("Arithmetic and Algebra", "inline", exercises=6, example=True),
    ChapterSpec("Functions", "key", exercises=12, instruction=(5, 8), prose=4, long_first=True),
    ChapterSpec("Geometry and Counting", "key", exercises=16, columns=2, prose=0),
    ChapterSpec("Rates and Probability", "inline", exercises=5, scanned=True, prose=0),
    ChapterSpec("Number Theory", "key", exercises=6, garble="digits", prose=0),
]


def make_textbook(path: str | Path, chapters: list[ChapterSpec] | None = None, seed: int = 0,
                  title: str = "Elementary Mathematics: A Generated Textbook", style: Style | None = None) -> GeneratedBook:
    """A textbook with known truth; `seed` picks the content and (unless given) the `Style`."""
    chapters = DEFAULT_CHAPTERS if chapters is None else chapters
    style = style or STYLES[seed % len(STYLES)]
    if style.garble:
        chapters = [replace(c, garble=style.garble) if c.garble else c for c in chapters]
    rng = random.Random(seed)
    path = Path(path)
    doc = pymupdf.open()
    state = {"header": ""}
    lay = _Layout(doc, lambda: state["header"], style)
    items: list[TruthItem] = []
    two_col: list[int] = []

    # title page
    lay.space(180)
    lay.heading(title, 22)
    lay.paragraph("This book was generated for testing. It may be copied freely.")
    lay.new_page()

    key_entries: list[tuple[int, str, list[TruthItem]]] = []
    for ch_no, spec in enumerate(chapters, 1):
        state["header"] = f"Chapter {ch_no} · {spec.title}"
        lay.set_mode(columns=1, interleave=False, garble=spec.garble, scan=spec.scanned)
        first_page = lay.page_no
        lay.heading(f"Chapter {ch_no}: {spec.title}", 18)
        section = f"{ch_no}.1"
        lay.heading(f"{section} Basic Facts", 14)
        for _ in range(spec.prose):
            lay.paragraph(PROSE)
        ocr = spec.scanned or bool(spec.garble)
        if spec.example:
            q, a = _exercise(rng, ocr)
            label = f"Example {section}."
            indent = pymupdf.get_text_length(label, fontname=style.bold, fontsize=BODY) + 6
            p0, p1 = lay.paragraph(q, label=label, indent=indent)
            lay.paragraph(f"Solution. {a}", end_mark=True)
            items.append(TruthItem(ch_no, section, section, q, a, "inline", kind="example", page=p0, last_page=p1, ocr=ocr))
            lay.paragraph("We now turn to the exercises.")
        if spec.columns == 2:
            lay.set_mode(columns=2, interleave=True)
            two_col.append(lay.page_no)
        lay.heading(f"Exercises {section}", 12)
        instr_text = None
        chapter_items = []
        for n in range(1, spec.exercises + 1):
            instruction = None
            if spec.instruction and spec.instruction[0] <= n <= spec.instruction[1]:
                lo, hi = spec.instruction
                if n == lo:
                    instr_text = f"In Exercises {lo}-{hi}, solve each equation for x."
                    lay.paragraph(instr_text)
                instruction = instr_text
                q, a = _short_equation(rng)
            elif spec.long_first and n <= 2:
                q, a = _exercise_long(rng)
            else:
                q, a = _exercise(rng, ocr)
            p0, p1 = lay.paragraph(q, label=style.label.format(n=n))
            answered = spec.answers == "inline" or n % 2 == 1
            item = TruthItem(ch_no, section, str(n), q, a if answered else None,
                             ("inline" if spec.answers == "inline" else "key") if answered else None,
                             instruction=instruction, page=p0, last_page=p1, ocr=ocr)
            if spec.answers == "inline":
                marker = "Answer:" if spec.scanned else "Solution."
                lay.paragraph(f"{marker} {a}")
            items.append(item)
            chapter_items.append(item)
        if spec.answers == "key":
            key_entries.append((ch_no, section, [t for t in chapter_items if t.answer]))
        lay.set_mode(columns=1, interleave=False, garble=None, scan=False)
        del first_page

    # the answer key
    state["header"] = style.key_title.split(": ", 1)[-1]
    lay.set_mode(columns=1, interleave=False, garble=None, scan=False)
    lay.heading(style.key_title, 18)
    for ch_no, section, answered in key_entries:
        lay.heading(f"Chapter {ch_no}", 14)
        lay.heading(f"Section {section}", 12)
        spec = chapters[ch_no - 1]
        row: list[str] = []
        for t in answered:
            if spec.columns == 2 and len(t.answer) <= 24:  # short answers: several per line
                row.append(f"{style.label.format(n=t.number)} {t.answer}")
                if len(row) == 3:
                    lay.paragraph("     ".join(row))
                    row = []
                continue
            if row:
                lay.paragraph("     ".join(row))
                row = []
            lay.paragraph(t.answer, label=style.label.format(n=t.number))
        if row:
            lay.paragraph("     ".join(row))
    lay.render()

    scanned = [i + 1 for i, m in enumerate(lay.modes) if m["scan"]]
    garbled = [i + 1 for i, m in enumerate(lay.modes) if m["garble"]]
    for spec in chapters:
        if spec.garble:
            break_tounicode(doc, spec.garble)
            break
    if scanned:
        doc = rasterize_pages(doc, set(scanned))
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path, garbage=3, deflate=True)
    pages = doc.page_count
    doc.close()
    return GeneratedBook(path, items, pages, scanned, garbled, two_col)


def _exercise_long(rng: random.Random) -> tuple[str, str]:
    a, b, c = rng.randint(2, 6), rng.randint(2, 5), rng.randint(10, 40)
    q = (f"A tank initially holds {c} liters of water. Water flows in at a rate of {a} liters per minute "
         f"while a drain removes {b} liters per minute. (a) Write a formula for the volume V(t) of water "
         f"in the tank after t minutes. (b) How much water is in the tank after {2 * c} minutes? (c) If the "
         f"tank holds at most {10 * c} liters, after how many minutes does it overflow? Justify each step "
         f"of your reasoning carefully and state the units of every quantity you compute.")
    if a > b:
        t = (10 * c - c) / (a - b)
        ans = f"(a) V(t) = {c} + {a - b}t. (b) {c + (a - b) * 2 * c} liters. (c) After {t:g} minutes."
    else:
        ans = f"(a) V(t) = {c} - {b - a}t. (b) The tank is empty by then. (c) It never overflows."
    return q, ans


# ---- bad input ------------------------------------------------------------------------------------
def make_text_pdf(path: str | Path, pages: list[list[str]], font: str = FONT) -> Path:
    """A plain text PDF: each page a list of lines."""
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        y = MARGIN
        for line in lines:
            page.insert_text((MARGIN, y), line, fontname=font, fontsize=BODY)
            y += LEADING
    doc.save(path)
    doc.close()
    return Path(path)


def make_encrypted_pdf(path: str | Path, password: str = "secret") -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((MARGIN, MARGIN), "Exercise 1. Compute 2 + 2.")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "-owner")
    doc.close()
    return Path(path)


def make_corrupt_pdf(path: str | Path) -> Path:
    Path(path).write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF garbage")
    return Path(path)


def make_zero_page_pdf(path: str | Path) -> Path:
    """A syntactically valid PDF whose page tree is empty (PyMuPDF refuses to save one)."""
    body = (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
            b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n")
    xref_at = len(body)
    body += (b"xref\n0 3\n0000000000 65535 f \n0000000009 00000 n \n0000000058 00000 n \n"
             b"trailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n" + str(xref_at).encode() + b"\n%%EOF\n")
    Path(path).write_bytes(body)
    return Path(path)


def make_image_only_pdf(path: str | Path, lines: list[str], dpi: int = 200) -> Path:
    tmp = pymupdf.open()
    page = tmp.new_page(width=PAGE_W, height=PAGE_H)
    y = MARGIN
    for line in lines:
        page.insert_text((MARGIN, y), line, fontname=FONT, fontsize=12)
        y += 18
    out = rasterize_pages(tmp, {1}, dpi=dpi)
    out.save(path)
    return Path(path)


def make_huge_pdf(path: str | Path, pages: int, exercises_per_page: int = 2) -> Path:
    """Many pages of numbered exercises (numbering runs across the whole book)."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_text((MARGIN, MARGIN), "Exercises", fontname=BOLD, fontsize=14)
    n = 0
    for p in range(pages):
        if p:
            page = doc.new_page(width=PAGE_W, height=PAGE_H)
        y = MARGIN + 40
        for _ in range(exercises_per_page):
            n += 1
            page.insert_text((MARGIN, y), f"{n}.", fontname=BOLD, fontsize=BODY)
            page.insert_text((MARGIN + 32, y), f"Compute {n} + {n + 1} and explain the steps.", fontname=FONT, fontsize=BODY)
            y += 2 * LEADING
        page.insert_text((PAGE_W / 2, PAGE_H - 36), str(p + 1), fontname=FONT, fontsize=9)
    doc.save(path, garbage=1, deflate=True)
    doc.close()
    return Path(path)


# ---- layouts outside the development books (issue 15) ---------------------------------------------
@dataclass
class LayoutItem:
    key: str  # "II#3"
    question: str
    answer: str | None


_TOPICS = ["a bakery sells loaves", "a pump fills a tank", "a cyclist rides along a river", "a printer prints pages",
           "a farmer plants rows of corn", "a train leaves the station", "a student reads chapters",
           "a factory paints cars", "a gardener waters plants", "a choir learns songs", "a kettle heats water",
           "a library lends novels", "a robot sorts parcels", "a fountain sprays jets", "a miner digs tunnels"]


def _problem(rng: random.Random, k: int) -> tuple[str, str]:
    a, b = rng.randint(2, 40), rng.randint(2, 40)
    topic = rng.choice(_TOPICS)
    return (f"Suppose {topic} so that y = {a}x + {b} after x hours. What is y when x = {k}?", f"y = {a * k + b}")


def make_layout_book(path: str | Path, layout: str, seed: int = 0) -> tuple[Path, list[LayoutItem]]:
    """A small book in one of the layouts the development books do not have; returns its truth.
    - "sets": chapters end with "Exercises II. (See p. 9 for Answers.)" in body type (no bold, no
      size change), items "(1)", "(2)"; an ANSWERS chapter groups "(n)" answers under the same
      set headings, printed in two columns whose lines sit at the same heights;
    - "problems": "Problem 7." labels, odd-numbered answers at the end of each chapter under
      "Answers to Odd-Numbered Problems";
    - "choice": numbered multiple-choice questions, the right option flagged "(Correct)";
    - "keys": an appendix of dotted keys "1.2.3." whose section headings are missing.
    """
    rng = random.Random(seed)
    doc = pymupdf.open()
    items: list[LayoutItem] = []
    state = {"page": None, "y": 0.0}

    def new_page() -> None:
        state["page"] = doc.new_page(width=PAGE_W, height=PAGE_H)
        state["y"] = MARGIN
        state["page"].insert_text((PAGE_W / 2, PAGE_H - 40), str(doc.page_count), fontname=FONT, fontsize=9)

    def put(text: str, size: float = BODY, x: float = MARGIN, font: str = FONT, advance: bool = True) -> None:
        if state["page"] is None or state["y"] > PAGE_H - MARGIN - 20:
            new_page()
        state["page"].insert_text((x, state["y"]), text, fontname=font, fontsize=size)
        if advance:
            state["y"] += LEADING * size / BODY

    def prose(n: int = 3) -> None:
        for _ in range(n):
            put("The method of this chapter works for every function we met so far, and we use it below.")

    romans = ["I", "II", "III", "IV"]
    if layout == "sets":
        sets: list[tuple[str, list[tuple[str, str]]]] = []
        for roman in romans[:3]:
            new_page()
            put(f"CHAPTER {roman}.", 16, font=BOLD)
            state["y"] += 10
            prose(6)
            put(f"Exercises {roman}. (See p. 9 for Answers.)")
            qa = [_problem(rng, k) for k in range(1, 6)]
            for k, (q, a) in enumerate(qa, 1):
                put(f"({k}) {q}")
                items.append(LayoutItem(f"{roman}#{k}", q, a))
            sets.append((roman, qa))
        new_page()
        put("ANSWERS.", 16, font=BOLD)
        state["y"] += 10
        for roman, qa in sets:
            put(f"Exercises {roman}.", font=BOLD)
            for k in range(0, len(qa), 2):  # two columns: (1) | (2) on one height
                put(f"({k + 1}) {qa[k][1]}.", advance=len(qa) <= k + 1)
                if k + 1 < len(qa):
                    put(f"({k + 2}) {qa[k + 1][1]}.", x=PAGE_W / 2 - 60)
    elif layout == "problems":
        for c in range(1, 3):
            new_page()
            put(f"Chapter {c}. Linear Models", 16, font=BOLD)
            state["y"] += 10
            prose(4)
            put("Problems", 13, font=BOLD)
            qa = [_problem(rng, k) for k in range(1, 8)]
            for k, (q, a) in enumerate(qa, 1):
                put(f"Problem {k}. {q}")
                items.append(LayoutItem(f"{c}#{k}", q, a if k % 2 else None))
            put("Answers to Odd-Numbered Problems", 13, font=BOLD)
            for k, (_, a) in enumerate(qa, 1):
                if k % 2:
                    put(f"{k}. {a}")
    elif layout == "choice":
        new_page()
        put("1 Kinematics", 16, font=BOLD)
        put("1.1 Multiple Choice", 13, font=BOLD)
        for k in range(1, 9):
            a, b = rng.randint(2, 9), rng.randint(2, 9)
            q = f"A cart moves at {a} m/s for {b} s. How far does it travel?"
            right = rng.randrange(4)
            opts = [f"{a * b + d} m" for d in (-2, 0, 3, 5)]
            opts[0], opts[right] = opts[right], opts[0]
            put(f"{k}. {q}")
            for i, o in enumerate(opts):
                put(f"({'abcd'[i]}) {o}" + (" (Correct)" if o == f"{a * b} m" else ""), x=MARGIN + 12)
            full = q + " " + " ".join(f"({'abcd'[i]}) {o}" for i, o in enumerate(opts))
            items.append(LayoutItem(f"#{k}", full, f"{a * b} m"))
    elif layout == "keys":
        for s in (1, 2, 3):
            new_page()
            put(f"1.{s} Counting Things", 16, font=BOLD)
            prose(3)
            put("Exercises", 13, font=BOLD)
            for k in range(1, 5):
                q, a = _problem(rng, k)
                put(f"{k}. {q}")
                items.append(LayoutItem(f"1.{s}#{k}", q, a))
        new_page()
        put("Appendix B Solutions to Exercises", 16, font=BOLD)
        state["y"] += 10
        for it in items:  # one key list, the section headings lost
            s, k = it.key.split("#")
            put(f"{s}.{k}. {it.answer}.")
    else:
        raise ValueError(layout)
    doc.save(path)
    doc.close()
    return Path(path), items
