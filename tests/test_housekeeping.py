"""Run-directory housekeeping: a killed run's spill files go at the next start; `gc` removes the
segments of old fingerprints and keeps the current ones."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from helpers import stages as hs

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.engine.housekeeping import collect_garbage
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.stages.dedup.minhash import MinHashDedup


def source(tmp_path: Path) -> Path:
    base = "Find all real solutions of the equation x^2 - 5x + 6 = 0 and check each one in the original equation"
    texts = [base, base + " carefully.", base.replace("Find all real", "Determine the real") + " please", "How many primes are below 30?"]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{i}", "text": t, "n": i}) + "\n" for i, t in enumerate(texts)))
    return src


def run(src: Path, out: Path, threshold: float):
    stages = [hs.ImportItem(), MinHashDedup({"field": "text", "threshold": threshold})]
    return run_pipeline(Pipeline("h", JsonlReader([src]), stages), out, RunOptions(progress=False))


def test_spill_files_of_a_killed_run_are_removed_at_the_next_start(tmp_path):
    src, out = source(tmp_path), tmp_path / "run"
    run(src, out, 0.7)
    left = out / "tmp" / "dedup_minhash-abc123"  # what a run killed inside the stage leaves
    left.mkdir(parents=True)
    (left / "records.spool").write_bytes(b"\0" * 1000)
    run(src, out, 0.7)
    assert not (out / "tmp").exists()


def test_gc_removes_segments_of_old_fingerprints(tmp_path):
    src, out = source(tmp_path), tmp_path / "run"
    run(src, out, 0.7)
    run(src, out, 0.9)
    segments = sorted(p.name for p in (out / "stages").iterdir())
    assert len(segments) == 3  # one row segment, the dedup segment for 0.7 and for 0.9
    current = [s["dir"] for s in json.loads((out / "config.json").read_text())["segments"]]
    preview = collect_garbage(out, dry_run=True)
    assert len(preview["removed"]) == 1 and preview["bytes"] > 0 and len(list((out / "stages").iterdir())) == 3
    result = collect_garbage(out)
    assert result["removed"] == preview["removed"] and result["kept"] == sorted(current)
    assert sorted(p.name for p in (out / "stages").iterdir()) == sorted(current)
    before = pq.read_table(out / "data").to_pylist()
    again = run(src, out, 0.9)  # the kept segments are still used as they are
    assert pq.read_table(again.run_dir / "data").to_pylist() == before


def test_gc_command(tmp_path):
    from typer.testing import CliRunner

    from rlclimb.pipelines.cli import app

    src, out = source(tmp_path), tmp_path / "run"
    run(src, out, 0.7)
    run(src, out, 0.9)
    result = CliRunner().invoke(app, ["gc", str(out)])
    assert result.exit_code == 0 and "removed 1 unused segments" in result.output
    assert len(list((out / "stages").iterdir())) == 2
    missing = CliRunner().invoke(app, ["gc", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a run directory" in missing.output
