"""The Ray executor with its run directory on S3 (moto's server on 127.0.0.1): workers commit
straight to the bucket (no shared mount) and the result is the local executor's."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from test_storage_s3 import BUCKET, download, s3  # noqa: F401 (s3: the server fixture)

from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.pipelines.engine import RunOptions, run_pipeline

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")


def write_dump(path):
    lines = []
    for i in range(300):
        if i % 97 == 5:
            lines.append('{"question": "broken')
        elif i % 50 == 7:  # a case variant of an earlier question: an exact-dedup drop
            lines.append(json.dumps({"question": f"WHAT IS {i - 1} TIMES 3?", "answer": 3 * (i - 1)}))
        else:
            lines.append(json.dumps({"question": f"What is {i} times 3?", "answer": 3 * i}))
    path.write_text("\n".join(lines) + "\n")


def outcome(run_dir):
    data = pq.read_table(run_dir / "data").to_pylist()
    ledger = pq.read_table(run_dir / "ledger").select(["stage", "reason", "line"]).to_pylist()
    stats = json.loads((run_dir / "stats.json").read_text())
    return data, ledger, [(s["name"], s["in"], s["kept"], s["dropped"]) for s in stats["stages"]]


@pytest.mark.timeout(900)
def test_ray_workers_commit_to_s3(s3, tmp_path, monkeypatch):  # noqa: F811
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("RLCLIMB_MIRRORS", str(mirrors))
    src = tmp_path / "dump.jsonl"
    write_dump(src)
    s3.put_file(str(src), f"{BUCKET}/inputs/ray/dump.jsonl")
    local = run_pipeline(PIPELINES["qa-jsonl"]([str(src)], {}, 37), tmp_path / "local", RunOptions(progress=False))
    out = f"s3://{BUCKET}/runs/ray"
    pipe = PIPELINES["qa-jsonl"]([f"s3://{BUCKET}/inputs/ray/dump.jsonl"], {}, 37)
    run_pipeline(pipe, out, RunOptions(engine="ray", workers=2, progress=False))
    got = download(s3, out, tmp_path / "got")
    assert outcome(got) == outcome(local.run_dir)
    # the workers wrote into their own mirrors of the segment URLs, not into the driver's
    assert len([d for d in mirrors.iterdir() if d.is_dir()]) > 1
