"""What the fuzzy dedup stages share: their settings, the representative rule, clusters from
verified pairs, and the JSON report they write.

A fuzzy dedup stage sees every record before it can decide any (a later record may be the
better representative), so records wait in a spool file on disk (`pipelines/spill.py`), not in
memory, and come back out in input order once clusters are known.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from rlclimb.pipelines.spill import RecordSpool
from rlclimb.pipelines.stage import Drop, Record, StageConfig, StageContext

KeepRule = Literal["earliest", "longest_answer", "source_priority"]


class ClusterConfig(StageConfig):
    """Settings every fuzzy dedup stage has: which text, which representative, where to spill."""

    field: str = "question"
    keep: KeepRule = "earliest"  # the record a cluster keeps; ties go to the earliest
    # keep=source_priority: glob patterns on source.document, best first ("*olympiad*", "*.jsonl")
    source_priority: list[str] = Field(default_factory=list)
    examples: int = 5  # clusters shown in the report
    spill_dir: str | None = None  # default: <run dir>/tmp/<stage>, else the system temp dir


# ---- representative rule -------------------------------------------------------------------------


def rank_of(record: Record, config: ClusterConfig) -> int:
    """Lower is a better representative (the input index breaks ties, so earliest wins them)."""
    if config.keep == "longest_answer":
        return -len(str(record.get("answer") or ""))
    if config.keep == "source_priority":
        source = record.get("source")
        document = (source.get("document") if isinstance(source, dict) else None) or ""
        for i, pattern in enumerate(config.source_priority):
            if fnmatch.fnmatch(document, pattern):
                return i
        return len(config.source_priority)
    return 0


def input_text(record: Record, field: str) -> str:
    value = record.get(field)
    return value if isinstance(value, str) else ("" if value is None else str(value))


# ---- clusters ------------------------------------------------------------------------------------


def clusters(n: int, left: np.ndarray, right: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of the verified pairs (what union-find over them gives), and each
    record's representative: the member with the lowest (rank, index).

    Returns (label per record, representative index per record; itself when it is kept)."""
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    graph = coo_matrix((np.ones(len(left), np.int8), (left, right)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    order = np.lexsort((np.arange(n), rank, labels))  # by label, then rank, then index
    first = np.ones(n, bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    best = np.empty(labels.max() + 1, np.int64)
    best[labels[order][first]] = order[first]
    return labels, best[labels]


def cluster_summary(labels: np.ndarray, rep: np.ndarray) -> dict[str, Any]:
    sizes = np.bincount(labels)
    dup = sizes[sizes > 1]
    hist = {str(k): int(v) for k, v in zip(*np.unique(np.minimum(dup, 10), return_counts=True), strict=True)}
    if "10" in hist:
        hist["10+"] = hist.pop("10")
    return {
        "clusters": int(len(dup)),  # clusters with more than one member
        "records_in_clusters": int(dup.sum()),
        "largest_cluster": int(dup.max()) if len(dup) else 0,
        "cluster_sizes": hist,
        "dropped": int((rep != np.arange(len(rep))).sum()),
    }


def example_clusters(labels: np.ndarray, count: int) -> dict[int, list[int]]:
    """Members (input indices) of the `count` largest clusters, for the report."""
    if count <= 0 or len(labels) == 0:
        return {}
    sizes = np.bincount(labels)
    top = [int(c) for c in np.argsort(-sizes, kind="stable")[:count] if sizes[c] > 1]
    wanted = np.isin(labels, top)
    members: dict[int, list[int]] = {c: [] for c in top}
    for i in np.flatnonzero(wanted):
        members[int(labels[i])].append(int(i))
    return members


def write_report(ctx: StageContext, stage_name: str, report: dict[str, Any]) -> Path | None:
    """The stage's report, next to the segment it describes (`report.<stage>.json`); the engine
    publishes the current segments' reports as `<run dir>/reports/<stage>.json` (read by the
    dataset card). Without an engine: straight to `<run dir>/reports/`; nothing without a run dir."""
    if ctx.segment_dir is not None:
        path = Path(ctx.segment_dir) / f"report.{stage_name}.json"
    elif ctx.run_dir is not None:
        path = Path(ctx.run_dir) / "reports" / f"{stage_name}.json"
    else:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str))
    os.replace(tmp, path)
    return path


def emit_clusters(spool: RecordSpool, rep: np.ndarray, labels: np.ndarray, score: np.ndarray,
                  examples: dict[int, list[int]], reason: str, score_name: str, field: str) -> Iterator[Record | tuple[Record, Drop]]:
    """Stream the spool back in input order: representatives pass, members drop naming theirs.

    Fills `examples` members in place with {id, text, score} for the report."""
    n = len(rep)
    later = np.flatnonzero(rep > np.arange(n))  # representatives that come after a member
    rep_ids: dict[int, str] = {}
    if len(later):
        wanted = set(rep[later].tolist())
        rep_ids = {i: str(r.get("id") or i) for i, r in enumerate(spool) if i in wanted}
    sizes = np.bincount(labels) if n else np.zeros(0, np.int64)
    shown = {i: c for c, members in examples.items() for i in members[:6]}
    for i, rec in enumerate(spool):
        r = int(rep[i])
        if i in shown:
            examples[shown[i]][examples[shown[i]].index(i)] = {
                "index": i, "id": rec.get("id"), "text": input_text(rec, field)[:500], "kept": r == i,
                "score_to_kept": round(float(score[i]), 4)}
        if r == i:
            rep_ids.setdefault(i, str(rec.get("id") or i))
            yield rec
        else:
            size = int(sizes[labels[i]])
            yield rec, Drop(reason, f"near-duplicate of {rep_ids.get(r, r)} ({score_name}{score[i]:.3f}; cluster of {size})")


def examples_report(members: list) -> dict:
    """A report example: the cluster's size and its first members as filled by emit_clusters."""
    return {"size": len(members), "members": [m for m in members if isinstance(m, dict)]}
