"""Scoring throughput against a fixed-latency endpoint: requests/s vs the concurrency bound.

A scripted OpenAI-compatible server on 127.0.0.1, in its own process (as a real endpoint would be:
it must not share the client's interpreter lock), answers every request after a fixed latency
(default 200 ms). With `c` requests allowed in flight (the tier profile's `concurrency`), no client
can do better than c / latency requests/s; we report the share of that bound achieved
(target >= 90%), for the raw LLM client (gather of completions) and for the whole solve stage in
the engine (prompting, answer extraction and checking, request and row caches). `cpu ms` is the
client process's CPU time per request: 1000 / cpu ms is the most one event loop can do, whatever
the concurrency (on a busy 2-core machine that, not the endpoint, is the limit past ~32).

    python benchmarks/score_throughput.py --latency 0.2 --concurrency 8 32 64 --seconds 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMClient, LLMConfig
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer
from rlclimb.stages.qa.importer import ImportQA
from rlclimb.stages.score.solve import SolveStage


def _answer(body: dict, n: int) -> Reply:
    return Reply("Work.\n\\boxed{4}")


def _serve(port_queue, latency: float) -> None:
    with ScriptedServer(_answer, latency_s=latency) as server:
        port_queue.put(server.base_url)
        while True:
            time.sleep(3600)


@contextmanager
def endpoint(latency: float):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_serve, args=(queue, latency), daemon=True)
    proc.start()
    try:
        yield queue.get(timeout=60)
    finally:
        proc.terminate()
        proc.join()


def config(base_url: str, concurrency: int) -> LLMConfig:
    profile = {
        "base_url": base_url,
        "model": "bench",
        "api_key": "k",
        "concurrency": concurrency,
        "timeout_s": 30.0,
    }
    return LLMConfig.from_dict({"profiles": {"tier-0": profile}})


def raw_client(base_url: str, concurrency: int, n: int) -> tuple[float, float]:
    client = LLMClient(config(base_url, concurrency))  # no cache: every request goes out

    async def main() -> float:
        msgs = [{"role": "user", "content": "What is 2 + 2?"}]
        t0 = time.perf_counter()
        await asyncio.gather(*(client.complete("tier-0", msgs, seed=i) for i in range(n)))
        elapsed = time.perf_counter() - t0
        await client.aclose()
        return elapsed

    cpu = time.process_time()
    rate = n / asyncio.run(main())
    return rate, (time.process_time() - cpu) * 1000 / n


def solve_stage(base_url: str, concurrency: int, n: int, k: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "items.jsonl"
        items = max(1, n // k)
        src.write_text(
            "".join(
                json.dumps({"question": f"Item {i}: what is 2 + 2?", "answer": "4"}) + "\n"
                for i in range(items)
            )
        )
        stage = SolveStage({"k": k, "early_exit": False})
        stage.concurrency = max(stage.concurrency, concurrency // k + 2)  # enough items in flight
        pipeline = Pipeline("bench", JsonlReader([src]), [ImportQA(), stage], shard_size=100_000)
        cpu = time.process_time()
        result = run_pipeline(
            pipeline,
            Path(tmp) / "run",
            RunOptions(progress=False, llm=config(base_url, concurrency)),
        )
        cpu = time.process_time() - cpu
        st = {s["name"]: s for s in result.stats["stages"]}["solve"]
        requests = int(st["llm"]["requests"])
        return requests / st["time_s"], cpu * 1000 / requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--seconds", type=float, default=4.0, help="target duration per measurement")
    ap.add_argument("--k", type=int, default=8, help="samples per item in the stage run")
    args = ap.parse_args()
    print(f"latency {args.latency * 1000:.0f} ms; bound = concurrency / latency")
    print(
        f"{'concurrency':>11} {'bound/s':>8} {'client/s':>9} {'client %':>9} {'cpu ms':>7} "
        f"{'stage/s':>8} {'stage %':>8} {'cpu ms':>7}"
    )
    with endpoint(args.latency) as srv:
        raw_client(srv, 4, 8)  # warm up: imports, connections
        for c in args.concurrency:
            bound = c / args.latency
            n = max(c * 2, int(bound * args.seconds))
            client_rate, client_cpu = raw_client(srv, c, n)
            stage_rate, stage_cpu = solve_stage(srv, c, n, args.k)
            print(
                f"{c:>11} {bound:>8.1f} {client_rate:>9.1f} {client_rate / bound:>8.1%} "
                f"{client_cpu:>7.2f} {stage_rate:>8.1f} {stage_rate / bound:>7.1%} "
                f"{stage_cpu:>7.2f}"
            )


if __name__ == "__main__":
    main()
