"""The Ray executor gives the same dataset, ledger and funnel as the local one."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.pipelines.engine import RunOptions, run_pipeline

pytestmark = pytest.mark.slow


def write_dump(path, n: int = 400):
    lines = []
    for i in range(n):
        if i % 97 == 5:
            lines.append('{"question": "broken')
        elif i % 50 == 7:  # a case variant of an earlier question: an exact-dedup drop
            lines.append(json.dumps({"question": f"WHAT IS {i - 1} TIMES 3?", "answer": 3 * (i - 1)}))
        else:
            lines.append(json.dumps({"question": f"What is {i} times 3?", "answer": 3 * i}))
    path.write_text("\n".join(lines) + "\n")


def run(tmp_path, src, engine, workers):
    pipe = PIPELINES["qa-jsonl"]([str(src)], {}, 37)
    result = run_pipeline(pipe, tmp_path / engine, RunOptions(engine=engine, workers=workers, progress=False))
    data = pq.read_table(result.run_dir / "data").to_pylist()
    ledger = pq.read_table(result.run_dir / "ledger").select(["stage", "reason", "line"]).to_pylist()
    funnel = [(s["name"], s["in"], s["kept"], s["dropped"]) for s in result.stats["stages"]]
    return data, ledger, funnel


def test_ray_engine_matches_local(tmp_path):
    src = tmp_path / "dump.jsonl"
    write_dump(src)
    local = run(tmp_path, src, "local", 1)
    ray_ = run(tmp_path, src, "ray", 2)
    assert ray_[0] == local[0]
    assert ray_[1] == local[1]
    assert ray_[2] == local[2]
    assert len(local[0]) == 400 - 5 - 8  # 5 broken lines, 8 case-variant duplicates
    assert {r["reason"] for r in local[1]} == {"bad_json", "duplicate_exact"}
