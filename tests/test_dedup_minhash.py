"""MinHash LSH dedup: datasketch-identical signatures, banding, verification, clusters,
representatives, spilling, reports, quality on the labeled eval set, and the qa-jsonl pipeline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasketch import MinHashLSH

from rlclimb.pipelines.definitions.qa_jsonl import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.dedup.common import clusters
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.dedup.minhash_sketch import MinHasher, estimated_jaccard, lsh_recall
from rlclimb.stages.dedup.minhash_store import BandBuckets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import dedup_evalset as E  # noqa: E402

TEXTS = [
    "find all real solutions of x^2-5x+6=0.",
    "abc",  # shorter than one 5-gram
    "",
    "é ü 中文 and some math: \\frac{1}{2}",
    "the quick brown fox jumps over the lazy dog " * 20,
]


def run(stage, texts_or_records, ctx=None):
    recs = [t if isinstance(t, dict) else {"id": f"r{i}", "question": t, "answer": ""} for i, t in enumerate(texts_or_records)]
    out = list(stage.run(recs, ctx or StageContext()))
    kept = [o["id"] for o in out if isinstance(o, dict)]
    drops = {o[0]["id"]: o[1] for o in out if isinstance(o, tuple)}
    return kept, drops


def test_signatures_are_datasketch_signatures():
    h = MinHasher(num_perm=128, ngram=5, seed=1)
    sigs = h.signatures(TEXTS)
    for text, row in zip(TEXTS, sigs, strict=True):
        assert np.array_equal(row, h.reference(text).hashvalues)
    a, b = h.reference(TEXTS[0]), h.reference("find all the real solutions of x^2-5x+6=0.")
    assert estimated_jaccard(sigs[:1], h.signatures(["find all the real solutions of x^2-5x+6=0."]))[0] == pytest.approx(a.jaccard(b))


def test_bands_and_rows_are_chosen_for_recall():
    for threshold in (0.5, 0.6, 0.7, 0.8, 0.9):
        lsh = MinHashLSH(threshold=threshold, num_perm=128)  # datasketch's default weights
        h = MinHasher(threshold=threshold)
        assert h.bands * h.rows <= 128
        assert lsh_recall(threshold, h.bands, h.rows) >= 0.95 > lsh_recall(threshold, lsh.b, lsh.r)
        assert lsh_recall(threshold, 128 // (h.rows + 1), h.rows + 1) < 0.95  # and no more bands than that needs
        keys = h.band_keys(h.signatures(TEXTS))
        assert keys.shape == (len(TEXTS), h.bands)
    assert (MinHasher(threshold=0.7).bands, MinHasher(threshold=0.7).rows) == (25, 5)


def test_template_variants_do_not_hide_true_duplicates():
    """400 variants of one template (other numbers: distinct problems) and light edits of 50 of
    them: the variants share LSH buckets with the edits, and the number gate used to reject the
    only (head, member) pairs a bucket yielded (32 of 50 found); with the numbers key in the band
    keys, a bucket holds only records with the same numbers."""
    import random

    rng = random.Random(7)
    template = ("A bakery sells {a} loaves of bread every morning and {b} loaves every afternoon. If each loaf "
                "costs {c} dollars, how much money does the bakery make from bread in {d} days?")
    nums = set()
    while len(nums) < 400:
        nums.add((rng.randint(10, 99), rng.randint(10, 99), rng.randint(2, 9), rng.randint(2, 30)))
    variants = [template.format(a=a, b=b, c=c, d=d) for a, b, c, d in sorted(nums)]
    edits = [v.replace("every morning", "each morning").replace("bakery make", "bakery earn") for v in variants[:50]]
    texts = variants + edits
    stage = MinHashDedup()
    kept, drops = run(stage, texts)
    assert {k: d.detail.split()[2] for k, d in drops.items()} == {f"r{400 + i}": f"r{i}" for i in range(50)}
    assert stage.report["candidate_pairs"] < 1000  # variants with other numbers are never candidates


def test_buckets_connect_every_member_with_linear_pairs(tmp_path):
    b = BandBuckets(tmp_path, partitions=4)
    keys = np.array([[7, 1], [7, 2], [9, 3], [7, 4], [9, 5], [8, 6]], dtype=np.uint64) << np.uint64(40)
    b.add(keys, np.arange(6))
    pairs = {(int(x), int(y)) for left, right in b.candidate_pairs() for x, y in zip(left, right, strict=True)}
    assert pairs == {(0, 1), (0, 3), (1, 3), (2, 4)}  # bucket 7: star 0-1, 0-3 + chain 1-3; bucket 9: 2-4


def test_clusters_and_representatives():
    left, right = np.array([0, 1, 4]), np.array([1, 2, 5])
    labels, rep = clusters(6, left, right, rank=np.zeros(6, np.int64))
    assert labels[0] == labels[1] == labels[2] != labels[3]
    assert list(rep) == [0, 0, 0, 3, 4, 4]
    _, rep = clusters(6, left, right, rank=np.array([0, 0, -5, 0, 0, -1]))
    assert list(rep) == [2, 2, 2, 3, 5, 5]


def test_near_duplicates_dropped_naming_the_kept_record(tmp_path):
    texts = ["Find all real solutions of $x^2 - 5x + 6 = 0$ over the reals.",
             "Find all the real solutions of x^2-5x+6=0 over the reals!",
             "Find all real solutions of $x^2 - 5x + 7 = 0$ over the reals.",  # other numbers: distinct
             "What is the capital of France, and why?", "", ""]
    stage = MinHashDedup()
    kept, drops = run(stage, texts, StageContext(run_dir=tmp_path))
    assert kept == ["r0", "r2", "r3", "r4", "r5"]  # empty texts are never duplicates
    assert drops["r1"].reason == "duplicate_minhash"
    assert drops["r1"].detail.startswith("near-duplicate of r0 (jaccard≈0.")
    report = json.loads((tmp_path / "reports" / "dedup_minhash.json").read_text())
    assert (report["records"], report["clusters"], report["dropped"]) == (6, 1, 1)
    assert report["lsh"]["bands"] * report["lsh"]["rows"] <= 128 and report["config"]["threshold"] == 0.7
    assert [m["id"] for m in report["examples"][0]["members"]] == ["r0", "r1"]
    assert not (tmp_path / "tmp").exists()  # spill files are removed


def test_numbers_gate_can_be_switched_off():
    texts = ["A rectangle has length 12 cm and width 7 cm. What is its area in square cm?",
             "A rectangle has length 12 cm and width 8 cm. What is its area in square cm?"]
    assert run(MinHashDedup(), texts)[1] == {}
    assert set(run(MinHashDedup(numbers="ignore"), texts)[1]) == {"r1"}


def test_minimal_pairs_with_other_answers_are_two_problems():
    # a book's minimal pairs (judson, ostp): one word apart, the answer flips; a pair printed twice
    # and a near-identical copy whose answer is formatted otherwise stay duplicates
    recs = [{"id": "order", "question": "Prove or disprove: Every subgroup of the integers has finite order.", "answer": "False."},
            {"id": "index", "question": "Prove or disprove: Every subgroup of the integers has finite index.", "answer": "True"},
            {"id": "same", "question": "Prove or disprove: every subgroup of the integers has finite order!", "answer": "False."},
            {"id": "wires", "question": "Two parallel identical wires carry currents in the same direction. The magnetic force "
                                        "between the wires is: Attractive, Repulsive, Zero.", "answer": "Attractive"},
            {"id": "wires2", "question": "Two parallel identical wires carry currents in opposite directions. The magnetic force "
                                         "between the wires is: Attractive, Repulsive, Zero.", "answer": "Repulsive"},
            {"id": "copy", "question": "Two parallel identical wires carry currents in the same direction. The magnetic force "
                                       "between the wires is: Attractive, Repulsive, Zero. ", "answer": "(A) attractive"}]
    kept, drops = run(MinHashDedup(), recs)
    assert kept == ["order", "index", "wires", "wires2"]
    assert drops["same"].detail.startswith("near-duplicate of order ") and drops["copy"].detail.startswith("near-duplicate of wires ")
    long = [dict(r, answer=r["answer"] + " " + "Because every nonzero subgroup nZ is infinite. " * 6) for r in recs[:2]]
    assert set(run(MinHashDedup(), long)[1]) == {"index"}  # worked answers are not compared
    assert set(run(MinHashDedup(answers="ignore"), recs)[1]) == {"index", "same", "wires2", "copy"}


@pytest.mark.parametrize("keep, expect", [("earliest", "a"), ("longest_answer", "b"), ("source_priority", "c")])
def test_representative_rule(keep, expect):
    q = "How many ways can 5 distinct books be arranged on a shelf?"
    recs = [{"id": "a", "question": q, "answer": "120", "source": {"document": "web.jsonl"}},
            {"id": "b", "question": q + " ", "answer": "5! = 120 ways", "source": {"document": "web.jsonl"}},
            {"id": "c", "question": q.upper(), "answer": "120", "source": {"document": "olympiad/book.jsonl"}}]
    kept, drops = run(MinHashDedup(keep=keep, source_priority=["olympiad/*"]), recs)
    assert kept == [expect]
    assert all(f"near-duplicate of {expect} " in d.detail for d in drops.values())


def test_spilling_to_disk_gives_the_same_result(tmp_path):
    ev = E.build(seed=1, per_template=3)
    recs = [{"id": it.id, "question": it.text, "answer": ""} for it in ev.items]
    in_memory = MinHashDedup()
    (tmp_path / "spill").mkdir()
    spilled = MinHashDedup(memory_mb=0.05, batch_size=64, partitions=8, spill_dir=str(tmp_path / "spill"))
    assert run(in_memory, recs) == run(spilled, recs)
    assert spilled.report["spill"]["spilled"] and spilled.report["spill"]["spills"] > 1
    assert not in_memory.report["spill"]["spilled"]
    assert list((tmp_path / "spill").iterdir()) == []  # cleaned up, the user's directory kept


def test_quality_on_the_labeled_eval_set():
    """Measured with the defaults (benchmarks/dedup_quality.py); these bounds leave a margin."""
    ev = E.build(seed=3, per_template=4)
    r = E.score_pairs(ev, E.stage_clusters(MinHashDedup(), ev.items))
    share = r["matched_share"]
    assert share["exact"] == 1.0 and share["light_edit"] >= 0.6
    assert share["variant"] == 0.0 and share["unrelated"] == 0.0  # numbers as invariants
    assert r["precision"] >= 0.8
    ignored = E.score_pairs(ev, E.stage_clusters(MinHashDedup(numbers="ignore"), ev.items))
    assert ignored["matched_share"]["variant"] >= 0.3  # what the number gate prevents


def test_in_the_qa_jsonl_pipeline(tmp_path):
    lines = [{"id": "p1", "question": "A train travels 300 km in 4 hours. What is its average speed in km/h?", "answer": "75"},
             {"id": "p2", "question": "A train travels 300 km in 4 hours. What is its average speed (in km/h)?", "answer": "75 km/h"},
             {"id": "p3", "question": "A train travels 360 km in 4 hours. What is its average speed in km/h?", "answer": "90"}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    pipeline = build([str(src)], {"dedup_minhash": {"keep": "longest_answer"}})
    assert [s.name for s in pipeline.stages][-2:] == ["dedup_exact", "dedup_minhash"]  # vector/decontam: opt-in
    run_pipeline(pipeline, tmp_path / "run", RunOptions(progress=False))
    data = pq.read_table(tmp_path / "run" / "data").to_pylist()
    assert sorted(json.loads(r["meta"])["id"] for r in data) == ["p2", "p3"]
    ledger = [r for r in pq.read_table(tmp_path / "run" / "ledger").to_pylist() if r["stage"] == "dedup_minhash"]
    kept_id = next(r["id"] for r in data if json.loads(r["meta"])["id"] == "p2")
    assert len(ledger) == 1 and ledger[0]["reason"] == "duplicate_minhash" and kept_id in ledger[0]["detail"]
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert {s["name"]: s["dropped"] for s in stats["stages"]}["dedup_minhash"] == {"duplicate_minhash": 1}
    assert json.loads((tmp_path / "run" / "reports" / "dedup_minhash.json").read_text())["dropped"] == 1
