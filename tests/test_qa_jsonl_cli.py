"""The qa-jsonl pipeline end to end through the `rlclimb` CLI: run, status, export, errors.
(`rlclimb demo`, now the whole loop, is tested in test_demo.py.)"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.schemas import qa_id
from rlclimb.schemas.io import read_rows

runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def jl(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


# a.jsonl, by line number
A_LINES: list[bytes] = [
    jl({"question": "  What   is\r\nthe value of 2+2?  ", "answer": 4, "subject": "math"}),  # 1 kept
    jl({"question": "Compute $\\frac{1}{2} + 0.5$ please.", "answer": 1.0}),  # 2 kept, float answer
    b'{"question": "broken',  # 3 bad_json
    jl({"problem": "What is the capital of France?", "final_answer": "Paris", "solution": "It is Paris."}),  # 4
    jl({"question": "What is 3 + 5 exactly?"}),  # 5 missing_answer
    jl({"answer": "7"}),  # 6 missing_question
    b"[1, 2, 3]",  # 7 not_an_object
    jl({"question": ["a list"], "answer": "x"}),  # 8 bad_field_type
    jl({"question": "", "answer": "1"}),  # 9 empty_question
    jl({"question": "Hi?", "answer": "yes"}),  # 10 question_too_short
    jl({"question": "What is \ufffd the answer here?", "answer": "42"}),  # 11 encoding_damage
    jl({"question": "WHAT IS  the value of 2+2?", "answer": "4"}),  # 12 duplicate (case, whitespace)
    b'\xff\xfe{"question": 1}',  # 13 bad_encoding
    jl({"question": "Is true true in logic, really?", "answer": True}),  # 14 kept, bool answer
    b"",  # 15 blank: skipped
    jl({"question": "Compute $\\frac{1}{2}\\,+\\;0.5$ please.", "answer": "1"}),  # 16 duplicate (LaTeX spacing)
]
# b.jsonl.gz
B_LINES: list[bytes] = [
    jl({"q": "Name the largest planet in our solar system.", "a": "Jupiter"}),  # 1 kept
    b"not json",  # 2 bad_json
    jl({"question": "what is the value of 2+2?", "answer": "4"}),  # 3 duplicate of a:1 (a comes first)
    jl({"question": "What is 7 times 6 here?", "answer": 42}),  # 4 kept
]

EXPECTED = [  # (file, line, question, answer) of the dataset, in input order
    ("a", 1, "What is\nthe value of 2+2?", "4"),
    ("a", 2, "Compute $\\frac{1}{2} + 0.5$ please.", "1.0"),
    ("a", 4, "What is the capital of France?", "Paris"),
    ("a", 14, "Is true true in logic, really?", "true"),
    ("b", 1, "Name the largest planet in our solar system.", "Jupiter"),
    ("b", 4, "What is 7 times 6 here?", "42"),
]
EXPECTED_LEDGER = sorted([
    ("read", "bad_json", "a", 3), ("read", "not_an_object", "a", 7), ("read", "bad_encoding", "a", 13),
    ("read", "bad_json", "b", 2), ("import", "missing_answer", "a", 5), ("import", "missing_question", "a", 6),
    ("import", "bad_field_type", "a", 8), ("validate", "empty_question", "a", 9),
    ("validate", "question_too_short", "a", 10), ("validate", "encoding_damage", "a", 11),
    ("dedup_exact", "duplicate_exact", "a", 12), ("dedup_exact", "duplicate_exact", "a", 16),
    ("dedup_exact", "duplicate_exact", "b", 3),
])
EXPECTED_FUNNEL = {
    "read": (19, 15, {"bad_json": 2, "not_an_object": 1, "bad_encoding": 1}),
    "import": (15, 12, {"missing_answer": 1, "missing_question": 1, "bad_field_type": 1}),
    "normalize": (12, 12, {}),
    "validate": (12, 9, {"empty_question": 1, "question_too_short": 1, "encoding_damage": 1}),
    "dedup_exact": (9, 6, {"duplicate_exact": 3}),
    "dedup_minhash": (6, 6, {}),
}


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    a = tmp_path / "in" / "a.jsonl"
    a.parent.mkdir()
    a.write_bytes(b"\n".join(A_LINES) + b"\n")
    b = tmp_path / "in" / "b.jsonl.gz"
    b.write_bytes(gzip.compress(b"\n".join(B_LINES) + b"\n"))
    return {"a": a, "b": b}


def data_rows(run_dir: Path) -> list[dict]:
    return [r for f in sorted((run_dir / "data").glob("*.parquet")) for r in read_rows(f)]


def ledger_rows(run_dir: Path) -> list[dict]:
    single = run_dir / "ledger.parquet"
    return pq.read_table(single if single.exists() else run_dir / "ledger").to_pylist()


def stats_funnel(stats: dict) -> dict:
    return {s["name"]: (s["in"], s["kept"], s["dropped"]) for s in stats["stages"]}


def test_run_qa_jsonl_end_to_end(tmp_path, inputs):
    out = tmp_path / "runs" / "qa"
    res = cli("run", "qa-jsonl", "--input", inputs["a"], "--input", inputs["b"], "--out", out, "-q")
    assert res.exit_code == 0, res.output
    assert "".join(res.stdout.split()) == f"6records->{out / 'data'}"  # rich may wrap the line

    names = {p.name: k for k, p in inputs.items()}  # records name files relative to --input
    rows = data_rows(out)
    assert [(names[r["source"]["document"]], r["source"]["line"], r["question"], r["answer"]) for r in rows] == EXPECTED
    for r in rows:
        assert r["id"] == qa_id(r["question"], r["answer"])
        assert r["provenance"] == []  # no stage annotated these records
    assert len({r["id"] for r in rows}) == 6
    assert json.loads(rows[0]["meta"]) == {"subject": "math"}
    assert rows[2]["solution"] == "It is Paris." and json.loads(rows[2]["meta"]) == {}
    trail = json.loads(pq.read_schema(sorted((out / "data").glob("*.parquet"))[0]).metadata[b"rlclimb.stages"])
    assert [t["name"] for t in trail] == ["import", "normalize", "validate", "dedup_exact", "dedup_minhash"]

    ledger = ledger_rows(out)
    assert sorted((r["stage"], r["reason"], names[r["file"]], r["line"]) for r in ledger) == EXPECTED_LEDGER
    dup = [r for r in ledger if r["reason"] == "duplicate_exact" and names[r["file"]] == "b"][0]
    assert dup["detail"] == f"same normalized question as {rows[0]['id']}"
    assert dup["record_id"] == qa_id("what is the value of 2+2?", "4")
    missing = [r for r in ledger if r["reason"] == "missing_answer"][0]
    assert "question" in missing["detail"] and "--set import.answer_field" in missing["detail"]

    stats = json.loads((out / "stats.json").read_text())
    assert stats_funnel(stats) == EXPECTED_FUNNEL
    assert (stats["records"], stats["drops"], stats["status"]) == (6, 13, "complete")
    config = json.loads((out / "config.json").read_text())
    assert config["pipeline"] == "qa-jsonl" and config["inputs"]["files"] == [str(inputs["a"]), str(inputs["b"])]
    assert config["config"]["import"]["question_field"] is None


def test_rerun_resumes_to_the_same_dataset(tmp_path, inputs):
    out = tmp_path / "run"
    assert cli("run", "qa-jsonl", "-i", inputs["a"], "-i", inputs["b"], "-o", out, "-q").exit_code == 0
    first = data_rows(out)
    res = cli("run", "qa-jsonl", "-i", inputs["a"], "-i", inputs["b"], "-o", out, "-q")
    assert res.exit_code == 0 and data_rows(out) == first
    assert stats_funnel(json.loads((out / "stats.json").read_text())) == EXPECTED_FUNNEL


def test_status_prints_the_funnel(tmp_path, inputs):
    out = tmp_path / "run"
    assert cli("run", "qa-jsonl", "-i", inputs["a"], "-i", inputs["b"], "-o", out, "-q").exit_code == 0
    res = cli("status", out)
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    for name in ("read", "import", "normalize", "validate", "dedup_exact"):
        assert f"│ {name} " in res.stdout, name
    for reason in ("bad_json 2", "missing_answer 1", "question_too_short 1", "duplicate_exact 3", "encoding_damage 1"):
        assert reason in text, reason
    assert "complete" in text and "6 records" in text and "13 drops" in text

    res = cli("status", out, "--json")
    assert res.exit_code == 0
    js = json.loads(res.stdout)
    assert js["complete"] is True
    assert stats_funnel(js) == EXPECTED_FUNNEL

    (out / "stats.json").unlink()  # what a killed run leaves: no final stats
    res = cli("status", out)
    assert res.exit_code == 0 and "interrupted" in res.stdout and "dedup_exact" in res.stdout

    res = cli("status", tmp_path / "nowhere")
    assert res.exit_code == 2 and "not a run directory" in res.stderr


def test_set_question_field(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in [
        {"question": "Title only", "problem": "Compute 3 + 4 and give the sum.", "answer": 7},
        {"problem": "Compute 10 - 4 and give the difference.", "answer": "6"},
        {"question": "Only a question here, no problem field", "answer": "x"},
    ]) + "\n")
    res = cli("run", "qa-jsonl", "-i", src, "-o", tmp_path / "auto", "-q")
    assert res.exit_code == 0
    assert [r["question"] for r in data_rows(tmp_path / "auto")] == [
        "Title only", "Compute 10 - 4 and give the difference.", "Only a question here, no problem field"]

    res = cli("run", "qa-jsonl", "-i", src, "-o", tmp_path / "set", "-q", "--set", "import.question_field=problem")
    assert res.exit_code == 0, res.output
    rows = data_rows(tmp_path / "set")
    assert [(r["question"], r["answer"]) for r in rows] == [
        ("Compute 3 + 4 and give the sum.", "7"), ("Compute 10 - 4 and give the difference.", "6")]
    assert json.loads(rows[0]["meta"]) == {"question": "Title only"}
    (drop,) = ledger_rows(tmp_path / "set")
    assert (drop["stage"], drop["reason"], drop["line"]) == ("import", "missing_question", 3)
    assert "'problem'" in drop["detail"]
    config = json.loads((tmp_path / "set" / "config.json").read_text())
    assert config["config"]["import"]["question_field"] == "problem"

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("shard_size: 2\nstages:\n  import:\n    question_field: problem\n")
    res = cli("run", "qa-jsonl", "-i", src, "-o", tmp_path / "yaml", "-q", "-c", cfg)
    assert res.exit_code == 0, res.output
    assert data_rows(tmp_path / "yaml") == rows
    seg0 = sorted((tmp_path / "yaml" / "stages").glob("00-*"))[0]
    assert len(list(seg0.glob("part-*.done.json"))) == 2  # shard_size 2 from the YAML


def test_set_nested_field_path(tmp_path):
    src = tmp_path / "n.jsonl"
    src.write_text(json.dumps({"body": {"text": "Nested question text here?"}, "answer": "n"}) + "\n")
    res = cli("run", "qa-jsonl", "-i", src, "-o", tmp_path / "run", "-q", "--set", "import.question_field=body.text")
    assert res.exit_code == 0, res.output
    assert [r["question"] for r in data_rows(tmp_path / "run")] == ["Nested question text here?"]


@pytest.mark.parametrize("case", [
    "missing_input", "wrong_suffix", "missing_config", "invalid_yaml", "yaml_not_mapping", "unknown_config_key",
    "unknown_stage_section", "unknown_stage_key", "bad_value", "set_without_equals", "unknown_pipeline",
    "missing_input_in_dir",
])
def test_bad_invocation_exits_2_and_writes_nothing(tmp_path, inputs, case):
    out = tmp_path / "out" / "run"
    good = ["-i", inputs["a"]]
    cfg = tmp_path / "cfg.yaml"
    args, expect = {
        "missing_input": (["-i", tmp_path / "nope.jsonl"], "input not found"),
        "wrong_suffix": (["-i", cfg], "unsupported input"),
        "missing_config": ([*good, "-c", tmp_path / "nope.yaml"], "cannot read config"),
        "invalid_yaml": ([*good, "-c", cfg], "not valid YAML"),
        "yaml_not_mapping": ([*good, "-c", cfg], "must be a YAML mapping"),
        "unknown_config_key": ([*good, "-c", cfg], "unknown config key"),
        "unknown_stage_section": ([*good, "--set", "bogus.x=1"], "unknown stage section"),
        "unknown_stage_key": ([*good, "--set", "import.nonexistent=1"], "import.nonexistent"),
        "bad_value": ([*good, "--set", "validate.min_question_chars=abc"], "validate.min_question_chars"),
        "set_without_equals": ([*good, "--set", "import.question_field"], "KEY=VALUE"),
        "unknown_pipeline": ([*good], "unknown pipeline"),
        "missing_input_in_dir": (["-i", inputs["a"], "-i", tmp_path / "in" / "missing.jsonl.gz"], "input not found"),
    }[case]
    cfg.write_text({"invalid_yaml": "stages: [unclosed\n  import: {", "yaml_not_mapping": "- a\n- b\n",
                    "unknown_config_key": "bogus: 1\n"}.get(case, "shard_size: 5\n"))
    pipeline = "nope" if case == "unknown_pipeline" else "qa-jsonl"
    res = cli("run", pipeline, *args, "--out", out)
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    assert res.stderr.startswith("error: ") and expect in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1, res.stderr  # one line
    assert not out.exists() and not out.parent.exists()


def test_missing_input_via_subprocess_is_one_line_on_stderr(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "rlclimb.pipelines.cli", "run", "qa-jsonl",
                           "--input", str(tmp_path / "missing.jsonl"), "--out", str(out)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "60"})
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == f"error: input not found: {tmp_path / 'missing.jsonl'}\n"
    assert not out.exists()


def test_subprocess_run_and_export(tmp_path, inputs):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "rlclimb.pipelines.cli", "run", "qa-jsonl", "-i", str(inputs["a"]),
                           "-i", str(inputs["b"]), "-o", str(out), "-q"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(data_rows(out)) == 6


def test_export_jsonl_and_gz(tmp_path, inputs):
    out = tmp_path / "run"
    assert cli("run", "qa-jsonl", "-i", inputs["a"], "-i", inputs["b"], "-o", out, "-q").exit_code == 0
    rows = data_rows(out)
    for name in ("export.jsonl", "export.jsonl.gz"):
        dest = tmp_path / "exports" / name
        res = cli("export", out, "--out", dest)
        assert res.exit_code == 0, res.output
        raw = dest.read_bytes()
        if name.endswith(".gz"):
            assert raw[:2] == b"\x1f\x8b"
            raw = gzip.decompress(raw)
        lines = raw.decode("utf-8").splitlines()
        assert len(lines) == 6
        exported = [json.loads(line) for line in lines]
        assert [e["id"] for e in exported] == [r["id"] for r in rows]
        assert exported == json.loads(json.dumps(rows, default=str))
    res = cli("export", tmp_path / "nothing", "--out", tmp_path / "x.jsonl")
    assert res.exit_code == 2 and "no dataset" in res.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_workers_2_matches_workers_1(tmp_path, inputs):
    base = ["run", "qa-jsonl", "-i", inputs["a"], "-i", inputs["b"], "-q", "--set", "shard_size=4"]
    assert cli(*base, "-o", tmp_path / "w1", "--workers", "1").exit_code == 0
    res = cli(*base, "-o", tmp_path / "w2", "--workers", "2")
    assert res.exit_code == 0, res.output
    assert data_rows(tmp_path / "w2") == data_rows(tmp_path / "w1")
    assert json.loads((tmp_path / "w2" / "config.json").read_text())["options"]["workers"] == 2
    assert stats_funnel(json.loads((tmp_path / "w2" / "stats.json").read_text())) == EXPECTED_FUNNEL
