"""Self-distillation: SFT of a model on the rollouts an RL run logged (rollouts.jsonl),
whose result restarts the climb (`rlclimb train --model OUT/model`).

Selection, following the findings: successful traces only (task reward >= the run's
pass_threshold); from the later part of each run (steps after `from_fraction` of it, i.e. several
later checkpoints' policies); plain seeded random sampling with a per-prompt cap (prompt diversity
beats more traces per prompt); identical completions of a prompt counted once; optional
reward-hacking filter (`hacking_reasons`). Every rollout not taken is counted by reason in
OUT/distill.json; a line that is not a Rollout record is skipped with its file and line number.

SFT: packed rows (rl/packing.py), loss on completion tokens only, the aggregation modes'
per-token weights (rl/loss.token_weights), AdamW with weight decay, cosine LR from lr to min_lr
after a linear warmup, dropout on attention (the only dropout Llama-family models have)."""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rlclimb.schemas.records import Rollout

from .config import Aggregation


class DistillConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    from_fraction: float = 0.5  # keep rollouts from steps after this fraction of each run
    per_prompt: int = 4  # at most this many traces per prompt
    max_samples: int = 0  # 0: all selected
    filter_hacking: bool = False
    # SFT (full scale: cosine 1.7e-5 -> 5.2e-6, 2% warmup, weight decay 0.001, dropout 0.15)
    lr: float = 1.7e-5
    min_lr: float = 5.2e-6
    warmup_fraction: float = 0.02
    weight_decay: float = 0.001
    dropout: float = 0.15
    epochs: int = 1
    batch_size: int = 16  # sequences per optimizer step
    pack_tokens: int = 4096  # tokens per packed row (a micro-batch)
    aggregation: Aggregation = "token-mean"
    device: str = "auto"


class DistillError(ValueError):
    pass


# ---- selection ---------------------------------------------------------------------------------

_BOXED = re.compile(r"\\boxed\{")
_ANSWER_LINE = re.compile(r"(?im)^\s*(final answer|answer)\s*[:=]")


def hacking_reasons(rollout: Rollout) -> list[str]:
    """Why a successful rollout looks like it gamed the grader rather than solved the task:
    several final answers (a grader that takes any of them is fooled by hedging), a degenerate
    repetition loop, or a cut-off response that still passed."""
    text = rollout.completion
    reasons = []
    if len(_BOXED.findall(text)) + len(_ANSWER_LINE.findall(text)) > 1:
        reasons.append("several final answers")
    words = text.split()
    if len(words) >= 40:
        grams = Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))
        if grams.most_common(1)[0][1] * 4 > 0.5 * len(words):
            reasons.append("repetition loop")
    if rollout.truncated:
        reasons.append("truncated")
    return reasons


@dataclass
class Selection:
    rollouts: list[Rollout]
    counts: dict[str, int] = field(default_factory=dict)  # why rollouts were not taken
    skipped_lines: list[str] = field(default_factory=list)
    by_run: dict[str, int] = field(default_factory=dict)


def read_run(run: Path, skipped: list[str]) -> tuple[list[Rollout], float]:
    """(the run's rollouts, its pass threshold)."""
    path = run / "rollouts.jsonl"
    if not path.exists():
        raise DistillError(
            f"{run}: no rollouts.jsonl (a run trained with log_rollouts: true writes one)"
        )
    threshold = 1.0
    if (run / "config.json").exists():
        threshold = (
            json.loads((run / "config.json").read_text()).get("grpo", {}).get("pass_threshold", 1.0)
        )
    rollouts = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rollouts.append(Rollout.model_validate_json(line))
            except ValidationError as e:
                skipped.append(f"{path}:{n}: not a Rollout record ({e.errors()[0]['msg']})")
    return rollouts, threshold


