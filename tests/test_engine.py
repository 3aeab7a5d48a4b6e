"""The local executor: stage semantics, stats, ledger, provenance, cache/resume, workers, shards,
consensus, readers. Test stages live in tests/helpers/stages.py (spawned workers import them)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import stages as hs

from rlclimb.pipelines.consensus import Consensus
from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import InputError, JsonlReader, ParquetReader
from rlclimb.pipelines.rundir import RunDir
from rlclimb.pipelines.scripted_server import Reply
from rlclimb.pipelines.stage import Drop, Stage, StageContext
from rlclimb.schemas.io import read_rows

# ---- helpers -------------------------------------------------------------------------------------


def write_lines(path: Path, lines: list[bytes | dict]) -> Path:
    path.write_bytes(b"".join((json.dumps(x).encode() if isinstance(x, dict) else x) + b"\n" for x in lines))
    return path


def item(n: int, text: str | None = None) -> dict:
    return {"id": f"r{n:02d}", "text": text if text is not None else f"w{n} x{n % 4}", "n": n}


# The main input: 20 good items (n = 0..19) and 4 bad lines.
#   n 0..4 -> lines 1..5, line 6 bad json, n 5..9 -> lines 7..11, line 12 a JSON array,
#   n 10..19 -> lines 13..22, line 23 not UTF-8, line 24 an item without "text" (import raises).
def main_input(tmp_path: Path) -> Path:
    lines: list[bytes | dict] = [item(n) for n in range(5)] + [b'{"id": "broken"']
    lines += [item(n) for n in range(5, 10)] + [b"[1, 2]"]
    lines += [item(n) for n in range(10, 20)] + [b'{"id": "r98", "text": "\xff\xfe"}', {"id": "r99", "n": 99}]
    return write_lines(tmp_path / "items.jsonl", lines)


def line_of(n: int) -> int:
    return n + 1 if n < 5 else n + 2 if n < 10 else n + 3


def main_stages() -> list[Stage]:
    return [hs.ImportItem(), hs.Upper(), hs.DropSome(), hs.Annotate(), hs.KeepFilter(), hs.SplitWords(), hs.DedupText()]


EXPECTED_IDS = ["r01-0", "r01-1", "r02-0", "r02-1", "r04-0", "r04-1", "r05-0", "r10-0", "r11-0", "r11-1",
                "r13-0", "r14-0", "r16-0", "r17-0", "r19-0"]
EXPECTED_FUNNEL = {
    "read": (24, 21, 21, {"bad_json": 1, "not_an_object": 1, "bad_encoding": 1}),
    "import_item": (21, 20, 20, {"error": 1}),
    "upper": (20, 20, 20, {}),
    "drop_some": (20, 12, 12, {"drop_some": 7, "explicit_drop": 1}),
    "annotate": (12, 12, 12, {}),
    "keep_filter": (12, 12, 12, {}),
    "split": (12, 11, 22, {"no_split": 1}),
    "dedup_text": (22, 15, 15, {"duplicate_text": 7}),
}


def data_rows(run_dir: Path) -> list[dict]:
    files = sorted((Path(run_dir) / "data").glob("*.parquet"))
    return [row for f in files for row in read_rows(f)]


def ledger_rows(run_dir: Path) -> list[dict]:
    """The run's ledger: `ledger.parquet`, or a `ledger/` directory of parts."""
    run_dir = Path(run_dir)
    single = run_dir / "ledger.parquet"
    table = pq.read_table(single if single.exists() else run_dir / "ledger")
    return table.to_pylist()


def funnel(stats: dict) -> dict:
    return {s["name"]: (s["in"], s["kept"], s["out"], s["dropped"]) for s in stats["stages"]}


def counts_only(stats: dict) -> dict:
    return {"records": stats["records"], "drops": stats["drops"], "funnel": funnel(stats)}


def quiet(**kw) -> RunOptions:
    return RunOptions(progress=False, **kw)


def drop_done_markers(run_dir: Path) -> int:
    markers = list((Path(run_dir) / "stages").glob("*/part-*.done.json"))
    markers += list((Path(run_dir) / "stages").glob("*/_SUCCESS.json"))
    for m in markers:
        m.unlink()
    return len(markers)


# ---- semantics, stats, ledger, provenance ------------------------------------------------------


def test_map_filter_expand_global_semantics_and_stats(tmp_path):
    src = main_input(tmp_path)
    result = run_pipeline(Pipeline("main", JsonlReader([src]), main_stages()), tmp_path / "run", quiet())
    rows = data_rows(result.run_dir)

    assert [r["id"] for r in rows] == EXPECTED_IDS
    assert result.records == 15
    by_id = {r["id"]: r for r in rows}
    assert by_id["r04-0"]["text"] == "W4" and by_id["r04-1"]["text"] == "X0"  # upper, then split
    assert by_id["r04-0"]["tags"] == ["annotated"]
    assert by_id["r11-1"]["source"]["line"] == line_of(11) and by_id["r11-1"]["source"]["document"] == src.name

    stats = json.loads((result.run_dir / "stats.json").read_text())
    assert stats == result.stats
    assert funnel(stats) == EXPECTED_FUNNEL
    assert [s["name"] for s in stats["stages"]] == list(EXPECTED_FUNNEL)  # the funnel is in stage order
    assert stats["records"] == 15 and stats["drops"] == 20
    assert all(s["cached"] == 0 and s["llm"] == {} for s in stats["stages"])


