"""`pair` on the cluster: one Ray task per document group, parts committed by workers.

Pairing needs every question before an answer book can be placed, but only by numbering path:
1. *Grouping* (driver): the previous segment's parts are read for three columns only (document,
   role, numbering path; ~100 bytes per span, what the local stage holds too), and the stage's
   own `groups` decides the document groups and where each answer book points.
2. *Pairing* (a task per group): the worker reads its group's spans from the committed parts
   (by global index, each slice read once), passes them through the JSON round trip of the local
   stage's spool and pairs them with the stage's `pair_group`. It returns a small summary (which
   outputs are rows, the drop reasons) to the driver and the outputs themselves as a second
   object, which stays in the object store (Ray re-runs the task if the node holding it dies).
3. *Commits* (a task per part): the driver cuts the concatenated outputs into exactly the parts
   the local executor writes (`part_ranges`: a part closes after every `shard_size`-th row, the
   ledger entries go with the part they come in), and each part's task gets the output objects
   of the groups it spans and commits them with the usual protocol.
Same parts, ids, order, ledger and funnel as the local executor. Memory: a pairing worker holds
its group (the largest group bounds a node); the driver, the numbering paths and one byte per
output; the object store, the stage's outputs between the two jobs (spilled to disk past its
size). All-or-nothing like the local global stage: a run killed before `_SUCCESS.json` redoes it.

With an LLM role, pair runs on the cluster only for a run at a URL, whose LLM cache is in the
store and so seen by every node; on a shared POSIX run dir the LLM cache is SQLite (one host), so
pair stays on the driver there, and a resumed run still repeats none of its LLM calls.
"""

from __future__ import annotations

import copy
import time
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow.parquet as pq

from rlclimb.schemas.io import to_rows

from ..bookkeeping import StageStats, ledger_row
from ..stage import Record, Stage, StageContext, setup_stages
from ..storage import local_dir, read_parquet, unpush, url_of
from .commit import commit_shard, read_parts, write_json
from .plan import Segment
from .ray_cluster import check_commit
from .ray_global import Slice, input_slices, part_ranges

KEY_COLUMNS = ["source.document", "role", "path"]  # all that grouping reads (read as document, role, path)


def pairs_on_cluster(stage: Stage, run_url: str | None) -> bool:
    """Is this a pair stage the cluster can run (see the module's note on LLM caches)?"""
    from rlclimb.stages.documents.pair_qa import PairQA

    return isinstance(stage, PairQA) and (not stage.config.llm_role or bool(run_url))


def group_indices(stage: Any, parts: list[Path]) -> tuple[dict[str, list[str]], list[tuple[list[str], np.ndarray]]]:
    """(answer documents' targets, each document group's documents and its spans' global input
    indices, in output order), from the key columns of the committed parts."""
    from rlclimb.stages.documents.pair_qa import SpanKeys

    keys, where, g = SpanKeys(), {}, 0
    for path in parts:
        cols = pq.read_table(path, columns=KEY_COLUMNS)
        for doc, role, numbering in zip(*(cols[c].to_pylist() for c in ("document", "role", "path")), strict=True):
            keys.add(doc, role, numbering)
            where.setdefault(doc, array("q")).append(g)
            g += 1
    targets, groups = stage.groups(keys)
    return targets, [(docs, np.sort(np.concatenate([np.frombuffer(where[d], np.int64) for d in docs]))) for docs in groups]


def read_indices(slices: list[Slice], idx: np.ndarray) -> Iterator[Record]:
    """The records at these global indices (ascending), each slice they touch read once."""
    starts = np.array([s.start for s in slices])
    which = np.searchsorted(starts, idx, side="right") - 1
    for j in np.unique(which):
        s = slices[j]
        rows = to_rows(read_parquet(s.path).slice(s.offset, s.length))
        for g in idx[which == j]:
            yield rows[g - s.start]


