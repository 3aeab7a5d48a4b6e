"""Structure rules one by one: numbering paths, labels, headings, running headers, and the
document state machine on pages laid out like the development textbooks."""

from __future__ import annotations

import pytest

from rlclimb.stages.documents.structure import StructureDocument, join_lines
from rlclimb.stages.documents.structure_headers import FurnitureFilter
from rlclimb.stages.documents.structure_patterns import (
    instruction_range,
    merge_path,
    number_tokens,
    parse_heading,
    parse_label,
    split_inline_keys,
)


@pytest.mark.parametrize("context, printed, expected", [
    (["1", "4"], "17", ["1", "4", "17"]),  # Judson: exercise 17 of section 1.4
    (["1", "4"], "1.4.17", ["1", "4", "17"]),  # Judson's key entry "1.4.17."
    (["1", "r1", "1"], "1.17", ["1", "r1", "1", "17"]),  # Hefferon: "1.17" under subsection I.1 of chapter One
    (["1", "r1", "1"], "One.I.1.17", ["1", "r1", "1", "17"]),  # Hefferon's answer book
    (["2", "1"], "2.1", ["2", "1"]),  # "Exercises 2.1" under section 2.1: the same place
    (["2"], "2.3", ["2", "3"]),
    ([], "5", ["5"]),
])
def test_numbering_paths(context, printed, expected):
    assert merge_path(context, number_tokens(printed)) == expected


def test_number_tokens_normalize_words_and_numerals():
    assert number_tokens("One.I.1.17") == ["1", "r1", "1", "17"]
    assert number_tokens("IV", chapter_level=True) == ["4"] and number_tokens("IV") == ["r4"]
    assert number_tokens("007.") == ["7"] and number_tokens("B") == ["b"]


@pytest.mark.parametrize("text, zone, bold, expected", [
    ("Exercise 3. Compute 2 + 2.", "body", False, ("exercise", "3")),
    ("Exercise 34 checks that the relation is symmetric.", "body", False, None),  # a cross-reference
    ("Example 2.2) shows it.", "body", False, None),
    ("Example 1.27 In the equivalence relation above, ...", "body", True, ("example", "1.27")),
    ("Example 2.2", "exercises", True, None),  # inside an exercise list: a reference
    ("✓1.17 Use Gauss' method.", "exercises", False, ("number", "1.17")),
    ("? ✓1.11 [Math. Mag., Jan. 1957] A person traveling", "exercises", False, ("number", "1.11")),
    ("3.38 [Strang 80]", "exercises", False, ("number", "3.38")),
    ("12.Compute the sum.", "exercises", False, ("number", "12")),
    ("3 Use the computer to solve these.", "exercises", False, ("number", "3")),
    ("2 x + 3 = 7", "exercises", False, None),  # an equation
    ("5.", "exercises", False, ("number", "5")),
    ("1.4.17.", "answers", True, ("answer-key", "1.4.17")),
    ("One.I.1.17 Gauss' method can be performed", "answers", True, ("answer-key", "One.I.1.17")),
    ("3. Compute 2 + 2.", "body", False, None),  # a numbered list in running text
])
def test_labels(text, zone, bold, expected):
    label = parse_label(text, zone, bold)
    assert (label and (label.kind, label.number)) == (expected or None)


def test_headings():
    h = parse_heading("Chapter One: Linear Systems", big=True)
    assert (h.kind, h.tokens, h.title) == ("chapter", ["1"], "Linear Systems")
    assert parse_heading("Subsection One.I.1: Gauss' Method", big=True).tokens == ["1", "r1", "1"]
    assert parse_heading("1.4 · Exercises", big=True).zone == "exercises"
    assert parse_heading("Exercises 2.1", big=False).tokens == ["2", "1"]
    assert parse_heading("Hints and Answers to Selected Exercises", big=True).zone == "answers"
    assert parse_heading("Answers to Exercises", big=False).zone == "answers"
    assert parse_heading("Solutions of Linear Systems", big=True).zone is None  # a topic, not a key
    assert parse_heading("Solution:", big=False, bold=True) is None  # an answer marker
    assert parse_heading("PROBLEMS FOR LINEAR MATHEMATICS FOR APPLICATIONS", big=True).zone is None
    assert parse_heading("Topic: Fields 139", big=False) is None  # a running header
    assert parse_heading("A Short Note on Proofs", big=True).tokens == []  # "A" is an article
    assert parse_heading("2.1 Limits", big=False) is None  # body type: maybe an exercise


def test_instructions_and_inline_keys():
    assert instruction_range("In Exercises 5–11, find the derivative.") == (5, 11)
    assert instruction_range("For problems 3 through 8 use the table.") == (3, 8)
    assert instruction_range("In this exercise we find the derivative.") is None
    assert split_inline_keys("42   3. 17   5. x = 2", 1) == [("1", "42"), ("3", "17"), ("5", "x = 2")]
    assert split_inline_keys("(a) t = 6. (b) g(6) = -279", 1) == [("1", "(a) t = 6. (b) g(6) = -279")]
    assert join_lines(["the deriv-", "ative is", "(a) 2x", "Solution. 4"]) == "the derivative is\n(a) 2x\nSolution. 4"


