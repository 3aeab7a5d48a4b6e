"""Floors on per-stage precision / recall over the labeled sets (benchmarks/curate_eval.py prints the
full table). tests/data/curate_labeled.jsonl (250 items) was used to develop the rules;
tests/data/curate_holdout.jsonl (95 items) was written afterwards and measured once before two rule fixes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("curate_eval", ROOT / "benchmarks" / "curate_eval.py")
curate_eval = importlib.util.module_from_spec(spec)
spec.loader.exec_module(curate_eval)

SETS = {"dev": ROOT / "tests" / "data" / "curate_labeled.jsonl", "holdout": ROOT / "tests" / "data" / "curate_holdout.jsonl"}
FLAG_STAGES = ["cleanup.needs_figure", "cleanup.external_reference", "verifiable (drop = not verifiable)", "pii",
               "evergreen", "leakage", "convert (positive = converted)", "question_type.multiple_choice",
               "question_type.true_false", "question_type.proof"]


@pytest.mark.parametrize("name", list(SETS))
def test_embedded_stage_precision_and_recall(name):
    items = curate_eval.load(SETS[name])
    assert len(items) >= (200 if name == "dev" else 90)
    report = curate_eval.evaluate(items, taxonomy=False)
    floor = 0.9 if name == "dev" else 0.75
    for stage in FLAG_STAGES:
        r = report[stage]
        assert r["positives"] >= 3, stage  # every stage is measured on real positives
        assert r["precision"] >= floor and r["recall"] >= floor, (stage, r)
    assert report["question_type.accuracy"]["accuracy"] >= 0.95


@pytest.mark.slow
def test_taxonomy_accuracy():
    items = [it for name in SETS for it in curate_eval.load(SETS[name]) if not it["labels"].get("topic_na")]
    report = curate_eval.evaluate_taxonomy(items)
    assert report["taxonomy[minilm].domain"]["accuracy"] >= 0.85
    assert report["taxonomy[minilm].subtopic"]["accuracy"] >= 0.7
