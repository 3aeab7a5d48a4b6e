"""Every pipeline's output loads with Hugging Face `datasets.load_dataset("parquet", data_dir=...)`,
as the README promises (no Arrow map columns, no type `datasets` cannot represent)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.score import handler, tier_config, write_items
from helpers.textbook_gen import ChapterSpec, make_textbook
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions.stem_score import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the parquet builder is packaged: no Hub needed
datasets = pytest.importorskip("datasets")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QA = [
    {"question": "What is the value of 2 + 2?", "answer": 4, "subject": "math"},
    {"problem": "Solve for $x$: $3x - 7 = 11$.", "final_answer": "6"},
    {"question": "Name the largest planet in our solar system.", "answer": "Jupiter"},
]


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def load(run: Path, tmp_path: Path):
    """The run's dataset through `datasets`, and the same rows as the run's Parquet holds."""
    ds = datasets.load_dataset("parquet", data_dir=str(run / "data"), cache_dir=str(tmp_path / "hf"))
    assert list(ds) == ["train"]
    return ds["train"]


def qa_file(tmp_path: Path) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in QA))
    return path


def test_qa_jsonl_output_loads(tmp_path):
    cli("run", "qa-jsonl", "--input", qa_file(tmp_path), "--out", tmp_path / "run", "-q")
    train = load(tmp_path / "run", tmp_path)
    assert train.num_rows == 3 and sorted(train["answer"]) == ["4", "6", "Jupiter"]
    assert train[0]["source"]["line"] == 1 and train.features["pass_rates"] is not None


def test_stem_curate_output_loads(tmp_path):
    cli("run", "stem-curate", "--input", qa_file(tmp_path), "--out", tmp_path / "run", "-q")
    train = load(tmp_path / "run", tmp_path)
    assert train.num_rows >= 1 and "topic" in train.features


def test_stem_score_output_loads_with_pass_rates_as_tier_rate_lists(llm_server, tmp_path):
    script = {"easy": {"truth": "4", "m0": ["4"], "m1": ["4"]},
              "mid": {"truth": "10", "m0": ["10", "3"], "m1": ["10"]}}
    llm_server.script(handler(script))
    src = write_items(tmp_path / "items.jsonl", script)
    sections = {"solve": {"k": 2, "k_early": 2}, "guess": {"enabled": False}}
    run_pipeline(build([str(src)], sections, 100), tmp_path / "run",
                 RunOptions(progress=False, llm=tier_config(llm_server, models=("m0", "m1"))))
    train = load(tmp_path / "run", tmp_path)
    rates = {row["question"][1:4]: row["pass_rates"] for row in train}
    assert rates["mid"] == [{"tier": "tier-0", "rate": 0.5}, {"tier": "tier-1", "rate": 1.0}]
    assert train[0]["solve"][0]["tier"] == "tier-0"


def test_textbook_pdf_output_loads(tmp_path):
    book = make_textbook(tmp_path / "book.pdf", [ChapterSpec("Arithmetic", "key", exercises=6)])
    cli("run", "textbook-pdf", "--input", book.path, "--out", tmp_path / "run", "-q")
    train = load(tmp_path / "run", tmp_path)
    assert train.num_rows == len(book.items) and train[0]["source"]["page"] >= 1


def test_code_problems_output_loads(tmp_path):
    from helpers.sandboxes import fast_backend, sandbox_or_skip

    backend = fast_backend()
    sandbox_or_skip(backend)
    cli("run", "code-problems", "--input", EXAMPLES / "code_problems.jsonl", "--out", tmp_path / "run",
        "--set", f"verify.backend={backend}", "-q")
    train = load(tmp_path / "run", tmp_path)
    assert sorted(train["id"]) == ["digit-sum", "fib-mod", "largest", "sum-two"]
    assert isinstance(train[0]["tests"][0]["input"], str)
