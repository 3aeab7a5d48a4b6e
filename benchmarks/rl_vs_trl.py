"""Step time of rlclimb's trainer in its at-scale modes (padded, packed rows, LoRA) vs TRL's
GRPOTrainer (full and LoRA through the same peft), same tiny model, prompts, group size,
completion length, reward and optimizer, on this machine's CPU, in one run.

    python benchmarks/rl_vs_trl.py                       # tiny random-init Llama
    python benchmarks/rl_vs_trl.py --model smollm2 --tokens 64 --json out.json

The shared setup (model, questions, TRL's config and its timing callback) is
benchmarks/grpo_vs_trl.py's; TRL is not a dependency (`pip install trl`; without it the TRL rows
are skipped). The first step of each is warm-up and not counted."""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grpo_vs_trl as base  # noqa: E402


def run_ours(args, **overrides) -> dict:
    from rlclimb.rl.config import GRPOConfig
    from rlclimb.rl.trainer import Trainer

    model, tok = base.build_model(args.model)
    values = dict(
        steps=args.steps,
        prompts_per_step=args.prompts,
        group_size=args.group,
        early_group_size=0,
        pass_range=(0.0, 1.0),
        max_new_tokens=args.tokens,
        max_new_tokens_cap=args.tokens,
        top_p=0.97,
        lr=1e-5,
        eval_items=0,
        checkpoint_every=0,
        log_rollouts=False,
        micro_batch_size=args.prompts * args.group,
        reward={"w_lang": 0.0, "w_len": 0.0},
    )
    cfg = GRPOConfig(**{**values, **overrides})
    with tempfile.TemporaryDirectory() as out:
        rows = Trainer(cfg, model, tok, base.questions(64), out).train()
    timed = rows[1:]
    return {
        "step_s": statistics.mean(r["time/step"] for r in timed),
        "learn_s": statistics.mean(r["time/learn"] for r in timed),
        "tokens_per_s": statistics.mean(r["tokens_per_s"] for r in timed),
    }


def learner_only(args, repeats: int = 5) -> dict:
    """Seconds per learn() call on the same sampled groups, the variants interleaved (so load
    changes hit each alike); median of `repeats`. Packing on CPU has no varlen attention kernel:
    a packed row's attention is one masked [L, L] block instead of per-sample ones."""
    import copy
    import time

    from rlclimb.rl.config import GRPOConfig
    from rlclimb.rl.sampler import Group
    from rlclimb.rl.trainer import Trainer

    variants = {"padded": {}, "packed": {"packing": True}, "lora": {"lora_rank": args.lora}}
    trainers, groups = {}, None
    for name, extra in variants.items():
        model, tok = base.build_model(args.model)
        cfg = GRPOConfig(
            group_size=args.group,
            early_group_size=0,
            max_new_tokens=args.tokens,
            max_new_tokens_cap=args.tokens,
            eval_items=0,
            log_rollouts=False,
            micro_batch_size=args.prompts * args.group,
            **extra,
        )
        trainers[name] = Trainer(cfg, model, tok, base.questions(64), tempfile.mkdtemp())
        if groups is None:
            items = trainers[name].train_items[: args.prompts]
            groups = [
                Group(i, s)
                for i, s in zip(items, trainers[name].rollout(items, args.group), strict=True)
            ]
            for g in groups:
                for j, s in enumerate(g.samples):
                    s.reward = float(j % 2)
    times = {name: [] for name in trainers}
    for _ in range(repeats):
        for name, trainer in trainers.items():
            t = time.perf_counter()
            trainer.learn(copy.deepcopy(groups))
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(v) for name, v in times.items()}


def run_trl(args, lora_rank: int = 0) -> dict | str:
    try:
        import trl
        from peft import LoraConfig
    except ImportError as e:
        return f"{e.name} is not installed; skipped"
    if not lora_rank:
        return base.run_trl(args)
    peft_config = LoraConfig(r=lora_rank, lora_alpha=32, target_modules="all-linear")
    original = trl.GRPOTrainer
    # grpo_vs_trl builds the trainer itself: hand it the same adapters ours trains
    trl.GRPOTrainer = functools.partial(original, peft_config=peft_config)
    try:
        return base.run_trl(args)
    finally:
        trl.GRPOTrainer = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="tiny (random init), smollm2, or a path")
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3, help="timed steps + 1 warm-up")
    parser.add_argument("--lora", type=int, default=16, help="LoRA rank of the LoRA rows")
    parser.add_argument("--only", help="comma-separated row names to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    args.steps += 1
    print(
        f"model {args.model}: {args.prompts} prompts x {args.group} samples x {args.tokens} new "
        f"tokens, {args.steps - 1} timed steps (CPU, {os.cpu_count()} cores)",
        flush=True,
    )
    rows = {
        "rlclimb padded": lambda: run_ours(args),
        "rlclimb packed": lambda: run_ours(args, packing=True),
        f"rlclimb lora{args.lora}": lambda: run_ours(args, lora_rank=args.lora, lr=1e-4 / 10),
        "trl": lambda: run_trl(args),
        f"trl lora{args.lora}": lambda: run_trl(args, args.lora),
    }
    if not args.only or "learner" in args.only:
        learn = learner_only(args)
        print(
            "learner only (median s per learn(), interleaved): "
            + ", ".join(f"{k} {v:.3f}" for k, v in learn.items()),
            flush=True,
        )
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        rows = {n: r for n, r in rows.items() if n in wanted}
    results = {}
    for name, run in rows.items():
        got = results[name] = run()
        if isinstance(got, str):
            print(f"{name:16s} {got}", flush=True)
            continue
        extra = f"learn {got['learn_s']:.2f} s" if "learn_s" in got else f"TRL {got['version']}"
        print(
            f"{name:16s} {got['step_s']:7.2f} s/step  {got['tokens_per_s']:8.1f} tokens/s  ({extra})",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, **results}))


if __name__ == "__main__":
    sys.exit(main())
