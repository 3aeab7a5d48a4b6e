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

import asyncio
import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel

from rlclimb.schemas.arrow import arrow_schema
from rlclimb.schemas.io import to_rows, write_parquet
from rlclimb.schemas.records import StageEvent

from .bookkeeping import LEDGER_SCHEMA, READ_STAGE, StageStats, exception_drop, ledger_row
from .kvstore import KVStore
from .progress import Progress
from .readers import InputError, Rejected, parquet_shards
from .rundir import RunDir
from .stage import TRANSIENT_DROP_REASONS, Drop, Keep, Record, Stage, StageContext, setup_stages


@dataclass
class Pipeline:
    """A source reader and the stages that turn its items into records."""

    name: str
    reader: Any  # an iterable of dict | Rejected with fingerprint(), estimate_total(), describe()
    stages: list[Stage]
    config: dict[str, Any] | None = None  # the resolved config; default: each stage's config
    shard_size: int = 10_000

    def __post_init__(self) -> None:
        if self.config is None:  # a stage behind a combinator (consensus) reports its inner config
            self.config = {s.name: getattr(s, "inner", s).config.model_dump(mode="json") for s in self.stages}


@dataclass
class RunOptions:
    engine: str = "local"  # "local": worker processes on this machine; "ray": Ray tasks (a cluster)
    workers: int = 1  # processes (local) or CPUs to ask of a new local Ray instance (ray)
    progress: bool = True
    seed: int = 0
    llm: Any = None  # an LLMConfig; the run's LLMClient is built from it
    shards_in_flight: int = 0  # 0 = 2 x workers
    retry_transient: bool = False  # redo the shards of a finished run that ledgered transient drops


@dataclass
class RunResult:
    run_dir: Path
    records: int
    stats: dict[str, Any]


PROVENANCE_FIELD = pa.field("provenance", pa.list_(pa.struct(list(arrow_schema(StageEvent)))))

# ---- segments ----------------------------------------------------------------------------------


@dataclass
class Segment:
    index: int
    stages: list[Stage]
    fingerprint: str
    schema: pa.Schema | None  # of the segment's output records (None: inferred per shard)
    first: bool  # reads from the pipeline's reader (vs the previous segment's parts)
    metadata: dict[bytes, bytes] = field(default_factory=dict)  # Parquet metadata of its parts

    @property
    def is_global(self) -> bool:
        return self.stages[0].kind == "global"

    @property
    def is_async(self) -> bool:
        return any(s.is_async for s in self.stages)

    @property
    def dirname(self) -> str:
        return f"{self.index:02d}-{self.stages[-1].name}-{self.fingerprint}"


def plan_segments(pipeline: Pipeline) -> list[Segment]:
    groups: list[list[Stage]] = []
    for st in pipeline.stages:
        if st.kind == "global" or not groups or groups[-1][0].kind == "global":
            groups.append([st])
        else:
            groups[-1].append(st)
    if not groups:
        raise ValueError(f"pipeline {pipeline.name} has no stages")
    segments, prev_fp, schema = [], pipeline.reader.fingerprint(), pipeline.reader.schema
    trail: list[dict[str, str]] = []
    for i, stages in enumerate(groups):
        h = hashlib.sha256(f"{prev_fp}|{pipeline.shard_size}".encode())
        for st in stages:
            h.update(st.fingerprint.encode())
            if st.output_model is not None:
                schema = arrow_schema(st.output_model)
        if schema is not None and "provenance" not in schema.names:  # every record carries its history
            schema = schema.append(PROVENANCE_FIELD)
        trail.extend({"name": st.name, "version": st.version, "fingerprint": st.fingerprint} for st in stages)
        metadata = {b"rlclimb.stages": json.dumps(trail).encode()}  # each data file names the stages its records passed
        if schema is not None:
            schema = schema.with_metadata({**(schema.metadata or {}), **metadata})
        prev_fp = h.hexdigest()[:12]
        segments.append(Segment(i, stages, prev_fp, schema, first=i == 0, metadata=metadata))
    return segments


