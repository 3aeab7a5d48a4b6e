"""Where an item's text ends, part 2 (issues 15/16): an exercise set in running text is its one
paragraph (lebl: the section's prose ran on as the exercise), the last exercise of a list stops
at prose set apart by a wide gap (thompson (9)) but keeps its own second paragraph, a licence
block is back matter (thompson's Project Gutenberg licence was read as answers "1.A." ...), a
footnote is skipped (levin's "8from Problem Solving ..." ended exercise 9), an
OCR'd page's next section heading ends the item (no type sizes there), and a lone "x" atop a
page is a formula's variable, not roman page 10 (strickland p25).

The PDFs are written here with their truth (the generator's own stems); they are parsed by the
real parse stage and read by the real structure stage."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from helpers.structure_pages import line, page
from helpers.textbook_gen import BODY, BOLD, FONT, LEADING, MARGIN, PAGE_H, PAGE_W

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.stages.documents import parse_pdf
from rlclimb.stages.documents.structure import StructureDocument
from rlclimb.stages.documents.structure_headers import FurnitureFilter
from rlclimb.stages.documents.structure_patterns import opens_legal_block

# full-width prose lines (about 90 characters of Helvetica 10 pt: most of the 468 pt column)
PROSE = ["We now leave these exercises and return to the growth of a quantity whose rate is fixed,",
         "so that the ratio of one value to the next stays the same however far the series is run.",
         "Such growth is called geometric, and its logarithm grows by the same step k = 2 each time."]


class Page:
    def __init__(self, doc: pymupdf.Document, printed: int):
        self.page = doc.new_page(width=PAGE_W, height=PAGE_H)
        self.page.insert_text((PAGE_W / 2, PAGE_H - 30), str(printed), fontname=FONT, fontsize=8)
        self.y = MARGIN + 20

    def put(self, text: str, size: float = BODY, font: str = FONT, x: float = MARGIN, gap: float = 0.0) -> None:
        """A line at the left margin (or at `x`: a display), `gap` points below the previous one's
        normal spacing."""
        self.y += gap
        self.page.insert_text((x, self.y), text, fontname=font, fontsize=size)
        self.y += LEADING * size / BODY + 2

    def prose(self, gap: float = 8.0) -> None:
        for k, text in enumerate(PROSE):
            self.put(text, gap=gap if k == 0 else 0.0)


def running_text_book(path: Path) -> tuple[Path, dict[str, str]]:
    """Section 1.1: two exercises set in its running text (bold labels), each followed by a
    paragraph of prose; the second has a display formula inside it and a sentence after the
    display. Section 1.2: an exercise list whose last exercise has a second paragraph of its
    own, then a wide gap and prose. Section 1.3: a last exercise whose question follows a
    figure (a wide gap) and its caption. Section 1.4: a list in two columns, then prose.
    Section 1.5: a running-text exercise ending at a page's foot, prose overleaf; another whose
    sentence goes on overleaf."""
    doc, stems = pymupdf.open(), {}
    p = Page(doc, 1)
    p.put("Chapter 1. Growth", 18, BOLD)
    p.put("1.1 Ratios", 14, BOLD)
    p.prose(gap=0)
    stems["Exercise 1."] = "Show that the ratio of two consecutive terms is constant for every n."
    p.put("Exercise 1. " + stems["Exercise 1."], font=BOLD, gap=8)
    p.prose()
    p.put("Exercise 2. Find the slope of the curve whose height is given by the rule", font=BOLD, gap=8)
    p.put("y = 3 x + 2.", x=260, gap=4)  # a display formula, centred
    p.put("Then compare it with the slope at x = 4 and say which of the two is larger, and why.", gap=4)
    stems["Exercise 2."] = ("Find the slope of the curve whose height is given by the rule y = 3 x + 2. "
                            "Then compare it with the slope at x = 4 and say which of the two is larger, and why.")
    p.prose()
    p = Page(doc, 2)
    p.put("1.2 Rates", 14, BOLD)
    p.prose(gap=0)
    p.put("Exercises", 12, BOLD, gap=8)
    stems["1."] = "Compute 2 + 3 and then the square of the sum, for the case x = 5."
    p.put("1. " + stems["1."])
    first = "2. A ball is thrown upward at 10 m/s from the ground, and it rises until its speed is zero."
    second = "Find the height that it reaches, and the time it takes to get there, in seconds, for g = 10."
    p.put(first)
    p.put(second, gap=8)  # the exercise's own second paragraph: a paragraph's gap, no more
    stems["2."] = first[3:] + " " + second
    p.prose(gap=34)  # a wide gap (the space or rule that closes a list), then prose
    p = Page(doc, 3)
    p.put("1.3 Work", 14, BOLD)
    p.prose(gap=0)
    p.put("Exercises", 12, BOLD, gap=8)
    lines = ["1. A force is applied to a box on the floor, and the box moves in the direction of the force.",
             "Figure 1: The force applied to the box, and its displacement divided into N equal parts.",
             "Show that the work done is the sum of the work done over each of the N parts, for any N."]
    p.put(lines[0])
    p.put(lines[1], gap=60)  # a figure's space above its caption: no prose after the list
    p.put(lines[2])
    stems["1.@3"] = " ".join(lines)[3:]
    p = Page(doc, 4)
    p.put("1.4 Powers", 14, BOLD)
    p.prose(gap=0)
    p.put("Exercises", 12, BOLD, gap=8)
    p.put("1. y = 4 x^2 + 1", gap=0)
    p.y -= LEADING + 2
    p.put("2. y = 3 x^5 - 2", x=330)  # a list in two columns: the last item in the right one
    stems["1.@4"], stems["2.@4"] = "y = 4 x^2 + 1", "y = 3 x^5 - 2"
    p.prose(gap=12)  # prose across the page after a gap: no sentence end above it
    p = Page(doc, 5)
    p.put("1.5 Rules", 14, BOLD)
    p.prose(gap=0)
    p.y = PAGE_H - 100
    stems["Exercise 3.@5"] = "Verify these rules from the definitions, for x = 1."
    p.put("Exercise 3. " + stems["Exercise 3.@5"], font=BOLD, gap=8)  # a paragraph's short last line
    p = Page(doc, 6)
    p.prose(gap=0)  # overleaf: the section's prose, no gap to see
    p.y = PAGE_H - 100
    p.put("Exercise 4. Show that the rule holds for every real number x and for every integer n, and", font=BOLD)
    p = Page(doc, 7)
    p.put("Then use it to find the value of the sum at x = 2, and compare the two of them, for n = 3.")
    stems["Exercise 4.@6"] = ("Show that the rule holds for every real number x and for every integer n, and "
                              "Then use it to find the value of the sum at x = 2, and compare the two of them, for n = 3.")
    p.prose()
    doc.save(path)
    return path, {k if "@" in k else f"{k}@{1 if k.startswith('Exercise') else 2}": v for k, v in stems.items()}


def footnote_book(path: Path) -> tuple[Path, dict[str, str]]:
    """An exercise list whose second exercise runs onto the next page, with a footnote (small
    type, a mark, at the page's foot) between its two halves; a small-type line of a formula
    at the foot of the next page, without a mark, stays."""
    doc, stems = pymupdf.open(), {}
    p = Page(doc, 1)
    p.put("1.1 Graphs", 14, BOLD)
    p.prose(gap=0)
    p.put("Exercises", 12, BOLD, gap=8)
    stems["1."] = "Prove that any planar graph must have a vertex of degree 5 or less, using Euler's formula."
    p.put("1. " + stems["1."])
    p.y = PAGE_H - 150
    p.put("2. Help the knight find a seating arrangement for the round table, and explain what the")
    p.put("8from Problem Solving through Recreational Mathematics, by Averbach and Chein, 1999", 7, gap=30)
    p.put("and a second line of the same footnote in the same small type at the foot of the page.", 7)
    p = Page(doc, 2)
    p.put("problem has to do with graphs whose vertices have degree 2 exactly, for n = 8 knights.")
    p.y = PAGE_H - 120
    p.put("3. Show that the sum of the degrees is even, for every graph on n vertices, n = 1, 2, 3.")
    p.put("k = 2", 7, x=300)
    stems["2."] = ("Help the knight find a seating arrangement for the round table, and explain what the "
                   "problem has to do with graphs whose vertices have degree 2 exactly, for n = 8 knights.")
    stems["3."] = "Show that the sum of the degrees is even, for every graph on n vertices, n = 1, 2, 3. k = 2"
    doc.save(path)
    return path, stems


def licence_book(path: Path) -> Path:
    """An answer key, then Project Gutenberg's end notice and licence in small type, numbered
    "1.A.", "1.B." like answers."""
    doc = pymupdf.open()
    p = Page(doc, 1)
    p.put("1.1 Sums", 14, BOLD)
    p.put("Exercises", 12, BOLD)
    for k in range(1, 4):
        p.put(f"{k}. Compute {k} + {k + 2} and then the square of the sum, for x = {k}.")
    p = Page(doc, 2)
    p.put("Answers to Exercises", 14, BOLD)
    for k, answer in ((1, 16), (2, 36), (3, 64)):
        p.put(f"1.1.{k}. {answer}")
    p.put("End of the Project Gutenberg EBook of A Book of Sums, by A. Author", 8, gap=20)
    p.put("*** END OF THIS PROJECT GUTENBERG EBOOK A BOOK OF SUMS ***", 8)
    p.put("*** START: FULL LICENSE ***", 8, gap=10)
    for key in ("1.1.4.", "1.A.", "1.B.", "1.C."):
        p.put(f"{key} By reading or using any part of this work, you agree to the terms of 2 licenses.", 8)
    doc.save(path)
    return path


def units_of(path: Path) -> list[dict]:
    parse_pdf.close_cached_pdfs()
    stage = parse_pdf.ParsePdf(ocr="off")
    stage.setup(None)
    pages = [stage.process(item, None) for item in PdfPageReader([path])]
    return [u for u in StructureDocument().run(pages, None) if isinstance(u, dict)]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_an_exercise_in_running_text_is_its_paragraph_and_a_list_ends_at_a_wide_gap(tmp_path):
    path, stems = running_text_book(tmp_path / "book.pdf")
    got = {f"{u['label']}@{u['source']['page']}": _flat(u["text"]) for u in units_of(path) if u["kind"] == "exercise"}
    # no prose after any of them; Exercise 2 keeps the sentence after its display, the last
    # exercise of 1.2 its own second paragraph, that of 1.3 its question below a figure
    assert got == stems


def test_a_footnote_is_no_items_text(tmp_path):
    path, stems = footnote_book(tmp_path / "book.pdf")
    got = {u["label"]: _flat(u["text"]) for u in units_of(path) if u["kind"] == "exercise"}
    assert got == stems


def test_a_licence_block_is_back_matter_not_answers(tmp_path):
    units = units_of(licence_book(tmp_path / "book.pdf"))
    answers = {u["number"]: _flat(u["text"]) for u in units if u["kind"] == "answer"}
    assert answers == {"1.1.1": "16", "1.1.2": "36", "1.1.3": "64"}, answers
    assert not any("Gutenberg" in u["text"] or "licenses" in u["text"] for u in units)


def test_legal_block_lines():
    assert opens_legal_block("*** END OF THIS PROJECT GUTENBERG EBOOK CALCULUS MADE EASY ***")
    assert opens_legal_block("End of Project Gutenberg’s Calculus Made Easy, by Silvanus Phillips Thompson")
    assert opens_legal_block("*** START: FULL LICENSE ***")
    assert opens_legal_block("GNU Free Documentation License")
    assert not opens_legal_block("*** START OF THIS PROJECT GUTENBERG EBOOK CALCULUS ***")  # the book starts
    assert not opens_legal_block("The GNU Free Documentation License lets you copy this book.")
    assert not opens_legal_block("GNU Free Documentation License, Version 1.3 or any later version")


def test_an_ocr_page_ends_the_item_at_the_next_sections_heading():
    """An OCR'd page carries no type sizes: "A.5 Inner product" in the section after A.4 is the
    next section's heading by its number; "A.4.2 Show that ..." (an instruction) and a
    section number that does not come next are not."""
    body = [line(f"Running text of the section, line {k}, with a formula x = {k} in it.", 100 + 14 * k)
            for k in range(4)]
    pages = [
        page(1, [line("A.4 Dimension", 80, size=14, bold=True), *body,
                  line("Exercises", 200, size=12, bold=True),
                  line("Exercise A.4.1. Find the dimension of the space of 2 by 2 matrices.", 220, bold=True),
                  line("Exercise A.4.2. Suppose the column space of a 9 by 5 matrix has dimension 3.", 240, bold=True),
                  line("Find its rank.", 254)]),
        page(2, [line("A.7 Determinants of blocks", 80), line("A.4.3 Show that the rank is 3", 100),
                  line("A.5 Inner product and projections", 120),
                  *[line(ln["text"], ln["y0"] + 60) for ln in body]], backend="tesseract"),
    ]
    units = [u for u in StructureDocument().run(pages, None) if isinstance(u, dict)]
    last = next(u for u in units if u["number"] == "A.4.2")
    assert _flat(last["text"]) == ("Suppose the column space of a 9 by 5 matrix has dimension 3. Find its rank. "
                                   "A.7 Determinants of blocks A.4.3 Show that the rank is 3")


def test_a_roman_page_number_must_agree_with_its_neighbours():
    """Front matter numbered i, ii, iii at the foot: furniture. A lone "x" atop a page of the
    body (a matrix's entry) and a "v" at the foot of one page only stay text."""
    pages = []
    for n in range(1, 11):
        text = [line(f"Body text of page {n}, long enough to be the body type of the page.", 300 + 14 * k)
                for k in range(5)]
        foot = [line(["i", "ii", "iii", "iv"][n - 1], 760)] if n <= 4 else [line(str(n - 4), 760)]
        top = [line("x", 60, x=336)] if n == 7 else []
        if n == 9:
            foot = [line("v", 740, x=300), *foot]
        pages.append(page(n, top + text + foot))
    f = FurnitureFilter(window=4)
    out = [p for pg in pages for p in f.feed(pg)] + list(f.flush())
    texts = {p["source"]["page"]: [ln["text"] for ln in p["lines"]] for p in out}
    for n in range(1, 5):
        assert len(texts[n]) == 5, texts[n]  # i .. iv: furniture
    assert texts[7][0] == "x" and "v" in texts[9]
    assert not any(t.isdigit() for n in texts for t in texts[n])
