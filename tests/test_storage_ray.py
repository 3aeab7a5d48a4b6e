"""The Ray executor with its run directory on S3 (moto's server on 127.0.0.1): workers commit
straight to the bucket (no shared mount) and the result is the local executor's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import BUCKET
from test_ray_engine import write_dump
from test_resume_kill import DISTINCT_REQUESTS, data_rows, funnel, handler, ledger, write_input
from test_storage_s3 import download

from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.pipelines.scripted_server import ScriptedServer
from rlclimb.pipelines.stage import Record, Stage, StageContext
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.qa.importer import ImportQA

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")


def outcome(run_dir):
    data = pq.read_table(run_dir / "data").to_pylist()
    ledger = pq.read_table(run_dir / "ledger").select(["stage", "reason", "line"]).to_pylist()
    stats = json.loads((run_dir / "stats.json").read_text())
    return data, ledger, [(s["name"], s["in"], s["kept"], s["dropped"]) for s in stats["stages"]]


@pytest.mark.timeout(900)
def test_ray_workers_commit_to_s3(s3, tmp_path, monkeypatch):  # noqa: F811
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(mirrors))
    src = tmp_path / "dump.jsonl"
    write_dump(src, n=300)
    s3.put_file(str(src), f"{BUCKET}/inputs/ray/dump.jsonl")
    local = run_pipeline(PIPELINES["qa-jsonl"]([str(src)], {}, 37), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/ray"
    pipe = PIPELINES["qa-jsonl"]([f"s3://{BUCKET}/inputs/ray/dump.jsonl"], {}, 37)
    run_pipeline(pipe, out, RunOptions(engine="ray", workers=2, progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outcome(got) == outcome(local.run_dir)
    # the workers wrote into their own mirrors of the segment URLs, not into the driver's
    assert len([d for d in mirrors.iterdir() if d.is_dir()]) > 1


class Judge(Stage):
    """An async, row-cached LLM stage (as tests/helpers/llm_pipeline.py's)."""

    name = "judge"
    version = "1"
    kind = "map"
    cache = True
    concurrency = 4

    async def process(self, record: Record, ctx: StageContext) -> Record:
        reply = await ctx.llm.complete("judge", [{"role": "user", "content": record["question"]}], tag=self.name)
        record["tags"] = [*record["tags"], reply.text]
        return record


@pytest.mark.timeout(900)
def test_ray_llm_stage_caches_in_s3_across_workers(s3, tmp_path, monkeypatch):  # noqa: F811
    """Ray workers keep the row and LLM caches as objects in the bucket: a rerun that lost every
    done marker (from a fresh mirror) asks the endpoint nothing again."""
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m1"))
    # Ray workers import this module's stage by name (the local Ray inherits this environment)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    src = write_input(tmp_path / "qa.jsonl")
    with ScriptedServer(handler, latency_s=0.02) as server:
        llm = LLMConfig.from_dict({
            "profiles": {"local": {"base_url": server.base_url, "model": "judge-model", "api_key": "k",
                                   "concurrency": 4, "timeout_s": 30, "backoff_s": 0.01}},
            "roles": {"judge": "local"}})
        make = lambda: Pipeline("llm-qa", JsonlReader([str(src)]), [ImportQA(), Judge(), ExactDedup()], shard_size=10)  # noqa: E731
        local = run_pipeline(make(), tmp_path / "local", RunOptions(progress=False, llm=llm))
        calls = server.chat_count
        out = f"s3://{BUCKET}/runs/ray-llm"
        run_pipeline(make(), out, RunOptions(engine="ray", workers=2, progress=False, llm=llm))
        # every request asked (the local run's cache is not the bucket's); the 4 exact repeats
        # may be asked twice, their shards running at once on two actors (a cache is not a lock)
        assert DISTINCT_REQUESTS <= server.chat_count - calls <= DISTINCT_REQUESTS + 4
        assert server.max_in_flight <= 4
        s3.invalidate_cache()
        stored = s3.find(f"{BUCKET}/runs/ray-llm")
        assert any("/cache/stages/" in p for p in stored) and any("/cache/llm/" in p for p in stored), sorted({p.rsplit("/", 1)[0] for p in stored})
        for marker in [p for p in stored if p.endswith(".done.json") or p.endswith("_SUCCESS.json")]:
            s3.rm_file(marker)
        monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m2"))
        before = server.chat_count
        run_pipeline(make(), out, RunOptions(engine="ray", workers=2, progress=False, llm=llm))
        assert server.chat_count == before  # every result came from the bucket's caches
    got = download(s3, out, tmp_path / "got")
    assert data_rows(got) == data_rows(local.run_dir)
    assert ledger(got) == ledger(local.run_dir)
    assert funnel(got) == funnel(local.run_dir)
