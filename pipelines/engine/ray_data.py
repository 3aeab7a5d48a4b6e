"""The Ray executor: row segments as a Ray Data job over shards, on actor pools.

Design
- A row segment becomes `ray.data.from_items(<shard indices>)`, `map_batches` one shard per
  batch into `ShardWorker`, a class UDF: Ray Data runs it on an actor pool (`concurrency=`),
  so a stage's setup (a model, a tool) is paid once per actor, not per shard. Async (LLM)
  segments run on actors too: each actor runs its shard's records concurrently on its own event
  loop, and every LLM client asks one named limiter actor for its endpoint slots (`limiter.py`),
  so an endpoint's `concurrency` holds for the whole cluster.
- Records do not travel back through the driver: each worker reads its shard (a slice of the
  previous segment's committed Parquet parts, read from the shared run directory or the
  store; for the first segment, its rows of a Parquet input or its pieces of a JSONL input
  read on the cluster, or another reader's items put in the object store by the driver), runs the
  segment's stages with the same `ShardRunner` as the local executor and commits the shard with
  the same protocol (data, ledger, then the done marker). The driver only checks that each
  reported commit is visible to it (`ray_cluster.check_commit`): shards, commits and so results
  are the local executor's, and a killed run resumes the same way.
- Actors and their tasks are restarted when a worker process dies (Ray Data's own defaults for
  actor pools: `max_restarts=-1`, `max_task_retries=-1`; tasks: `max_retries=-1`; the
  per-call `ray_remote_args(_fn)` that set them goes away in Ray 2.64): the shard is
  recomputed and recommitted under the same name; its row cache (below) makes the redo free
  for the records already done.
- Row cache: SQLite does not work across hosts, so cached stages keep one append-only JSONL
  file per shard next to its parts (`cache-NNNNN.jsonl`, flushed per record). Only the worker
  computing a shard writes it, so there is no locking; a resumed shard reads it back.
- Stage resources (`Stage.resources`: num_cpus, num_gpus, memory) size the actors.
- JSONL inputs (local or at URLs) are read on the cluster (`ray_read.py`): the first segment's
  items never pass through the driver either. Cluster jobs keep their scratch in the run dir's
  tmp, or for a run at a URL in the store (`ray_scratch.py`): no node needs a shared mount.
- Exact dedup, MinHash dedup and decontam are decided on the cluster and their output committed
  by workers (`ray_global.py`, `ray_dedup.py`); `pair` pairs each document group in a task
  (`ray_pair.py`); other global stages run on the driver over the committed parts, with their
  per-record sketches (`Stage.sketch`), if any, on the cluster.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rlclimb.schemas.io import to_rows

from ..rundir import RunDir
from ..stage import Stage, StageContext, setup_stages
from ..storage import local_dir, read_parquet, url_of
from .commit import commit_shard, read_parts
from .executors import LocalExecutor
from .plan import Pipeline, RunOptions, Segment
from .ray_cluster import check_commit, check_shared_storage, cluster_cpus, connect
from .ray_dedup import decontam_decisions, exact_decisions, minhash_decisions, planner
from .ray_global import ClusterMap, commit_decisions, input_slices
from .ray_pair import pairs_on_cluster, run_pair
from .ray_read import (
    ParquetPiece,
    ReadPieces,
    cluster_shards,
    count_pdf_pages,
    parquet_pieces,
    worker_readable,
)
from .ray_scratch import scratch
from .shard import ShardRunner
from .sketch import SketchFeed


def segment_resources(stages: list[Stage]) -> dict[str, float]:
    """What one actor of the segment asks for: the most any of its stages declares. An async
    (I/O-bound) segment defaults to a quarter CPU: its actors mostly wait on the network."""
    default = 0.25 if any(s.is_async for s in stages) else 1.0
    out = {"num_cpus": default, "num_gpus": 0.0, "memory": 0.0}
    for s in stages:
        for k, v in (getattr(s, "resources", None) or {}).items():
            out[k] = max(out.get(k, 0.0), float(v))
    return out


class ShardCache:
    """The row cache of one shard: key -> encoded result, appended one JSON line per record
    (flushed: a killed worker keeps what it finished). Same interface as KVStore."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict[str, bytes] = {}
        if path.exists():
            with open(path, "rb") as f:
                for line in f:
                    try:
                        k, v = json.loads(line)
                    except ValueError:  # a line cut short by a kill: that record is recomputed
                        continue
                    self.data[k] = v.encode()
        self._out = None

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put(self, key: str, value: bytes) -> None:
        if self._out is None:
            self._out = open(self.path, "ab")
        self.data[key] = value
        self._out.write(json.dumps([key, value.decode()]).encode() + b"\n")
        self._out.flush()
        os.fsync(self._out.fileno())

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