def test_ledger_rows_locate_every_drop(tmp_path):
    src = main_input(tmp_path)
    result = run_pipeline(Pipeline("main", JsonlReader([src]), main_stages()), tmp_path / "run", quiet())
    ledger = ledger_rows(result.run_dir)
    assert len(ledger) == result.stats["drops"] == 20
    assert set(ledger[0]) == {"stage", "reason", "detail", "record_id", "file", "line", "model", "votes", "cost", "record"}
    got = sorted((r["stage"], r["reason"], r["record_id"] or "", r["line"]) for r in ledger)
    expected = [("read", "bad_json", "", 6), ("read", "not_an_object", "", 12), ("read", "bad_encoding", "", 23),
                ("import_item", "error", "", 24), ("drop_some", "explicit_drop", "r07", line_of(7)),
                ("split", "no_split", "r08", line_of(8))]
    expected += [("drop_some", "drop_some", f"r{n:02d}", line_of(n)) for n in (0, 3, 6, 9, 12, 15, 18)]
    expected += [("dedup_text", "duplicate_text", f"r{n:02d}-1", line_of(n)) for n in (5, 10, 13, 14, 16, 17, 19)]
    assert got == sorted(expected)
    assert {r["file"] for r in ledger} == {src.name}
    by = {(r["stage"], r["reason"], r["record_id"]): r for r in ledger}
    assert by[("dedup_text", "duplicate_text", "r05-1")]["detail"] == "same text as r01-1"
    assert by[("drop_some", "explicit_drop", "r07")]["detail"] == "n is 7"
    assert by[("drop_some", "drop_some", "r03")]["detail"] == "filtered"
    err = by[("import_item", "error", None)]
    assert "KeyError" in err["detail"] and "'text'" in err["detail"]
    assert json.loads(err["record"])["data"] == {"id": "r99", "n": 99}  # the record, for audit
    dropped = json.loads(by[("drop_some", "explicit_drop", "r07")]["record"])
    assert dropped["text"] == "W7 X3" and dropped["n"] == 7  # the record as the stage saw it


def test_provenance_only_for_annotations_and_expansion(tmp_path):
    src = main_input(tmp_path)
    result = run_pipeline(Pipeline("main", JsonlReader([src]), main_stages()), tmp_path / "run", quiet())
    by_id = {r["id"]: r for r in data_rows(result.run_dir)}

    def brief(events):
        return [(e["stage"], e["decision"], e["reason"], e["model"], e["votes"], e["cost"]) for e in events]

    assert brief(by_id["r04-0"]["provenance"]) == [
        ("annotate", "modify", "note", "m1", ["x", "y"], 0.5), ("split", "expand", "from r04", None, [], 0.0)]
    assert brief(by_id["r02-1"]["provenance"]) == [
        ("keep_filter", "keep", "kept on purpose", None, [], 0.0), ("split", "expand", "from r02", None, [], 0.0)]
    assert brief(by_id["r13-0"]["provenance"]) == [("split", "expand", "from r13", None, [], 0.0)]
    assert all(e["version"] == "1" for r in by_id.values() for e in r["provenance"])

    names = [s.name for s in main_stages()]
    config = json.loads((result.run_dir / "config.json").read_text())
    assert [s["name"] for s in config["stages"]] == names
    assert [s["stages"] for s in config["segments"]] == [names[:-1], names[-1:]]
    for f in (result.run_dir / "data").glob("*.parquet"):
        trail = json.loads(pq.read_schema(f).metadata[b"rlclimb.stages"])
        assert [t["name"] for t in trail] == names
        assert trail[1] == {"name": "upper", "version": "1", "fingerprint": hs.Upper().fingerprint,
                            "pipeline": "main", "input": JsonlReader([src]).fingerprint()}


