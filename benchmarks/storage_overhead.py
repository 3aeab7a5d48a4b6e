"""A run directory on S3 vs on local disk, and what the storage layer costs a local run.

    python benchmarks/storage_overhead.py [--records 20000] [--shard-size 1000] [--repeats 3]

Runs `import -> normalize -> validate -> exact dedup` over synthetic QA JSONL three ways in one
process, interleaved `--repeats` times (median wall seconds printed): local input and run
directory; input and run directory on a local S3 server (moto's ThreadedMotoServer on
127.0.0.1: no network latency, so this is the client-side cost of the protocol, not S3's); and
the local run's per-commit storage checks alone (`storage.push`/`unpush` on local paths, as
the engine calls them: a cached lookup that finds no mirror), timed over 100k calls.
Needs `pip install 'moto[server]' s3fs`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ray_throughput import write_input  # noqa: E402

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline  # noqa: E402
from rlclimb.pipelines.readers import JsonlReader  # noqa: E402
from rlclimb.pipelines.storage import push, unpush  # noqa: E402
from rlclimb.stages.dedup.exact import ExactDedup  # noqa: E402
from rlclimb.stages.qa.importer import ImportQA  # noqa: E402
from rlclimb.stages.text import NormalizeText, ValidateQA  # noqa: E402


def pipeline(src: str, shard_size: int) -> Pipeline:
    return Pipeline("bench", JsonlReader([src]), [ImportQA(), NormalizeText(), ValidateQA(), ExactDedup()], shard_size=shard_size)


def timed(src: str, out: str, shard_size: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    result = run_pipeline(pipeline(src, shard_size), out, RunOptions(progress=False))
    return time.perf_counter() - t0, result.records


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--shard-size", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://{host}:{port}")
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir("bench")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["RLCLIMB_MIRRORS"] = str(tmp / "mirrors")
        src = tmp / "qa.jsonl"
        write_input(src, args.records)
        fs.put_file(str(src), "bench/in/qa.jsonl")
        times: dict[str, list[float]] = {"local": [], "s3": []}
        for r in range(args.repeats):  # fresh run directories: every run does all the work
            t, n_local = timed(str(src), str(tmp / f"local-{r}"), args.shard_size)
            times["local"].append(t)
            t, n_s3 = timed("s3://bench/in/qa.jsonl", f"s3://bench/runs/r{r}", args.shard_size)
            times["s3"].append(t)
            assert n_local == n_s3, (n_local, n_s3)
        shards = -(-args.records // args.shard_size)
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"{name:6s} {args.records:,} records, {shards} shards x 2 segments: median {med:.2f} s "
                  f"({1e6 * med / args.records:.0f} us/record) over {ts}")
        part = tmp / "local-0" / "stages" / "x" / "part-00000.parquet"
        part.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        for _ in range(50_000):
            push(part)
            unpush(part)
        per = (time.perf_counter() - t0) / 100_000
        print(f"local push/unpush check: {per * 1e6:.2f} us per call ({4 * per * shards * 2 * 1e3:.2f} ms for this run's ~4 calls per shard commit)")
    server.stop()


if __name__ == "__main__":
    main()
