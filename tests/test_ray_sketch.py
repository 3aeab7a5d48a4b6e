"""Global stages fed precomputed per-record sketches (what the ray executor computes on the
cluster, in batches of any size) decide exactly as when they compute them themselves."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlclimb.pipelines.engine.sketch import SketchFeed
from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.dedup.decontam import Decontam
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.dedup.minhash import MinHashDedup


def records() -> list[dict]:
    out = []
    for i in range(300):
        q = f"What is the value of {i % 40} plus 3, said the teacher to the class?"
        if i % 7 == 0:
            q = q.upper()  # an exact duplicate after normalization
        if i % 11 == 0:
            q = q.replace("teacher", "tutor")  # a near duplicate
        out.append({"id": f"r{i}", "question": q, "answer": str(i)})
    return out


def decisions(stage, rows, ctx) -> list:
    return [(r[0]["id"], r[1].reason, r[1].detail) if isinstance(r, tuple) else r["id"] for r in stage.run(iter(rows), ctx)]


def batches(stage, rows, sizes):
    i = 0
    for n in sizes:
        if i >= len(rows):
            return
        yield {k: np.asarray(v) for k, v in stage.sketch(rows[i : i + n]).items()}
        i += n


BENCH = [{"question": "What is the value of 12 plus 3, said the teacher to the class?", "answer": "15"},
         {"question": "what is the value of 30 plus 3, said the tutor to the class", "answer": "33"}]


def decontam(tmp_path):
    bench = tmp_path / "bench.jsonl"
    if not bench.exists():
        bench.write_text("".join(json.dumps(b) + "\n" for b in BENCH))
    stage = Decontam(benchmarks=[str(bench)], batch_size=64, matchers=["exact", "minhash"])
    stage.setup(StageContext(run_dir=tmp_path))
    return stage


@pytest.mark.parametrize("make", [lambda p: ExactDedup(), lambda p: MinHashDedup(batch_size=64), decontam],
                         ids=["exact", "minhash", "decontam"])
def test_fed_sketches_give_the_same_decisions(tmp_path, make):
    rows = records()
    plain = decisions(make(tmp_path), [dict(r) for r in rows], StageContext(run_dir=tmp_path / "a"))
    stage = make(tmp_path)
    feed = SketchFeed(batches(stage, rows, [1, 50, 7, 128, 3] * 40))
    fed = decisions(stage, [dict(r) for r in rows], StageContext(run_dir=tmp_path / "b", extras={"sketches": feed}))
    assert fed == plain
    assert sum(isinstance(d, tuple) for d in plain) > 10


def test_a_feed_shorter_than_the_input_is_an_error():
    feed = SketchFeed(iter([{"x": np.arange(3)}]))
    assert feed.take(2)["x"].tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="sketches ended before the records"):
        feed.take(2)
