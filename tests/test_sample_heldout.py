"""benchmarks/truth/sample_heldout.py: a blind label sample from a run's uncurated output."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("sample_heldout", ROOT / "benchmarks" / "truth" / "sample_heldout.py")
sample_heldout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sample_heldout)


def _run(tmp_path: Path, name: str, records: list[dict]) -> Path:
    run = tmp_path / name
    (run / "data").mkdir(parents=True)
    rows = [{"question": q, "answer": a, "source": json.dumps({"page": p, "number": n}),
             "meta": json.dumps({"answer_source": {"page": p + 100}})} for q, a, p, n in records]
    pq.write_table(pa.Table.from_pylist(rows), run / "data" / "train-00000-of-00001.parquet")
    return run


RECORDS = [("Describe each set.\n(a) A ∩ B\n(b) B ∩ C", "(a) {2}; (b) {5}", 3, "1"),
           ("Find the order of 3 in Z_4.", "4", 4, "2"),
           ("Prove that every group of prime order is cyclic.", "", 5, "3"),  # unanswered: never drawn
           ("Compute 2 + 2.", "4", 6, "4")]


def test_items_are_answered_and_split_as_curation_splits_them(tmp_path):
    items = sample_heldout.answered_items(_run(tmp_path, "r-judson-aata-2022", RECORDS))
    assert [(it["source"]["number"], it["answer"]) for it in items] == [("1(a)", "{2}"), ("1(b)", "{5}"), ("2", "4"), ("4", "4")]
    keys = sample_heldout.label_keys("judson", items[1])
    assert keys["question_prefix"] == "Describe each set.\n(b) B ∩ C" and keys["part_prefix"] == "B ∩ C"
    assert "part_prefix" not in sample_heldout.label_keys("judson", items[2]) and items[2]["answer_page"] == 104


def test_labelled_items_are_excluded_and_the_draw_is_reproducible(tmp_path):
    _run(tmp_path, "r-judson-aata-2022", RECORDS)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "judson.jsonl").write_text(json.dumps({
        "book": "judson", "page": 3, "number": "1(b)", "question_prefix": "Describe each set.\n(b) B ∩ C",
        "part_prefix": "B ∩ C", "split": "dev"}) + "\n")
    out = tmp_path / "sample.jsonl"
    argv = ["--runs", str(tmp_path / "r-"), "--seed", "7", "--count", "5", "--books", "judson",
            "--exclude", str(labels), "--out", str(out)]
    sample_heldout.main(argv)
    first = out.read_text()
    drawn = [json.loads(line) for line in first.splitlines()]
    assert sorted(d["number"] for d in drawn) == ["1(a)", "2", "4"]  # all there are: 1(b) is labelled
    sample_heldout.main(argv)
    assert out.read_text() == first
    sample_heldout.main([*argv[:5], "2", *argv[6:]])
    assert len(out.read_text().splitlines()) == 2


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown book"):
        sample_heldout.main(["--runs", "x-", "--seed", "1", "--books", "nobook", "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="not a directory"):
        sample_heldout.main(["--runs", "x-", "--seed", "1", "--exclude", str(tmp_path / "none"), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="no data"):
        sample_heldout.main(["--runs", str(tmp_path / "x-"), "--seed", "1", "--books", "judson", "--out", str(tmp_path / "o")])