@pytest.mark.parametrize("faulty", [hs.Faulty, hs.AsyncFaulty], ids=["sync", "async"])
def test_exceptions_become_ledgered_drops(tmp_path, faulty):
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(10)])
    stages = [hs.ImportItem(), faulty(), hs.Upper()]
    result = run_pipeline(Pipeline("f", JsonlReader([src]), stages), tmp_path / "run", quiet())
    assert [r["id"] for r in data_rows(result.run_dir)] == [f"r{n:02d}" for n in (0, 1, 2, 4, 7, 8, 9)]
    assert [r["text"] for r in data_rows(result.run_dir)][:1] == ["W0 X0"]
    assert funnel(result.stats)["faulty"] == (10, 7, 7, {"error": 2, "too_big": 1})
    ledger = {r["record_id"]: r for r in ledger_rows(result.run_dir)}
    assert sorted(ledger) == ["r03", "r05", "r06"]
    assert (ledger["r03"]["stage"], ledger["r03"]["reason"], ledger["r03"]["line"]) == ("faulty", "error", 4)
    assert "ValueError: boom on three" in ledger["r03"]["detail"] and "stages.py" in ledger["r03"]["detail"]
    assert (ledger["r05"]["reason"], ledger["r05"]["line"]) == ("too_big", 6)
    assert "TooBig: five is too big" in ledger["r05"]["detail"]
    assert ledger["r06"]["reason"] == "error" and "returned int" in ledger["r06"]["detail"]


def test_everything_dropped_still_writes_an_empty_dataset(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in (0, 3, 6)])
    result = run_pipeline(Pipeline("e", JsonlReader([src]), [hs.ImportItem(), hs.DropSome()]), tmp_path / "run", quiet())
    files = sorted((result.run_dir / "data").glob("*.parquet"))
    assert [f.name for f in files] == ["train-00000-of-00001.parquet"]
    table = pq.read_table(files[0])
    assert table.num_rows == 0 and "text" in table.schema.names and "provenance" in table.schema.names
    assert result.records == 0 and funnel(result.stats)["drop_some"] == (3, 0, 0, {"drop_some": 3})


class _DedupRaw(Stage):
    """A global stage straight after the reader (raw items), dropping repeated data."""

    name = "dedup_raw"
    kind = "global"

    def run(self, records, ctx):
        seen = set()
        for r in records:
            key = json.dumps(r["data"], sort_keys=True)
            if key in seen:
                yield r, Drop("dup_raw")
            else:
                seen.add(key)
                yield r


def test_global_stage_first_accounts_for_unreadable_lines(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [{"a": 1}, b"{bad", {"a": 1}, {"a": 2}, b"[3]"])
    result = run_pipeline(Pipeline("g", JsonlReader([src]), [_DedupRaw()]), tmp_path / "run", quiet())
    assert [(r["line"], r["data"]) for r in data_rows(result.run_dir)] == [(1, {"a": 1}), (4, {"a": 2})]
    ledger = ledger_rows(result.run_dir)
    assert sorted((r["stage"], r["reason"], r["line"]) for r in ledger) == [
        ("dedup_raw", "dup_raw", 3), ("read", "bad_json", 2), ("read", "not_an_object", 5)]
    # the funnel accounts for every ledgered drop, including the unreadable lines
    assert result.stats["drops"] == len(ledger) == 3
    assert funnel(result.stats).get("read") == (5, 3, 3, {"bad_json": 1, "not_an_object": 1})
    assert funnel(result.stats)["dedup_raw"] == (3, 2, 2, {"dup_raw": 1})


# ---- concurrency -----------------------------------------------------------------------------------


def test_async_stage_runs_records_concurrently(tmp_path):
    hs.Sleepy.in_flight = hs.Sleepy.peak = 0
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(20)])
    result = run_pipeline(Pipeline("s", JsonlReader([src]), [hs.ImportItem(), hs.Sleepy()]), tmp_path / "run", quiet())
    assert result.records == 20 and all(r["tags"] == ["slept"] for r in data_rows(result.run_dir))
    assert hs.Sleepy.peak == 20  # all 20 in flight at once (concurrency 32); the speed: benchmarks/engine_overhead.py
    assert funnel(result.stats)["sleepy"] == (20, 20, 20, {})


def test_async_stage_concurrency_limit_is_respected(tmp_path):
    hs.Sleepy.in_flight = hs.Sleepy.peak = 0
    hs.SleepyFour.in_flight = hs.SleepyFour.peak = 0
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(20)])
    stages = [hs.ImportItem(), hs.SleepyFour({"delay_s": 0.02})]
    result = run_pipeline(Pipeline("s4", JsonlReader([src]), stages), tmp_path / "run", quiet())
    assert result.records == 20
    assert hs.SleepyFour.peak == 4


# ---- cache, resume, re-runs -------------------------------------------------------------------------


