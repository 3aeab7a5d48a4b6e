"""`rlclimb run` options a new user reaches for: --limit/--head, --version, help rendering."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.textbook_gen import make_text_pdf
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.readers import ParquetReader
from rlclimb.pipelines.readers_head import HeadReader
from rlclimb.schemas.io import read_rows

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def rows(run) -> list[dict]:
    return [r for f in sorted((run / "data").glob("*.parquet")) for r in read_rows(f)]


def qa_lines(tmp_path, n: int):
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps({"question": f"What is {i} plus {i} here?", "answer": str(2 * i)}) + "\n" for i in range(n)))
    return path


def test_limit_runs_the_first_items_of_jsonl_parquet_and_pdf_inputs(tmp_path):
    src = qa_lines(tmp_path, 7)
    result = cli("run", "qa-jsonl", "--input", src, "--out", tmp_path / "head", "--limit", 3, "--set", "shard_size=2", "-q")
    assert result.exit_code == 0, result.output
    assert [r["source"]["line"] for r in rows(tmp_path / "head")] == [1, 2, 3]
    config = json.loads((tmp_path / "head" / "config.json").read_text())
    assert config["inputs"]["limit"] == 3

    assert cli("run", "qa-jsonl", "--input", src, "--out", tmp_path / "all", "-q").exit_code == 0
    parquet = HeadReader(ParquetReader([str(tmp_path / "all" / "data")]), 5)
    batches = list(parquet.shards(2))
    assert [b.num_rows for b in batches] == [2, 2, 1] and parquet.estimate_total() == 5
    assert batches[2].column("source").to_pylist()[0]["line"] == 5

    pdf = make_text_pdf(tmp_path / "p.pdf", [["1. What is 2 + 2?"], ["2. What is 3 + 3?"], ["3. What is 4 + 4?"]])
    result = cli("run", "textbook-pdf", "--input", pdf, "--out", tmp_path / "pdf", "--limit", 1, "-q")
    assert result.exit_code == 0, result.output
    status = json.loads(cli("status", tmp_path / "pdf", "--json").output)
    assert {s["name"]: s["in"] for s in status["stages"]}["parse"] == 1  # one page of three


def test_limit_must_be_positive(tmp_path):
    result = cli("run", "qa-jsonl", "--input", qa_lines(tmp_path, 2), "--out", tmp_path / "r", "--limit", 0)
    assert result.exit_code == 2 and not (tmp_path / "r").exists()


@pytest.mark.slow
def test_embedding_load_prints_no_transformers_report(tmp_path):
    """MiniLM's load used to print "BertModel LOAD REPORT ... UNEXPECTED" and a weights bar, even with -q."""
    pytest.importorskip("sentence_transformers")
    src = qa_lines(tmp_path, 3)
    proc = subprocess.run([sys.executable, "-m", "rlclimb.pipelines.cli", "run", "qa-jsonl", "--input", str(src),
                           "--out", str(tmp_path / "run"), "--set", "dedup_vector.enabled=true", "-q"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "LOAD REPORT" not in proc.stderr and "Loading weights" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == f"3 records -> {tmp_path / 'run' / 'data'}"
