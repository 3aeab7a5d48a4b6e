"""`rlclimb decontam`: matches.jsonl, a byte-exact clean copy (JSONL, JSONL.gz, Parquet, directories),
report.json, and bad invocations that exit 2 without writing anything."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app

runner = CliRunner()

BENCH = [{"id": "gsm-1", "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?"},
         {"id": "gsm-2", "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?"}]
TRAIN = [
    b'{"id": "a1", "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?", "answer": "72"}',
    b'{"id": "a2", "question": "Natalia sold clips to 60 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?", "answer": "90"}',
    b'{"id": "a3",   "question": "Weng earns $12 an hour for babysitting. Yesterday she did 50 minutes of babysitting. How much did she earn?", "answer": "10"}',
    b'{"question": "broken',
    b'{"id": "a5", "question": "What is the largest prime below 100?", "answer": "97"}',
    b'{"id": "a6", "answer": "no question here"}',
]


def cli(*args):
    return runner.invoke(app, ["decontam", *[str(a) for a in args]])


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    bench = tmp_path / "bench" / "gsm8k_test.jsonl"
    bench.parent.mkdir()
    bench.write_text("".join(json.dumps(b) + "\n" for b in BENCH))
    train = tmp_path / "in" / "train.jsonl"
    train.parent.mkdir()
    train.write_bytes(b"\n".join(TRAIN) + b"\n")
    return {"bench": bench, "train": train}


def test_matches_and_byte_exact_clean_copy(files, tmp_path):
    out = tmp_path / "out"
    res = cli("--benchmark", files["bench"], "--input", files["train"], "--out", out, "--matchers", "exact,minhash")
    assert res.exit_code == 0, res.output
    assert "2 of 5 items match a benchmark" in " ".join(res.stdout.split())
    matches = [json.loads(line) for line in (out / "matches.jsonl").read_text().splitlines()]
    assert [(m["input_id"], m["benchmark"], m["benchmark_id"], m["matcher"]) for m in matches] == [
        ("a1", "gsm8k_test", "gsm-1", "exact"), ("a3", "gsm8k_test", "gsm-2", "minhash")]
    assert matches[0]["score"] == 1.0 and 0.5 <= matches[1]["score"] < 1.0
    assert matches[1]["input_text"].startswith("Weng earns") and matches[1]["benchmark_text"] == BENCH[1]["question"]
    assert (matches[1]["input_file"], matches[1]["input_line"]) == (str(files["train"]), 3)
    # the clean copy: the other readable lines, byte for byte (a2 is the same template with other numbers)
    assert (out / "clean" / "train.jsonl").read_bytes() == TRAIN[1] + b"\n" + TRAIN[4] + b"\n" + TRAIN[5] + b"\n"
    report = json.loads((out / "report.json").read_text())
    assert (report["records"], report["flagged"], report["kept"], report["no_text"]) == (5, 2, 3, 1)
    assert report["by_matcher"] == {"exact": 1, "minhash": 1} and report["benchmarks"] == {"gsm8k_test": 2}
    assert report["unreadable_count"] == 1 and report["unreadable"][0]["line"] == 4
    assert report["thresholds"]["minhash_jaccard"] == 0.5 and report["thresholds"]["numbers"] == "quantities"
    assert report["thresholds"]["numbers_cover"] == 0.6


def test_gz_parquet_and_directory_inputs(files, tmp_path):
    gz = tmp_path / "more" / "part.jsonl.gz"
    gz.parent.mkdir()
    with gzip.open(gz, "wb") as f:
        f.write(TRAIN[0] + b"\n" + TRAIN[4] + b"\n")
    pq.write_table(pa.Table.from_pylist([json.loads(TRAIN[2]), json.loads(TRAIN[4])]), tmp_path / "more" / "p.parquet")
    out = tmp_path / "out"
    res = cli("-b", files["bench"], "-i", tmp_path / "more", "-i", files["train"], "-o", out, "--matchers", "exact,minhash", "-q")
    assert res.exit_code == 0, res.output
    with gzip.open(out / "clean" / "more" / "part.jsonl.gz", "rb") as f:
        assert f.read() == TRAIN[4] + b"\n"
    clean_parquet = pq.read_table(out / "clean" / "more" / "p.parquet")
    assert clean_parquet.schema == pq.read_schema(tmp_path / "more" / "p.parquet") and clean_parquet.column("id").to_pylist() == ["a5"]
    ids = [json.loads(line)["input_id"] for line in (out / "matches.jsonl").read_text().splitlines()]
    assert sorted(ids) == ["a1", "a1", "a3", "a3"]


def test_paraphrase_caught_by_the_vector_matcher(files, tmp_path):
    para = tmp_path / "para.jsonl"
    para.write_text(json.dumps({"id": "p1", "question": "In April Natalia sold clips to 48 friends; in May she sold "
                                                          "half as many. How many clips did she sell in total over the two months?"}) + "\n")
    out = tmp_path / "out"
    lexical = cli("-b", files["bench"], "-i", para, "-o", out, "--matchers", "exact,minhash")
    assert lexical.exit_code == 0 and (out / "matches.jsonl").read_text() == ""
    res = cli("-b", files["bench"], "-i", para, "-o", out)  # default: exact, minhash, vector (MiniLM)
    assert res.exit_code == 0, res.output
    (match,) = [json.loads(line) for line in (out / "matches.jsonl").read_text().splitlines()]
    assert (match["input_id"], match["benchmark_id"], match["matcher"]) == ("p1", "gsm-1", "vector")
    assert (out / "clean" / "para.jsonl").read_text() == ""


@pytest.mark.parametrize("args, message", [
    (["--benchmark", "{tmp}/nope.jsonl"], "benchmark not found"),
    (["--field", "prompt"], "no field 'prompt'"),
    (["--matchers", "exact,fuzzy"], "matchers"),
    (["--minhash-threshold", "1.5"], "minhash_threshold"),
    (["--numbers", "sometimes"], "numbers"),
])
def test_bad_invocations_exit_2_and_write_nothing(files, tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    base = {"--benchmark": str(files["bench"]), "--input": str(files["train"])}
    for flag in ("--benchmark",):
        if flag in args:
            base.pop(flag)
    out = tmp_path / "out"
    res = cli(*[x for kv in base.items() for x in kv], "--out", out, "--matchers", "exact,minhash", *args)
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())
    assert not out.exists()


def test_missing_embed_extra_is_named(files, tmp_path, monkeypatch):
    from rlclimb.stages.dedup import decontam

    monkeypatch.setattr(decontam, "missing_extra", lambda b: f"embedding backend '{b}' needs the 'embed' extra (missing: torch): pip install 'rlclimb[embed]'")
    out = tmp_path / "out"
    res = cli("-b", files["bench"], "-i", files["train"], "-o", out)
    assert res.exit_code == 2
    assert "pip install 'rlclimb[embed]'" in " ".join(res.output.split()) and not out.exists()
