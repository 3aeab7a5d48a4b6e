"""Reading order of exercises in parts on generated pages (issue 15): labels drawn apart from their
text, part grids ("a) ...  b) ..." side by side, cells of two lines) drawn line by line across the
grid, labels centred on a system of equations. The truth is what the generator drew in each cell."""

from __future__ import annotations

import pymupdf
import pytest

from rlclimb.stages.documents.parse_layout import page_lines, stext_blocks

FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP


def _lines(draw) -> list[str]:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    draw(page)
    page = doc.load_page(0) if False else page
    lines, _ = page_lines(stext_blocks(page.get_textpage(flags=FLAGS)), page.rect.width)
    return [ln["text"] for ln in lines]


def _put(page, x, y, text, size=11):
    page.insert_text((x, y), text, fontsize=size)


def _grid(page, cells: dict[str, list[str]], cols: list[float], top: float, *, labels_last: bool):
    """Cells drawn the way a grid's content stream runs: line k of every cell of a grid row, then
    line k + 1; each label after its cell's text when `labels_last`."""
    letters = sorted(cells)
    rows = [letters[i:i + len(cols)] for i in range(0, len(letters), len(cols))]
    y = top
    for row in rows:
        height = max(len(cells[k]) for k in row)
        for k, letter in enumerate(row):
            if not labels_last:
                _put(page, cols[k], y, f"{letter})")
        for j in range(height):
            for k, letter in enumerate(row):
                if j < len(cells[letter]):
                    _put(page, cols[k] + 15, y + 14 * j, cells[letter][j])
        if labels_last:
            for k, letter in enumerate(row):
                _put(page, cols[k], y, f"{letter})")
        y += 14 * height + 12


def _cell_text(lines: list[str]) -> dict[str, str]:
    """What a reader of the lines in order gives each label: the text up to the next label."""
    out, cur = {}, None
    for text in lines:
        head = text.split(" ", 1)
        if len(head[0]) == 2 and head[0][1] == ")" and head[0][0] in "abcdefgh":
            cur = head[0][0]
            out[cur] = head[1] if len(head) > 1 else ""
        elif cur:
            out[cur] = f"{out[cur]} {text}".strip()
    return out


CELLS = {
    "a": ["Find the critical points of", "the equation x' = x(1 - x)."],
    "b": ["Compute the limit of x(t)", "for x(0) = 1 and x'(0) = 2."],
    "c": ["Classify the critical points", "found in the first part."],
    "d": ["Sketch the phase diagram", "for x(0) = 3 and x'(0) = 0."],
}


@pytest.mark.parametrize("labels_last", [False, True])
def test_two_line_cells_of_a_grid_are_read_cell_by_cell(labels_last):
    lines = _lines(lambda p: (_put(p, 72, 80, "Exercise 1.1: Let x' = x(1 - x)."),
                              _grid(p, CELLS, [86, 320], 100, labels_last=labels_last)))
    assert _cell_text(lines) == {k: " ".join(v) for k, v in CELLS.items()}, lines
    assert lines[0].startswith("Exercise 1.1")


def test_three_columns_of_one_line_cells():
    cells = {"a": ["x(0) < 1,"], "b": ["1 < x(0) < 2,"], "c": ["2 < x(0)."]}
    lines = _lines(lambda p: _grid(p, cells, [86, 242, 398], 100, labels_last=True))
    assert lines == ["a) x(0) < 1,", "b) 1 < x(0) < 2,", "c) 2 < x(0)."]


def test_a_label_drawn_after_its_wrapped_text_leads_it():
    def draw(p):
        _put(p, 101, 100, "Find the equation.")
        _put(p, 86, 100, "a)")
        _put(p, 101, 120, "Assuming that x(0) > 0, that some people are infected at t = 0,")
        _put(p, 101, 134, "find the limit of x(t).")
        _put(p, 86, 120, "b)")  # drawn after both lines of its part
        _put(p, 101, 154, "Does the answer in b) match your intuition?")
        _put(p, 86, 154, "c)")
    lines = _lines(draw)
    assert _cell_text(lines) == {"a": "Find the equation.",
                                 "b": "Assuming that x(0) > 0, that some people are infected at t = 0, find the limit of x(t).",
                                 "c": "Does the answer in b) match your intuition?"}, lines


