"""Progress when output is not a terminal: plain log lines (stage, done/total, rate, drops)."""

from __future__ import annotations

import io
import json
import time

from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.progress import Progress


def test_log_lines_name_the_stage_counts_rate_and_drops():
    out = io.StringIO()
    with Progress(enabled=True, stream=out) as p:
        assert p.log  # a StringIO is not a terminal
        t = p.task("solve", 10)
        p.advance(t, 4, 1, resumed=True)  # committed by an earlier run
        p.advance(t, 6, 2)
        second = p.task("difficulty", None)
        p.advance(second, 3, 0)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("solve: started, 10 items")
    assert "solve: 10/10 (100%)" in lines[1] and "3 dropped" in lines[1] and "rec/s" in lines[1] and lines[1].endswith("done")
    assert lines[2].endswith("difficulty: started")
    assert "difficulty: 3 ·" in lines[3] and lines[3].endswith("done")  # no total known: finished at exit


def test_a_long_task_prints_while_it_runs():
    out = io.StringIO()
    with Progress(enabled=True, stream=out, interval_s=0.05) as p:
        t = p.task("solve", 6)
        p.advance(t, 2, 0)
        deadline = time.monotonic() + 60
        while "solve: 2/6 (33%)" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "solve: 2/6 (33%)" in out.getvalue() and "eta" in out.getvalue()


def test_disabled_prints_nothing():
    out = io.StringIO()
    with Progress(enabled=False, stream=out) as p:
        p.advance(p.task("x", 1), 1, 0)
    assert out.getvalue() == ""


def test_cli_run_logs_progress_when_stderr_is_not_a_terminal(tmp_path):
    src = tmp_path / "qa.jsonl"
    src.write_text("".join(json.dumps({"question": f"What is {i} plus one?", "answer": str(i + 1)}) + "\n" for i in range(4)))
    result = CliRunner().invoke(app, ["run", "qa-jsonl", "--input", str(src), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "import+normalize+validate: 4/4 (100%)" in result.output and "dedup_minhash: started" in result.output