def line(text: str, y: float, size: float = 10.0, bold: bool = False, x0: float = 72.0) -> dict:
    return {"text": text, "x0": x0, "y0": y, "x1": x0 + 6 * len(text), "y1": y + size, "size": size, "bold": bold,
            "block": 0, "line": None}


def page(n: int, lines: list[dict], doc: str = "book.pdf") -> dict:
    return {"id": f"{doc}-{n}", "source": {"document": doc, "page": n}, "pages": 0, "width": 612.0, "height": 792.0,
            "backend": "text", "quality": 1.0, "lines": lines}


def test_running_headers_and_page_numbers_are_removed_but_content_is_kept():
    pages = []
    for n in range(1, 9):
        header = f"CHAPTER 1. PRELIMINARIES {n + 12}" if n % 2 else "Section 1.2 Sets"
        body = [line(header, 30), line(f"Body text of page {n} with its own words.", 300), line(str(n + 12), 760)]
        if n == 3:
            body.insert(1, line("2", 60, size=25))  # a chapter number in large type at the top
        if n in (2, 6):
            body.append(line("Hint. (a) 2; (c) 2.", 740))  # the same short line on two pages is content
        pages.append(page(n, body))
    f = FurnitureFilter(window=4)
    out = [p for pg in pages for p in f.feed(pg)] + list(f.flush())
    assert [p["source"]["page"] for p in out] == list(range(1, 9))
    for p in out:
        texts = [ln["text"] for ln in p["lines"]]
        assert texts[0] in ("2", f"Body text of page {p['source']['page']} with its own words.")
        assert not any(t.startswith(("CHAPTER", "Section")) or t.isdigit() and t != "2" for t in texts)
    assert "Hint. (a) 2; (c) 2." in [ln["text"] for ln in out[1]["lines"]]


def test_book_and_answer_book_get_the_same_paths():
    """Hefferon's layout: "Chapter One", section "I", subsection "I.1", exercises "✓1.17"; its answer
    book: "Chapter One: Linear Systems", "Subsection One.I.1: ...", "One.I.1.17"."""
    body = [line("Plain running text of the subsection, long enough to be body text of the book.", 400 + 12 * i)
            for i in range(12)]
    book = [page(1, [line("Chapter One", 100, 17), line("Linear Systems", 130, 24), line("I Solving Linear Systems", 200, 14),
                     line("I.1 Gauss' Method", 230, 12), *body]),
            page(2, [line("Exercises", 100, 10, True), line("✓1.17 Use Gauss' method to find the unique solution.", 120, 9),
                     line("1.18 Use Gauss' method to solve each system.", 140, 9),
                     line("(1) Produce an equation not implied by this system.", 160, 9),
                     line("Topic: Computer Algebra Systems", 200, 14, True), line("Exercises", 230, 10, True),
                     line("1 Use the computer to solve the two problems.", 250, 9, True)])]
    answers = [page(1, [line("Answers to Exercises", 100, 11), line("Linear Algebra", 130, 29)], "answers.pdf"),
               page(2, [line("Chapter One: Linear Systems", 100, 17, True), line("Subsection One.I.1: Gauss' Method", 140, 12, True),
                        line("One.I.1.17 (a) Gauss' method gives y = 3 and x = 2.", 170, 10), *body,
                        line("One.I.1.18 (a) Gaussian reduction shows y = 1/2.", 600, 10),
                        line("Topic: Computer Algebra Systems", 640, 12, True),
                        line("1 These answers were given by Octave.", 670, 10, True)], "answers.pdf")]
    stage = StructureDocument()
    units = [u for u in stage.run(book + answers, None) if isinstance(u, dict)]
    got = [(u["source"]["document"], u["kind"], u["path"]) for u in units if u["kind"] in ("exercise", "answer")]
    assert got == [
        ("book.pdf", "exercise", ["1", "r1", "1", "17"]),
        ("book.pdf", "exercise", ["1", "r1", "1", "18"]),
        ("book.pdf", "exercise", ["1", "t:computeralgebrasystems", "1"]),
        ("answers.pdf", "answer", ["1", "r1", "1", "17"]),
        ("answers.pdf", "answer", ["1", "r1", "1", "18"]),
        ("answers.pdf", "answer", ["1", "t:computeralgebrasystems", "1"]),
    ]
    ex18 = next(u for u in units if u["path"][-1] == "18" and u["kind"] == "exercise")
    assert ex18["text"] == "Use Gauss' method to solve each system.\n(1) Produce an equation not implied by this system."