# ---- one shard through the row-wise stages of a segment ---------------------------------------


def _content_key(stage: Stage, record: Record) -> str:
    """Cache key: the stage's identity + the record's content (provenance excluded: history is
    not content, and a re-versioned upstream stage should not invalidate identical records)."""
    body = orjson.dumps({k: v for k, v in record.items() if k != "provenance"}, option=orjson.OPT_SORT_KEYS, default=str)
    return f"{stage.fingerprint}:{hashlib.sha256(body).hexdigest()}"


def _event(stage: Stage, decision: str, res: Keep | Drop | None = None, reason: str | None = None) -> dict[str, Any]:
    return {
        "stage": stage.name,
        "version": stage.version,
        "decision": decision,
        "reason": res.reason if isinstance(res, Keep) else reason,
        "model": getattr(res, "model", None),
        "votes": list(getattr(res, "votes", ())),
        "cost": getattr(res, "cost", 0.0),
    }


def _with_event(record: Record, event: dict) -> Record:
    prov = record.get("provenance")
    if prov is None:
        record["provenance"] = [event]
    else:
        prov.append(event)
    return record


class ShardRunner:
    """Applies the row-wise stages of one segment to shards of records.

    Provenance: every record of a run's output passed exactly the run's stage list (anything that
    did not was dropped and ledgered), so that trail is stored once per dataset (config.json and
    each data file's metadata). A record's own `provenance` holds the events that say something
    about *it*: a stage's note, model, votes or cost (`Keep`), or its creation by an expand stage.
    """

    def __init__(self, stages: list[Stage], ctx: StageContext, cache: KVStore | None, reads: bool, loop=None):
        self.stages, self.ctx, self.cache = stages, ctx, cache
        self.reads = reads  # first segment: items come from the reader and may be Rejected
        self.loop = loop  # one event loop per process, shared by async stages and the LLM client

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop

    def run(self, items: list | pa.RecordBatch) -> tuple[list[Record], list[dict], dict[str, StageStats]]:
        ledger: list[dict] = []
        stats: dict[str, StageStats] = {}
        if isinstance(items, pa.RecordBatch):  # Arrow input has no unreadable items
            rows = to_rows(items)
        else:
            rows = self._reject(items, ledger, stats) if self.reads else items
        i = 0
        while i < len(self.stages):
            j = i
            while j < len(self.stages) and self._fusable(self.stages[j]):
                j += 1
            if j > i:  # a run of cheap sync map/filter stages: one pass over the records
                rows = self._run_fused(self.stages[i:j], rows, ledger, stats)
                i = j
                continue
            stage = self.stages[i]
            st = stats[stage.name] = StageStats(seen=len(rows))
            t0 = time.perf_counter()
            usage0 = self._usage(stage)
            results = self._loop().run_until_complete(self._results(stage, rows, st))
            rows = self._apply(stage, rows, results, ledger, st)
            st.kept = st.seen - sum(st.dropped.values())
            st.out = len(rows)
            st.time_s = time.perf_counter() - t0
            st.llm = _usage_delta(usage0, self._usage(stage))
            i += 1
        return rows, ledger, stats

    def _fusable(self, stage: Stage) -> bool:
        return stage.kind in ("map", "filter") and not stage.is_async and not (stage.cache and self.cache is not None)

    def _reject(self, items: list, ledger: list[dict], stats: dict[str, StageStats]) -> list[Record]:
        st = stats[READ_STAGE] = StageStats(seen=len(items))
        rows = [it for it in items if not isinstance(it, Rejected)]
        if len(rows) != len(items):
            for it in items:
                if isinstance(it, Rejected):
                    ledger.append(ledger_row(READ_STAGE, it.drop, None, it.file, it.line, it.raw))
                    st.dropped[it.drop.reason] += 1
        st.kept = st.out = len(rows)
        return rows

    def _usage(self, stage: Stage) -> dict[str, float]:
        llm = self.ctx.llm
        if llm is None:
            return {}
        by_tag = llm.usage_snapshot()["by_tag"]
        total: dict[str, float] = {}
        tags = stage.usage_tags
        for tag in tags:
            for k, v in by_tag.get(tag, {}).items():
                total[k] = total.get(k, 0) + v
                if len(tags) > 1 and tag != stage.name:  # e.g. per model tier: "solve.tier-0/cost"
                    total[f"{tag}/{k}"] = total.get(f"{tag}/{k}", 0) + v
        return total

    def _run_fused(self, stages: list[Stage], rows: list[Record], ledger: list[dict], stats: dict[str, StageStats]) -> list[Record]:
        """The hot loop for cheap CPU stages: each record goes through every stage in turn; only
        drops and annotations take the slow path. Per-stage time is apportioned from timing
        1 record in 16 (a timer per call would cost more than the cheap stages themselves)."""
        ctx, chain = self.ctx, [(k, s.process) for k, s in enumerate(stages)]
        sts = [StageStats() for _ in stages]
        sampled = [0.0] * len(stages)
        out: list[Record] = []
        append, clock = out.append, time.perf_counter

        def other(k: int, rec: Record, res: Any) -> Record | None:
            """Anything but a dict or True: an annotated Keep, or a drop (returns None)."""
            if isinstance(res, Keep):
                return _with_event(res.record, _event(stages[k], "modify" if stages[k].kind == "map" else "keep", res))
            self._apply_one(stages[k], rec, res, out, ledger, sts[k])
            return None

        t_start = clock()
        for n in range(0, len(rows), 16):
            rec = rows[n]  # the timed record of this block of 16
            for k, fn in chain:
                t0 = clock()
                try:
                    res = fn(rec, ctx)
                except Exception as e:  # one bad record never kills the run
                    res = exception_drop(e)
                sampled[k] += clock() - t0
                if type(res) is dict:
                    rec = res
                elif res is not True and (rec := other(k, rec, res)) is None:
                    break
            else:
                append(rec)
            for rec in rows[n + 1 : n + 16]:
                for k, fn in chain:
                    try:
                        res = fn(rec, ctx)
                    except Exception as e:
                        res = exception_drop(e)
                    if type(res) is dict:
                        rec = res
                    elif res is not True and (rec := other(k, rec, res)) is None:
                        break
                else:
                    append(rec)
        total = clock() - t_start
        dropped_before, weight = 0, sum(sampled) or 1.0
        for k, stage in enumerate(stages):
            st = stats[stage.name] = sts[k]
            st.seen = len(rows) - dropped_before
            dropped_before += sum(st.dropped.values())
            st.kept = st.out = len(rows) - dropped_before
            st.time_s = total * sampled[k] / weight
        return out

    def _apply(self, stage: Stage, rows: list[Record], results: list[Any], ledger: list[dict], st: StageStats) -> list[Record]:
        out: list[Record] = []
        for rec, res in zip(rows, results, strict=True):
            if type(res) is dict and stage.kind != "expand":
                out.append(res)
            elif res is True:
                out.append(rec)
            else:
                self._apply_one(stage, rec, res, out, ledger, st)
        return out

    @staticmethod
    def _apply_one(stage: Stage, rec: Record, res: Any, out: list[Record], ledger: list[dict], st: StageStats) -> None:
        if isinstance(res, Keep):
            out.append(_with_event(res.record, _event(stage, "modify" if stage.kind == "map" else "keep", res)))
            return
        if isinstance(res, list) and stage.kind == "expand":
            parent = rec.get("id")
            for child in res:
                child.setdefault("provenance", list(rec.get("provenance") or []))
                out.append(_with_event(child, _event(stage, "expand", reason=f"from {parent}" if parent else None)))
            return
        if isinstance(res, Drop):
            drop = res
        elif res is False:
            drop = Drop(stage.name, "filtered")
        else:
            drop = Drop("error", f"{stage.kind} stage {stage.name} returned {type(res).__name__}")
        ledger.append(ledger_row(stage.name, drop, rec))
        st.dropped[drop.reason] += 1

    async def _results(self, stage: Stage, rows: list[Record], st: StageStats) -> list[Any]:
        if not stage.cache or self.cache is None:
            return await self._compute(stage, rows)
        keys = [_content_key(stage, r) for r in rows]
        hits = self.cache.get_many(keys)
        st.cached = sum(1 for k in keys if k in hits)
        results: list[Any] = [_rebase(_decode(hits[k]), r) if k in hits else None for k, r in zip(keys, rows, strict=True)]
        todo = [i for i, k in enumerate(keys) if k not in hits]

        def store(j: int, res: Any) -> None:  # committed per record: the unit of resume
            self.cache.put(keys[todo[j]], _encode(res))

        fresh = await self._compute(stage, [rows[i] for i in todo], on_result=store)
        for j, i in enumerate(todo):
            results[i] = fresh[j]
        return results

    async def _compute(self, stage: Stage, rows: list[Record], on_result=None) -> list[Any]:
        ctx, fn = self.ctx, stage.process

        def finish(j: int, res: Any) -> Any:
            if on_result is not None and not _is_transient(res):
                on_result(j, res)
            return res

        if not stage.is_async:
            out = []
            for j, r in enumerate(rows):
                try:
                    res = fn(r, ctx)
                except Exception as e:
                    res = exception_drop(e)
                out.append(finish(j, res))
            return out
        sem = asyncio.Semaphore(stage.concurrency)

        async def one(j: int, r: Record) -> Any:
            async with sem:
                try:
                    res = await fn(r, ctx)
                except Exception as e:
                    res = exception_drop(e)
            return finish(j, res)

        return list(await asyncio.gather(*(one(j, r) for j, r in enumerate(rows))))


