"""Hostile input lines are ledgered with a reason and never kill a run: nesting past any parser's
limit, lone surrogates, lines over the size cap. Through the real `rlclimb run` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from rlclimb.pipelines.bookkeeping import LEDGER_SCHEMA, ledger_row
from rlclimb.pipelines.cli import app
from rlclimb.pipelines.stage import Drop
from rlclimb.schemas.io import read_jsonl, read_rows, write_parquet

runner = CliRunner()


def good(i: int) -> bytes:
    return json.dumps({"question": f"What is {i} plus {i} in base ten?", "answer": str(2 * i)}).encode()


def run_lines(tmp_path: Path, lines: list[bytes], env: dict | None = None):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "qa-jsonl", "-i", str(src), "--out", str(out), "-q"], env=env)
    assert res.exit_code == 0, res.output
    kept = [r["question"] for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]
    ledger = pq.read_table(out / "ledger").to_pylist()
    return kept, {(r["line"], r["reason"]) for r in ledger if r["stage"] == "read"}


def test_deeply_nested_lines_are_ledgered_too_deep(tmp_path):
    deep = b'{"question": ' + b"[" * 100_000 + b"]" * 100_000 + b', "answer": "1"}'  # RecursionError
    medium = b'{"question": "q", "answer": ' + b"[" * 300 + b"]" * 300 + b"}"  # past orjson's 254
    kept, read_drops = run_lines(tmp_path, [good(1), deep, medium, good(2)])
    assert len(kept) == 2
    assert read_drops == {(2, "too_deep"), (3, "too_deep")}


def test_lone_surrogate_is_ledgered_not_fatal(tmp_path):
    lone = b'{"question": "What is \\ud800 plus one, in full?", "answer": "2"}'
    pair = b'{"question": "What is \\ud83d\\ude00 plus one, in full?", "answer": "2"}'  # an emoji
    kept, read_drops = run_lines(tmp_path, [good(1), lone, pair])
    assert read_drops == {(2, "bad_encoding")}
    assert kept == ["What is 1 plus 1 in base ten?", "What is \U0001f600 plus one, in full?"]


def test_line_over_the_size_cap_is_ledgered_without_loading_it(tmp_path):
    huge = json.dumps({"question": "x" * 5000, "answer": "1"}).encode()
    kept, read_drops = run_lines(tmp_path, [good(1), huge, good(2), huge + huge, good(3)],
                                 env={"RLCLIMB_MAX_LINE_BYTES": "1000"})
    assert read_drops == {(2, "line_too_long"), (4, "line_too_long")}
    assert len(kept) == 3  # and the lines after each long one are read from their start


def test_reader_cap_boundaries_and_line_numbers(tmp_path):
    path = tmp_path / "x.jsonl"
    at_cap = b'{"a": "' + b"y" * 91 + b'"}'  # 100 bytes without its newline
    path.write_bytes(at_cap + b"\n" + at_cap + b"y\n" + b"\n" + at_cap)  # last line: no newline
    got = [(no, type(obj).__name__, getattr(obj, "reason", None)) for no, obj in read_jsonl(path, limit=100)]
    assert got == [(1, "dict", None), (2, "JsonlError", "line_too_long"), (4, "dict", None)]
    [(_, err)] = [(no, obj) for no, obj in read_jsonl(path, limit=100) if no == 2]
    assert "101 bytes" in err.detail


def test_ledger_row_never_raises_on_what_a_record_holds(tmp_path):
    nested: object = "leaf"
    for _ in range(300):
        nested = [nested]
    records = [
        {"id": "a", "question": "lone \ud800 surrogate", "file": "f\udc00.jsonl", "line": 3},
        {"id": 12345, "question": "an id that is a number"},
        {"id": "c", "deep": nested},
    ]
    rows = [ledger_row("s", Drop("why", "detail with \udfff"), r) for r in records]
    write_parquet(rows, tmp_path / "ledger.parquet", LEDGER_SCHEMA)  # raised before
    back = pq.read_table(tmp_path / "ledger.parquet").to_pylist()
    assert [r["record_id"] for r in back] == ["a", "12345", "c"]
    assert json.loads(back[0]["record"])["question"] == "lone \ud800 surrogate"  # kept, escaped
    assert back[0]["file"] == "f\ufffd.jsonl" and back[0]["detail"] == "detail with \ufffd"
    assert json.loads(back[2]["record"])["id"] == "c"


def test_a_stage_that_produces_a_lone_surrogate_does_not_kill_the_commit(tmp_path):
    """Data parts too: Parquet holds only UTF-8, so the shard is committed with U+FFFD."""
    from helpers import stages as hs

    from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
    from rlclimb.pipelines.readers import JsonlReader
    from rlclimb.pipelines.stage import Stage

    class Halve(Stage):  # e.g. text cut in the middle of a UTF-16 pair
        name = "halve"
        kind = "map"

        def process(self, record, ctx):
            record["text"] = record["text"] + "\ud83d"
            return record

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{n}", "text": f"w{n}", "n": n}) + "\n" for n in range(3)))
    result = run_pipeline(Pipeline("p", JsonlReader([src]), [hs.ImportItem(), Halve()]), tmp_path / "run",
                          RunOptions(progress=False))
    rows = [r for f in sorted((result.run_dir / "data").glob("*.parquet")) for r in read_rows(f)]
    assert [r["text"] for r in rows] == ["w0\ufffd", "w1\ufffd", "w2\ufffd"]
