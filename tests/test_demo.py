"""`rlclimb demo --out DIR`: the whole loop on the bundled samples, end to end, and every artifact
it says it made."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.publish.demo import missing_train, typeset_textbook

runner = CliRunner()
SAMPLES = Path(__file__).resolve().parents[1] / "pipelines" / "samples"
PNG = b"\x89PNG\r\n\x1a\n"


def test_the_sample_textbook_is_a_pdf_textbook_pdf_reads(tmp_path):
    import pymupdf

    pdf = typeset_textbook(SAMPLES / "sample_textbook.yaml", tmp_path / "book.pdf")
    with pymupdf.open(pdf) as doc:
        text = "".join(page.get_text() for page in doc)
    assert "Exercises 1.1" in text and "Solution. 56" in text and "License: Apache-2.0" in text


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_demo_runs_the_whole_loop(tmp_path):
    out = tmp_path / "demo"
    res = runner.invoke(app, ["demo", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "demo finished" in res.output
    for run in ("book", "qa"):
        stats = json.loads((out / run / "stats.json").read_text())
        assert stats["status"] == "complete" and stats["records"] > 0
    manifest = json.loads((out / "mix" / "mix.json").read_text())
    assert manifest["rows"] > 0 and manifest["splits"]["train"] > 0
    # the car exercise is in both samples: the mix keeps one
    assert manifest["removed"]["count"] >= 1
    assert list((out / "mix" / "data").glob("train-*.parquet"))
    card = (out / "mix" / "README.md").read_text()
    assert card.startswith("---\n") and "## Curation funnel" in card and "license: apache-2.0" in card
    assert json.loads((out / "mix" / "croissant.json").read_text())["@type"] == "sc:Dataset"
    for png in (out / "mix" / "figures").glob("*.png"):
        assert png.read_bytes()[:8] == PNG
    for report in (out / "mix" / "report.html", out / "book" / "report.html"):
        assert report.read_text().startswith("<!doctype html>")
    full = not missing_train() and importlib.util.find_spec("sentence_transformers") is not None
    if full:
        scored = json.loads((out / "scored" / "stats.json").read_text())
        solve = next(s for s in scored["stages"] if s["name"] == "solve")
        assert solve["llm"].get("completion_tokens", 0) > 0  # SmolLM2 really answered
        assert "difficulty" in card and "tier-0" in (out / "mix" / "README.md").read_text()
        rows = [json.loads(line) for line in (out / "grpo" / "metrics.jsonl").read_text().splitlines() if line.strip()]
        assert [r["step"] for r in rows if "reward_all" in r] == [1, 2]
        assert (out / "grpo" / "reward.png").read_bytes()[:8] == PNG
        assert (out / "grpo" / "report.html").exists()
        assert "skipped" not in res.output
    else:
        assert "skipped" in res.output and "pip install" in res.output
