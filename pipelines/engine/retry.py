"""Retrying the transient drops of a finished run."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..rundir import RunDir
from ..stage import TRANSIENT_DROP_REASONS
from ..storage import unpush
from .plan import Segment


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
            unpush(seg_dir / "_SUCCESS.json")  # (a run at a URL) the marker first: un-commit, then clean
            shutil.rmtree(seg_dir)
            unpush(seg_dir)
        else:
            for part in hit:
                unpush(seg_dir / f"{part}.done.json")
                for f in seg_dir.glob(f"{part}.*"):
                    f.unlink()
                    unpush(f)
        for later in segments[k + 1 :]:
            shutil.rmtree(run.segment_dir(later.dirname), ignore_errors=True)
            unpush(run.segment_dir(later.dirname))
        return len(hit)
    return 0