def _rebase(res: Any, rec: Record) -> Any:
    """A cached result was keyed by content, not history: give it the current record's history."""
    history = list(rec.get("provenance") or [])
    if isinstance(res, dict):
        res["provenance"] = history
    elif isinstance(res, Keep):
        res.record["provenance"] = history
    elif isinstance(res, list):
        for child in res:
            child.pop("provenance", None)
    return res


def _is_transient(res: Any) -> bool:
    """Failures worth retrying on resume (endpoint down, rate limits) are not cached."""
    return isinstance(res, Drop) and res.reason in TRANSIENT_DROP_REASONS


def _encode(res: Any) -> bytes:
    if isinstance(res, Drop):
        payload = {"t": "drop", "v": res.__dict__ | {"votes": list(res.votes)}}
    elif isinstance(res, Keep):
        payload = {"t": "keep", "v": res.__dict__ | {"votes": list(res.votes)}}
    else:
        payload = {"t": "raw", "v": res}
    return json.dumps(payload, default=str).encode()


def _decode(blob: bytes) -> Any:
    payload = json.loads(blob)
    v = payload["v"]
    if payload["t"] == "drop":
        return Drop(**{**v, "votes": tuple(v["votes"])})
    if payload["t"] == "keep":
        return Keep(**{**v, "votes": tuple(v["votes"])})
    return v