def test_cached_stage_is_not_called_again_after_losing_the_commit_markers(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(20)])
    counter = tmp_path / "calls.txt"
    cfg = {"counter": str(counter), "transient": [1], "permanent": [2]}

    def pipeline():
        return Pipeline("c", JsonlReader([src]), [hs.ImportItem(), hs.AsyncCounting(cfg), hs.Upper()], shard_size=6)

    first = run_pipeline(pipeline(), tmp_path / "run", quiet())
    assert len(hs.read_calls(counter)) == 20
    assert first.records == 18
    assert funnel(first.stats)["acounting"] == (20, 18, 18, {"llm_timeout": 1, "judged_bad": 1})
    assert (first.run_dir / "cache" / "stages.sqlite").exists()
    first_rows = data_rows(first.run_dir)

    assert drop_done_markers(first.run_dir) == 4
    second = run_pipeline(pipeline(), tmp_path / "run", quiet())
    calls = hs.read_calls(counter)
    # only the transient failure (not cached) is retried; every other result comes from the row cache
    assert calls[20:] == ["r01"]
    st = {s["name"]: s for s in second.stats["stages"]}["acounting"]
    assert st["cached"] == 19 and st["in"] == 20
    assert funnel(second.stats)["acounting"] == (20, 19, 19, {"judged_bad": 1})
    rows = data_rows(second.run_dir)
    assert [r["id"] for r in rows] == [f"r{n:02d}" for n in range(20) if n != 2]
    assert [r for r in rows if r["id"] != "r01"] == first_rows  # cached results give the same records
    assert all(r["tags"] == ["acounting-v1"] for r in rows)
    assert [(r["record_id"], r["reason"]) for r in ledger_rows(second.run_dir)] == [("r02", "judged_bad")]


def test_bumping_a_stage_version_invalidates_only_that_stage(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(12)])
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"

    def pipeline(second):
        return Pipeline("v", JsonlReader([src]), [hs.ImportItem(), hs.Counting({"counter": str(a)}),
                                                  second({"counter": str(b)})])

    run_pipeline(pipeline(hs.AsyncCounting), tmp_path / "run", quiet())
    assert (len(hs.read_calls(a)), len(hs.read_calls(b))) == (12, 12)
    result = run_pipeline(pipeline(hs.AsyncCountingV2), tmp_path / "run", quiet())
    assert (len(hs.read_calls(a)), len(hs.read_calls(b))) == (12, 24)
    st = {s["name"]: s for s in result.stats["stages"]}
    assert (st["counting"]["cached"], st["acounting"]["cached"]) == (12, 0)
    assert [r["tags"] for r in data_rows(result.run_dir)] == [["counting-v1", "acounting-v2"]] * 12


def test_completed_run_rerun_is_identical_and_does_no_work(tmp_path):
    src = main_input(tmp_path)
    counter = tmp_path / "calls.txt"

    def pipeline():
        return Pipeline("r", JsonlReader([src]), [*main_stages()[:-1], hs.Counting({"counter": str(counter)}),
                                                  hs.DedupText()], shard_size=7)

    first = run_pipeline(pipeline(), tmp_path / "run", quiet())
    data = {f.name: f.read_bytes() for f in sorted((first.run_dir / "data").glob("*.parquet"))}
    n_calls = len(hs.read_calls(counter))
    assert n_calls == 22
    second = run_pipeline(pipeline(), tmp_path / "run", quiet())
    assert len(hs.read_calls(counter)) == n_calls
    assert {f.name: f.read_bytes() for f in sorted((second.run_dir / "data").glob("*.parquet"))} == data
    assert counts_only(second.stats) == counts_only(first.stats)
    assert ledger_rows(second.run_dir) == ledger_rows(first.run_dir)
    # the same pipeline into a fresh directory gives the same rows
    fresh = run_pipeline(pipeline(), tmp_path / "fresh", quiet())
    assert data_rows(fresh.run_dir) == data_rows(first.run_dir)


def test_small_shards_give_the_same_result_as_one_shard(tmp_path):
    src = main_input(tmp_path)
    big = run_pipeline(Pipeline("m", JsonlReader([src]), main_stages()), tmp_path / "big", quiet())
    small = run_pipeline(Pipeline("m", JsonlReader([src]), main_stages(), shard_size=7), tmp_path / "small", quiet())
    assert data_rows(small.run_dir) == data_rows(big.run_dir)
    assert [r["id"] for r in data_rows(small.run_dir)] == EXPECTED_IDS
    assert funnel(small.stats) == EXPECTED_FUNNEL
    key = lambda r: (r["stage"], r["reason"], r["record_id"] or "", r["line"])  # noqa: E731
    assert sorted(map(key, ledger_rows(small.run_dir))) == sorted(map(key, ledger_rows(big.run_dir)))
    seg0 = sorted((small.run_dir / "stages").glob("00-*"))[0]
    assert len(list(seg0.glob("part-*.done.json"))) == 4  # 24 lines / 7
    files = sorted(f.name for f in (small.run_dir / "data").glob("*.parquet"))
    assert files == ["train-00000-of-00003.parquet", "train-00001-of-00003.parquet", "train-00002-of-00003.parquet"]
    assert [pq.ParquetFile(small.run_dir / "data" / f).metadata.num_rows for f in files] == [7, 7, 1]


