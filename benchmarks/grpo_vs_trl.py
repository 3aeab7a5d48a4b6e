"""Time per GRPO training step (generate + score + update) on CPU: rlclimb's trainer vs TRL's
GRPOTrainer, same model, prompts per step, group size, completion length, reward (the math
environment) and optimizer, in one run.

    python benchmarks/grpo_vs_trl.py                      # tiny random-init Llama (fast)
    python benchmarks/grpo_vs_trl.py --model smollm2 --prompts 1 --group 8 --tokens 128

TRL is not a dependency: install it in the benchmark environment (`pip install trl`, it keeps
torch/transformers as they are); without it the TRL half is skipped with a message. Both sides
sample with temperature 1 and top-p 0.97 and run one gradient step per batch without KL; the
first step of each is warm-up and not counted. Random-init models rarely stop early, so both
generate the full length; a real model's lengths differ per run, so compare tokens/s too."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def build_model(name: str):
    from transformers import AutoTokenizer

    from rlclimb.rl.models import load_causal_lm, model_dir, tiny_causal_lm

    if name != "tiny":
        return load_causal_lm(name)
    tok = AutoTokenizer.from_pretrained(model_dir("smollm2"))
    tok.padding_side = "left"
    return tiny_causal_lm(tok, hidden_size=128, max_positions=1024), tok


def questions(n: int):
    from rlclimb.rl.data import Item
    from rlclimb.schemas.records import QAItem

    return [
        Item(QAItem(question=f"What is {a} + {b}?", answer=str(a + b)), "math")
        for a in range(10)
        for b in range(10)
    ][:n]


def run_ours(args) -> dict:
    from rlclimb.rl.config import GRPOConfig
    from rlclimb.rl.trainer import Trainer

    model, tok = build_model(args.model)
    cfg = GRPOConfig(
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
    with tempfile.TemporaryDirectory() as out:
        rows = Trainer(cfg, model, tok, questions(64), out).train()
    timed = rows[1:]
    mean = lambda key: statistics.mean(r[key] for r in timed)  # noqa: E731
    return {
        "step_s": mean("time/step"),
        "generate_s": mean("time/generate"),
        "score_s": mean("time/score"),
        "learn_s": mean("time/learn"),
        "tokens_per_step": mean("tokens"),
        "tokens_per_s": mean("tokens_per_s"),
    }


def run_trl(args) -> dict | str:
    try:
        import trl
        from datasets import Dataset
        from transformers import TrainerCallback
    except ImportError:
        return "TRL is not installed (pip install trl); skipped"
    from rlclimb.environments.math_env import MathEnvironment
    from rlclimb.rl.data import Item

    env = MathEnvironment()
    items: list[Item] = questions(64)
    answers = {i.record.question: i.record for i in items}
    data = Dataset.from_list(
        [{"prompt": env.messages(i.record), "question": i.record.question} for i in items]
    )

    def reward(prompts, completions, question, **_):
        return [
            env.score(answers[q], c[-1]["content"]).components["task"]
            for q, c in zip(question, completions, strict=True)
        ]

    class Clock(TrainerCallback):
        def __init__(self):
            self.times, self.tokens = [], []

        def on_step_begin(self, *a, **k):
            self.start = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.times.append(time.perf_counter() - self.start)

        def on_log(self, _args, _state, _control, logs=None, **k):
            if logs and "completions/mean_length" in logs:
                self.tokens.append(logs["completions/mean_length"] * args.prompts * args.group)

    model, tok = build_model(args.model)
    batch = args.prompts * args.group
    with tempfile.TemporaryDirectory() as out:
        config = trl.GRPOConfig(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=batch,
            generation_batch_size=batch,
            num_generations=args.group,
            max_completion_length=args.tokens,
            temperature=1.0,
            top_p=0.97,
            beta=0.0,
            learning_rate=1e-5,
            adam_beta1=0.95,
            adam_beta2=0.95,
            adam_epsilon=1e-15,
            weight_decay=0.0,
            max_grad_norm=1.0,
            lr_scheduler_type="constant",
            use_cpu=True,
            bf16=False,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            seed=0,
            disable_tqdm=True,
        )
        clock = Clock()
        trainer = trl.GRPOTrainer(
            model=model,
            processing_class=tok,
            reward_funcs=reward,
            args=config,
            train_dataset=data,
            callbacks=[clock],
        )
        trainer.train()
    step = statistics.mean(clock.times[1:])
    tokens = statistics.mean(clock.tokens[1:]) if len(clock.tokens) > 1 else float("nan")
    return {
        "step_s": step,
        "tokens_per_step": tokens,
        "tokens_per_s": tokens / step,
        "version": trl.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="tiny", help="tiny (random init), smollm2, or a model path"
    )
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4, help="timed steps + 1 warm-up")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    args.steps += 1
    print(
        f"model {args.model}: {args.prompts} prompts x {args.group} samples x {args.tokens} new "
        f"tokens, {args.steps - 1} timed steps (CPU, {os.cpu_count()} cores)",
        flush=True,
    )
    ours = run_ours(args)
    print(
        f"rlclimb  {ours['step_s']:7.2f} s/step  {ours['tokens_per_s']:8.1f} tokens/s  "
        f"(generate {ours['generate_s']:.2f} s, score {ours['score_s']:.2f} s, "
        f"learn {ours['learn_s']:.2f} s; {ours['tokens_per_step']:.0f} tokens/step)",
        flush=True,
    )
    theirs = run_trl(args)
    if isinstance(theirs, str):
        print(f"trl      {theirs}")
    else:
        print(
            f"trl      {theirs['step_s']:7.2f} s/step  {theirs['tokens_per_s']:8.1f} tokens/s  "
            f"(TRL {theirs['version']}; {theirs['tokens_per_step']:.0f} tokens/step)"
        )
        print(f"ratio    TRL / rlclimb time per step = {theirs['step_s'] / ours['step_s']:.2f}x")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "rlclimb": ours, "trl": theirs},
                indent=1,
            )
        )


if __name__ == "__main__":
    sys.exit(main())