def _usage_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}


# ---- committing shards ------------------------------------------------------------------------


def _part(seg_dir: Path, i: int) -> Path:
    return seg_dir / f"part-{i:05d}.parquet"


def _infer_table(rows: list[Record], metadata: dict[bytes, bytes]) -> pa.Table:
    """A shard of records with no declared schema: infer it, with the typed provenance column.
    (Shards may still differ, e.g. an all-null column; finalize unifies the data files.)"""
    table = pa.Table.from_pylist(rows)
    if "provenance" in table.column_names:
        idx = table.column_names.index("provenance")
        table = table.set_column(idx, PROVENANCE_FIELD, table["provenance"].cast(PROVENANCE_FIELD.type))
    else:
        table = table.append_column(PROVENANCE_FIELD, pa.nulls(len(table), PROVENANCE_FIELD.type))
    return table.replace_schema_metadata(metadata)


def commit_shard(seg_dir: Path, i: int, rows: list[Record], ledger: list[dict], stats: dict[str, StageStats], seg: Segment) -> None:
    """Write data, then ledger, then the done marker: the marker is the commit."""
    if rows:
        table = pa.Table.from_pylist(rows, schema=seg.schema) if seg.schema is not None else _infer_table(rows, seg.metadata)
        write_parquet(table, _part(seg_dir, i), table.schema)
    else:
        _part(seg_dir, i).unlink(missing_ok=True)
    ledger_path = seg_dir / f"part-{i:05d}.ledger.parquet"
    if ledger:
        write_parquet(ledger, ledger_path, LEDGER_SCHEMA)
    else:
        ledger_path.unlink(missing_ok=True)
    done = {"rows": len(rows), "drops": len(ledger), "stats": {k: v.to_dict() for k, v in stats.items()}}
    _write_json(seg_dir / f"part-{i:05d}.done.json", done)


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