def select(runs: list[Path], cfg: DistillConfig) -> Selection:
    counts: Counter[str] = Counter()
    skipped: list[str] = []
    pool: dict[str, list[Rollout]] = defaultdict(list)
    by_run: dict[str, int] = {}
    for run in runs:
        rollouts, threshold = read_run(run, skipped)
        last = max((r.step for r in rollouts), default=0)
        start = math.floor(cfg.from_fraction * last)
        seen: set[tuple[str, str]] = set()
        taken = 0
        for r in rollouts:
            counts["read"] += 1
            if r.step <= start:
                counts["earlier step"] += 1
            elif r.reward_components.task < threshold:
                counts["not successful"] += 1
            elif cfg.filter_hacking and (why := hacking_reasons(r)):
                counts[f"reward hacking: {why[0]}"] += 1
            elif (r.prompt, r.completion) in seen:
                counts["duplicate"] += 1
            else:
                seen.add((r.prompt, r.completion))
                pool[r.prompt_id].append(r)
                taken += 1
        by_run[str(run)] = taken
    rng = random.Random(cfg.seed)
    chosen: list[Rollout] = []
    for prompt_id in sorted(pool):  # a sorted walk: the same choice whatever the file order
        traces = pool[prompt_id]
        keep = rng.sample(traces, min(cfg.per_prompt, len(traces)))
        counts["over the per-prompt cap"] += len(traces) - len(keep)
        chosen.extend(keep)
    rng.shuffle(chosen)
    if cfg.max_samples and len(chosen) > cfg.max_samples:
        counts["over max_samples"] += len(chosen) - cfg.max_samples
        chosen = chosen[: cfg.max_samples]
    return Selection(chosen, dict(counts), skipped, by_run)


# ---- SFT ---------------------------------------------------------------------------------------


@dataclass
class Example:
    ids: list[int]
    mask: list[int]  # 1 on completion tokens


def encode(rollouts: list[Rollout], tokenizer) -> list[Example]:
    """Prompt (the whole chat text the policy saw) + completion + end-of-turn token."""
    eos = tokenizer.eos_token or ""
    out = []
    for r in rollouts:
        prompt = tokenizer(r.prompt, add_special_tokens=False)["input_ids"]
        completion = tokenizer(r.completion + eos, add_special_tokens=False)["input_ids"]
        out.append(Example(prompt + completion, [0] * len(prompt) + [1] * len(completion)))
    return out


def set_dropout(model, p: float) -> None:
    for module in model.modules():
        if hasattr(module, "attention_dropout"):
            module.attention_dropout = p
        if isinstance(module, __import__("torch").nn.Dropout):
            module.p = p


def packed_loss(model, examples: list[Example], mode: str, capacity: int, device, *, backward):
    """Sum over packed rows of -sum_t w_t log p(token_t): weights normalized over `examples`
    (one optimizer step); backward=True runs backward per row (memory: one row at a time). The
    body runs under bf16 autocast where the GPU has it; the head only over completion tokens, in
    fp32 and chunked (loss.completion_logprobs), as in the RL learner."""
    import torch

    from .loss import completion_logprobs, token_weights
    from .packing import pack_rows
    from .rollout import body

    autocast = device.type == "cuda" and torch.cuda.is_bf16_supported()
    rows = pack_rows([len(e.ids) for e in examples], capacity)
    row_of = {j: r for r, members in enumerate(rows) for j in members}
    masks = [torch.tensor(e.mask[1:], dtype=torch.float32) for e in examples]  # per target
    weights = token_weights(
        mode,
        torch.cat(masks),
        torch.cat([torch.full((len(m),), row_of[j]) for j, m in enumerate(masks)]),
        torch.cat([torch.full((len(m),), j) for j, m in enumerate(masks)]),
    ).split([len(m) for m in masks])
    total = 0.0
    for members in rows:
        ids = torch.tensor([t for j in members for t in examples[j].ids])[None]
        positions = torch.cat([torch.arange(len(examples[j].ids)) for j in members])[None]
        # position i predicts token i + 1 of its own sample; only completion targets count
        pick, targets, w = [], [], []
        start = 0
        for j in members:
            e, keep = examples[j], masks[j].bool()
            pick.append(torch.arange(start, start + len(e.ids) - 1)[keep])
            targets.append(torch.tensor(e.ids[1:])[keep])
            w.append(weights[j][keep])
            start += len(e.ids)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            hidden = body(model)(
                input_ids=ids.to(device),
                attention_mask=None,  # packed: positions restarting per sample separate them
                position_ids=positions.to(device),
                use_cache=False,
            ).last_hidden_state
        logp = completion_logprobs(
            hidden[0, torch.cat(pick).to(device)][None],
            model.get_output_embeddings(),
            torch.cat(targets).to(device)[None],
        )[0]
        loss = -(torch.cat(w).to(device) * logp).sum()
        if backward:
            loss.backward()
        total += float(loss.detach())
    return total


