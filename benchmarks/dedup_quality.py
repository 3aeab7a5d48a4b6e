"""Precision / recall of the dedup stages and of decontamination on the labeled eval sets.

    python benchmarks/dedup_quality.py                 # defaults of every stage and backend
    python benchmarks/dedup_quality.py --sweep         # also threshold sweeps (how defaults were chosen)
    python benchmarks/dedup_quality.py --backends static   # skip the slow MiniLM backends

Dedup is scored on labeled pairs (same cluster = predicted duplicate); decontamination on inputs
(flagged against the right benchmark item = true positive). `matched` shows, per category, the
share of pairs joined / inputs flagged: for exact, light_edit and paraphrase that is recall, for
variant, other_ask and unrelated it is the false-positive rate.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import dedup_evalset as E  # noqa: E402

from rlclimb.stages.dedup.decontam import BenchmarkIndex, BenchmarkItem, DecontamConfig  # noqa: E402
from rlclimb.stages.dedup.exact import ExactDedup  # noqa: E402
from rlclimb.stages.dedup.minhash import MinHashDedup  # noqa: E402
from rlclimb.stages.dedup.vector import VectorDedup  # noqa: E402


def line(name: str, r: dict, key: str) -> str:
    return f"{name:<44} P={r['precision']:.3f} R={r['recall']:.3f}  {json.dumps(r[key])}"


def dedup_rows(ev: E.EvalSet, backends: list[str], sweep: bool) -> list[tuple[str, dict]]:
    rows = [("dedup_exact", E.score_pairs(ev, E.stage_clusters(ExactDedup(), ev.items))),
            ("dedup_minhash (default)", E.score_pairs(ev, E.stage_clusters(MinHashDedup(), ev.items)))]
    if sweep:
        for th in (0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            for nums in ("exact", "ignore"):
                rows.append((f"  minhash threshold={th} numbers={nums}",
                             E.score_pairs(ev, E.stage_clusters(MinHashDedup(threshold=th, numbers=nums), ev.items))))
    for backend in backends:
        stage = VectorDedup(backend=backend)
        rows.append((f"dedup_vector {backend} (default {stage.config.cosine})", E.score_pairs(ev, E.stage_clusters(stage, ev.items))))
        if sweep:
            for th in (0.75, 0.8, 0.85, 0.9, 0.95):
                rows.append((f"  vector {backend} threshold={th}",
                             E.score_pairs(ev, E.stage_clusters(VectorDedup(backend=backend, threshold=th), ev.items))))
    return rows


def decontam_flags(ds: E.DecontamSet, config: DecontamConfig) -> dict[str, str]:
    index = BenchmarkIndex([BenchmarkItem("eval", it.id, it.text) for it in ds.benchmark], config)
    found = index.match([it.text for it in ds.inputs])
    return {it.id: m.benchmark.id for it, m in zip(ds.inputs, found, strict=True) if m is not None}


def decontam_rows(ds: E.DecontamSet, backends: list[str], sweep: bool) -> list[tuple[str, dict]]:
    rows = [("decontam exact+minhash", E.score_decontam(ds, decontam_flags(ds, DecontamConfig(matchers=["exact", "minhash"]))))]
    if sweep:
        for th in (0.3, 0.4, 0.5, 0.6, 0.7):
            for nums in ("exact", "subset", "ignore"):
                cfg = DecontamConfig(matchers=["exact", "minhash"], minhash_threshold=th, numbers=nums)
                rows.append((f"  minhash threshold={th} numbers={nums}", E.score_decontam(ds, decontam_flags(ds, cfg))))
    for backend in backends:
        cfg = DecontamConfig(vector_backend=backend)
        rows.append((f"decontam all matchers, {backend} (default {cfg.cosine})", E.score_decontam(ds, decontam_flags(ds, cfg))))
        if sweep:
            for th in (0.7, 0.75, 0.8, 0.85, 0.9):
                for nums in ("exact", "subset"):
                    cfg = DecontamConfig(vector_backend=backend, vector_threshold=th, numbers=nums)
                    rows.append((f"  vector {backend} threshold={th} numbers={nums}", E.score_decontam(ds, decontam_flags(ds, cfg))))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", nargs="*", default=["minilm", "minilm-int8", "static"])
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-template", type=int, default=6)
    args = ap.parse_args()
    t0 = time.perf_counter()
    ev = E.build(args.seed, args.per_template)
    print(f"dedup eval set: {len(ev.items)} items, {len(ev.pairs)} labeled pairs")
    for name, r in dedup_rows(ev, args.backends, args.sweep):
        print(line(name, r, "matched_share"))
    ds = E.build_decontam(args.seed, args.per_template)
    print(f"\ndecontam eval set: {len(ds.benchmark)} benchmark items, {len(ds.inputs)} inputs "
          f"({sum(it.category in ds.LEAKS for it in ds.inputs)} leaks)")
    for name, r in decontam_rows(ds, args.backends, args.sweep):
        print(line(name, r, "flagged_share"))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
