"""Global stages fed precomputed per-record sketches (what the ray executor computes on the
cluster, in batches of any size) decide exactly as when they compute them themselves."""

from __future__ import annotations

import numpy as np
import pytest

from rlclimb.pipelines.engine.sketch import SketchFeed
from rlclimb.pipelines.stage import StageContext
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


@pytest.mark.parametrize("make", [lambda: ExactDedup(), lambda: MinHashDedup(batch_size=64)], ids=["exact", "minhash"])
def test_fed_sketches_give_the_same_decisions(tmp_path, make):
    rows = records()
    plain = decisions(make(), [dict(r) for r in rows], StageContext(run_dir=tmp_path / "a"))
    stage = make()
    feed = SketchFeed(batches(stage, rows, [1, 50, 7, 128, 3] * 40))
    fed = decisions(stage, [dict(r) for r in rows], StageContext(run_dir=tmp_path / "b", extras={"sketches": feed}))
    assert fed == plain
    assert sum(isinstance(d, tuple) for d in plain) > 30


def test_a_feed_shorter_than_the_input_is_an_error():
    feed = SketchFeed(iter([{"x": np.arange(3)}]))
    assert feed.take(2)["x"].tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="sketches ended before the records"):
        feed.take(2)