class ShardWorker:
    """A Ray Data class UDF: the segment's stages set up once per actor; one shard per call."""

    def __init__(self, seg: Segment, ctx: StageContext, seg_dir: str, llm: Any = None, caches: tuple[str, str] | None = None):
        import ray

        # seg_dir: a path on shared storage, or the segment's URL (this node commits to the store)
        self.seg, self.seg_dir = seg, local_dir(seg_dir)
        self.kv = None
        if caches is not None:  # a run at a URL: row and LLM caches are objects in the store
            from ..kvstore import ObjectKV

            self.kv = ObjectKV(caches[0])
        client = None
        if llm is not None:
            from .limiter import ClusterLLMClient

            # No request cache on shared POSIX storage (SQLite is per host): the per-shard row cache is what resumes.
            client = ClusterLLMClient(llm, cache_path=caches[1] if caches else None)
        self.ctx = replace(ctx, llm=client)
        setup_stages(seg.stages, self.ctx)
        self.cached = any(s.cache for s in seg.stages)
        self.runner = ShardRunner(seg.stages, self.ctx, None, seg.first)
        self.node = f"{socket.gethostname()} ({ray.util.get_node_ip_address()}, pid {os.getpid()})"

    @staticmethod
    def _items(blob: bytes) -> list | pa.RecordBatch:
        spec = pickle.loads(blob)
        if isinstance(spec, ReadPieces | ParquetPiece):  # the first segment's items, read on the cluster
            return spec.load()
        if not isinstance(spec, tuple):  # the reader's items
            return spec
        path, offset, length = spec
        table = read_parquet(path).slice(offset, length)
        return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([])

    def __call__(self, batch: dict) -> dict:
        out: dict[str, list] = {"i": [], "seen": [], "drops": [], "node": []}
        for i, blob in zip(batch["i"].to_pylist(), batch["spec"].to_pylist(), strict=True):
            items = self._items(blob)
            cache = (self.kv or ShardCache(self.seg_dir / f"cache-{i:05d}.jsonl")) if self.cached else None
            self.runner.cache = cache
            try:
                rows, ledger, stats = self.runner.run(items)
            finally:
                if cache is not None:
                    cache.close()
            commit_shard(self.seg_dir, i, rows, ledger, stats, self.seg)
            out["i"].append(i)
            out["seen"].append(len(items))
            out["drops"].append(len(ledger))
            out["node"].append(self.node)
        return out


def part_slices(parts: list[Path], size: int) -> Iterator[tuple[str, int, int]]:
    """(file, offset, length) of each shard the local executor cuts from these parts
    (`parquet_shards`: batches of `size` rows per file, the last one shorter)."""
    for path in parts:
        n = pq.ParquetFile(path).metadata.num_rows
        for offset in range(0, n, size):
            yield url_of(path), offset, min(size, n - offset)


class Sketcher:
    """A Ray Data class UDF: the stage set up once per actor (decontam: its benchmark index,
    the broadcast), then the sketches of one slice of the global stage's input per call."""

    def __init__(self, stage: Stage, ctx: StageContext):
        setup_stages([stage], ctx)
        self.stage = stage

    def __call__(self, batch: dict) -> dict:
        path, offset, length = batch["path"][0], int(batch["offset"][0]), int(batch["length"][0])
        rows = to_rows(read_parquet(path).slice(offset, length))
        return {k: np.asarray(v) for k, v in self.stage.sketch(rows).items()}