def test_two_worker_processes_give_the_same_records(tmp_path):
    src = main_input(tmp_path)
    counters = {w: tmp_path / f"calls-{w}.txt" for w in (1, 2)}

    def pipeline(w):
        return Pipeline("w", JsonlReader([src]), [*main_stages()[:-1], hs.CPUWork(),
                                                  hs.Counting({"counter": str(counters[w])}), hs.DedupText()],
                        shard_size=5)

    one = run_pipeline(pipeline(1), tmp_path / "w1", quiet(workers=1))
    two = run_pipeline(pipeline(2), tmp_path / "w2", quiet(workers=2))
    rows1, rows2 = data_rows(one.run_dir), data_rows(two.run_dir)
    assert [r["id"] for r in rows2] == [r["id"] for r in rows1] == EXPECTED_IDS
    assert rows2 == rows1
    assert counts_only(two.stats) == counts_only(one.stats)
    key = lambda r: (r["stage"], r["reason"], r["record_id"] or "", r["line"])  # noqa: E731
    assert sorted(map(key, ledger_rows(two.run_dir))) == sorted(map(key, ledger_rows(one.run_dir)))
    pids = {line.split()[1] for line in counters[2].read_text().splitlines()}
    assert str(os.getpid()) not in pids  # the work ran in worker processes
    assert len(hs.read_calls(counters[2])) == 22

    # the row cache is shared by the workers: losing the commit markers costs no new calls
    drop_done_markers(two.run_dir)
    again = run_pipeline(pipeline(2), tmp_path / "w2", quiet(workers=2))
    assert len(hs.read_calls(counters[2])) == 22
    assert data_rows(again.run_dir) == rows1
    assert {s["name"]: s["cached"] for s in again.stats["stages"]}["counting"] == 22


# ---- consensus -------------------------------------------------------------------------------------


def consensus_input(tmp_path: Path) -> Path:
    modes = ["agree", "disagree", "two", "case", "seed", "none"]
    return write_lines(tmp_path / "c.jsonl", [item(n, f"{m} {n}") for n, m in enumerate(modes)])


@pytest.mark.parametrize("inner", [hs.Labeler, hs.AsyncLabeler], ids=["sync", "async"])
def test_consensus_keeps_agreement_and_ledgers_disagreement(tmp_path, inner):
    src = consensus_input(tmp_path)
    stage = Consensus(inner(), n=3)
    name = f"{inner.name}.consensus"
    assert stage.name == name
    result = run_pipeline(Pipeline("c", JsonlReader([src]), [hs.ImportItem(), stage]), tmp_path / "run",
                          quiet(seed=2))
    rows = {r["id"]: r for r in data_rows(result.run_dir)}
    assert sorted(rows) == ["r00", "r03"]
    assert rows["r00"]["tags"] == ["yes"] and rows["r03"]["tags"] == ["Yes"]
    ev = rows["r00"]["provenance"]
    assert [(e["stage"], e["decision"], e["reason"], e["model"], e["votes"]) for e in ev] == [
        (name, "modify", "3/3 agree", "m1", ["yes", "yes", "yes"])]
    assert ev[0]["cost"] == pytest.approx(0.75)
    assert rows["r03"]["provenance"][0]["votes"] == ["Yes", "YES", "yes"]  # agree() is case-insensitive

    ledger = {r["record_id"]: r for r in ledger_rows(result.run_dir)}
    assert sorted(ledger) == ["r01", "r02", "r04", "r05"]
    assert (ledger["r01"]["stage"], ledger["r01"]["reason"], ledger["r01"]["line"]) == (name, "no_consensus", 2)
    assert ledger["r01"]["votes"] == ["v0", "v1", "v2"] and ledger["r01"]["detail"] == "1/3 agree, quorum 3"
    assert ledger["r01"]["model"] == "m1" and ledger["r01"]["cost"] == pytest.approx(0.75)
    assert (ledger["r02"]["reason"], ledger["r02"]["votes"]) == ("no_consensus", ["a", "a", "b"])
    assert ledger["r02"]["detail"] == "2/3 agree, quorum 3"
    assert ledger["r04"]["votes"] == ["s2000", "s2001", "s2002"]  # ctx.sample_seed = seed * 1000 + sample
    assert (ledger["r05"]["reason"], ledger["r05"]["votes"]) == ("unlabelable", ["DROP:unlabelable"] * 3)
    assert funnel(result.stats)[name] == (6, 2, 2, {"no_consensus": 3, "unlabelable": 1})

    # consensus is row-cached: a re-run after losing the commit markers gives the same votes
    first_rows, first_ledger = data_rows(result.run_dir), ledger_rows(result.run_dir)
    drop_done_markers(result.run_dir)
    again = run_pipeline(Pipeline("c", JsonlReader([src]), [hs.ImportItem(), Consensus(inner(), n=3)]),
                         tmp_path / "run", quiet(seed=2))
    assert {s["name"]: s["cached"] for s in again.stats["stages"]}[name] == 6
    assert data_rows(again.run_dir) == first_rows
    assert ledger_rows(again.run_dir) == first_ledger