def evaluate(model, examples, cfg: DistillConfig, device) -> float:
    """Token-mean loss over `examples` (dropout off), in batches of batch_size."""
    import torch

    model.eval()
    tokens = sum(sum(e.mask[1:]) for e in examples)
    total = 0.0
    with torch.no_grad():
        for a in range(0, len(examples), cfg.batch_size):
            part = examples[a : a + cfg.batch_size]
            share = sum(sum(e.mask[1:]) for e in part) / max(tokens, 1)
            total += share * packed_loss(
                model, part, "token-mean", cfg.pack_tokens, device, backward=False
            )
    return total


def sft(model, tokenizer, examples: list[Example], cfg: DistillConfig, out: Path) -> dict[str, Any]:
    import torch
    from transformers.optimization import get_cosine_with_min_lr_schedule_with_warmup

    device = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
    )
    model.to(device)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    steps_per_epoch = math.ceil(len(examples) / cfg.batch_size)
    total_steps = max(1, steps_per_epoch * cfg.epochs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    schedule = get_cosine_with_min_lr_schedule_with_warmup(
        optimizer,
        num_warmup_steps=math.ceil(cfg.warmup_fraction * total_steps),
        num_training_steps=total_steps,
        min_lr=cfg.min_lr,
    )
    before = evaluate(model, examples, cfg, device)
    set_dropout(model, cfg.dropout)
    step = 0
    with open(out / "metrics.jsonl", "w") as log:
        for epoch in range(cfg.epochs):
            order = list(range(len(examples)))
            rng.shuffle(order)
            for a in range(0, len(order), cfg.batch_size):
                model.train()
                t = time.perf_counter()
                optimizer.zero_grad(set_to_none=True)
                batch = [examples[i] for i in order[a : a + cfg.batch_size]]
                loss = packed_loss(
                    model, batch, cfg.aggregation, cfg.pack_tokens, device, backward=True
                )
                norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
                lr = schedule.get_last_lr()[0]
                optimizer.step()
                schedule.step()
                step += 1
                row = dict(step=step, epoch=epoch, loss=loss, grad_norm=norm, lr=lr)
                row["time/step"] = time.perf_counter() - t
                log.write(json.dumps(row) + "\n")
    set_dropout(model, 0.0)
    after = evaluate(model, examples, cfg, device)
    model.eval()
    return {"steps": step, "loss_before": before, "loss_after": after}


def distill(
    runs: list[Path], model_name: str, out: Path, cfg: DistillConfig, *, log=print
) -> dict[str, Any]:
    """Select, write OUT/sft.jsonl, SFT, write OUT/model and OUT/distill.json."""
    from .models import load_causal_lm

    selection = select(runs, cfg)
    if not selection.rollouts:
        raise DistillError(
            f"no rollouts selected from {', '.join(map(str, runs))} "
            f"({', '.join(f'{k}: {v}' for k, v in selection.counts.items()) or 'no rollouts'}); "
            "lower from_fraction, or train longer so later steps have successful rollouts"
        )
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "sft.jsonl", "w") as f:
        for r in selection.rollouts:
            f.write(r.model_dump_json() + "\n")
    log(f"{len(selection.rollouts)} traces selected from {len(runs)} run(s): {selection.counts}")
    model, tokenizer = load_causal_lm(model_name)
    tokenizer.padding_side = "left"
    examples = encode(selection.rollouts, tokenizer)
    result = sft(model, tokenizer, examples, cfg, out)
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    summary = {
        "model": model_name,
        "runs": selection.by_run,
        "selected": len(selection.rollouts),
        "prompts": len({r.prompt_id for r in selection.rollouts}),
        "not_taken": selection.counts,
        "skipped_lines": selection.skipped_lines[:20],
        "config": cfg.model_dump(mode="json"),
        **result,
    }
    (out / "distill.json").write_text(json.dumps(summary, indent=1))
    return summary
