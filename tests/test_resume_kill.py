"""Kill -9 a run that is making LLM calls, resume it, and compare with an uninterrupted run.

The pipeline (tests/helpers/llm_pipeline.py) runs in a subprocess against a real HTTP server
(ScriptedServer) in this process, which counts every chat request it receives. A resumed run must
give exactly the uninterrupted run's dataset and ledger and must not repeat finished LLM calls: at
most the calls in flight at the kill (<= the profile's concurrency) are sent twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.scripted_server import Reply, ScriptedServer
from rlclimb.schemas.io import read_rows

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "helpers" / "llm_pipeline.py"
CONCURRENCY = 4
LATENCY_S = 0.05
N_LINES = 60
DISTINCT_REQUESTS = 54  # 60 lines - 1 bad JSON - 1 missing answer - 4 exact repeats (same request)
RECORDS = 52  # 58 imported - 6 duplicates (4 exact, 2 differing only in case)


def label_of(question: str) -> str:
    return "label-" + hashlib.sha256(question.encode()).hexdigest()[:12]


def handler(body: dict, n: int) -> Reply:
    if "messages" not in body:  # a request cut short by the kill (headers sent, body not)
        return Reply(status=400, content="truncated request")
    return Reply(label_of(body["messages"][-1]["content"]))


def write_input(path: Path) -> Path:
    lines = []
    for i in range(N_LINES):
        if i == 12:
            lines.append('{"question": "broken line')
        elif i == 26:
            lines.append(json.dumps({"question": f"Question {i}: what is {i} + {i}?"}))
        elif 50 <= i <= 53:  # the very same item again: the same LLM request
            j = i - 50
            lines.append(json.dumps({"question": f"Question {j}: what is {j} + {j}?", "answer": 2 * j}))
        elif i in (54, 55):  # a case variant: another LLM request, then a duplicate for dedup
            j = i - 50
            lines.append(json.dumps({"question": f"QUESTION {j}: WHAT IS {j} + {j}?", "answer": 2 * j}))
        else:
            lines.append(json.dumps({"question": f"Question {i}: what is {i} + {i}?", "answer": 2 * i}))
    path.write_text("\n".join(lines) + "\n")
    return path


def command(src: Path, out: Path, server: ScriptedServer) -> list[str]:
    return [sys.executable, str(SCRIPT), "--input", str(src), "--out", str(out), "--base-url", server.base_url,
            "--concurrency", str(CONCURRENCY), "--shard-size", "10"]


def run_to_end(src: Path, out: Path, server: ScriptedServer) -> None:
    proc = subprocess.run(command(src, out, server), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"{RECORDS} records"


def run_and_kill(src: Path, out: Path, server: ScriptedServer, at_requests: int) -> int:
    """Start the run, SIGKILL it once the server has received `at_requests` chat requests."""
    proc = subprocess.Popen(command(src, out, server), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while server.chat_count < at_requests:
            if proc.poll() is not None:
                pytest.fail(f"run ended (rc {proc.returncode}) before {at_requests} requests: "
                            f"{proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("no progress within 60 s")
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
        seen = server.chat_count
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return seen


def data_rows(run_dir: Path) -> list[dict]:
    return [r for f in sorted((run_dir / "data").glob("*.parquet")) for r in read_rows(f)]


def ledger(run_dir: Path) -> list[tuple]:
    single = run_dir / "ledger.parquet"
    rows = pq.read_table(single if single.exists() else run_dir / "ledger").to_pylist()
    return sorted((r["stage"], r["reason"], r["record_id"] or "", r["line"]) for r in rows)


def funnel(run_dir: Path) -> dict:
    stats = json.loads((run_dir / "stats.json").read_text())
    return {s["name"]: (s["in"], s["kept"], s["out"], s["dropped"]) for s in stats["stages"]}


def request_counts(server: ScriptedServer) -> Counter:
    """Complete chat requests received, by their messages. A kill can cut a request short after
    its headers (the server then sees an empty body): those are not requests the client made twice."""
    return Counter(json.dumps(b["messages"], sort_keys=True) for b in server.requests if "messages" in b)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The uninterrupted run."""
    tmp = tmp_path_factory.mktemp("baseline")
    src = write_input(tmp / "qa.jsonl")
    with ScriptedServer(handler, latency_s=LATENCY_S) as server:
        run_to_end(src, tmp / "run", server)
        counts = request_counts(server)
        max_in_flight = server.max_in_flight
    return {"src": src, "run": tmp / "run", "counts": counts, "max_in_flight": max_in_flight}


