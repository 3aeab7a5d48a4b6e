"""The Ray executor with its run directory and inputs on S3 (moto's server on 127.0.0.1), on a
real two-node cluster whose nodes share no mount with the driver: each node runs in a mount
namespace of its own with a private tmpfs over the driver's directory (where its mirrors live),
so a worker that read or wrote the driver's local files (a scratch dir, a mirror) would not find
them, and the driver would not see what the worker wrote. Everything must go through the store:
JSONL and Parquet inputs read by the workers, MinHash signatures, the JSONL read's chunks.

Same datasets, ledgers, funnels and global-stage reports as the local executor; a driver killed
mid-stage resumes (from a fresh mirror) without loss or duplication.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import BUCKET
from test_ray_cluster import (
    TESTS,
    Cluster,
    _forget_auth,
    outputs,
    reports,
    write_clusters,
    write_qa,
)
from test_storage_s3 import download

from rlclimb.pipelines import readers_pdf
from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.readers import JsonlReader, ParquetReader
from rlclimb.pipelines.stage import Record, Stage, StageContext
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.qa.importer import ImportQA
from rlclimb.stages.text import ValidateQA

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

GLOBAL_STAGES = ("dedup_exact", "dedup_minhash", "decontam")


def _private(directory: Path) -> list[str] | None:
    """A command prefix that runs `ray start` with a private tmpfs over `directory` (None: this
    machine does not permit mount namespaces; the nodes then see the driver's files)."""
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        return None
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount -t tmpfs rlclimb-private {directory} && exec "$@"', "sh"]


@pytest.fixture(scope="module")
def url_cluster(s3):
    """(cluster, the driver's own directory, whether the nodes are really kept out of it)."""
    root = Path(tempfile.mkdtemp(prefix="rlc-rayurl-", dir="/tmp"))  # short: Ray's socket paths must fit
    driver = root / "driver"
    driver.mkdir()
    c = Cluster(root)  # its environment: this process's, with the moto endpoint and credentials
    c.env["RLCLIMB_MIRRORS"] = str(root / "nodes")  # the nodes' mirrors: not the driver's
    prefix = _private(driver)
    try:
        c._ray("start", "--head", f"--port={c.port}", "--num-cpus=1", "--node-ip-address=127.0.0.1",
               "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={root / 'ray'}", prefix=prefix)
        c.add_node(prefix=prefix)
        with pytest.MonkeyPatch.context() as mp:
            for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_USAGE_STATS_ENABLED"):
                mp.setenv(k, c.env[k])
            mp.setenv("RAY_ADDRESS", c.address)
            _forget_auth()
            c.connect()  # one driver connection for the module's runs (as in test_ray_cluster.py)
            if prefix is not None:
                _check_nodes_cannot_see(driver)
            yield c, driver, prefix is not None
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.stop()
        _forget_auth()


def _sees(path: str) -> bool:
    return Path(path).exists()


def _check_nodes_cannot_see(driver: Path) -> None:
    """The premise of this module: a file the driver writes in its directory is on no node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = driver / "probe"
    probe.write_text("driver only")
    try:
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        task = ray.remote(num_cpus=0)(_sees)
        seen = ray.get([task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(str(probe))
                        for n in nodes])
    finally:
        probe.unlink()
    assert len(nodes) == 2 and seen == [False, False], seen


def _driver_mirrors(monkeypatch, driver: Path, name: str) -> Path:
    path = driver / name
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(path))
    return path


def _stored(s3, prefix: str) -> list[str]:
    s3.invalidate_cache()
    return s3.find(f"{BUCKET}/{prefix}")


# ---- qa-jsonl: JSONL input at a URL, exact + MinHash dedup, decontam ------------------------------


def test_qa_jsonl_at_urls_matches_local(url_cluster, s3, tmp_path, monkeypatch):
    _, driver, private = url_cluster
    _driver_mirrors(monkeypatch, driver, "qa")
    src, bench = write_qa(tmp_path)
    s3.put_file(str(src), f"{BUCKET}/inputs/url-qa/qa.jsonl")
    sections = {"decontam": {"benchmarks": [str(bench)]}}
    local = run_pipeline(PIPELINES["qa-jsonl"]([str(src)], sections, 17), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/url-qa"
    run_pipeline(PIPELINES["qa-jsonl"]([f"s3://{BUCKET}/inputs/url-qa/qa.jsonl"], sections, 17), out,
                 RunOptions(engine="ray", progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outputs(got) == outputs(local.run_dir)
    assert {"bad_json", "duplicate_exact", "duplicate_minhash", "benchmark_match"} <= {r["reason"] for r in outputs(got)[1]}
    assert reports(got, GLOBAL_STAGES) == reports(local.run_dir, GLOBAL_STAGES)
    assert "store" in json.loads((got / "reports" / "dedup_minhash.json").read_text())["spill"]["engine"]
    assert not [p for p in _stored(s3, "runs/url-qa") if "/tmp/" in p]  # the scratch is gone with the run
    print("nodes kept out of the driver's files:", private)


def test_minhash_over_many_slices_at_urls_matches_local(url_cluster, s3, tmp_path, monkeypatch):
    """Clusters of near-duplicates over 25 signature files: the verification reads rows of many
    files by range, the driver the representatives' ids."""
    _, driver, _ = url_cluster
    _driver_mirrors(monkeypatch, driver, "many")
    src = tmp_path / "c.jsonl"
    write_clusters(src, 400)
    s3.put_file(str(src), f"{BUCKET}/inputs/url-many/c.jsonl")
    make = lambda path: Pipeline("clusters", JsonlReader([path]), [  # noqa: E731
        ImportQA(), ExactDedup(), MinHashDedup(keep="longest_answer", partitions=8, batch_size=50)], shard_size=16)
    local = run_pipeline(make(str(src)), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/url-many"
    run_pipeline(make(f"s3://{BUCKET}/inputs/url-many/c.jsonl"), out, RunOptions(engine="ray", progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outputs(got) == outputs(local.run_dir)
    stages = ("dedup_exact", "dedup_minhash")
    assert reports(got, stages) == reports(local.run_dir, stages)
    assert reports(got, stages)["dedup_minhash"]["dropped"] > 30


# ---- Parquet input at a URL: rows read by the workers ----------------------------------------------


def test_parquet_inputs_at_urls_match_local(url_cluster, s3, tmp_path, monkeypatch):
    """Two Parquet files (row groups of 13 rows, shards of 20: shards cross row groups) whose rows
    are records, some invalid (the ledger), some duplicates."""
    _, driver, _ = url_cluster
    _driver_mirrors(monkeypatch, driver, "pq")
    rows = [{"id": f"r{i}", "question": "" if i % 37 == 3 else f"What is the value of {i % 70} plus {i % 70}?",
             "answer": str(2 * (i % 70)), "tags": []} for i in range(150)]
    local_dir = tmp_path / "in"
    local_dir.mkdir()
    for k, part in enumerate((rows[:90], rows[90:])):
        pq.write_table(pa.Table.from_pylist(part), local_dir / f"part-{k}.parquet", row_group_size=13)
        s3.put_file(str(local_dir / f"part-{k}.parquet"), f"{BUCKET}/inputs/url-pq/part-{k}.parquet")
    make = lambda path: Pipeline("pq", ParquetReader([path]), [ValidateQA(), ExactDedup(), MinHashDedup()], shard_size=20)  # noqa: E731
    local = run_pipeline(make(str(local_dir)), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/url-pq"
    run_pipeline(make(f"s3://{BUCKET}/inputs/url-pq/"), out, RunOptions(engine="ray", progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outputs(got) == outputs(local.run_dir)
    reasons = {r["reason"] for r in outputs(got)[1]}
    assert {"empty_question", "duplicate_exact"} <= reasons, reasons
    # the first segment's shards are the local reader's: same part files, same row counts
    counts = lambda d: [pq.ParquetFile(p).metadata.num_rows for p in sorted(d.glob("stages/00-*/part-?????.parquet"))]  # noqa: E731
    assert counts(got) == counts(local.run_dir) and len(counts(got)) == 8


# ---- a driver killed mid-stage, resumed from a fresh mirror -----------------------------------------


class SlowMap(Stage):
    """A sync map that takes a while per record, so a kill lands mid-segment."""

    name = "slow_map"
    kind = "map"

    def process(self, record: Record, ctx: StageContext) -> Record:
        time.sleep(0.05)
        record["tags"] = [*record["tags"], "slow"]
        return record


def make_killable(path: str) -> Pipeline:
    return Pipeline("killable", JsonlReader([path]), [ImportQA(), SlowMap(), ExactDedup(), MinHashDedup(batch_size=64)],
                    shard_size=8)


DRIVER = """import sys
sys.path.insert(0, {tests!r})
from test_ray_url import make_killable
from rlclimb.pipelines.engine import RunOptions, run_pipeline
run_pipeline(make_killable(sys.argv[1]), sys.argv[2], RunOptions(engine="ray", progress=False))
"""


@pytest.mark.timeout(900)
def test_killed_driver_of_a_run_on_s3_resumes_without_loss(url_cluster, s3, tmp_path, monkeypatch):
    _, driver, _ = url_cluster
    src = tmp_path / "c.jsonl"
    write_clusters(src, 240)
    url = f"s3://{BUCKET}/inputs/url-kill/c.jsonl"
    s3.put_file(str(src), url)
    local = run_pipeline(make_killable(str(src)), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/url-kill"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tests=str(TESTS)))
    env = {**os.environ, "RLCLIMB_MIRRORS": str(driver / "machine-a")}
    proc = subprocess.Popen([sys.executable, str(script), url, out], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    markers: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            done = [p for p in _stored(s3, "runs/url-kill/stages") if p.endswith(".done.json")]
            if len(done) >= 4:  # some of the slow segment's 30 shards committed, the rest not yet
                os.kill(proc.pid, signal.SIGKILL)
                markers = {p: _modified(s3, p) for p in done}
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        log = proc.communicate()[0].decode(errors="replace")
    assert markers, f"the driver finished or failed before the kill: {log[-3000:]}"
    stored = _stored(s3, "runs/url-kill")
    assert not any(p.endswith("/stats.json") for p in stored)  # the killed run did not finish
    assert len([p for p in stored if p.endswith(".done.json")]) < 30
    # resume from another machine's point of view: a fresh mirror of the store
    _driver_mirrors(monkeypatch, driver, "machine-b")
    run_pipeline(make_killable(url), out, RunOptions(engine="ray", progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outputs(got) == outputs(local.run_dir)
    ids = [r["id"] for r in outputs(got)[0]]
    assert len(ids) == len(set(ids))
    # the shards committed before the kill were kept, not recomputed
    s3.invalidate_cache()
    assert {p: _modified(s3, p) for p in markers} == markers


def _modified(s3, path: str) -> str:
    return str(s3.info(path)["LastModified"])


# ---- PDF inputs: documents opened on the workers for their page counts ---------------------------


def test_textbook_pdf_with_an_unreadable_document_matches_local(url_cluster, s3, tmp_path, monkeypatch):
    """The run dir on S3; the PDFs at a path every node sees (the parse stage opens them there)."""
    from helpers.textbook_gen import ChapterSpec, make_textbook

    _, driver, _ = url_cluster
    _driver_mirrors(monkeypatch, driver, "pdf")
    book = make_textbook(tmp_path / "book.pdf", chapters=[ChapterSpec("Arithmetic", "inline", exercises=5, example=True)])
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really a pdf")
    make = lambda: PIPELINES["textbook-pdf"]([str(book.path), str(broken)], {}, 2)  # noqa: E731
    local = run_pipeline(make(), tmp_path / "local", RunOptions(progress=False))

    def not_on_the_driver(path):
        raise AssertionError(f"the driver opened {path} to count its pages")

    monkeypatch.setattr(readers_pdf, "page_count", not_on_the_driver)  # (workers are other processes)
    out = f"s3://{BUCKET}/runs/url-pdf"
    run_pipeline(make(), out, RunOptions(engine="ray", progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outputs(got) == outputs(local.run_dir)
    assert "corrupt_pdf" in {r["reason"] for r in outputs(got)[1]}
    assert len(outputs(got)[0]) >= 4


# ---- the scratch's rows (no cluster) ------------------------------------------------------------


def test_scratch_rows_read_by_coalesced_ranges_equal_the_written_rows(tmp_path, monkeypatch):
    """Rows by global index, with repeats and across files: the same from a local directory
    (memory-mapped) and from a store (byte ranges: rows near each other in one request)."""
    import fsspec
    import numpy as np

    from rlclimb.pipelines.engine import ray_scratch
    from rlclimb.pipelines.engine.ray_scratch import Rows

    rng = np.random.default_rng(0)
    starts, lengths = [0, 100, 250], [100, 150, 30]
    data = rng.integers(0, 2**32, (280, 16), dtype=np.uint64).astype(np.uint32)
    requests: list[int] = []
    memory = fsspec.filesystem("memory")
    real = memory.cat_ranges
    monkeypatch.setattr(memory, "cat_ranges", lambda paths, *a, **k: requests.append(len(paths)) or real(paths, *a, **k))
    monkeypatch.setattr(ray_scratch.storage, "filesystem", lambda url: (memory, url.removeprefix("memory://")))
    for location in (str(tmp_path), "memory://scratch/rows"):
        for s, n in zip(starts, lengths, strict=True):
            Rows(location, "sig", starts, np.uint32, 16).write(s, data[s : s + n])
        rows = Rows(location, "sig", starts, np.uint32, 16)
        index = np.array([5, 5, 6, 99, 100, 279, 7, 260, 3], np.int64)
        assert (rows.take(index) == data[index]).all()
        assert rows.take(np.zeros(0, np.int64)).shape == (0, 16)
    assert requests == [3]  # one range per file touched (its rows are close), not one per row
