"""Decontamination: benchmark loading (JSONL, JSON, Parquet, Arrow, HF directories), the matchers on
the labeled eval set, and the `decontam` stage in the qa-jsonl pipeline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.definitions import ConfigError
from rlclimb.pipelines.definitions.qa_jsonl import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.stages.dedup.decontam import (
    BenchmarkError,
    BenchmarkIndex,
    BenchmarkItem,
    DecontamConfig,
    load_benchmark,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import dedup_evalset as E  # noqa: E402

ROWS = [{"unique_id": "test/algebra/1", "problem": "Solve for $x$: $3x + 4 = 19$.", "answer": "5"},
        {"unique_id": "test/geometry/2", "problem": "A rectangle has length 12 cm and width 7 cm. What is its area?", "answer": "84"}]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_load_benchmark_every_format(tmp_path):
    table = pa.Table.from_pylist(ROWS)
    jsonl = write_jsonl(tmp_path / "math500.jsonl", ROWS)
    (tmp_path / "arr.json").write_text(json.dumps(ROWS))
    pq.write_table(table, tmp_path / "b.parquet")
    hf = tmp_path / "hf_bench"
    (hf / "data").mkdir(parents=True)
    pq.write_table(table, hf / "data" / "test-00000-of-00001.parquet")
    (hf / "dataset_info.json").write_text("{}")  # metadata files are not items
    with ipc.new_stream(tmp_path / "saved.arrow", table.schema) as w:  # datasets.save_to_disk layout
        w.write_table(table)
    for path, name in ((jsonl, "math500"), (tmp_path / "arr.json", "arr"), (tmp_path / "b.parquet", "b"),
                       (hf, "hf_bench"), (tmp_path / "saved.arrow", "saved")):
        items = load_benchmark(path)
        assert [(i.benchmark, i.id, i.text) for i in items] == [(name, r["unique_id"], r["problem"]) for r in ROWS], path


def test_benchmark_errors_name_the_file_and_the_fix(tmp_path):
    bad = write_jsonl(tmp_path / "bench.jsonl", [{"statement": "x", "answer": 1}])
    with pytest.raises(BenchmarkError, match=r"bench.jsonl row 1: no question field .*statement.*--benchmark-field"):
        load_benchmark(bad)
    assert [i.text for i in load_benchmark(bad, field="statement")] == ["x"]
    assert load_benchmark(bad, field="statement")[0].id == "bench:1"  # no id field: file:row
    (tmp_path / "broken.jsonl").write_text('{"question": "a"}\n{"question": \n')
    with pytest.raises(BenchmarkError, match=r"broken.jsonl line 2: not valid JSON"):
        load_benchmark(tmp_path / "broken.jsonl")
    with pytest.raises(BenchmarkError, match="unsupported format"):
        load_benchmark(write_jsonl(tmp_path / "b.csv", []))
    with pytest.raises(ValueError, match="benchmark not found"):
        DecontamConfig(benchmarks=[str(tmp_path / "missing.jsonl")])


def flags(ds: E.DecontamSet, **config) -> dict[str, str]:
    index = BenchmarkIndex([BenchmarkItem("eval", it.id, it.text) for it in ds.benchmark], DecontamConfig(**config))
    found = index.match([it.text for it in ds.inputs])
    return {it.id: m.benchmark.id for it, m in zip(ds.inputs, found, strict=True) if m is not None}


def test_lexical_matchers_on_the_labeled_eval_set():
    ds = E.build_decontam(seed=2, per_template=3)
    r = E.score_decontam(ds, flags(ds, matchers=["exact", "minhash"]))
    share = r["flagged_share"]
    assert share["exact"] == 1.0 and share["light_edit"] >= 0.85
    assert share["variant"] == 0.0 and share["unrelated"] == 0.0  # same template, other numbers: not a leak
    # every flag names the right benchmark item or counts against it; "other_ask" items (same
    # setting and numbers, another question) reach Jaccard 0.5: since the band split was chosen
    # for recall, LSH finds them all (0.78; 0.80 when bands missed some of them)
    assert r["precision"] >= 0.75
    exact_only = E.score_decontam(ds, flags(ds, matchers=["exact"]))
    assert exact_only["recall"] < r["recall"]


def test_vector_matcher_catches_paraphrases():
    ds = E.build_decontam(seed=2, per_template=2, templates=E.TEMPLATES[:12])
    lexical = E.score_decontam(ds, flags(ds, matchers=["exact", "minhash"]))
    full = E.score_decontam(ds, flags(ds))  # + vector, MiniLM
    assert full["flagged_share"]["paraphrase"] >= lexical["flagged_share"]["paraphrase"] + 0.3
    assert full["flagged_share"]["variant"] == 0.0 and full["flagged_share"]["unrelated"] == 0.0
    assert full["recall"] >= 0.85


def test_decontam_stage_in_qa_jsonl(tmp_path):
    bench = write_jsonl(tmp_path / "bench" / "math500.jsonl", ROWS)
    src = write_jsonl(tmp_path / "train.jsonl", [
        {"id": "t1", "question": "Solve for $x$: $3x+4=19$.", "answer": "5"},  # leak (spacing)
        {"id": "t2", "question": "Solve for $x$: $3x + 4 = 22$.", "answer": "6"},  # same template, other numbers
        {"id": "t3", "question": "A rectangle has length 12 cm and width 7 cm. Find its area!", "answer": "84"},  # light edit
        {"id": "t4", "question": "What is the boiling point of water at sea level in Celsius?", "answer": "100"},
    ])
    pipeline = build([str(src)], {"decontam": {"benchmarks": [str(bench)], "matchers": ["exact", "minhash"]}})
    assert pipeline.stages[-1].name == "decontam"
    run_pipeline(pipeline, tmp_path / "run", RunOptions(progress=False))
    kept = sorted(json.loads(r["meta"])["id"] for r in pq.read_table(tmp_path / "run" / "data").to_pylist())
    assert kept == ["t2", "t4"]
    ledger = {json.loads(json.loads(r["record"])["meta"])["id"]: r for r in pq.read_table(tmp_path / "run" / "ledger").to_pylist()
              if r["stage"] == "decontam"}
    assert set(ledger) == {"t1", "t3"} and {r["reason"] for r in ledger.values()} == {"benchmark_match"}
    assert "math500 item test/algebra/1 (exact 1.000)" in ledger["t1"]["detail"]
    assert "math500 item test/geometry/2 (minhash" in ledger["t3"]["detail"]
    report = json.loads((tmp_path / "run" / "reports" / "decontam.json").read_text())
    assert report["flagged"] == 2 and report["by_matcher"] == {"exact": 1, "minhash": 1}
    assert {m["input_id"]: m["benchmark_id"] for m in report["matches"]} == {"t1": "test/algebra/1", "t3": "test/geometry/2"}


def test_decontam_config_errors_before_running(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "train.jsonl", [{"question": "What is 2+2 here?", "answer": "4"}])
    with pytest.raises(ConfigError, match="benchmark not found"):
        build([str(src)], {"decontam": {"benchmarks": [str(tmp_path / "nope.jsonl")]}})
    from rlclimb.stages.dedup import decontam

    monkeypatch.setattr(decontam, "missing_extra", lambda b: "embedding backend 'minilm' needs the 'embed' extra (missing: torch): pip install 'rlclimb[embed]'")
    bench = write_jsonl(tmp_path / "b.jsonl", ROWS)
    with pytest.raises(ConfigError, match=r"matcher 'vector'.*rlclimb\[embed\].*matchers=\[exact, minhash\]"):
        build([str(src)], {"decontam": {"benchmarks": [str(bench)]}})
    assert "decontam" not in [s.name for s in build([str(src)], {}).stages]  # no benchmarks: off
