"""The local executor: shards in-process or in worker processes (ray_data.py builds the Ray one on it)."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import ctypes
import multiprocessing
import os
import signal
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

from rlclimb.schemas.io import to_rows

from ..bookkeeping import READ_STAGE, StageStats, ledger_row
from ..kvstore import open_kv
from ..progress import Progress
from ..readers import Rejected, parquet_shards
from ..rundir import RunDir
from ..stage import Record, StageContext, setup_stages
from ..storage import unpush
from .commit import commit_shard, publish_reports, read_parts, write_json
from .plan import Pipeline, RunOptions, RunResult, Segment, plan_segments
from .shard import ShardRunner


def _pool(workers: int) -> cf.ProcessPoolExecutor:
    return cf.ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )


def _die_with_parent(parent_pid: int) -> None:
    """Pool initializer: a worker dies with the run, kill -9 included (PR_SET_PDEATHSIG; a parent
    that died before the worker got here is caught by the ppid check)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


# Worker processes keep their stages set up across shards (keyed by segment fingerprint).
_WORKER_STATE: dict[str, ShardRunner] = {}


def _worker_shard(seg: Segment, ctx: StageContext, cache_path: str | None, seg_dir: str, i: int, items: list) -> dict:
    runner = _WORKER_STATE.get(seg.fingerprint)
    if runner is None:
        setup_stages(seg.stages, ctx)
        runner = ShardRunner(seg.stages, ctx, open_kv(cache_path) if cache_path else None, seg.first)
        _WORKER_STATE[seg.fingerprint] = runner
    rows, ledger, stats = runner.run(items)
    commit_shard(Path(seg_dir), i, rows, ledger, stats, seg)
    return {"rows": len(rows), "drops": len(ledger), "seen": len(items)}


