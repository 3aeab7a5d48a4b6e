"""What `rlclimb run` / `rlclimb status` tell a user: in/out/dropped/created/merged per stage,
unanswered items, what a stage skipped and why, difficulty and pass-rate distributions, and a
non-zero exit when nothing could be read."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.score import handler, tier_config, write_items
from helpers.textbook_gen import ChapterSpec, make_corrupt_pdf, make_textbook
from typer.testing import CliRunner

from rlclimb.pipelines.bookkeeping import StageStats
from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions.stem_score import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def stages_of(run: Path) -> dict[str, dict]:
    result = cli("status", run, "--json")
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    return {s["name"]: s for s in status["stages"]} | {"_dataset": status["dataset"]}


def test_created_and_merged_balance_every_stage():
    expand = StageStats(seen=10, kept=8, out=13)
    expand.dropped["x"] = 2
    assert (expand.created, expand.merged) == (5, 0)
    pair = StageStats(seen=9, kept=6, out=6)  # a global stage: 3 answers folded into questions
    assert (pair.created, pair.merged) == (0, 3) and pair.to_dict()["merged"] == 3


def test_textbook_funnel_shows_merged_answers_and_unanswered_items(tmp_path):
    book = make_textbook(tmp_path / "book.pdf", [ChapterSpec("Arithmetic", "key", exercises=6)])
    unanswered = sum(1 for t in book.items if not t.answer)
    assert unanswered == 3  # the key gives odd-numbered answers only
    result = cli("run", "textbook-pdf", "--input", book.path, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert f"6 records ({unanswered} without an answer)" in result.output
    assert "merged" in result.output and "created" in result.output
    st = stages_of(tmp_path / "run")
    pair = st["pair"]  # questions and answers in, paired items out, nothing dropped
    assert pair["in"] == pair["out"] + pair["merged"] + sum(pair["dropped"].values()) and pair["merged"] == 3
    structure = st["structure"]
    assert structure["out"] == structure["in"] - sum(structure["dropped"].values()) + structure["created"]
    assert st["_dataset"]["unanswered"] == unanswered


def test_a_skipped_grade_is_named_and_pass_rates_are_summarized(llm_server, tmp_path):
    script = {"easy": {"truth": "4", "m0": ["4"]}, "hard": {"truth": "12", "m0": ["1"]},
              "mid": {"truth": "10", "m0": ["10", "3"]}}
    llm_server.script(handler(script))
    src = write_items(tmp_path / "items.jsonl", script)
    sections = {"solve": {"k": 2, "k_early": 2}, "guess": {"enabled": False}}
    llm = tier_config(llm_server, models=("m0",), judge=False)
    run_pipeline(build([str(src)], sections, 100), tmp_path / "run", RunOptions(progress=False, llm=llm))
    st = stages_of(tmp_path / "run")
    assert "no `judge` role" in st["grade"]["note"] and "note" not in st["solve"]
    assert st["_dataset"]["difficulty"] == {"tier-0": 2, "unsolved": 1}
    assert st["_dataset"]["pass_rates"] == {"tier-0": {"0": 1, "(0, 0.5)": 0, "[0.5, 1)": 1, "1": 1}}
    text = cli("status", tmp_path / "run").output
    assert "skipped: no `judge` role" in text
    assert "difficulty: tier-0 2, unsolved 1" in text and "pass rate tier-0: 0 1, (0, 0.5) 0, [0.5, 1) 1, 1 1" in text


def test_unreadable_only_input_exits_non_zero(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    result = cli("run", "qa-jsonl", "--input", tmp_path / "empty.jsonl", "--out", tmp_path / "a", "-q")
    assert result.exit_code == 1 and "hold no items" in result.output
    (tmp_path / "bad.jsonl").write_text("not json\n[1]\n")
    result = cli("run", "qa-jsonl", "--input", tmp_path / "bad.jsonl", "--out", tmp_path / "b", "-q")
    assert result.exit_code == 1 and "nothing could be read" in result.output and "bad_json 1" in result.output
    pdf = make_corrupt_pdf(tmp_path / "broken.pdf")
    result = cli("run", "textbook-pdf", "--input", pdf, "--out", tmp_path / "c", "-q")
    assert result.exit_code == 1 and "nothing could be read" in result.output and "ledger" in result.output


def test_items_read_but_all_dropped_is_a_normal_exit(tmp_path):
    (tmp_path / "short.jsonl").write_text(json.dumps({"question": "Hi?", "answer": "1"}) + "\n")
    result = cli("run", "qa-jsonl", "--input", tmp_path / "short.jsonl", "--out", tmp_path / "a", "-q")
    assert result.exit_code == 0 and "0 records" in result.output