class RayPool:
    """Ray tasks behind the `submit` interface of a process pool: the same shard function and
    commit protocol, so both executors give the same records (the run dir must be shared storage)."""

    def __init__(self, workers: int):
        try:
            import ray
        except ImportError:
            raise InputError("the ray engine needs Ray: pip install 'rlclimb[ray]'") from None
        self._started = not ray.is_initialized()
        if self._started:  # a local instance; connect to a cluster by starting Ray first (RAY_ADDRESS)
            ray.init(num_cpus=max(workers, 1), include_dashboard=False, log_to_driver=False)
        self._ray = ray
        self._fn = ray.remote(_worker_shard)

    def submit(self, fn, *args) -> cf.Future:
        return self._fn.remote(*args).future()

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc) -> None:
        if self._started:
            self._ray.shutdown()


def _pool(engine: str, workers: int):
    if engine == "ray":
        return RayPool(workers)
    return cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


# Worker processes keep their stages set up across shards (keyed by segment fingerprint).
_WORKER_STATE: dict[str, ShardRunner] = {}


def _worker_shard(seg: Segment, ctx: StageContext, cache_path: str | None, seg_dir: str, i: int, items: list) -> dict:
    runner = _WORKER_STATE.get(seg.fingerprint)
    if runner is None:
        setup_stages(seg.stages, ctx)
        runner = ShardRunner(seg.stages, ctx, KVStore(cache_path) if cache_path else None, seg.first)
        _WORKER_STATE[seg.fingerprint] = runner
    rows, ledger, stats = runner.run(items)
    commit_shard(Path(seg_dir), i, rows, ledger, stats, seg)
    return {"rows": len(rows), "drops": len(ledger), "seen": len(items)}


# ---- the executor -----------------------------------------------------------------------------


def _read_parts(seg_dir: Path) -> list[Path]:
    return sorted(seg_dir.glob("part-*[0-9].parquet"))


def _rows(batches: Iterable[pa.RecordBatch | list]) -> Iterator[Record]:
    for b in batches:
        yield from (to_rows(b) if isinstance(b, pa.RecordBatch) else b)