def pair_group(stage: Any, slices: list[Slice], idx: np.ndarray, targets: dict[str, list[str]],
               ctx: StageContext, llm: Any, llm_cache: str | None) -> tuple[dict, list]:
    """A Ray task: pair one document group. (summary for the driver, the outputs: ("row", item)
    or ("drop", ledger row), in the local stage's order)."""
    if llm is not None and stage.config.llm_role:
        from .limiter import ClusterLLMClient

        ctx = replace(ctx, llm=ClusterLLMClient(llm, cache_path=llm_cache))
    setup_stages([stage], ctx)
    spans = (orjson.loads(orjson.dumps(r, default=str)) for r in read_indices(slices, idx))  # the local spool's round trip
    out, reasons = [], Counter()
    for item in stage.pair_group(spans, targets, ctx):
        if isinstance(item, tuple):
            rec, drop = item
            out.append(("drop", ledger_row(stage.name, drop, rec)))
            reasons[drop.reason] += 1
        else:
            out.append(("row", item))
    mask = np.fromiter((kind == "row" for kind, _ in out), bool, len(out))
    return {"rows": mask, "reasons": dict(reasons)}, out


def commit_part(seg: Segment, seg_dir: str, k: int, start: int, end: int, first: int, *outputs: list) -> dict:
    """A Ray task: commit part k, the outputs [start, end) of the concatenation, whose first
    group's outputs begin at index `first`."""
    rows, ledger, g = [], [], first
    for group in outputs:
        for kind, value in group:
            if start <= g < end:
                (rows if kind == "row" else ledger).append(value)
            g += 1
    commit_shard(local_dir(seg_dir), k, rows, ledger, {}, seg)
    return {"k": k, "seen": end - start, "drops": len(ledger)}


def part_groups(lengths: list[int], ranges: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """For each part's output range [start, end): the groups [lo, hi) whose outputs overlap it
    (groups have `lengths` outputs, concatenated in order) and where group lo's outputs begin."""
    ends = np.cumsum(lengths, dtype=np.int64)
    begins = ends - np.asarray(lengths, np.int64)
    out = []
    for start, end in ranges:
        lo = int(np.searchsorted(ends, start, side="right"))
        hi = int(np.searchsorted(begins, end, side="left"))
        out.append((lo, max(lo, hi), int(begins[lo]) if lo < len(begins) else start))
    return out


def run_pair(stage: Stage, seg: Segment, seg_dir: Path, prev_dir: Path, *, shard_size: int, ctx: StageContext,
             resources: dict[str, float], llm: Any, llm_cache: str | None, progress) -> None:
    """Pair on the cluster and commit the local executor's parts, then the stats (the marker)."""
    import ray

    t0 = time.perf_counter()
    parts = read_parts(prev_dir)
    slices = input_slices(parts, shard_size)
    n = slices[-1].start + slices[-1].length if slices else 0
    task = progress.task(stage.name, n)
    targets, groups = group_indices(stage, parts)
    opts = {"num_cpus": resources["num_cpus"], "max_retries": -1}  # retried when a worker dies
    if resources.get("num_gpus"):
        opts["num_gpus"] = resources["num_gpus"]
    shipped, slices_ref = ray.put(copy.copy(stage)), ray.put(slices)
    pair_task = ray.remote(num_returns=2, **opts)(pair_group)
    summaries, outputs = [], []
    for docs, idx in groups:
        mine = {d: targets[d] for d in docs if d in targets}  # pair_group looks up only its own answer documents
        s, o = pair_task.remote(shipped, slices_ref, idx, mine, ctx, llm, llm_cache)
        summaries.append(s)
        outputs.append(o)
    summaries = ray.get(summaries)
    mask = np.concatenate([s["rows"] for s in summaries]) if summaries else np.zeros(0, bool)
    ranges = part_ranges(len(mask), np.flatnonzero(~mask), shard_size)
    for stale in seg_dir.glob("part-*"):
        stale.unlink()
        unpush(stale)
    commit = ray.remote(max_retries=-1, num_cpus=min(resources["num_cpus"], 1.0))(commit_part)
    pending = [commit.remote(seg, url_of(seg_dir), k, start, end, first, *outputs[lo:hi])
               for k, ((start, end), (lo, hi, first)) in enumerate(zip(ranges, part_groups([len(s["rows"]) for s in summaries], ranges), strict=True))]
    del outputs  # each group's outputs leave the object store once the parts holding them are in
    for r in ray.get(pending):
        check_commit(seg_dir, r["k"], "a Ray worker")
        progress.advance(task, r["seen"], r["drops"])
    reasons = Counter()
    for s in summaries:
        reasons.update(s["reasons"])
    kept = int(mask.sum())
    st = StageStats(seen=n, kept=kept, out=kept, dropped=reasons)
    st.time_s = time.perf_counter() - t0
    write_json(seg_dir / "_SUCCESS.json", {"stats": {stage.name: st.to_dict()}})
