"""Sync vs async GRPO training throughput (samples/s) at equal steps on CPU, with the local
engine and with an OpenAI-compatible server engine on 127.0.0.1, and the learner's idle
fraction (time waiting for rollouts / wall time) in each mode.

    python benchmarks/rl_async.py                      # all four runs, tiny random-init Llama
    python benchmarks/rl_async.py --steps 8 --latency 0.3 --workers 3 --eta 2 --json out.json

The server is rl/engines/model_server.py: the same tiny model behind the project's scripted
OpenAI-compatible server, with `--latency` seconds added to every request. That stands in for
a remote inference server whose generation time does not use this machine's CPU (a GPU box):
there, generation is the bottleneck, and async workers (`--workers`, each a concurrent request
stream) overlap it with learning. With the local engine, generation and learning share the same
CPU cores, so overlap gains little. The first step of each run is warm-up and not counted."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def build(args):
    from transformers import AutoTokenizer

    from rlclimb.environments.base import Environment, Grade
    from rlclimb.rl.data import Item
    from rlclimb.rl.models import model_dir, tiny_causal_lm
    from rlclimb.schemas.records import QAItem

    tok = AutoTokenizer.from_pretrained(model_dir("smollm2"))
    tok.padding_side = "left"

    class Capital(Environment):
        kind = "math"

        def messages(self, task):
            return [{"role": "user", "content": task.question}]

        def grade(self, task, completion):
            first = completion.strip()[:1]
            return Grade(task=float(first.isascii() and first.isupper()), formatted=True)

    def model():
        return tiny_causal_lm(tok, hidden_size=args.hidden, layers=args.layers, seed=0)

    items = [Item(QAItem(question=f"Say one word. ({i})", answer="x"), "math") for i in range(64)]
    return tok, model, items, Capital


def run(args, mode: str, engine: str) -> dict:
    from rlclimb.rl.config import GRPOConfig
    from rlclimb.rl.engines.model_server import ModelServer
    from rlclimb.rl.trainer import Trainer

    tok, model, items, env = build(args)
    cfg = dict(
        steps=args.steps + 1,
        prompts_per_step=args.prompts,
        group_size=args.group,
        early_group_size=0,
        pass_range=(0.0, 1.0),
        max_new_tokens=args.tokens,
        max_new_tokens_cap=args.tokens,
        top_p=1.0,
        lr=1e-4,
        eval_items=0,
        checkpoint_every=0,
        log_rollouts=False,
        reward={"w_lang": 0.0, "w_len": 0.0},
    )
    if mode == "async":
        cfg.update(async_eta=args.eta, async_workers=args.workers)
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if engine == "server":
            server = ModelServer(model(), tok, latency_s=args.latency).__enter__()
            cfg.update(engine="server", engine_options={
                "base_url": server.base_url, "weights_dir": str(Path(tmp) / "weights"),
                "concurrency": args.prompts * (args.workers if mode == "async" else 1)})
        try:
            trainer = Trainer(GRPOConfig(**cfg), model(), tok, items, Path(tmp) / "run",
                              environments={"math": env()})
            times, rows = [], []
            start = time.perf_counter()

            def mark(row, _append=trainer._append):
                rows.append(row)
                times.append(time.perf_counter())
                _append(row)

            trainer._append = mark
            trainer.train()
        finally:
            if server is not None:
                server.__exit__(None, None, None)
    counted = rows[1:]  # the first step is warm-up
    wall = times[-1] - times[0]
    samples = sum(args.prompts * args.group for _ in counted)
    idle = sum(r["time/idle"] for r in counted)
    return {
        "engine": engine,
        "mode": mode if mode == "sync" else f"async eta={args.eta} workers={args.workers}",
        "steps": len(counted),
        "samples_per_s": samples / wall,
        "learner_idle_fraction": idle / wall,
        "wall_s": wall,
        "staleness_max": max(r["staleness/max"] for r in counted),
        "dropped": counted[-1]["async/dropped"],
        "total_s": time.perf_counter() - start,
        # per counted step, mean seconds: learning, weight push, waiting for rollouts
        "learn_s": sum(r["time/learn"] for r in counted) / len(counted),
        "push_s": sum(r["time/push"] for r in counted) / len(counted),
        "idle_s": idle / len(counted),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--latency", type=float, default=0.5, help="seconds added to each server request")
    p.add_argument("--eta", type=int, default=2)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--engines", default="local,server")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    from rlclimb.pipelines.local_llm import _set_threads

    _set_threads()
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    results = []
    for engine in args.engines.split(","):
        for mode in ("sync", "async"):
            r = run(args, mode, engine)
            results.append(r)
            print(f"{r['engine']:7s} {r['mode']:26s} {r['samples_per_s']:7.2f} samples/s  "
                  f"idle {100 * r['learner_idle_fraction']:5.1f}%  staleness<= {r['staleness_max']}  "
                  f"dropped {r['dropped']}  ({r['steps']} steps in {r['wall_s']:.1f} s; per step learn "
                  f"{r['learn_s']:.2f} s, push {r['push_s']:.2f} s, idle {r['idle_s']:.2f} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "results": results}, indent=1))
    sys.exit(0)


if __name__ == "__main__":
    main()