def test_consensus_quorum_two_of_three(tmp_path):
    src = consensus_input(tmp_path)
    stage = Consensus(hs.Labeler(), n=3, quorum=2)
    result = run_pipeline(Pipeline("c", JsonlReader([src]), [hs.ImportItem(), stage]), tmp_path / "run", quiet())
    rows = {r["id"]: r for r in data_rows(result.run_dir)}
    assert sorted(rows) == ["r00", "r02", "r03"]
    assert rows["r02"]["tags"] == ["a"]
    assert rows["r02"]["provenance"][0]["reason"] == "2/3 agree"
    assert rows["r02"]["provenance"][0]["votes"] == ["a", "a", "b"]
    ledger = {r["record_id"]: r for r in ledger_rows(result.run_dir)}
    assert ledger["r01"]["detail"] == "1/3 agree, quorum 2"
    assert funnel(result.stats)["labeler.consensus"] == (6, 3, 3, {"no_consensus": 2, "unlabelable": 1})


def test_consensus_default_votes_are_the_record_json(tmp_path):
    src = consensus_input(tmp_path)
    result = run_pipeline(Pipeline("c", JsonlReader([src]), [hs.ImportItem(), Consensus(hs.PlainLabeler(), n=3)]),
                          tmp_path / "run", quiet())
    rows = {r["id"]: r for r in data_rows(result.run_dir)}
    assert sorted(rows) == ["r00"]  # "case" votes differ as JSON: no custom agree()
    votes = rows["r00"]["provenance"][0]["votes"]
    assert len(votes) == 3 and len(set(votes)) == 1
    assert json.loads(votes[0])["tags"] == ["yes"] and "provenance" not in json.loads(votes[0])
    ledger = {r["record_id"]: r for r in ledger_rows(result.run_dir)}
    assert [json.loads(v)["tags"] for v in ledger["r03"]["votes"]] == [["Yes"], ["YES"], ["yes"]]


def test_consensus_rejects_bad_arguments():
    with pytest.raises(ValueError, match="map stage"):
        Consensus(hs.DropSome(), n=3)
    with pytest.raises(ValueError, match="quorum"):
        Consensus(hs.Labeler(), n=3, quorum=4)
    assert Consensus(hs.Labeler(), n=5).quorum == 5


def test_consensus_runs_use_sample_numbers_directly():
    seen = []

    class Probe(Stage):
        name = "probe"

        def process(self, record, ctx):
            seen.append((ctx.sample, ctx.sample_seed))
            return record

    res = Consensus(Probe(), n=4).process({"x": 1}, StageContext(seed=7))
    assert sorted(seen) == [(0, 7000), (1, 7001), (2, 7002), (3, 7003)]
    assert res.reason == "4/4 agree" and res.record == {"x": 1}


# ---- LLM from a stage ----------------------------------------------------------------------------


def test_stage_llm_calls_go_through_the_run_client_and_its_cache(tmp_path, llm_server):
    def handler(body, n):
        text = body["messages"][-1]["content"]
        if text.startswith("w3 "):
            return Reply(status=400, content="bad request")
        return Reply(f"label {text.split()[0]}", usage={"prompt_tokens": 10, "completion_tokens": 2})

    llm_server.script(handler)
    llm = LLMConfig.from_dict({"profiles": {"judge": {"base_url": llm_server.base_url, "model": "m",
                                                      "api_key": "k", "backoff_s": 0.01, "timeout_s": 5}}})
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(6)])

    def pipeline():
        return Pipeline("llm", JsonlReader([src]), [hs.ImportItem(), hs.AskLLM()])

    result = run_pipeline(pipeline(), tmp_path / "run", quiet(llm=llm))
    assert llm_server.chat_count == 6
    assert (result.run_dir / "cache" / "llm.sqlite").exists()
    rows = data_rows(result.run_dir)
    assert [(r["id"], r["tags"]) for r in rows] == [(f"r{n:02d}", [f"label w{n}"]) for n in (0, 1, 2, 4, 5)]
    ledger = ledger_rows(result.run_dir)
    assert [(r["stage"], r["reason"], r["record_id"], r["line"]) for r in ledger] == [
        ("ask", "llm_bad_request", "r03", 4)]
    st = {s["name"]: s for s in result.stats["stages"]}["ask"]
    assert st["llm"]["requests"] == 6 and st["llm"]["failures"] == 1
    assert st["llm"]["prompt_tokens"] == 50 and st["llm"]["completion_tokens"] == 10
    config = json.loads((result.run_dir / "config.json").read_text())
    assert config["options"]["llm"]["profiles"]["judge"]["api_key"] == "***"  # keys never written

    drop_done_markers(result.run_dir)
    again = run_pipeline(pipeline(), tmp_path / "run", quiet(llm=llm))
    assert llm_server.chat_count == 7  # only the failed call is repeated; the rest come from llm.sqlite
    assert data_rows(again.run_dir) == rows
    st = {s["name"]: s for s in again.stats["stages"]}["ask"]
    assert st["llm"]["cache_hits"] == 5 and st["llm"]["requests"] == 1


