"""benchmarks/truth/sample_heldout.py on parts labelled 'a)' (lebl's style), which split_parts
splits since parts.py v2: the draw found no '(a) ' label line there and stopped with IndexError."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("sample_heldout", ROOT / "benchmarks" / "truth" / "sample_heldout.py")
sample_heldout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sample_heldout)


def _run(tmp_path: Path, records: list[tuple[str, str, int, str]]) -> Path:
    run = tmp_path / "r-lebl-diffyqs-fr-2023"
    (run / "data").mkdir(parents=True)
    rows = [{"question": q, "answer": a, "source": json.dumps({"page": p, "number": n}), "meta": "{}"}
            for q, a, p, n in records]
    pq.write_table(pa.Table.from_pylist(rows), run / "data" / "train-00000-of-00001.parquet")
    return run


def test_parts_labelled_a_close_paren_are_drawn_with_their_part_text(tmp_path):
    records = [("Résolvez\na) x' = 2x\nb) y' = −y", "a) x = Ce^{2t} b) y = Ce^{−t}", 7, "0.2.1"),
               ("Describe each set.\n(a) A ∩ B\n(b) B ∩ C", "(a) {2}; (b) {5}", 3, "1")]
    items = sample_heldout.answered_items(_run(tmp_path, records))
    assert [(it["source"]["number"], it["part"], it["answer"]) for it in items] == [
        ("0.2.1(a)", "x' = 2x", "x = Ce^{2t}"), ("0.2.1(b)", "y' = −y", "y = Ce^{−t}"),
        ("1(a)", "A ∩ B", "{2}"), ("1(b)", "B ∩ C", "{5}")]
    assert sample_heldout.label_keys("lebl", items[1])["part_prefix"] == "y' = −y"


def test_a_part_without_its_label_line_is_an_error_not_a_wrong_part():
    assert sample_heldout.part_text("Stem\n(a) one\n(b) two", "b") == "two"
    try:
        sample_heldout.part_text("Stem without labels", "a")
    except ValueError:
        return
    raise AssertionError("no ValueError")


def test_a_part_of_an_exercise_with_no_stem_is_drawn(tmp_path):
    # "(a) Define f ... (b) Define g ...": split_parts writes each part with its label first, no stem
    items = sample_heldout.answered_items(_run(tmp_path, [("(a) Define f one-to-one.\n(b) Define g onto.",
                                                           "(a) f(n) = n + 1.\n(b) g(n) = n // 2.", 5, "4")]))
    assert [(it["source"]["number"], it["part"]) for it in items] == [("4(a)", "Define f one-to-one."), ("4(b)", "Define g onto.")]
    assert sample_heldout.part_text("a) x' = 2x", "a") == "x' = 2x"


def test_parts_of_an_exercise_labelled_whole_are_not_drawn(tmp_path):
    records = [("Describe each set.\n(a) A ∩ B\n(b) B ∩ C", "(a) {2}; (b) {5}", 3, "1"), ("Find x.", "x = 1", 4, "2")]
    items = sample_heldout.answered_items(_run(tmp_path, records))
    whole = {"book": "lebl", "page": 3, "number": "1", "question_prefix": "Describe each set. (a) A ∩ B (b) B ∩ C"}
    assert [it["source"]["number"] for it in sample_heldout.unlabelled(items, [whole])] == ["2"]
    other_page = {**whole, "page": 9}
    assert [it["source"]["number"] for it in sample_heldout.unlabelled(items, [other_page])] == ["1(a)", "1(b)", "2"]