def test_a_label_centred_on_a_system_leads_it():
    def draw(p):
        _put(p, 72, 80, "Solve the systems.")
        for k, (x, eqs) in enumerate([(86, ["4x + 3y = -1", "5x + 6y = 4"]), (320, ["5x + 6y = 7", "6x + 8y = -1"])]):
            for j, eq in enumerate(eqs):
                _put(p, x + 15, 100 + 18 * j, eq)
        _put(p, 86, 109, "a)")
        _put(p, 320, 109, "b)")
    lines = _lines(draw)
    assert _cell_text(lines) == {"a": "4x + 3y = -1 5x + 6y = 4", "b": "5x + 6y = 7 6x + 8y = -1"}, lines


def test_lines_that_are_no_grid_keep_their_order():
    def draw(p):
        _put(p, 72, 100, "A paragraph of running text that fills the line from the left margin on,")
        _put(p, 72, 114, "with a) and b) named inside it, and a second line under it.")
        _put(p, 86, 140, "a) one part on its line")
        _put(p, 86, 154, "b) the next part under it")
        _put(p, 300, 180, "x + y = 2")
        _put(p, 520, 180, "(1)")  # an equation number at the margin: no label of a cell
    lines = _lines(draw)
    assert lines == ["A paragraph of running text that fills the line from the left margin on,",
                     "with a) and b) named inside it, and a second line under it.",
                     "a) one part on its line", "b) the next part under it", "x + y = 2", "(1)"], lines


def test_a_cell_line_that_crosses_a_column_is_no_grid():
    def draw(p):
        _put(p, 86, 100, "a) short")
        _put(p, 320, 100, "b) other")
        _put(p, 101, 114, "a long line that runs on past the start of the second column here")
    lines = _lines(draw)
    assert lines == ["a) short", "b) other", "a long line that runs on past the start of the second column here"], lines


def test_a_grid_filled_down_its_columns_reads_in_letter_order():
    def draw(p):  # (a) (c) / (b) (d), drawn column by column as such books' streams run
        for x, col in [(86, [("(a)", "A and B"), ("(b)", "B and C")]), (320, [("(c)", "A or B"), ("(d)", "A and (B or C)")])]:
            for j, (label, text) in enumerate(col):
                _put(p, x, 100 + 23 * j, f"{label} {text}")
    assert _lines(draw) == ["(a) A and B", "(b) B and C", "(c) A or B", "(d) A and (B or C)"]


def _frag(x, y, text, w=None, h=12.0, size=11.0):
    return {"bbox": {"x": x, "y": y, "w": w or 5.5 * len(text), "h": h}, "font": {"size": size, "weight": "normal"}, "text": text}


def test_a_label_beside_a_matrix_keeps_its_rows_stacked():
    # hefferon's determinants: the matrix rows in one block, "(a)" in a block of its own, centred on
    # the middle row; joining it to that row would break the stack the matrix is rebuilt from
    blocks = [{"lines": [_frag(106, 444, "Use Gauss' method to find each determinant.", h=7, size=8)]},
              {"lines": [_frag(131, 469, "(a)", 13, h=7, size=8)]},  # (geometry of hefferon's page 307)
              {"lines": [_frag(152, y, row, 33, h=7, size=8) for y, row in [(458, "3 1 2"), (469, "3 1 0"), (480, "0 1 4")]]}]
    lines, _ = page_lines(blocks, 612)
    assert [ln["text"] for ln in lines][1:] == ["(a)", "\\begin{pmatrix} 3 & 1 & 2 \\\\ 3 & 1 & 0 \\\\ 0 & 1 & 4 \\end{pmatrix}"], \
        [ln["text"] for ln in lines]
