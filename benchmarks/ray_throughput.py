"""Ray executor vs local: a CPU-bound row segment and MinHash dedup, per-record cost as input grows.

    python benchmarks/ray_throughput.py --sizes 100000,300000 [--ray-address HOST:PORT] [--workers 2] [--engines local:1,ray:2]
        [--stores path,s3]

Input: synthetic QA JSONL (templated questions; 5% upper-cased copies of a recent one: exact
duplicates; 5% copies with one word changed: near duplicates).
Pipelines: `segment` = import -> normalize -> validate (one fused row segment);
`minhash` = import -> MinHash dedup and `exact` = import -> exact dedup (a row segment, then the
global stage; with ray, decided on the cluster: engine/ray_dedup.py). Engines: local with 1 and
`--workers` processes, and ray (a local Ray with `--workers` CPUs unless --ray-address). Prints
one line per run: records, wall seconds, microseconds per record, for the dedup pipelines the
stage's own time (funnel) and dropped count (both engines must drop the same records).
`--stores path,s3`: each run with its run directory on a local path and at an s3:// URL on a
moto server started for the benchmark (its own process on 127.0.0.1: the cost of a store's
round trips and of the commit protocol through it, not an S3's bandwidth).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.qa.importer import ImportQA
from rlclimb.stages.text import NormalizeText, ValidateQA

WORDS = "apple train river number circle square triangle speed distance price ticket garden".split()


def write_input(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    recent: list[str] = []  # questions to copy from (the last 1000)
    with open(path, "w") as f:
        for i in range(n):
            a, b = rng.randint(1, 10**6), rng.randint(1, 999)
            w = rng.sample(WORDS, 4)
            q = f"A {w[0]} and a {w[1]} cost {a} and {b}; the {w[2]} near the {w[3]} adds {i}. What is the total?"
            r = rng.random()
            if r < 0.05 and recent:  # an exact duplicate (after normalization) of an earlier question
                q = rng.choice(recent).upper()
            elif r < 0.10 and recent:  # a near duplicate: one word changed
                q = rng.choice(recent).replace("adds", "gives")
            else:
                recent = [*recent[-999:], q]
            f.write(json.dumps({"question": q, "answer": str(a + b + i)}) + "\n")


def pipeline(kind: str, src: Path, shard_size: int) -> Pipeline:
    stages = {"segment": [ImportQA(), NormalizeText(), ValidateQA()], "minhash": [ImportQA(), MinHashDedup()],
              "exact": [ImportQA(), ExactDedup()]}[kind]
    return Pipeline(kind, JsonlReader([src]), stages, shard_size=shard_size)


@contextmanager
def moto_store(bucket: str = "rlclimb-bench"):
    """A moto S3 server in a process of its own; AWS_* variables point s3fs (and Ray, started
    after) at it. Yields the bucket's URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
    try:
        import s3fs

        fs = s3fs.S3FileSystem(skip_instance_cache=True)
        for _ in range(100):
            try:
                fs.mkdir(bucket)
                break
            except Exception:  # not listening yet
                time.sleep(0.2)
        yield f"s3://{bucket}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=10_000)
    ap.add_argument("--ray-address", default=None)
    ap.add_argument("--pipelines", default="segment,minhash")
    ap.add_argument("--engines", default=None, help="e.g. local:1,ray:2 (default: local:1, local:W, ray:W)")
    ap.add_argument("--stores", default="path", help="path, s3 (a moto server) or both: where the run directories live")
    args = ap.parse_args()
    stores = args.stores.split(",")
    with moto_store() if "s3" in stores else _no_store() as bucket:
        run_all(args, stores, bucket)


@contextmanager
def _no_store():
    yield None


def run_all(args, stores: list[str], bucket: str | None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    os.environ.setdefault("RLCLIMB_MIRRORS", str(tmp / "mirrors"))  # the runs at URLs work in these (removed at the end)
    engines = [("local", 1), ("local", args.workers), ("ray", args.workers)]
    if args.engines:
        engines = [(e.split(":")[0], int(e.split(":")[1])) for e in args.engines.split(",")]
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            src = tmp / f"in-{n}.jsonl"
            write_input(src, n)
            for kind in args.pipelines.split(","):
                for (engine, workers), store in ((e, st) for e in engines for st in stores):
                    name = f"{kind}-{n}-{engine}-{workers}"
                    out = tmp / name if store == "path" else f"{bucket}/{name}-{int(time.time())}"
                    t0 = time.perf_counter()
                    r = run_pipeline(pipeline(kind, src, args.shard_size), out, RunOptions(
                        engine=engine, workers=workers, progress=False, ray_address=args.ray_address))
                    wall = time.perf_counter() - t0
                    by_name = {s["name"]: s for s in r.stats["stages"]}
                    stage = by_name.get("dedup_minhash") or by_name.get("dedup_exact") or {}
                    extra = f"  {stage['name']} stage {stage['time_s']:.1f}s dropped={sum(stage['dropped'].values())}" if stage else ""
                    print(f"{kind:8s} n={n:>8d} {engine:5s} workers={workers} {store:4s}  records={r.records:>8d}  "
                          f"wall={wall:7.1f}s  {1e6 * wall / n:6.1f} us/record{extra}", flush=True)
                    if store == "path":
                        shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
