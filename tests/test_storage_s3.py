"""Run directories and inputs on object storage: a real S3-compatible server (moto's) on 127.0.0.1.

A run at `s3://...` is killed (SIGKILL) mid-LLM-stage and resumed from another machine's point of
view (a fresh local mirror): it must give the same dataset, ledger and funnel as a local run, with
no duplicated rows and no repeated LLM calls beyond those in flight at the kill. Inputs are read
from the bucket too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_resume_kill import (
    CONCURRENCY,
    DISTINCT_REQUESTS,
    RECORDS,
    SCRIPT,
    check_no_repeated_calls,
    check_same_as_baseline,
    data_rows,
    funnel,
    handler,
    ledger,
    request_counts,
    write_input,
)

from rlclimb.pipelines.scripted_server import ScriptedServer

s3fs = pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from conftest import BUCKET  # noqa: E402 (the s3 fixture, one server for the session, is in conftest)


def download(fs, url: str, dest: Path) -> Path:
    """What the store holds of a run (the files a reader of the bucket sees)."""
    fs.invalidate_cache()
    fs.get(url.removeprefix("s3://").rstrip("/") + "/", str(dest), recursive=True)
    return dest


def env_with_mirrors(path: Path) -> dict:
    return {**os.environ, "RLCLIMB_MIRRORS": str(path)}


def command(src: str, out: str, server: ScriptedServer) -> list[str]:
    return [sys.executable, str(SCRIPT), "--input", src, "--out", out, "--base-url", server.base_url,
            "--concurrency", str(CONCURRENCY), "--shard-size", "10"]


def run_to_end(src: str, out: str, server: ScriptedServer, mirrors: Path) -> None:
    proc = subprocess.run(command(src, out, server), capture_output=True, text=True, timeout=180, env=env_with_mirrors(mirrors))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"{RECORDS} records"


def run_and_kill(src: str, out: str, server: ScriptedServer, at_requests: int, mirrors: Path) -> int:
    proc = subprocess.Popen(command(src, out, server), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env_with_mirrors(mirrors))
    deadline = time.monotonic() + 120
    try:
        while server.chat_count < at_requests:
            if proc.poll() is not None:
                pytest.fail(f"run ended (rc {proc.returncode}) before {at_requests} requests: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("no progress within 120 s")
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
        seen = server.chat_count
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return seen


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The uninterrupted run, local input and local run directory."""
    tmp = tmp_path_factory.mktemp("baseline")
    src = write_input(tmp / "qa.jsonl")
    with ScriptedServer(handler, latency_s=0.05) as server:
        proc = subprocess.run(command(str(src), str(tmp / "run"), server), capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(request_counts(server)) == DISTINCT_REQUESTS
    return {"src": src, "run": tmp / "run"}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_killed_run_on_s3_resumes_from_the_store(s3, baseline, tmp_path):
    src = f"s3://{BUCKET}/inputs/kill/qa.jsonl"
    s3.put_file(str(baseline["src"]), src)
    out = f"s3://{BUCKET}/runs/killed"
    with ScriptedServer(handler, latency_s=0.05) as server:
        at_kill = run_and_kill(src, out, server, at_requests=20, mirrors=tmp_path / "machine-a")
        assert 20 <= at_kill < DISTINCT_REQUESTS
        s3.invalidate_cache()
        stored = s3.find(out)
        assert not any(p.endswith("/stats.json") for p in stored)  # the killed run did not finish
        assert sum(p.endswith(".done.json") for p in stored) < 6
        assert any("/cache/llm/" in p for p in stored) and any("/cache/stages/" in p for p in stored)
        # resumed on "another machine": a new, empty mirror; everything comes from the store
        run_to_end(src, out, server, mirrors=tmp_path / "machine-b")
        check_no_repeated_calls(server, kills=1)
    got = download(s3, out, tmp_path / "got")
    check_same_as_baseline(got, baseline)
    assert not (got / ".lease.json").exists()  # released at the end
    stats = json.loads((got / "stats.json").read_text())
    assert stats["records"] == RECORDS
    assert [f.name for f in sorted((got / "data").glob("*.parquet"))] == [f.name for f in sorted((baseline["run"] / "data").glob("*.parquet"))]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_qa_jsonl_cli_reads_and_writes_s3(s3, tmp_path):
    """`rlclimb run qa-jsonl --input s3://.../ --out s3://...` == the same run on local files."""
    local_in = tmp_path / "in"
    local_in.mkdir()
    write_input(local_in / "a.jsonl")
    (local_in / "b.jsonl").write_text("".join(json.dumps({"question": f"What is {i} * 3?", "answer": 3 * i}) + "\n" for i in range(30)))
    s3.put(str(local_in) + "/", f"{BUCKET}/inputs/cli/in/", recursive=True)
    env = env_with_mirrors(tmp_path / "mirrors")
    cli = [sys.executable, "-m", "rlclimb.pipelines.cli", "run", "qa-jsonl", "--quiet", "--set", "shard_size=7"]
    local = subprocess.run([*cli, "--input", str(local_in), "--out", str(tmp_path / "local")], capture_output=True, text=True, timeout=300, env=env)
    assert local.returncode == 0, local.stderr[-3000:]
    out = f"s3://{BUCKET}/runs/cli"
    remote = subprocess.run([*cli, "--input", f"s3://{BUCKET}/inputs/cli/in/", "--out", out], capture_output=True, text=True, timeout=300, env=env)
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert f"-> {out}/data" in remote.stdout
    got = download(s3, out, tmp_path / "got")
    assert data_rows(got) == data_rows(tmp_path / "local") and len(data_rows(got)) > 50
    assert ledger(got) == ledger(tmp_path / "local")
    assert funnel(got) == funnel(tmp_path / "local")
    config = json.loads((got / "config.json").read_text())
    assert config["inputs"]["files"] == [f"s3://{BUCKET}/inputs/cli/in/a.jsonl", f"s3://{BUCKET}/inputs/cli/in/b.jsonl"]
    # a second invocation reuses every committed shard (same input fingerprint from the ETags)
    again = subprocess.run([*cli, "--input", f"s3://{BUCKET}/inputs/cli/in/", "--out", out], capture_output=True, text=True, timeout=300,
                           env=env_with_mirrors(tmp_path / "other"))
    assert again.returncode == 0, again.stderr[-3000:]
    second = download(s3, out, tmp_path / "again")
    assert data_rows(second) == data_rows(got)
    before, after = (json.loads((d / "config.json").read_text()) for d in (got, second))
    assert after["segments"] == before["segments"], (before["inputs"], after["inputs"])
    # the reading commands take the URL too
    base = [sys.executable, "-m", "rlclimb.pipelines.cli"]
    status = subprocess.run([*base, "status", out, "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert status.returncode == 0, status.stderr[-2000:]
    assert json.loads(status.stdout)["complete"] is True
    table = subprocess.run([*base, "status", out], capture_output=True, text=True, timeout=120, env=env)
    assert table.returncode == 0 and "complete" in table.stdout and "dedup_exact" in table.stdout, table.stderr[-2000:]
    exported = subprocess.run([*base, "export", out, "--out", str(tmp_path / "out.jsonl")], capture_output=True, text=True, timeout=120, env=env)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == len(data_rows(got))
    gc = subprocess.run([*base, "gc", out], capture_output=True, text=True, timeout=120, env=env)
    assert gc.returncode == 0 and "removed 0 unused segments" in gc.stdout, gc.stderr[-2000:]


def test_s3_input_errors_name_the_url(s3, tmp_path):
    from rlclimb.pipelines.readers import InputError, JsonlReader, check_inputs

    with pytest.raises(InputError, match=f"input not found: s3://{BUCKET}/nope.jsonl"):
        JsonlReader([f"s3://{BUCKET}/nope.jsonl"])
    s3.pipe_file(f"{BUCKET}/inputs/err/x.txt", b"hello")
    with pytest.raises(InputError, match="no .jsonl"):
        JsonlReader([f"s3://{BUCKET}/inputs/err/"])
    with pytest.raises(InputError, match="local files only"):
        check_inputs([f"s3://{BUCKET}/inputs/err/x.txt"], (".txt",))


def test_foreign_bucket_prefix_is_refused(s3, tmp_path, monkeypatch):
    """rlclimb replaces files in its run directories: a prefix holding other objects is not one."""
    from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
    from rlclimb.pipelines.readers import InputError, JsonlReader
    from rlclimb.stages.qa.importer import ImportQA

    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m"))
    s3.pipe_file(f"{BUCKET}/someone/else.csv", b"a,b\n")
    src = write_input(tmp_path / "qa.jsonl")
    with pytest.raises(InputError, match="not an rlclimb run directory"):
        run_pipeline(Pipeline("p", JsonlReader([src]), [ImportQA()]), f"s3://{BUCKET}/someone", RunOptions(progress=False))
    s3.invalidate_cache()
    assert s3.cat_file(f"{BUCKET}/someone/else.csv") == b"a,b\n"  # untouched


def test_lease_refuses_a_second_writer_and_takes_over_a_dead_one(s3, tmp_path):
    from rlclimb.pipelines.storage import Lease, LeaseHeld

    url = f"s3://{BUCKET}/runs/leased"
    first = Lease(url, ttl=30, settle=0.05)
    first.acquire()
    try:
        with pytest.raises(LeaseHeld, match="in use by another rlclimb process"):
            Lease(url, ttl=30, settle=0.05).acquire()
    finally:
        first.release()
    # a holder that died on this host (its pid is gone) is taken over without waiting for the TTL
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    s3.pipe_file(f"{BUCKET}/runs/leased/.lease.json", json.dumps(
        {"owner": "x", "host": os.uname().nodename, "pid": int(dead), "expires": time.time() + 600}).encode())
    taker = Lease(url, ttl=30, settle=0.05)
    taker.acquire()
    taker.release()
    s3.invalidate_cache()
    assert not s3.exists(f"{BUCKET}/runs/leased/.lease.json")


def test_object_kv_on_s3(s3):
    from rlclimb.pipelines.kvstore import ObjectKV

    kv = ObjectKV(f"s3://{BUCKET}/kv")
    kv.put("stage:abc", b"one")
    kv.put("stage:def", b"two")
    assert kv.get("stage:abc") == b"one" and kv.get("missing") is None
    assert kv.get_many(["stage:abc", "missing", "stage:def"]) == {"stage:abc": b"one", "stage:def": b"two"}
    assert len(ObjectKV(f"s3://{BUCKET}/kv")) == 2


def test_parts_without_a_marker_are_not_trusted(s3, tmp_path, monkeypatch):
    """A part whose done marker never reached the store (a kill between the two PUTs) is pulled
    but not read, and is recomputed."""
    from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
    from rlclimb.pipelines.readers import JsonlReader
    from rlclimb.stages.qa.importer import ImportQA

    src = write_input(tmp_path / "qa.jsonl")
    out = f"s3://{BUCKET}/runs/markers"
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m1"))
    pipe = lambda: Pipeline("p", JsonlReader([src]), [ImportQA()], shard_size=10)  # noqa: E731
    first = run_pipeline(pipe(), out, RunOptions(progress=False))
    s3.invalidate_cache()
    markers = sorted(p for p in s3.find(f"{BUCKET}/runs/markers/stages") if p.endswith("part-00002.done.json"))
    assert len(markers) == 1
    part = markers[0].replace(".done.json", ".parquet")
    s3.rm_file(markers[0])
    s3.pipe_file(part, b"not parquet: a part cut short")  # what a non-atomic writer could leave
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m2"))
    again = run_pipeline(pipe(), out, RunOptions(progress=False))
    assert again.records == first.records
    got = download(s3, out, tmp_path / "got")
    assert data_rows(got) == data_rows(first.run_dir)
    assert pq.read_table(got / "data").num_rows == first.records


def test_worker_processes_commit_to_s3(s3, tmp_path, monkeypatch):
    """Sync segments in spawned worker processes: each worker pushes its own commits."""
    from rlclimb.pipelines.definitions import PIPELINES
    from rlclimb.pipelines.engine import RunOptions, run_pipeline

    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m"))
    src = write_input(tmp_path / "qa.jsonl")
    local = run_pipeline(PIPELINES["qa-jsonl"]([str(src)], {}, 9), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/workers"
    run_pipeline(PIPELINES["qa-jsonl"]([str(src)], {}, 9), out, RunOptions(progress=False, workers=2))
    got = download(s3, out, tmp_path / "got")
    assert data_rows(got) == data_rows(local.run_dir)
    assert ledger(got) == ledger(local.run_dir) and funnel(got) == funnel(local.run_dir)


def test_memory_filesystem_run_and_resume(tmp_path, monkeypatch):
    """Any fsspec filesystem, not only S3: memory:// (in-process), resumed from a fresh mirror
    after its done markers are lost: the row cache (objects) answers, no shard is wrong."""
    import fsspec

    from rlclimb.pipelines.definitions import PIPELINES
    from rlclimb.pipelines.engine import RunOptions, run_pipeline

    src = write_input(tmp_path / "qa.jsonl")
    fs = fsspec.filesystem("memory")
    fs.put_file(str(src), "/in/qa.jsonl")
    local = run_pipeline(PIPELINES["qa-jsonl"]([str(src)], {}, 9), tmp_path / "local", RunOptions(progress=False))
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m1"))
    run_pipeline(PIPELINES["qa-jsonl"](["memory://in/qa.jsonl"], {}, 9), "memory://runs/mem", RunOptions(progress=False))
    for marker in [p for p in fs.find("/runs/mem/stages") if p.endswith(".done.json")][:3]:
        fs.rm_file(marker)
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m2"))
    again = run_pipeline(PIPELINES["qa-jsonl"](["memory://in/qa.jsonl"], {}, 9), "memory://runs/mem", RunOptions(progress=False))
    fs.get("/runs/mem/", str(tmp_path / "got"), recursive=True)
    got = tmp_path / "got"
    assert data_rows(got) == data_rows(local.run_dir) == data_rows(again.run_dir)
    assert ledger(got) == ledger(local.run_dir) and funnel(got) == funnel(local.run_dir)


def test_parquet_inputs_from_s3(s3, tmp_path, monkeypatch):
    """A previous run's dataset read back from the bucket: same batches, schema, total and stage
    trail as from local disk, and a fingerprint that only the object's content changes."""
    from rlclimb.pipelines.definitions import PIPELINES
    from rlclimb.pipelines.engine import RunOptions, run_pipeline
    from rlclimb.pipelines.engine.plan import upstream_trail
    from rlclimb.pipelines.readers import ParquetReader

    src = write_input(tmp_path / "qa.jsonl")
    first = run_pipeline(PIPELINES["qa-jsonl"]([str(src)], {}, 9), tmp_path / "first", RunOptions(progress=False))
    s3.put(str(first.run_dir / "data") + "/", f"{BUCKET}/inputs/parquet/", recursive=True)
    local, remote = ParquetReader([str(first.run_dir / "data")]), ParquetReader([f"s3://{BUCKET}/inputs/parquet/"])
    assert remote.schema == local.schema and remote.estimate_total() == local.estimate_total() > 0
    assert [b.to_pylist() for b in remote.shards(7)] == [b.to_pylist() for b in local.shards(7)]
    assert upstream_trail(remote) == upstream_trail(local) != []
    fp = remote.fingerprint()
    assert ParquetReader([f"s3://{BUCKET}/inputs/parquet/"]).fingerprint() == fp
    name = sorted(s3.find(f"{BUCKET}/inputs/parquet/"))[0]
    s3.pipe_file(name, (first.run_dir / "ledger" / "part-00000.parquet").read_bytes())  # other content
    assert ParquetReader([f"s3://{BUCKET}/inputs/parquet/"]).fingerprint() != fp


def test_unusable_out_url_is_one_clear_error(s3, tmp_path, monkeypatch):
    from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
    from rlclimb.pipelines.readers import InputError, JsonlReader
    from rlclimb.stages.qa.importer import ImportQA

    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m"))
    src = write_input(tmp_path / "qa.jsonl")
    with pytest.raises(InputError, match="--out s3://no-such-bucket-here/run: cannot write there"):
        run_pipeline(Pipeline("p", JsonlReader([src]), [ImportQA()]), "s3://no-such-bucket-here/run", RunOptions(progress=False))


def test_a_lease_taken_over_is_not_renewed(s3):
    """A holder paused past its TTL finds the lease another run took: it stops renewing (and
    says so) instead of writing over the new holder's."""
    from rlclimb.pipelines.storage import Lease

    url = f"s3://{BUCKET}/runs/taken"
    old = Lease(url, ttl=0.6, settle=0.05)
    old.acquire()
    s3.pipe_file(f"{BUCKET}/runs/taken/.lease.json", json.dumps(
        {"owner": "new", "host": "elsewhere", "pid": 1, "expires": time.time() + 600}).encode())
    deadline = time.monotonic() + 30
    while not old.lost and time.monotonic() < deadline:
        time.sleep(0.05)
    assert old.lost
    assert json.loads(s3.cat_file(f"{BUCKET}/runs/taken/.lease.json"))["owner"] == "new"
    old.release()  # not ours any more: left alone
    assert json.loads(s3.cat_file(f"{BUCKET}/runs/taken/.lease.json"))["owner"] == "new"