class LocalExecutor:
    def __init__(self, pipeline: Pipeline, run: RunDir, options: RunOptions):
        self.pipeline, self.run, self.options = pipeline, run, options
        self.segments = plan_segments(pipeline)
        self.llm = None
        if options.llm is not None:
            from .llm import LLMClient

            self.llm = LLMClient(options.llm, cache_path=run.llm_cache)
        self.ctx = StageContext(run_dir=run.path, llm=self.llm, seed=options.seed)
        self.loop = asyncio.new_event_loop()
        self.cache = KVStore(run.stage_cache) if any(s.cache for s in pipeline.stages) else None

    def execute(self) -> RunResult:
        t0 = time.perf_counter()
        with Progress(enabled=self.options.progress) as progress:
            for seg in self.segments:
                seg_dir = self.run.segment_dir(seg.dirname)
                seg_dir.mkdir(parents=True, exist_ok=True)
                if seg.is_global:
                    self._run_global(seg, seg_dir, progress)
                else:
                    self._run_rows(seg, seg_dir, progress)
        if self.llm is not None:
            self.loop.run_until_complete(self.llm.aclose())
        self.loop.close()
        return self.run.finalize(self.segments, elapsed_s=time.perf_counter() - t0)

    def _shards(self, seg: Segment) -> Iterator[list | pa.RecordBatch]:
        size = self.pipeline.shard_size
        if seg.first:
            return self.pipeline.reader.shards(size)
        return parquet_shards(_read_parts(self.run.segment_dir(self.segments[seg.index - 1].dirname)), size)

    def _total(self, seg: Segment) -> int | None:
        if seg.first:
            return self.pipeline.reader.estimate_total()
        return self.run.segment_rows(self.segments[seg.index - 1].dirname)

    def _run_rows(self, seg: Segment, seg_dir: Path, progress: Progress) -> None:
        task = progress.task(seg.stages[-1].name if len(seg.stages) == 1 else "+".join(s.name for s in seg.stages), self._total(seg))
        workers = self.options.workers if not seg.is_async else 1
        shards = self._shards(seg)
        if workers <= 1 and (self.options.engine == "local" or seg.is_async):
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
        ctx = StageContext(run_dir=self.run.path, llm=None, seed=self.options.seed)
        with _pool(self.options.engine, workers) as pool:
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
        _write_json(marker, {"stats": stats})


def run_pipeline(pipeline: Pipeline, out: str | Path, options: RunOptions | None = None) -> RunResult:
    options = options or RunOptions()
    for stage in pipeline.stages:  # configuration problems surface before anything is written
        stage.check(options.llm)
    run = RunDir(Path(out))
    with run.lock():
        run.write_config(pipeline, options)
        executor = LocalExecutor(pipeline, run, options)
        if options.retry_transient:
            reopen_transient(run, executor.segments)
        return executor.execute()


def reopen_transient(run: RunDir, segments: list[Segment]) -> int:
    """Un-commit what a retry must redo: in the first segment whose ledger holds transient drops
    (timeouts, rate limits, exhausted budgets...), the shards that dropped them; every later
    segment entirely (its shards are cut from the earlier output, whose sizes change). Caches
    make the redo cheap: only the transient failures are asked again. Returns shards reopened."""
    transient = sorted(TRANSIENT_DROP_REASONS)
    for k, seg in enumerate(segments):
        seg_dir = run.segment_dir(seg.dirname)
        if not seg_dir.exists():
            return 0
        hit = []
        for ledger in sorted(seg_dir.glob("part-*.ledger.parquet")):
            reasons = pq.read_table(ledger, columns=["reason"]).column("reason")
            if pc.any(pc.is_in(reasons, pa.array(transient))).as_py():
                hit.append(ledger.name.split(".")[0])
        if not hit:
            continue
        if seg.is_global:
            shutil.rmtree(seg_dir)
        else:
            for part in hit:
                for f in seg_dir.glob(f"{part}.*"):
                    f.unlink()
        for later in segments[k + 1 :]:
            shutil.rmtree(run.segment_dir(later.dirname), ignore_errors=True)
        return len(hit)
    return 0


def model_rows(records: Iterable[BaseModel]) -> list[Record]:
    """Rows of pydantic records, as stages see them."""
    return [r.model_dump() for r in records]