def test_uninterrupted_run(baseline):
    run, counts = baseline["run"], baseline["counts"]
    rows = data_rows(run)
    assert len(rows) == RECORDS and len({r["id"] for r in rows}) == RECORDS
    assert all(r["tags"] == [label_of(r["question"])] for r in rows)
    # every distinct request is sent exactly once (repeats come from the LLM cache)
    assert len(counts) == DISTINCT_REQUESTS and set(counts.values()) == {1}
    assert baseline["max_in_flight"] <= CONCURRENCY
    f = funnel(run)
    assert f["judge"] == (58, 58, 58, {})
    assert f["dedup_exact"] == (58, 52, 52, {"duplicate_exact": 6})
    assert sorted((s, r, line) for s, r, _, line in ledger(run)) == sorted(
        [("read", "bad_json", 13), ("import", "missing_answer", 27)]
        + [("dedup_exact", "duplicate_exact", line) for line in (51, 52, 53, 54, 55, 56)])
    stats = json.loads((run / "stats.json").read_text())
    judge = next(s for s in stats["stages"] if s["name"] == "judge")
    assert judge["llm"]["requests"] == DISTINCT_REQUESTS and judge["llm"]["cache_hits"] == 4
    assert (run / "cache" / "llm.sqlite").exists() and (run / "cache" / "stages.sqlite").exists()


def check_same_as_baseline(run: Path, baseline: dict) -> None:
    rows, expected = data_rows(run), data_rows(baseline["run"])
    assert [r["id"] for r in rows] == [r["id"] for r in expected]  # same set and order
    assert len({r["id"] for r in rows}) == len(rows) == RECORDS  # no duplicates
    assert rows == expected  # identical rows
    assert ledger(run) == ledger(baseline["run"])
    assert funnel(run) == funnel(baseline["run"])


def check_no_repeated_calls(server: ScriptedServer, kills: int) -> None:
    counts = request_counts(server)
    assert len(counts) == DISTINCT_REQUESTS  # every request was made
    repeats = sum(counts.values()) - DISTINCT_REQUESTS
    # only calls in flight at a kill may be sent again
    assert repeats <= kills * CONCURRENCY, f"{repeats} repeated calls: {counts.most_common(5)}"
    assert max(counts.values()) <= 1 + kills
    assert server.max_in_flight <= CONCURRENCY


def test_kill_and_resume(baseline, tmp_path):
    run = tmp_path / "run"
    with ScriptedServer(handler, latency_s=LATENCY_S) as server:
        at_kill = run_and_kill(baseline["src"], run, server, at_requests=20)
        assert 20 <= at_kill < DISTINCT_REQUESTS
        assert not (run / "stats.json").exists()  # the killed run did not finish
        seg0 = sorted((run / "stages").glob("00-*"))[0]
        assert len(list(seg0.glob("part-*.done.json"))) < 6
        run_to_end(baseline["src"], run, server)
        check_no_repeated_calls(server, kills=1)
    check_same_as_baseline(run, baseline)


def test_killed_twice_then_resumed(baseline, tmp_path):
    run = tmp_path / "run"
    with ScriptedServer(handler, latency_s=LATENCY_S) as server:
        first = run_and_kill(baseline["src"], run, server, at_requests=9)
        second = run_and_kill(baseline["src"], run, server, at_requests=first + 25)
        assert second < DISTINCT_REQUESTS + CONCURRENCY
        run_to_end(baseline["src"], run, server)
        check_no_repeated_calls(server, kills=2)
    check_same_as_baseline(run, baseline)