class RayExecutor(LocalExecutor):
    """Row segments on Ray Data; everything else (planning, commits, global stages, finalize)
    is the local executor's."""

    def __init__(self, pipeline: Pipeline, run: RunDir, options: RunOptions):
        super().__init__(pipeline, run, options)
        self.started = connect(options.ray_address, options.workers)
        check_shared_storage(run.path)  # before any work: a node that cannot see it fails here

    def execute(self):
        try:
            return super().execute()
        finally:
            if self.started:
                self.ray_shutdown()

    @staticmethod
    def ray_shutdown() -> None:
        import ray

        ray.shutdown()

    def _run_global(self, seg: Segment, seg_dir: Path, progress) -> None:
        """Dedup and decontam on the cluster (ray_global.py); another global stage on the driver,
        with its per-record sketches, if it has any, computed on the cluster."""
        stage = seg.stages[0]
        if seg.first or (seg_dir / "_SUCCESS.json").exists():
            return super()._run_global(seg, seg_dir, progress)
        if planner(stage) is not None:
            return self._run_distributed(seg, seg_dir, progress)
        if pairs_on_cluster(stage, self.run.url):
            return self._run_pair(seg, seg_dir, progress)
        if not hasattr(stage, "sketch"):
            return super()._run_global(seg, seg_dir, progress)
        import ray

        prev = self.run.segment_dir(self.segments[seg.index - 1].dirname)
        specs = [{"path": p, "offset": o, "length": n} for p, o, n in part_slices(read_parts(prev), self.pipeline.shard_size)]
        if not specs:
            return super()._run_global(seg, seg_dir, progress)
        ray.data.DataContext.get_current().execution_options.preserve_order = True  # sketches in input order
        shipped = copy.copy(stage)  # as it is before the driver's setup (an index may not pickle)
        res = segment_resources([stage])
        actors = self.options.shards_in_flight or max(1, int(cluster_cpus() / max(res["num_cpus"], 0.01)))
        ctx = StageContext(run_dir=self.run.path, seed=self.options.seed, segment_dir=seg_dir)
        ds = ray.data.from_items(specs, override_num_blocks=len(specs)).map_batches(
            Sketcher, fn_constructor_kwargs={"stage": shipped, "ctx": ctx}, batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=min(actors, len(specs))), num_cpus=res["num_cpus"],
            **({"num_gpus": res["num_gpus"]} if res["num_gpus"] else {}))
        self.ctx.extras["sketches"] = SketchFeed(ds.iter_batches(batch_size=None, batch_format="numpy"))
        try:
            super()._run_global(seg, seg_dir, progress)
        finally:
            self.ctx.extras.pop("sketches", None)

    def _run_pair(self, seg: Segment, seg_dir: Path, progress) -> None:
        """Pairing per document group on the cluster (ray_pair.py)."""
        stage = seg.stages[0]
        ctx = StageContext(run_dir=self.run.path, seed=self.options.seed, segment_dir=seg_dir)
        run_pair(stage, seg, seg_dir, self.run.segment_dir(self.segments[seg.index - 1].dirname),
                 shard_size=self.pipeline.shard_size, ctx=ctx, resources=segment_resources([stage]),
                 llm=self.options.llm, llm_cache=self.run.llm_cache if self.run.url else None, progress=progress)

    def _run_distributed(self, seg: Segment, seg_dir: Path, progress) -> None:
        import ray

        stage, t0 = seg.stages[0], time.perf_counter()
        prev = self.run.segment_dir(self.segments[seg.index - 1].dirname)
        slices = input_slices(read_parts(prev), self.pipeline.shard_size)
        if not slices:  # nothing to distribute
            return super()._run_global(seg, seg_dir, progress)
        n = slices[-1].start + slices[-1].length
        task = progress.task(stage.name, n)
        res = segment_resources([stage])
        actors = self.options.shards_in_flight or max(1, int(cluster_cpus() / max(res["num_cpus"], 0.01)))
        run = ClusterMap(ray.data, res, min(actors, len(slices)))
        kind = planner(stage)
        if kind == "minhash":
            with scratch(self.ctx, stage.name) as location:  # <run>/tmp, or its URL in the store
                decisions = minhash_decisions(stage, slices, n, self.ctx, run, location)
        elif kind == "exact":
            decisions = exact_decisions(stage, slices, n, self.ctx, run)
        else:
            decisions = decontam_decisions(stage, slices, n, self.ctx, run)
        commit_decisions(run, seg, seg_dir, slices, n, decisions, self.pipeline.shard_size, t0, progress, task)

    def _run_rows(self, seg: Segment, seg_dir: Path, progress) -> None:
        if seg.first and worker_readable(self.pipeline.reader):
            import ray

            with scratch(self.ctx, "read") as location:  # <run>/tmp, or its URL in the store
                total, shards = cluster_shards(ray.data, self.pipeline.reader, location, self.pipeline.shard_size, 1.0)
                return self._run_shards(seg, seg_dir, progress, total, shards)
        if seg.first:  # PDFs: opened on the cluster for their page counts, not by the driver
            import ray

            count_pdf_pages(ray.data, self.pipeline.reader, 1.0)
        return self._run_shards(seg, seg_dir, progress, self._total(seg), None)

    def _run_shards(self, seg: Segment, seg_dir: Path, progress, total: int | None, read: Iterator | None) -> None:
        """`read`: the first segment's shards as pieces the workers load (JSONL read on the cluster)."""
        import ray

        task = progress.task(seg.stages[-1].name if len(seg.stages) == 1 else "+".join(s.name for s in seg.stages), total)
        size = self.pipeline.shard_size
        refs, todo = [], 0  # one Arrow table per shard in the object store (spilled to disk past its size)
        if read is not None:
            shards = enumerate(read)
        elif seg.first:  # a Parquet input's rows are read by the workers, others by the driver
            shards = enumerate(parquet_pieces(self.pipeline.reader, size) or self.pipeline.reader.shards(size))
        else:
            prev = self.run.segment_dir(self.segments[seg.index - 1].dirname)
            shards = enumerate(part_slices(read_parts(prev), size))
        for i, items in shards:
            if (seg_dir / f"part-{i:05d}.done.json").exists():
                progress.advance(task, items[2] if isinstance(items, tuple) else len(items), 0, resumed=True)
                continue
            spec = pickle.dumps(items, protocol=5)
            refs.append(ray.put(pa.table({"i": [i], "spec": pa.array([spec], pa.large_binary())})))
            todo += 1
        if not todo:
            return
        res = segment_resources(seg.stages)
        actors = self.options.shards_in_flight or max(1, int(cluster_cpus() / max(res["num_cpus"], 0.01)))
        actors = min(actors, todo)
        ctx = StageContext(run_dir=self.run.path, llm=None, seed=self.options.seed, segment_dir=seg_dir)
        ds = ray.data.from_arrow_refs(refs).map_batches(
            ShardWorker,
            fn_constructor_kwargs={"seg": seg, "ctx": ctx, "seg_dir": url_of(seg_dir), "llm": self.options.llm,
                                   "caches": (self.run.stage_cache, self.run.llm_cache) if self.run.url else None},
            batch_size=1,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=res["num_cpus"],
            **({"num_gpus": res["num_gpus"]} if res["num_gpus"] else {}),
            **({"memory": res["memory"]} if res["memory"] else {}),
        )
        for row in ds.iter_rows():
            check_commit(seg_dir, int(row["i"]), str(row["node"]))
            progress.advance(task, int(row["seen"]), int(row["drops"]))
