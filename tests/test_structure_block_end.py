"""Where an item's text ends (issues 15/16: stems that swallowed the next section): the last
exercise of a set stops at a heading the rules cannot place (a run-in title in bold, a title in
large type), and a running header that names the page's own section ("1.2 Exercises 13", seen
on one page only) is page furniture, not the end of the exercise that runs onto that page."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from helpers.structure_pages import line as _line
from helpers.structure_pages import page
from helpers.textbook_gen import BODY, BOLD, FONT, LEADING, MARGIN, PAGE_H, PAGE_W

from rlclimb.pipelines.definitions.textbook_pdf import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.schemas.io import read_rows
from rlclimb.stages.documents.structure_headers import FurnitureFilter
from rlclimb.stages.documents.structure_patterns import (
    is_title_line,
    opens_numbered_block,
    parse_heading,
)

PROSE = ["Let us return to the curve whose ordinates grow in a constant ratio from one to the next,",
         "so that their logarithms grow by equal steps and the curve of the logarithms is straight.",
         "Its slope at the origin is the natural measure of the rate, written k = 2 in our figure."]


class Book:
    """A PDF written page by page, line by line, with a running header and a page number."""

    def __init__(self, offset: int = 10):
        self.doc, self.offset, self.page, self.y = pymupdf.open(), offset, None, 0.0

    def new_page(self, header: str) -> None:
        self.page = self.doc.new_page(width=PAGE_W, height=PAGE_H)
        printed = self.doc.page_count + self.offset
        self.page.insert_text((MARGIN, 40), f"{header} {printed}", fontname=FONT, fontsize=7)  # "1.2 Exercises 13"
        self.page.insert_text((PAGE_W / 2, PAGE_H - 30), str(printed), fontname=FONT, fontsize=8)
        self.y = MARGIN + 20

    def put(self, text: str, size: float = BODY, font: str = FONT) -> None:
        self.page.insert_text((MARGIN, self.y), text, fontname=font, fontsize=size)
        self.y += LEADING * size / BODY + 2

    def prose(self) -> None:
        for text in PROSE:
            self.put(text)

    def save(self, path: Path) -> Path:
        self.doc.save(path)
        return path


def swallowing_book(path: Path) -> tuple[Path, dict[str, str]]:
    """Two sections; each exercise set's last exercise is followed by a heading the rules do not
    know (a bold run-in title; a large title) and prose; the first set's last exercise runs onto
    a page whose header names that page's own section (it appears nowhere else)."""
    b, stems = Book(), {}
    b.new_page("Growth and decay")  # not repeated: only the page-number cue removes it
    b.put("Chapter 1. Growth", 18, BOLD)
    b.put("1.1 Ratios", 14, BOLD)
    b.prose()
    b.put("Exercises", 12, BOLD)
    for k in range(1, 4):
        stems[f"1.{k}"] = f"Compute {k} + {k + 2} and then the square of the sum, for x = {k}."
        b.put(f"{k}. {stems[f'1.{k}']}")
    b.put("4. Compute the product of 3 and 7, and then subtract the sum of the two")
    b.new_page("1.1 Exercises")  # a header naming this page's own section: on no other page
    b.put("numbers from the product.")
    stems["1.4"] = "Compute the product of 3 and 7, and then subtract the sum of the two numbers from the product."
    b.put("5. Find the value of 2 x + 3 for x = 4.")
    stems["1.5"] = "Find the value of 2 x + 3 for x = 4."
    b.y += 10
    b.put("The Logarithmic Curve.", BODY, BOLD)  # a run-in title in body size: no rule places it
    b.prose()
    b.new_page("1.2 Powers")
    b.put("1.2 Powers", 14, BOLD)
    b.prose()
    b.put("Exercises", 12, BOLD)
    for k in range(1, 3):
        stems[f"2.{k}"] = f"Compute {k} to the power {k + 1}, for n = {k + 1}."
        b.put(f"{k}. {stems[f'2.{k}']}")
    b.put("A Selection of Standard Forms", 12)  # a title in a size below a section's
    b.prose()
    b.new_page("Answers")
    b.put("Answers to Exercises", 14, BOLD)
    for key, answer in (("1.1.1", 40), ("1.1.2", 64), ("1.1.3", 100), ("1.1.4", 4), ("1.1.5", 11), ("1.2.1", 1),
                        ("1.2.2", 8)):
        b.put(f"{key}. {answer}")
    return b.save(path), stems


