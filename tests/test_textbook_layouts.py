"""Layouts the development books do not have (issue 15), end to end on generated PDFs with the
generator's truth: exercise sets headed in body type and confirmed by numbering restarting,
answers keyed by set in two columns, "Problem 7" labels with odd-only answers at chapter end,
multiple choice flagged inline, dotted keys whose section headings are missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.textbook_gen import make_layout_book
from helpers.textbook_scoring import Truth, score

from rlclimb.pipelines.definitions.textbook_pdf import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.schemas.io import read_rows

pytestmark = pytest.mark.slow

LAYOUTS = ["sets", "problems", "choice", "keys"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layouts")
    books = {name: make_layout_book(tmp / f"{name}.pdf", name) for name in LAYOUTS}
    out = tmp / "run"
    run_pipeline(build([str(p) for p, _ in books.values()], {}), out, RunOptions(progress=False))
    rows = [r for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]
    return books, rows


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_exercise_found_and_paired(runs, layout):
    books, rows = runs
    path, items = books[layout]
    mine = [r for r in rows if Path(r["source"]["document"]).name == path.name]  # named relative to the input
    truth = [Truth(str(path), it.question, it.answer, it.key) for it in items]
    s = score(mine, truth)
    assert s.extraction_recall == 1.0 and s.extraction_precision == 1.0, (s.summary(), s.missed, s.spurious)
    assert s.pairing_recall == 1.0 and s.pairing_precision == 1.0, (s.summary(), s.wrong_pairs)
    if layout == "problems":  # even problems have no answer in the book: kept, tagged, not invented
        assert s.unanswered_kept == s.unanswered_truth > 0
