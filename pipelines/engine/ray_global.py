"""Global stages on the cluster: decisions from Ray Data jobs, parts committed by workers.

A dedup or decontam stage's output is its input in order, less the records it drops. So on Ray it
runs as two jobs, and the driver never reads a record:
1. *Decisions* (`ray_dedup.py`, per stage): which input indices drop, with their detail. Exact
   dedup: a groupby by digest; MinHash: signatures (map), band keys (groupby), candidate pairs
   verified on the cluster, connected components on the driver over the verified edges;
   decontam: each record matched against the benchmark index that every actor loads once (the
   broadcast). The driver holds one row per *dropped* record (`Decisions`).
2. *Commits*: the driver cuts the output into exactly the parts the local executor writes (a part
   closes after every `shard_size`-th kept record, `part_ranges`), and each worker reads its input
   range from the previous segment's committed parts, applies the decisions and commits the part
   with the usual protocol. Same parts, ledger and funnel as the local executor.

All-or-nothing like the local global stage: a run killed before `_SUCCESS.json` redoes the stage
(Ray retries a killed worker's task within the run; commits are idempotent, same part names).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow.parquet as pq

from rlclimb.schemas.io import to_rows

from ..bookkeeping import StageStats, ledger_row
from ..stage import Drop, Record
from ..storage import local_dir, read_parquet, unpush, url_of
from .commit import commit_shard, write_json
from .plan import Segment
from .ray_cluster import check_commit


@dataclass(frozen=True)
class Slice:
    """Rows [offset, offset + length) of one committed part: the records with global input
    indices [start, start + length)."""

    path: str
    offset: int
    length: int
    start: int

    def read(self) -> list[Record]:
        return to_rows(read_parquet(self.path).slice(self.offset, self.length))


def input_slices(parts: list[Path], size: int) -> list[Slice]:
    """The input in slices of at most `size` rows (one file's rows each), with global indices."""
    out, start = [], 0
    for path in parts:
        n = pq.ParquetFile(path).metadata.num_rows
        for offset in range(0, n, size):
            length = min(size, n - offset)
            out.append(Slice(url_of(path), offset, length, start))  # (a URL for a run at one)
            start += length
    return out


def read_range(slices: list[Slice], start: int, end: int) -> Iterator[tuple[int, Record]]:
    """(global index, record) for the input indices [start, end), in order."""
    starts = [s.start for s in slices]
    j = max(0, int(np.searchsorted(starts, start, side="right")) - 1)
    for s in slices[j:]:
        if s.start >= end:
            return
        if s.start + s.length <= start:
            continue
        rows = s.read()
        for k in range(max(start - s.start, 0), min(end - s.start, s.length)):
            yield s.start + k, rows[k]


@dataclass
class Decisions:
    """The records a global stage drops (indices ascending, one detail each) and its report."""

    reason: str
    idx: np.ndarray
    detail: list[str]
    report: dict[str, Any] = field(default_factory=dict)
    respool: bool = False  # records pass a JSON round trip in the local stage (its disk spool): do the same

    def __post_init__(self) -> None:
        order = np.argsort(self.idx, kind="stable")
        self.idx = np.asarray(self.idx, np.int64)[order]
        self.detail = [self.detail[i] for i in order]


def part_ranges(n: int, dropped: np.ndarray, size: int) -> list[tuple[int, int]]:
    """The input range of each part the local executor commits for a global stage: a part closes
    right after its `size`-th kept record; what is left (rows or drops) makes a last part, and
    there is always at least one (maybe empty) part."""
    kept = n - len(dropped)
    before = dropped - np.arange(len(dropped))  # kept records before each drop
    closing = np.arange(size - 1, kept, size)  # ordinal of the kept record that closes each part
    ends = (closing + np.searchsorted(before, closing, side="right") + 1).tolist()
    bounds = [0, *ends]
    if bounds[-1] < n or len(bounds) == 1:
        bounds.append(n)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def commit_parts(batch: dict, *, slices: list[Slice], seg: Segment, seg_dir: str, stage: str, reason: str, respool: bool) -> dict:
    """A Ray Data UDF: commit one part of a global stage's output (one spec per batch)."""
    out: dict[str, list] = {"k": [], "seen": [], "drops": []}
    for k, spec in zip(batch["k"].tolist(), batch["spec"].tolist(), strict=True):
        start, end, idx, details = pickle.loads(spec)
        drops = dict(zip(idx, details, strict=True))
        rows, ledger = [], []
        for g, rec in read_range(slices, start, end):
            if respool:
                rec = orjson.loads(orjson.dumps(rec, default=str))
            if g in drops:
                ledger.append(ledger_row(stage, Drop(reason, drops[g]), rec))
            else:
                rows.append(rec)
        commit_shard(local_dir(seg_dir), k, rows, ledger, {}, seg)
        out["k"].append(k)
        out["seen"].append(end - start)
        out["drops"].append(len(ledger))
    return out


class ClusterMap:
    """`map_batches` as the global stages use it: functions as tasks (retried when their worker
    dies), classes on an actor pool (restarted likewise: both are Ray Data's defaults), CPUs per
    the stage's resources."""

    def __init__(self, ray_data, resources: dict[str, float], actors: int):
        self.ray_data, self.resources, self.actors = ray_data, resources, actors

    def __call__(self, ds, fn, *, fn_kwargs: dict | None = None, actor: dict | None = None, batch_size: int | None = 1):
        args: dict[str, Any] = {"batch_size": batch_size, "num_cpus": self.resources["num_cpus"]}
        if self.resources.get("num_gpus"):
            args["num_gpus"] = self.resources["num_gpus"]
        if actor is not None:
            return ds.map_batches(fn, fn_constructor_kwargs=actor, compute=self.ray_data.ActorPoolStrategy(min_size=1, max_size=self.actors), **args)
        return ds.map_batches(fn, fn_kwargs=fn_kwargs or {}, **args)


def commit_decisions(run: ClusterMap, seg: Segment, seg_dir: Path, slices: list[Slice], n: int, decisions: Decisions,
                     size: int, t0: float, progress, task) -> None:
    """Commit the stage's output parts on the cluster, then its stats (the marker)."""
    ranges = part_ranges(n, decisions.idx, size)
    lo = np.searchsorted(decisions.idx, [s for s, _ in ranges])
    hi = np.searchsorted(decisions.idx, [e for _, e in ranges])
    specs = [{"k": k, "spec": pickle.dumps((s, e, decisions.idx[a:b].tolist(), decisions.detail[a:b]))}
             for k, ((s, e), a, b) in enumerate(zip(ranges, lo, hi, strict=True))]
    for stale in seg_dir.glob("part-*"):
        stale.unlink()
        unpush(stale)
    stage = seg.stages[0]
    ds = run(run.ray_data.from_items(specs, override_num_blocks=len(specs)), commit_parts,
             fn_kwargs={"slices": slices, "seg": seg, "seg_dir": url_of(seg_dir), "stage": stage.name,
                        "reason": decisions.reason, "respool": decisions.respool})
    for row in ds.iter_rows():
        check_commit(seg_dir, int(row["k"]), "a Ray worker")
        progress.advance(task, int(row["seen"]), int(row["drops"]))
    st = StageStats(seen=n, kept=n - len(decisions.idx), out=n - len(decisions.idx))
    if len(decisions.idx):
        st.dropped[decisions.reason] = len(decisions.idx)
    st.time_s = time.perf_counter() - t0
    write_json(seg_dir / "_SUCCESS.json", {"stats": {stage.name: st.to_dict()}})