def local_workers(seg: Segment, workers: int) -> int:
    """Worker processes for a segment: async segments run in-process (one event loop); the
    stages' declared resources cap the rest (CPUs per process; a GPU stage runs in one)."""
    if seg.is_async:
        return 1
    need = max([float((s.resources or {}).get("num_cpus", 1)) for s in seg.stages] + [1.0])
    if any(float((s.resources or {}).get("num_gpus", 0)) > 0 for s in seg.stages):
        return 1
    if need <= 1:  # as many as asked (the default need)
        return max(workers, 1)
    return max(1, min(workers, int((os.cpu_count() or 1) // need)))


# ---- the executor -----------------------------------------------------------------------------


def _rows(batches: Iterable[pa.RecordBatch | list]) -> Iterator[Record]:
    for b in batches:
        yield from (to_rows(b) if isinstance(b, pa.RecordBatch) else b)


class LocalExecutor:
    def __init__(self, pipeline: Pipeline, run: RunDir, options: RunOptions):
        self.pipeline, self.run, self.options = pipeline, run, options
        self.segments = plan_segments(pipeline)
        self.llm = None
        if options.llm is not None:
            from ..llm import LLMClient

            self.llm = LLMClient(options.llm, cache_path=run.llm_cache)
        self.ctx = StageContext(run_dir=run.path, llm=self.llm, seed=options.seed)
        self.loop = asyncio.new_event_loop()
        self.cache = open_kv(run.stage_cache) if any(s.cache for s in pipeline.stages) else None

    def execute(self) -> RunResult:
        t0 = time.perf_counter()
        with Progress(enabled=self.options.progress) as progress:
            for seg in self.segments:
                seg_dir = self.run.segment_dir(seg.dirname)
                seg_dir.mkdir(parents=True, exist_ok=True)
                self.ctx.segment_dir = seg_dir  # where its stages' reports go
                if seg.is_global:
                    self._run_global(seg, seg_dir, progress)
                else:
                    self._run_rows(seg, seg_dir, progress)
        if self.llm is not None:
            self.loop.run_until_complete(self.llm.aclose())
        self.loop.close()
        publish_reports(self.run.path, [self.run.segment_dir(s.dirname) for s in self.segments])
        return self.run.finalize(self.segments, elapsed_s=time.perf_counter() - t0)

    def _shards(self, seg: Segment) -> Iterator[list | pa.RecordBatch]:
        size = self.pipeline.shard_size
        if seg.first:
            return self.pipeline.reader.shards(size)
        return parquet_shards(read_parts(self.run.segment_dir(self.segments[seg.index - 1].dirname)), size)

    def _total(self, seg: Segment) -> int | None:
        if seg.first:
            return self.pipeline.reader.estimate_total()
        return self.run.segment_rows(self.segments[seg.index - 1].dirname)

    def _run_rows(self, seg: Segment, seg_dir: Path, progress: Progress) -> None:
        task = progress.task(seg.stages[-1].name if len(seg.stages) == 1 else "+".join(s.name for s in seg.stages), self._total(seg))
        workers = local_workers(seg, self.options.workers)
        shards = self._shards(seg)
        if workers <= 1:
            runner = None
            for i, items in enumerate(shards):
                if (seg_dir / f"part-{i:05d}.done.json").exists():
                    progress.advance(task, len(items), 0, resumed=True)
                    continue
                if runner is None:
                    setup_stages(seg.stages, self.ctx)
                    runner = ShardRunner(seg.stages, self.ctx, self.cache, seg.first, self.loop)
                rows, ledger, stats = runner.run(items)
                commit_shard(seg_dir, i, rows, ledger, stats, seg)
                progress.advance(task, len(items), len(ledger))
            return
        cache_path = str(self.run.stage_cache) if self.cache is not None else None
        in_flight = self.options.shards_in_flight or 2 * workers
        ctx = StageContext(run_dir=self.run.path, llm=None, seed=self.options.seed, segment_dir=seg_dir)
        with _pool(workers) as pool:
            pending: set[cf.Future] = set()
            for i, items in enumerate(shards):
                if (seg_dir / f"part-{i:05d}.done.json").exists():
                    progress.advance(task, len(items), 0, resumed=True)
                    continue
                if len(pending) >= in_flight:  # bounded memory: wait before reading further
                    done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                    for f in done:
                        r = f.result()
                        progress.advance(task, r["seen"], r["drops"])
                pending.add(pool.submit(_worker_shard, seg, ctx, cache_path, str(seg_dir), i, items))
            for f in cf.as_completed(pending):
                r = f.result()
                progress.advance(task, r["seen"], r["drops"])

    def _run_global(self, seg: Segment, seg_dir: Path, progress: Progress) -> None:
        """A global stage sees its whole input at once; it commits all-or-nothing."""
        marker = seg_dir / "_SUCCESS.json"
        if marker.exists():
            return
        stage = seg.stages[0]
        setup_stages([stage], self.ctx)
        for stale in seg_dir.glob("part-*"):
            stale.unlink()
            unpush(stale)
        task = progress.task(stage.name, self._total(seg))
        st, read = StageStats(), StageStats()
        t0 = time.perf_counter()

        i, ledger, rows = 0, [], []

        def counted(records: Iterable) -> Iterator[Record]:
            for r in records:
                read.seen += 1
                if isinstance(r, Rejected):  # a global stage straight after the reader
                    ledger.append(ledger_row(READ_STAGE, r.drop, None, r.file, r.line, r.raw))
                    read.dropped[r.drop.reason] += 1
                    continue
                st.seen += 1
                yield r

        for item in stage.run(counted(_rows(self._shards(seg))), self.ctx):
            if isinstance(item, tuple):
                rec, drop = item
                ledger.append(ledger_row(stage.name, drop, rec))
                st.dropped[drop.reason] += 1
            else:
                rows.append(item)
                st.kept += 1
            if len(rows) >= self.pipeline.shard_size:
                commit_shard(seg_dir, i, rows, ledger, {}, seg)
                progress.advance(task, len(rows) + len(ledger), len(ledger))
                i, rows, ledger = i + 1, [], []
        if rows or ledger or i == 0:
            commit_shard(seg_dir, i, rows, ledger, {}, seg)
            progress.advance(task, len(rows) + len(ledger), len(ledger))
        st.out = st.kept
        st.time_s = time.perf_counter() - t0
        stats = {stage.name: st.to_dict()}
        if seg.first:
            read.kept = read.out = st.seen
            stats = {READ_STAGE: read.to_dict(), **stats}
        write_json(marker, {"stats": stats})