# ---- readers and the run directory ------------------------------------------------------------------


def test_jsonl_reader_items_and_rejects_in_file_order(tmp_path):
    a = write_lines(tmp_path / "a.jsonl", [{"x": 1}, b"nope", {"x": 2}])
    b = write_lines(tmp_path / "b.jsonl", [b'"s"', {"x": 3}])
    reader = JsonlReader([a, b])
    items = [it for shard in reader.shards(2) for it in shard]
    assert [len(s) for s in reader.shards(2)] == [2, 2, 1]
    assert items[0] == {"file": a.name, "line": 1, "data": {"x": 1}}
    assert (items[1].file, items[1].line, items[1].drop.reason) == (a.name, 2, "bad_json")
    assert items[2] == {"file": a.name, "line": 3, "data": {"x": 2}}
    assert (items[3].file, items[3].line, items[3].drop.reason) == (b.name, 1, "not_an_object")
    assert items[4] == {"file": b.name, "line": 2, "data": {"x": 3}}
    assert reader.estimate_total() == 5


def test_reader_input_errors(tmp_path):
    with pytest.raises(InputError, match="input not found"):
        JsonlReader([tmp_path / "missing.jsonl"])
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(InputError, match="unsupported input"):
        JsonlReader([tmp_path / "x.csv"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .* files in directory"):
        JsonlReader([tmp_path / "empty"])
    with pytest.raises(InputError, match="no input"):
        JsonlReader([])
    with pytest.raises(InputError, match="unsupported input"):
        ParquetReader([write_lines(tmp_path / "a.jsonl", [{"x": 1}])])


def test_directory_input_is_read_in_sorted_order(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    write_lines(d / "b.jsonl", [item(2)])
    write_lines(d / "a.jsonl", [item(1)])
    write_lines(d / "sub" / "c.jsonl", [item(3)])
    (d / "notes.txt").write_text("ignored")
    items = [it for shard in JsonlReader([d]).shards(10) for it in shard]
    assert [(Path(it["file"]).name, it["data"]["n"]) for it in items] == [("a.jsonl", 1), ("b.jsonl", 2), ("c.jsonl", 3)]


def test_parquet_reader_feeds_a_previous_runs_dataset(tmp_path):
    src = main_input(tmp_path)
    first = run_pipeline(Pipeline("m", JsonlReader([src]), main_stages()), tmp_path / "one", quiet())
    files = sorted((first.run_dir / "data").glob("*.parquet"))
    reader = ParquetReader(files)
    assert reader.estimate_total() == 15
    second = run_pipeline(Pipeline("p", reader, [hs.DropSome({"multiple_of": 5, "explicit": -1}),
                                                 hs.Annotate()], shard_size=4), tmp_path / "two", quiet())
    before = {r["id"]: r for r in data_rows(first.run_dir)}
    rows = data_rows(second.run_dir)
    assert [r["id"] for r in rows] == [i for i in EXPECTED_IDS if before[i]["n"] % 5 != 0]
    # provenance from the first run is carried; the second adds an event only for the annotation
    assert rows[[r["id"] for r in rows].index("r04-0")]["provenance"] == before["r04-0"]["provenance"] + [
        {"stage": "annotate", "version": "1", "decision": "modify", "reason": "note", "model": "m1",
         "votes": ["x", "y"], "cost": 0.5}]
    assert funnel(second.stats)["drop_some"] == (15, 13, 13, {"drop_some": 2})
    assert "read" not in funnel(second.stats)
    # the upstream run's stage trail is carried forward: the dataset names every stage since import
    for f in (second.run_dir / "data").glob("*.parquet"):
        trail = json.loads(pq.read_schema(f).metadata[b"rlclimb.stages"])
        assert [(t["name"], t["pipeline"]) for t in trail] == [(s.name, "m") for s in main_stages()] + [
            ("drop_some", "p"), ("annotate", "p")]
        assert trail[-1]["input"] == reader.fingerprint() != trail[0]["input"]


def test_run_directory_is_locked_while_in_use(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [item(1)])
    with RunDir(tmp_path / "run").lock(), pytest.raises(InputError, match="in use"):
        run_pipeline(Pipeline("l", JsonlReader([src]), [hs.ImportItem()]), tmp_path / "run", quiet())
    assert run_pipeline(Pipeline("l", JsonlReader([src]), [hs.ImportItem()]), tmp_path / "run", quiet()).records == 1


def test_stage_context_and_fingerprints():
    ctx = StageContext(seed=3)
    assert ctx.sample_seed == 3000 and ctx.for_sample(2).sample_seed == 3002 and ctx.sample == 0
    a, b = hs.DropSome(), hs.DropSome({"multiple_of": 4})
    assert a.fingerprint == hs.DropSome().fingerprint != b.fingerprint
    assert hs.AsyncCounting().fingerprint != hs.AsyncCountingV2().fingerprint
    assert b.describe()["config"] == {"multiple_of": 4, "explicit": 7}
    with pytest.raises(Exception, match="extra"):
        hs.DropSome({"nope": 1})
    assert Counter(s.kind for s in main_stages()) == Counter(
        {"map": 3, "filter": 2, "expand": 1, "global": 1})


class _Raw(Stage):
    """A map without an output model: the engine has to infer the schema."""

    name = "raw"

    def process(self, record, ctx):
        d = record["data"]
        return {"id": d["id"], "x": d.get("x")}


def test_schemaless_pipeline_writes_one_consistent_dataset(tmp_path):
    # the first shard has only nulls in "x", the second only strings
    src = write_lines(tmp_path / "in.jsonl", [{"id": f"r{i}", "x": None if i < 3 else f"v{i}"} for i in range(6)])
    result = run_pipeline(Pipeline("raw", JsonlReader([src]), [_Raw()], shard_size=3), tmp_path / "run", quiet())
    files = sorted((result.run_dir / "data").glob("*.parquet"))
    assert len(files) == 2
    schemas = [pq.read_schema(f) for f in files]
    assert schemas[0].remove_metadata().equals(schemas[1].remove_metadata()), [str(s.field("x").type) for s in schemas]
    for sch in schemas:  # every data file names the stages its records passed
        assert [t["name"] for t in json.loads(sch.metadata[b"rlclimb.stages"])] == ["raw"]
    table = pq.read_table(result.run_dir / "data")  # readable as one dataset (as HF datasets reads it)
    assert table.column("x").to_pylist() == [None, None, None, "v3", "v4", "v5"]


def test_changed_input_or_config_is_recomputed_in_the_same_directory(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(6)])
    out = tmp_path / "run"
    first = run_pipeline(Pipeline("x", JsonlReader([src]), [hs.ImportItem(), hs.DropSome()]), out, quiet())
    assert [r["id"] for r in data_rows(out)] == ["r01", "r02", "r04", "r05"] and first.records == 4
    time.sleep(0.01)
    write_lines(src, [item(n) for n in range(8)])  # the input changed: two more items
    second = run_pipeline(Pipeline("x", JsonlReader([src]), [hs.ImportItem(), hs.DropSome()]), out, quiet())
    assert [r["id"] for r in data_rows(out)] == ["r01", "r02", "r04", "r05"] and second.records == 4
    assert funnel(second.stats)["drop_some"] == (8, 4, 4, {"drop_some": 3, "explicit_drop": 1})
    third = run_pipeline(Pipeline("x", JsonlReader([src]), [hs.ImportItem(), hs.DropSome({"multiple_of": 2})]),
                         out, quiet())  # the stage config changed
    assert [r["id"] for r in data_rows(out)] == ["r01", "r03", "r05"] and third.records == 3
    assert funnel(third.stats)["drop_some"] == (8, 3, 3, {"drop_some": 4, "explicit_drop": 1})
    assert len(ledger_rows(out)) == 5 == third.stats["drops"]


def test_setup_runs_once_before_records_and_default_options_work(tmp_path):
    calls: list[str] = []

    class WithSetup(Stage):
        name = "with_setup"

        def setup(self, ctx):
            calls.append(f"setup {ctx.run_dir}")
            self.suffix = "!"

        def process(self, record, ctx):
            calls.append(record["id"])
            record["text"] += self.suffix
            return record

    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(5)])
    result = run_pipeline(Pipeline("s", JsonlReader([src]), [hs.ImportItem(), WithSetup()], shard_size=2),
                          tmp_path / "run")  # default options: progress bars on a non-terminal
    assert calls == [f"setup {tmp_path / 'run'}", "r00", "r01", "r02", "r03", "r04"]
    assert [r["text"] for r in data_rows(result.run_dir)] == [f"w{n} x{n % 4}!" for n in range(5)]


class _BrokenSetup(Stage):
    name = "needs_model"
    version = "1"

    def setup(self, ctx: StageContext) -> None:
        raise FileNotFoundError("/models/missing.bin")

    def process(self, record, ctx):
        return record


class _BrokenGlobalSetup(_BrokenSetup):
    kind = "global"

    def run(self, records, ctx):
        yield from records


@pytest.mark.parametrize("stage", [_BrokenSetup, _BrokenGlobalSetup])
def test_stage_setup_failure_is_one_line_naming_the_stage(tmp_path, stage):
    from rlclimb.pipelines.stage import ConfigError

    src = write_lines(tmp_path / "in.jsonl", [item(n) for n in range(3)])
    with pytest.raises(ConfigError, match=r"^stage needs_model: setup failed: FileNotFoundError: /models/missing.bin$"):
        run_pipeline(Pipeline("main", JsonlReader([src]), [hs.ImportItem(), stage()]), tmp_path / "run", quiet())
