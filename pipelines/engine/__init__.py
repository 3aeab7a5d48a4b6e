"""The local executor: runs a pipeline (a reader and a list of stages) into a run directory.

How it works
- Stages are grouped into *segments*: runs of row-wise stages (map/filter/expand), fused and
  applied shard by shard, separated by global stages, which see their whole input once.
- The input is cut into shards of `shard_size` items in a fixed order. A shard is committed by
  writing its output part, its ledger part and, last, its `done.json` (stats): all atomic
  renames. A killed run re-runs only uncommitted shards; since shard boundaries are fixed, the
  result is the same as an uninterrupted run.
- Stages with `cache = True` (LLM, sandbox) keep a row-level result cache keyed by (stage
  fingerprint, content hash of the input record), committed per record, so work finished inside
  an uncommitted shard is not paid again. The LLM client caches every request as well.
- Async stages run their shard's records concurrently on asyncio; sync segments run their shards
  in worker processes when `workers > 1`. Memory is bounded by shard size x shards in flight.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from ..rundir import RunDir
from ..stage import Record
from .executors import LocalExecutor
from .fingerprint import check_and_bind
from .housekeeping import clean_tmp
from .plan import Pipeline, RunOptions, RunResult, Segment, plan_segments
from .retry import reopen_transient

__all__ = ["LocalExecutor", "Pipeline", "RunOptions", "RunResult", "Segment", "model_rows", "plan_segments", "reopen_transient", "run_pipeline"]


def run_pipeline(pipeline: Pipeline, out: str | Path, options: RunOptions | None = None) -> RunResult:
    options = options or RunOptions()
    for stage in pipeline.stages:  # configuration problems surface before anything is written
        check_and_bind(stage, options.llm, options.seed)  # and the run's part of each fingerprint
    run = RunDir(out)
    with run.lock():
        clean_tmp(run)  # spill files a killed run left behind
        run.write_config(pipeline, options)
        if options.engine == "ray":
            from .ray_data import RayExecutor

            executor = RayExecutor(pipeline, run, options)
        else:
            executor = LocalExecutor(pipeline, run, options)
        if options.retry_transient:
            reopen_transient(run, executor.segments)
        return executor.execute()


def model_rows(records: Iterable[BaseModel]) -> list[Record]:
    """Rows of pydantic records, as stages see them."""
    return [r.model_dump() for r in records]
