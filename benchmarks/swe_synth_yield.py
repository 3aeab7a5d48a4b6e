"""Synthetic-task yield on real repositories: `swe-synth` over github-prs runs, per mutation kind.

    python benchmarks/swe_synth_yield.py RUN [RUN ...] [--per-kind 3] [--trials 2] [--out DIR]

Each RUN is a finished `rlclimb run github-prs` directory (its swebench.jsonl images must still
exist in the Docker engine). Prints, per repository and kind: candidates, validated tasks, and
the drop reasons, plus the wall time per stage (from the funnel).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--per-kind", type=int, default=3)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="swe-synth-"))
    for run in map(Path, args.runs):
        out = root / run.name
        cmd = [sys.executable, "-m", "rlclimb.pipelines.cli", "run", "swe-synth", "--input", str(run),
               "--out", str(out), "-q", "--set", f"synth_candidates.per_kind={args.per_kind}",
               "--set", f"synth_validate.trials={args.trials}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{run.name}: swe-synth failed: {done.stderr[-800:] or done.stdout[-800:]}")
            continue
        tasks = [json.loads(x) for x in (out / "swebench.jsonl").read_text().splitlines()]
        ledger = [r for f in sorted((out / "ledger").glob("part-*.parquet")) for r in pq.read_table(f).to_pylist()]
        kinds: dict[str, Counter] = defaultdict(Counter)
        for t in tasks:
            kinds[t["recipe"]["kind"]]["task"] += 1
        for r in ledger:
            if r["stage"].startswith("synth_") and r["stage"] != "synth_pick":
                kind = (r.get("record_id") or "").rsplit(".synth-", 1)[-1].split("-")[0] or "?"
                kinds[kind][r["reason"]] += 1
        stats = json.loads((out / "stats.json").read_text())
        print(f"\n{run.name}: {len(tasks)} synthetic tasks  ({out})")
        for kind in sorted(kinds):
            c = kinds[kind]
            tried = sum(c.values())
            drops = ", ".join(f"{k} {v}" for k, v in c.most_common() if k != "task")
            print(f"  {kind:<17} tried {tried:>3}  tasks {c['task']:>3}  {drops}")
        for s in stats.get("stages", []):
            print(f"  stage {s['name']:<17} in {s['in']:>4} out {s['out']:>4} {s['time_s']:>8.1f}s")


if __name__ == "__main__":
    main()
