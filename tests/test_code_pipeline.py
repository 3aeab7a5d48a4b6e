"""The code-problems pipeline: import (shapes, per-record errors), sandbox verification (keep,
disputed tests, failing references, too few tests), through `rlclimb run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.sandboxes import fast_backend, sandbox_or_skip
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.schemas.io import read_rows
from rlclimb.stages.code.importer import BadRecord, parse_problem

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "code_problems.jsonl"


def test_import_shapes():
    p = parse_problem(
        {
            "question": "Sum.",
            "input_output": json.dumps({"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}),
            "solutions": ["print(sum(map(int, input().split())))"],
            "time_limit": "2 seconds",
            "memory_limit": "256 megabytes",
            "source_site": "x",
        }
    )
    assert [(t.input, t.output, t.kind) for t in p.tests] == [
        ("1 2\n", "3\n", "stdio"),
        ("3 4\n", "7\n", "stdio"),
    ]
    assert (p.time_limit_s, p.memory_limit_mb, p.solutions[0].language) == (2.0, 256, "python")
    assert json.loads(p.meta) == {"source_site": "x"}
    calls = parse_problem(
        {
            "statement": "f",
            "input_output": {"inputs": [[1, 2]], "outputs": [[3]], "fn_name": "add"},
            "solution": {"language": "py", "code": "def add(a, b): return a + b"},
        }
    )
    assert (calls.tests[0].input, calls.tests[0].output, calls.tests[0].kind) == (
        "add(*[1, 2])",
        "3",
        "call",
    )
    asserts = parse_problem(
        {
            "statement": "g",
            "tests": ["assert g(2) == [2, 2]"],
            "solutions": ["def g(x): return [x, x]"],
        }
    )
    assert (asserts.tests[0].input, asserts.tests[0].output) == ("g(2)", "[2, 2]")


@pytest.mark.parametrize(
    "row, reason, words",
    [
        ({"tests": [], "solutions": ["x"]}, "missing_statement", "statement_field"),
        ({"statement": "s", "solutions": ["x"]}, "missing_tests", "input_output"),
        ({"statement": "s", "tests": "nope", "solutions": ["x"]}, "bad_tests", "must be a list"),
        (
            {"statement": "s", "tests": [{"input": "1"}], "solutions": ["x"]},
            "bad_tests",
            "test 0: needs 'input' and 'output'",
        ),
        (
            {"statement": "s", "tests": ["f(1) == 2"], "solutions": ["x"]},
            "bad_tests",
            "assert CALL == VALUE",
        ),
        (
            {"statement": "s", "tests": [], "solutions": [{"language": "cobol", "code": "x"}]},
            "unsupported_language",
            "cobol",
        ),
        ({"statement": "s", "tests": []}, "missing_solutions", "reference solution"),
        (
            {"statement": "s", "tests": [], "solutions": ["x"], "time_limit": "fast"},
            "bad_limits",
            "time_limit",
        ),
    ],
)
def test_bad_records_name_the_problem(row, reason, words):
    with pytest.raises(BadRecord) as e:
        parse_problem(row)
    assert e.value.reason == reason and words in str(e.value)


def test_pipeline_on_the_example(tmp_path):
    backend = fast_backend()
    sandbox_or_skip(backend)
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "run",
            "code-problems",
            "--input",
            str(EXAMPLE),
            "--out",
            str(out),
            "--set",
            f"verify.backend={backend}",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = {r["id"]: r for p in sorted((out / "data").glob("*.parquet")) for r in read_rows(p)}
    assert sorted(rows) == ["digit-sum", "fib-mod", "largest", "sum-two"]
    digit = json.loads(rows["digit-sum"]["meta"])["verification"]
    assert (
        digit["disputed_tests"] == [{"test": 6, "agreement": 0.0}]
        and len(rows["digit-sum"]["tests"]) == 6
    )
    assert digit["backend"] == backend and digit["passing_references"] == [0, 1]
    assert (rows["sum-two"]["time_limit_s"], rows["sum-two"]["memory_limit_mb"]) == (2.0, 256)
    ledger = [r for p in sorted((out / "ledger").glob("*.parquet")) for r in read_rows(p)]
    reasons = sorted((r["stage"], r["reason"]) for r in ledger)
    assert reasons == [
        ("import", "missing_tests"),
        ("read", "bad_json"),
        ("verify", "reference_fails"),
        ("verify", "too_few_tests"),
    ]
    fails = next(r for r in ledger if r["reason"] == "reference_fails")
    assert "test 0 WA" in fails["detail"]


def test_min_tests_is_configurable(tmp_path):
    backend = fast_backend()
    sandbox_or_skip(backend)
    src = tmp_path / "p.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "hello",
                "statement": "Print hello.",
                "tests": [{"input": "", "output": "hello"}] * 3,
                "solutions": ["print('hello')"],
            }
        )
        + "\n"
    )
    out = tmp_path / "run"
    args = [
        "run",
        "code-problems",
        "--input",
        str(src),
        "--out",
        str(out),
        "--set",
        f"verify.backend={backend}",
        "--set",
        "verify.min_tests=3",
        "-q",
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert [r["id"] for p in (out / "data").glob("*.parquet") for r in read_rows(p)] == ["hello"]
