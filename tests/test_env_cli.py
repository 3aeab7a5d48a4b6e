"""`rlclimb env check|run`: references through their environment, reward table, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.sandboxes import fast_backend, sandbox_or_skip
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "code_problems.jsonl"
runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def test_check_code_references():
    backend = fast_backend()
    sandbox_or_skip(backend)
    r = cli(
        "env",
        "check",
        "--kind",
        "code",
        "--input",
        EXAMPLE,
        "--id",
        "sum-two",
        "--backend",
        backend,
    )
    assert r.exit_code == 0, r.output
    assert (
        "reference 0 (python)" in r.output
        and "reference 1 (cpp)" in r.output
        and "6/6 tests passed" in r.output
    )
    # A broken reference solution: task reward 0, exit code 1.
    r = cli(
        "env", "check", "--kind", "code", "--input", EXAMPLE, "--index", 4, "--backend", backend
    )
    assert r.exit_code == 1 and "WA" in r.output


def test_check_math_and_run(tmp_path):
    items = tmp_path / "qa.jsonl"
    items.write_text(json.dumps({"question": "What is 2 + 2?", "answer": "4"}) + "\n")
    r = cli("env", "check", "--kind", "math", "--input", items)
    assert r.exit_code == 0 and "1.000" in r.output, r.output
    answer = tmp_path / "answer.txt"
    answer.write_text("It is \\boxed{5}.")
    r = cli("env", "run", "--kind", "math", "--input", items, "--response", answer)
    assert r.exit_code == 0 and "0.000" in r.output


def test_errors_are_one_line():
    r = cli("env", "check", "--kind", "code", "--input", EXAMPLE, "--index", 99)
    assert r.exit_code == 2 and "out of range" in r.output
    r = cli("env", "check", "--kind", "code", "--input", EXAMPLE, "--id", "no-tests")
    assert r.exit_code == 2 and "missing_tests" in r.output
    r = cli("env", "check", "--kind", "chess", "--input", EXAMPLE)
    assert r.exit_code == 2 and "unknown kind" in r.output
    r = cli("env", "check", "--kind", "math", "--input", "/nonexistent.jsonl")
    assert r.exit_code == 2 and "input not found" in r.output
