"""Sandbox speed: round-trip latency of a fresh `python3 -c pass` per backend, and tests/s when
checking many solutions concurrently. Baseline: the same command as a plain host subprocess,
measured in the same run. "Back to back" runs measure sustained cost; "1 s apart" runs show the
latency a caller sees when docker's small pool of started containers has refilled. Targets (issue 7): bwrap < 0.15 s, docker < 0.6 s per fresh run.

    python benchmarks/sandbox_latency.py [--runs 20] [--solutions 16] [--tests 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from rlclimb.environments.code_run import run_tests
from rlclimb.environments.sandbox import available_backends, get_sandbox
from rlclimb.schemas.records import TestCase

PY = "a, b = map(int, input().split())\nprint(a + b)\n"
CPP = "#include <iostream>\nint main(){long long a,b; std::cin>>a>>b; std::cout<<a+b<<'\\n';}\n"


def timed(fn, runs: int, pause: float = 0.0) -> list[float]:
    out = []
    for _ in range(runs):
        time.sleep(pause)  # not timed: lets background work (docker's container pool) catch up
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def fmt(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs):.3f} s  p90 {xs[int(0.9 * (len(xs) - 1))]:.3f} s  min {xs[0]:.3f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--solutions", type=int, default=16)
    ap.add_argument("--tests", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backends", nargs="*", default=None)
    args = ap.parse_args()
    backends = args.backends or available_backends()

    base = timed(lambda: subprocess.run(["/usr/bin/python3", "-c", "pass"], check=True), args.runs)
    print(f"baseline host subprocess       {fmt(base)}")
    tests = [TestCase(input=f"{i} {i}\n", output=f"{2 * i}\n") for i in range(args.tests)]
    for name in backends:
        sb = get_sandbox(name)
        sb.run("true")  # warm caches (image layers, page cache)
        lat = timed(lambda sb=sb: sb.run("python3 -c pass"), args.runs)
        ratio = statistics.median(lat) / statistics.median(base)
        print(f"{name:8s} fresh run, back to back  {fmt(lat)}  ({ratio:.1f}x baseline)")
        spaced = timed(lambda sb=sb: sb.run("python3 -c pass"), max(5, args.runs // 2), pause=1.0)
        print(f"{name:8s} fresh run, 1 s apart     {fmt(spaced)}")
        with sb.session() as s:
            per = timed(lambda s=s: s.run("python3 -c pass"), args.runs)
        print(f"{name:8s} command in a session    {fmt(per)}")
        for lang, code in (("python", PY), ("cpp", CPP)):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.threads) as pool:
                reports = list(
                    pool.map(
                        lambda _, sb=sb, code=code, lang=lang: run_tests(
                            sb, code, lang, tests, time_limit_s=5
                        ),
                        range(args.solutions),
                    )
                )
            wall = time.perf_counter() - t0
            assert all(r.all_passed for r in reports), [
                r.summary() for r in reports if not r.all_passed
            ][:1]
            n = args.solutions * args.tests
            print(
                f"{name:8s} {lang:6s} {args.solutions} solutions x {args.tests} tests, {args.threads} threads: "
                f"{n / wall:.1f} tests/s ({wall:.1f} s, compile included)"
            )


if __name__ == "__main__":
    main()
