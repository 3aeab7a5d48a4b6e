"""One shard through the row-wise stages of a segment: fused sync stages, async stages, the row cache."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pyarrow as pa

from rlclimb.schemas.io import to_rows

from ..bookkeeping import READ_STAGE, StageStats, exception_drop, ledger_row
from ..kvstore import KVStore
from ..readers import Rejected
from ..stage import Drop, Keep, Record, Stage, StageContext
from .rowcache import content_key, decode, encode, is_transient, rebase


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
        keys = [content_key(stage, r) for r in rows]
        hits = self.cache.get_many(keys)
        st.cached = sum(1 for k in keys if k in hits)
        results: list[Any] = [rebase(decode(hits[k]), r) if k in hits else None for k, r in zip(keys, rows, strict=True)]
        todo = [i for i, k in enumerate(keys) if k not in hits]

        def store(j: int, res: Any) -> None:  # committed per record: the unit of resume
            self.cache.put(keys[todo[j]], encode(res))

        fresh = await self._compute(stage, [rows[i] for i in todo], on_result=store)
        for j, i in enumerate(todo):
            results[i] = fresh[j]
        return results

    async def _compute(self, stage: Stage, rows: list[Record], on_result=None) -> list[Any]:
        ctx, fn = self.ctx, stage.process

        def finish(j: int, res: Any) -> Any:
            if on_result is not None and not is_transient(res):
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


def _usage_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}