@pytest.mark.slow
def test_last_exercise_of_a_set_stops_at_an_unplaced_heading_and_skips_the_header(tmp_path):
    path, stems = swallowing_book(tmp_path / "book.pdf")
    run_pipeline(build([str(path)], {}), tmp_path / "run", RunOptions(progress=False))
    rows = [r for f in sorted((tmp_path / "run" / "data").glob("*.parquet")) for r in read_rows(f)]
    by_stem = {" ".join(r["question"].split()): r for r in rows}
    for key, stem in stems.items():
        assert stem in by_stem, (key, stem, sorted(by_stem))
    for r in rows:
        q = r["question"]
        assert "Logarithmic" not in q and "ordinates" not in q and "Standard Forms" not in q, q
        assert "Exercises" not in q and "1.1" not in q, q  # the running header "1.1 Exercises 12"
    assert len(rows) == len(stems)


def test_title_lines():
    assert is_title_line("The Logarithmic Curve.", big=False)
    assert is_title_line("Differential of an Inverse Function.", big=False)
    assert is_title_line("SIMPLE INTEGRATIONS", big=False)
    assert is_title_line("A selection of standard forms", big=True)  # large type: sentence case is enough
    assert not is_title_line("A selection of standard forms", big=False)
    assert not is_title_line("Hint. Use the Fundamental Theorem of Arithmetic.", big=False)
    assert not is_title_line("Solution: The characteristic polynomial is", big=False)
    assert not is_title_line("Note that this is a very poor model of a nucleus,", big=False)
    assert not is_title_line("Figure 3.3 Multiplication Table for Z", big=False)
    assert not is_title_line("∀x∃yP(x, y) and ∃y∀xP(x, y).", big=False)
    assert not is_title_line("a b c", big=True)  # a figure's labels
    assert not is_title_line("Show That The Set Is Closed Under The Product Of Any Two Of Its Members.", big=False)


def test_a_numbered_exercise_set_heading_may_carry_a_sentence():
    """Thompson: "Exercises VII. You can now successfully try the following. (See" opened no set,
    so its exercises (1), (2), ... ran on as the text of the previous set's last exercise."""
    h = parse_heading("Exercises VII. You can now successfully try the following. (See", big=False)
    assert (h.zone, h.number) == ("exercises", "VII")
    assert parse_heading("Exercises 5 and 6 ask you to prove it.", big=False) is None
    assert parse_heading("Problems 3. and 4. are similar.", big=False) is None


def test_headings_whose_title_starts_with_a_non_ascii_capital():
    """Lebl (French): "1.3 Équations séparables" in large bold type was no heading, so the
    section's prose ran on as the last exercise's text."""
    h = parse_heading("1.3 Équations séparables", big=True)
    assert (h.kind, h.tokens, h.title) == ("section", ["1", "3"], "Équations séparables")
    assert parse_heading("4.6 Équations différentielles partielles, séparation des va-", big=True).tokens == ["4", "6"]
    assert parse_heading("2 x + 3 = 7", big=True).kind == "title"  # no section: lower case after the number


def test_a_bold_numbered_block_ends_the_item():
    assert opens_numbered_block("Exemple 1.6.3 : Résolvons")
    assert opens_numbered_block("Théorème 2.2.2 (La formule d’Euler).")
    assert opens_numbered_block("Théorème 4.7.1. Soit l’équation")
    assert not opens_numbered_block("Theorem 2.7 implies that the map is onto.")  # a reference in a sentence
    assert not opens_numbered_block("Hint 2: use the previous part.")
    assert not opens_numbered_block("Figure 3.3: the Cayley table")


def test_headers_beside_or_ending_with_the_page_number_are_furniture():
    """A header naming the page's section appears once; the page number beside it, or the
    document's offset between printed and PDF numbers, says it is furniture. Body lines that
    happen to end with a number stay."""
    pages = []
    for n in range(1, 9):
        top = ([_line(f"SECTION {n} ONLY HERE", 30), _line(str(n + 10), 30)] if n % 2 else
               [_line(f"{n // 2}.{n} Section title number {n} {n + 10}" if n % 4 else
                      f"{n + 10}CHAPTER {n}. THE SPACE LOST AFTER THE NUMBER", 30)])
        body = [_line(f"Body text of page {n} with its own words, long enough to be body type.", 620 + k * 12)
                for k in range(6)]
        body.append(_line(f"the {'odd' if n % 2 else 'even'} line {n} of the body ends with {n + 10}", 692))  # text
        pages.append(page(n, top + body, pages=8))
    f = FurnitureFilter(window=4)
    out = [p for pg in pages for p in f.feed(pg)] + list(f.flush())
    for p in out:
        texts = [ln["text"] for ln in p["lines"]]
        assert not any("Section title" in t or "ONLY HERE" in t or t.isdigit() for t in texts), texts
        assert len(texts) == 7, texts
