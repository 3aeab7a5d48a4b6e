"""The GRPO loop: sample groups (early exit) -> score with the environments -> learn.

One `Trainer.step()` takes one batch of groups and makes `minibatches` gradient steps on it.
Synchronous (default): the batch is sampled from the current weights first. Async
(`async_eta`): rollout workers sample batches ahead, at most eta steps stale
(rl/async_rollout.py). Rollouts come from an engine (rl/engines: local transformers, an
OpenAI-compatible server, vLLM), which gets the new weights after every step; multi-turn kinds
run as episodes (rl/episodes.py). Everything a run needs to continue exactly is in its checkpoints: weights,
optimizer, entropy controller k, length curriculum, sampler (RNG and pass rates) and all RNGs.

Run directory:
  config.json           the resolved GRPOConfig, model and mix
  metrics.jsonl         one line per step (reward components, pass rates, entropy, k, clip
                        fractions, ratio stats, lengths, truncation, tokens/s, time split, eval)
  rollouts.jsonl        every scored response as a schemas.Rollout record
  checkpoints/step-N/   model/ (a Hugging Face directory) + trainer.pt
  reward.png            from metrics.jsonl (rl/plot.py)"""

from __future__ import annotations

import json
import random
import shutil
import sys
import time
import warnings
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlclimb.environments.base import Environment, get_environment
from rlclimb.environments.rewards import compose
from rlclimb.schemas.records import Rollout

from . import distributed, lora
from .async_rollout import AsyncRollouts
from .config import GRPOConfig
from .data import Item, split_eval
from .engines import make_engine
from .episodes import run_episodes
from .loss import LossStats, clipped_objective, completion_logprobs, group_advantages, token_weights
from .loss import update_k as next_k
from .packing import packed_batch, packed_logprobs, packed_plan
from .rollout import Sample, body
from .sampler import Group, PromptSampler, sample_groups
from .writers import Writers


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def pick_autocast(dtype: str, device: torch.device) -> torch.dtype | None:
    """bf16 autocast (fp32 master weights) where the hardware has it; plain fp32 on CPU."""
    if dtype == "bfloat16" or (
        dtype == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported()
    ):
        return torch.bfloat16
    return None


class Trainer:
    def __init__(
        self,
        cfg: GRPOConfig,
        model,
        tokenizer,
        items: list[Item],
        out: str | Path,
        *,
        environments: dict[str, Environment] | None = None,
        progress: bool = False,
        meta: dict[str, Any] | None = None,
    ):
        self.cfg = cfg
        self.out = Path(out)
        self.device = pick_device(cfg.device)
        self.autocast = pick_autocast(cfg.dtype, self.device)
        if cfg.aggregation == "true-sample-mean" and not cfg.packing:
            warnings.warn(
                "aggregation true-sample-mean: the trainer does not pack sequences, so every row "
                "is one sample and this is exactly sample-mean",
                stacklevel=2,
            )
        torch.manual_seed(cfg.seed)
        self.model = model.to(self.device).eval()  # eval(): no dropout in RL updates either
        self.model = lora.wrap(self.model, cfg)  # [scale] LoRA adapters when lora_rank > 0
        if distributed.active():  # [scale] FSDP2 learner (rl/distributed.py)
            distributed.shard(self.model)
        self.tokenizer = tokenizer
        self.eos_ids = sorted({tokenizer.eos_token_id, *self._config_eos(model)})
        self.pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        )
        self.train_items, self.eval_items = split_eval(items, cfg.eval_items, cfg.seed)
        self.sampler = PromptSampler(
            self.train_items, cfg.seed, cfg.curriculum_floor, cfg.sampling, cfg.curriculum
        )
        self.envs: dict[str, Environment] = dict(environments or {})
        self.optimizer = torch.optim.AdamW(
            lora.optimizer_params(self.model, cfg),  # [scale] adapters only, at lr * multiplier
            lr=cfg.lr,
            betas=cfg.betas,
            eps=cfg.adam_eps,
            weight_decay=cfg.weight_decay,
        )
        # sampling and minibatch order; async workers share it (torch's generators lock), so an
        # async run with eta > 0 is not reproducible draw for draw (eta = 0 is)
        self.generator = torch.Generator(self.device).manual_seed(cfg.seed)
        self.engine = make_engine(
            cfg,
            self.model,
            tokenizer,
            eos_ids=self.eos_ids,
            pad_id=self.pad_id,
            autocast=self.autocast,
            copy_model=cfg.async_eta is not None,  # async: the engine samples from its own copy
        )
        # top-p replay needs each token's nucleus, which only the local engine records
        self.replay = cfg.top_p < 1 and self.engine.replays_nucleus
        if cfg.top_p < 1 and not self.replay:
            warnings.warn(
                f"engine {cfg.engine} returns no top-p nucleus: the learner does not replay it "
                "(log-probs over the whole tempered distribution; engine/replay 0 in metrics)",
                stacklevel=2,
            )
        self.async_rollouts: AsyncRollouts | None = None
        self._calls = 0  # rollout calls so far: seeds for per-episode generators and servers
        self.ref_model = None
        if cfg.kl_coef:
            import copy

            self.ref_model = copy.deepcopy(self.model).requires_grad_(False)
        self.step_no = 0
        self.policy_version = 0
        self.k = cfg.k_init
        self.max_new_tokens = cfg.max_new_tokens
        self.progress = progress
        self.meta = meta or {}
        self._prompts: dict[str, list[int]] = {}
        self._times: dict[str, float] = {}

    @staticmethod
    def _config_eos(model) -> list[int]:
        eos = getattr(model.generation_config, "eos_token_id", None)
        return [e for e in (eos if isinstance(eos, list) else [eos]) if e is not None]

    # ---- environments and prompts --------------------------------------------------------------
    def env(self, kind: str) -> Environment:
        if kind not in self.envs:
            try:
                options = self.cfg.environments.get(kind, {})
                self.envs[kind] = get_environment(kind, reward=self.cfg.reward, **options)
            except ImportError as e:
                raise RuntimeError(f"environment {kind!r} is not available: {e}") from e
        env = self.envs[kind]
        # no length penalty at the longest stage of the length curriculum
        at_cap = self.max_new_tokens >= self.cfg.max_new_tokens_cap
        env.reward_config = self.cfg.reward.model_copy(update={"w_len": 0.0} if at_cap else {})
        return env

    def prompt_text(self, item: Item) -> str:
        """The full conversation (system and user messages) in the model's chat template."""
        return self.tokenizer.apply_chat_template(
            self.env(item.kind).messages(item.record), add_generation_prompt=True, tokenize=False
        )

    def prompt_ids(self, item: Item) -> list[int]:
        if item.id not in self._prompts:
            text = self.prompt_text(item)
            self._prompts[item.id] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self._prompts[item.id]

    @contextmanager
    def _timed(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self._times[name] = self._times.get(name, 0.0) + time.perf_counter() - start

    # ---- sample and score ------------------------------------------------------------------
    def rollout(
        self, items: list[Item], n: int, *, greedy: bool = False, max_new_tokens: int | None = None
    ) -> list[list[Sample]]:
        """n samples per item from the engine: single-turn kinds in one batched call, multi-turn
        kinds (an environment with tools, rl/episodes.py) as episodes."""
        max_new = max_new_tokens or self.max_new_tokens
        if not greedy:  # (greedy evaluation draws nothing: it leaves the seeds as they are)
            self._calls += 1
        seed = self.cfg.seed * 1_000_003 + self._calls * 10_007
        multi = [i for i, item in enumerate(items) if self._multi_turn(item)]
        single = [i for i in range(len(items)) if i not in set(multi)]
        out: list[list[Sample]] = [[] for _ in items]
        with self._timed("generate"):
            if single:
                groups = self.engine.generate(
                    [self.prompt_ids(items[i]) for i in single],
                    n=n,
                    max_new_tokens=max_new,
                    greedy=greedy,
                    generator=self.generator,
                    seed=seed,
                )
                for i, group in zip(single, groups, strict=True):
                    out[i] = group
            if multi:
                jobs = [
                    (self.env(items[i].kind), items[i].record, self.env(items[i].kind).messages(items[i].record))
                    for i in multi
                ]
                groups = run_episodes(
                    jobs,
                    n,
                    self.tokenizer,
                    self.engine,
                    eos_ids=self.eos_ids,
                    max_new_tokens=max_new,
                    concurrency=self.cfg.episode_concurrency,
                    seed=seed,
                    device=self.device,
                    greedy=greedy,
                )
                for i, group in zip(multi, groups, strict=True):
                    out[i] = group
        return out

    def _multi_turn(self, item: Item) -> bool:
        env = self.env(item.kind)
        return hasattr(env, "episode") or hasattr(env, "rollout") or bool(env.options.get("tools"))

    def score(self, item: Item, samples: list[Sample]) -> None:
        """Grade each sample (once), then compose the rewards of all of `samples`, the prompt's
        whole group so far, with rho = that group's pass rate (the length penalty's rho_q)."""
        with self._timed("score"):
            env = self.env(item.kind)
            for s in samples:
                if not s.text:
                    s.text = self.tokenizer.decode(s.completion_ids, skip_special_tokens=True)
                if s.grade is None:  # (an environment with its own loop graded the episode)
                    # an episode is graded on its final answer
                    answer = s.episode["final"] if s.episode else s.text
                    s.grade = env.grade(item.record, answer)
                s.passed = s.grade.task >= self.cfg.pass_threshold
            rho = sum(s.passed for s in samples) / len(samples)
            for s in samples:
                reward = compose(
                    s.grade.task,
                    s.text,
                    formatted=s.grade.formatted,
                    num_tokens=sum(s.loss_mask),  # the policy's tokens, not tool output
                    max_tokens=self.max_new_tokens,
                    pass_rate=rho,
                    config=env.reward_config,
                    detail=s.grade.detail,
                )
                s.reward, s.components = reward.total, reward.components

    # ---- learn ---------------------------------------------------------------------------------
    def learn(self, groups: list[Group]) -> dict[str, float]:
        """`minibatches` gradient steps on the groups' samples; k moves after each step.

        pi_old is the learner's own log-prob before the first update, computed with the same
        micro-batches as the update (so it is bitwise the learner's numerics, bf16 included): the
        first minibatch takes it from its own forward, later ones from one no-grad forward made
        before any update. The sampler's log-probs only weight tokens (truncated IS) and give the
        mismatch KL."""
        cfg = self.cfg
        samples = [s for g in groups for s in g.samples]
        if not samples:
            return {}
        advantages = torch.cat(
            [group_advantages(torch.tensor([s.reward for s in g.samples])) for g in groups]
        )
        order = torch.randperm(len(samples), generator=self.generator, device=self.device).tolist()
        plan = []  # per minibatch: its micro-batches as (sample indices, per-token weights)
        for chunk in np.array_split(np.array(order), max(1, min(cfg.minibatches, len(samples)))):
            chunk = chunk.tolist()
            if cfg.packing:  # [scale] micro-batches are packed rows (rl/packing.py)
                plan.append(packed_plan(cfg.aggregation, samples, chunk, cfg.pack_tokens))
                continue
            masks = [torch.tensor(samples[i].loss_mask, dtype=torch.float32) for i in chunk]
            rows = torch.cat([torch.full((len(m),), j) for j, m in enumerate(masks)])
            # normalized over the whole minibatch (one gradient step), not per micro-batch
            weights = token_weights(cfg.aggregation, torch.cat(masks), rows).split(
                [len(m) for m in masks]
            )
            plan.append(
                [
                    (chunk[a : a + cfg.micro_batch_size], weights[a : a + cfg.micro_batch_size])
                    for a in range(0, len(chunk), cfg.micro_batch_size)
                ]
            )
        old: dict[tuple[int, int], torch.Tensor] = {}
        with torch.no_grad():
            for m, micro in enumerate(plan[1:] if cfg.proximal else [], 1):
                for j, (part, _) in enumerate(distributed.local(micro)):  # [scale] this rank's
                    old[m, j] = self.logprobs(self.batch([samples[i] for i in part]))
        stats, total_loss, norms = LossStats(), 0.0, []
        for m, micro in enumerate(plan):
            step_stats = LossStats()
            self.optimizer.zero_grad(set_to_none=True)
            for j, (part, weights) in enumerate(distributed.local(micro)):  # [scale]
                batch = self.batch([samples[i] for i in part])
                logp = self.logprobs(batch)
                # proximal (default): pi_old is the learner's own; else the behavior log-probs
                prox = old.get((m, j), logp.detach()) if cfg.proximal else batch["behavior"]
                loss, part_stats = self.loss(batch, logp, prox, weights, advantages[part])
                loss.backward()
                step_stats.add(part_stats)
                total_loss += float(loss.detach())
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
            norms.append(distributed.as_float(norm))  # [scale] a DTensor under FSDP
            self.optimizer.step()
            self.policy_version += 1
            distributed.reduce_stats(step_stats)  # [scale] summed over ranks: one k everywhere
            stats.add(step_stats)
            self.k = next_k(  # k moves once per gradient step
                self.k,
                step_stats.entropy,
                target=cfg.entropy_target,
                delta=cfg.k_delta,
                k_max=cfg.k_max,
            )
        return {"loss": distributed.total(total_loss), "grad_norm": max(norms), **stats.summary()}

    def batch(self, samples: list[Sample]) -> dict[str, Any]:
        """Model inputs and per-token tensors for some samples: prompts left-padded, completions
        right-padded. Padded positions replay a nucleus of one (their target; weight 0)."""
        if self.cfg.packing:  # [scale] one packed row, no padding (rl/packing.py)
            return packed_batch(samples, self.pad_id, self.device)
        width_p = max(len(s.prompt_ids) for s in samples)
        width_c = max(len(s.completion_ids) for s in samples)
        shape = (len(samples), width_p + width_c)
        ids = torch.full(shape, self.pad_id, dtype=torch.long)
        attention = torch.zeros(shape, dtype=torch.long)
        targets = torch.full((len(samples), width_c), self.pad_id, dtype=torch.long)
        behavior = torch.zeros(len(samples), width_c)
        sizes = torch.ones((len(samples), width_c), dtype=torch.int32)
        width_k = max((len(k) for s in samples for k in s.nucleus_ids), default=0)
        # recorded nucleus ids, -1 after them; a token with none (a wider nucleus, or a sample
        # without ids) is replayed by size; padded positions keep just their target
        kept = torch.full((len(samples), width_c, max(width_k, 1)), -1, dtype=torch.long)
        kept[..., 0] = self.pad_id
        for i, s in enumerate(samples):
            p, c = len(s.prompt_ids), len(s.completion_ids)
            ids[i, width_p - p : width_p] = torch.tensor(s.prompt_ids)
            ids[i, width_p : width_p + c] = torch.tensor(s.completion_ids)
            attention[i, width_p - p : width_p + c] = 1
            targets[i, :c] = torch.tensor(s.completion_ids)
            behavior[i, :c] = torch.tensor(s.logprobs)
            sizes[i, :c] = torch.tensor(s.nucleus_sizes, dtype=torch.int32)
            kept[i, :c, 0] = -1
            for t, row in enumerate(s.nucleus_ids if len(s.nucleus_ids) == c else []):
                kept[i, t, : len(row)] = torch.tensor(row, dtype=torch.long)
        dev = self.device
        return {
            "ids": ids.to(dev),
            "attention": attention.to(dev),
            "positions": (attention.cumsum(-1) - 1).clamp(min=0).to(dev),
            "width_p": width_p,
            "targets": targets.to(dev),
            "behavior": behavior.to(dev),
            "sizes": sizes.to(dev),
            "kept": kept.to(dev),
        }

    def logprobs(self, batch: dict[str, Any], model=None) -> torch.Tensor:
        """The learner's log-prob of each completion token (temperature, replayed nucleus), with
        the body under autocast and the head and softmax in fp32, a chunk of positions at a time."""
        model = model or self.model
        if batch.get("packed"):  # [scale] rl/packing.py
            return packed_logprobs(
                model,
                body(model),
                batch,
                temperature=self.cfg.temperature,
                replay=self.replay,
                autocast=self.autocast,
                chunk_tokens=self.cfg.logit_chunk_tokens,
            )
        autocast = torch.autocast(
            self.device.type, dtype=self.autocast, enabled=bool(self.autocast)
        )
        with autocast:
            hidden = body(model)(
                input_ids=batch["ids"],
                attention_mask=batch["attention"],
                position_ids=batch["positions"],
            ).last_hidden_state
        # the hidden state before each completion token predicts it
        hidden = hidden[:, batch["width_p"] - 1 : -1]
        replay = self.replay
        return completion_logprobs(
            hidden,
            model.get_output_embeddings(),
            batch["targets"],
            batch["sizes"] if replay else None,
            self.cfg.temperature,
            batch["kept"] if replay else None,
            chunk_tokens=self.cfg.logit_chunk_tokens,
        )

    def loss(
        self,
        batch: dict[str, Any],
        logp: torch.Tensor,
        old: torch.Tensor,
        weights: list[torch.Tensor],
        advantages: torch.Tensor,
    ) -> tuple[torch.Tensor, LossStats]:
        cfg = self.cfg
        w = torch.zeros_like(logp)
        for i, part in enumerate(weights):
            w[i, : len(part)] = part.to(w.device)
        ref = None
        if self.ref_model is not None:
            with torch.no_grad():
                ref = self.logprobs(batch, self.ref_model)
        return clipped_objective(
            logp,
            old,
            advantages.to(logp.device)[:, None].expand_as(logp),
            w,
            low=cfg.clip_low,
            high=cfg.clip_high(self.k),
            ratio_min=cfg.ratio_min,
            ratio_max=cfg.ratio_max,
            ref_logp=ref,
            kl_coef=cfg.kl_coef,
            behavior_logp=batch["behavior"],
            is_cap=cfg.is_cap,
        )

    # ---- evaluate ------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        """pass@1 on the held-out items: one greedy response each, graded by the same environments."""
        if not self.eval_items:
            return {}
        passed, rewards = [], []
        t = time.perf_counter()
        for start in range(0, len(self.eval_items), 32):
            items = self.eval_items[start : start + 32]
            for item, (sample,) in zip(items, self.rollout(items, 1, greedy=True), strict=True):
                self.score(item, [sample])
                passed.append(sample.passed)
                rewards.append(sample.components.get("task", 0.0))
        return {
            "eval/pass@1": float(np.mean(passed)),
            "eval/task": float(np.mean(rewards)),
            "eval/items": len(passed),
            "time/eval": time.perf_counter() - t,
        }

    # ---- one step -------------------------------------------------------------------------------
    def step(self) -> dict[str, Any]:
        cfg = self.cfg
        self._times = {}
        start = time.perf_counter()
        max_new = self.max_new_tokens
        k_used = self.k
        if self.async_rollouts is not None:  # the oldest buffered batch (rl/async_rollout.py)
            draw, flow = self.async_rollouts.next_draw()
        else:
            self.sampler.step = self.step_no  # curriculum stage of this step
            draw = sample_groups(self.sampler, cfg, self.rollout, self.score)
            flow = {
                "async/admitted": self.step_no + 1,
                "async/dropped": 0,
                "async/dropped_samples": 0,
                "async/buffered": 0,
                "staleness/hist": {"0": trained} if (trained := sum(len(g.samples) for g in draw.groups)) else {},
                "staleness/max": 0,
            }
            # the learner waits for the whole generation in synchronous training
            flow["time/idle"] = time.perf_counter() - start
        t = time.perf_counter()
        learned = self.learn(draw.groups)
        self._times["learn"] = time.perf_counter() - t
        self.step_no += 1
        kept = [s for g in draw.groups for s in g.samples]
        every = draw.samples
        lengths = [len(s.completion_ids) for s in every]
        generated = sum(lengths)
        episodes = [s.episode for s in every if s.episode]
        elapsed = time.perf_counter() - start
        row: dict[str, Any] = {
            "step": self.step_no,
            "policy_version": self.policy_version,
            # trained-on groups (null when every group was filtered out) and all scored samples
            "reward": _mean([s.reward for s in kept]) if kept else None,
            "pass_rate": _mean([s.passed for s in kept]) if kept else None,
            "reward_all": _mean([s.reward for s in every]),
            "pass_rate_all": _mean([s.passed for s in every]),
            **{
                f"reward/{k}": _mean([s.components.get(k, 0.0) for s in every])
                for k in _components(every)
            },
            "groups": len(draw.groups),
            "prompts": draw.prompts,
            "dropped_early": draw.dropped_early,
            "dropped_full": draw.dropped_full,
            "k": k_used,
            "k_next": self.k,
            **learned,
            "len/mean": _mean(lengths),
            "len/max": max(lengths, default=0),
            "truncation": _mean([s.truncated for s in every]),
            "max_new_tokens": max_new,
            "tokens": generated,
            "tokens_per_s": generated / elapsed if elapsed else 0.0,
            "gen_tokens_per_s": generated / self._times.get("generate", 1e-9),
            "time/generate": self._times.get("generate", 0.0),
            "time/score": self._times.get("score", 0.0),
            "time/learn": self._times["learn"],
            "time/step": elapsed,
            "engine/replay": int(self.replay),
            **flow,
        }
        if episodes:  # multi-turn kinds
            row["episode/steps"] = _mean([e["steps"] for e in episodes])
            row["episode/tool_calls"] = _mean([len(e["tool_calls"]) for e in episodes])
            row["episode/policy_tokens"] = _mean([e["policy_tokens"] for e in episodes])
            row["episode/stop"] = dict(sorted(Counter(e["stop_reason"] for e in episodes).items()))
        if self.cfg.log_rollouts:
            self._log_rollouts(draw)
        # length curriculum: double on a schedule or when many responses hit the limit
        due = bool(cfg.double_every) and self.step_no % cfg.double_every == 0
        if self.max_new_tokens < cfg.max_new_tokens_cap and (
            due or row["truncation"] > cfg.double_above_truncation
        ):
            self.max_new_tokens = min(2 * self.max_new_tokens, cfg.max_new_tokens_cap)
        self.push_weights()  # last: the next batch sees this step's length limit too
        row["time/push"] = self._times["push"]
        # waiting for in-flight generation before the push is idle time too (async)
        row["time/push_wait"] = self.engine.last_wait_s
        row["time/idle"] += self.engine.last_wait_s
        row["time/idle_fraction"] = row["time/idle"] / (elapsed + row["time/push"])
        return row

    def push_weights(self) -> None:
        """The engine samples with the new weights from here on (local copy, server reload)."""
        t = time.perf_counter()
        self.engine.update_weights(lora.for_engine(self.model, self.engine), self.policy_version)
        if self.async_rollouts is not None:
            self.async_rollouts.pushed(self.step_no, self.policy_version)
        self._times["push"] = time.perf_counter() - t

    def _log_rollouts(self, draw) -> None:
        """Every scored response (kept or dropped) as a Rollout record, for self-distillation."""
        with open(self.out / "rollouts.jsonl", "a") as f:
            for s in draw.samples:
                item = draw.item_of[id(s)]
                record = Rollout(
                    prompt_id=item.id,
                    environment=item.kind,
                    policy_version=s.policy_version,
                    prompt=self.prompt_text(item),  # the whole chat, as the model saw it
                    completion=s.text,
                    reward=s.reward,
                    reward_components=s.components,
                    num_tokens=len(s.completion_ids),
                    truncated=s.truncated,
                    step=self.step_no,
                )
                f.write(record.model_dump_json() + "\n")

    # ---- the loop --------------------------------------------------------------------------------
    def train(self, steps: int | None = None) -> list[dict[str, Any]]:
        """Run until `steps` (default cfg.steps) steps are done in total; resumes are counted."""
        cfg = self.cfg
        total = steps if steps is not None else cfg.steps
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.json").write_text(
            json.dumps({"grpo": cfg.model_dump(), **self.meta}, indent=1)
        )
        # [scale] TensorBoard / W&B offline beside metrics.jsonl (rl/writers.py)
        self.writers = None
        if cfg.log_to:
            config = cfg.model_dump(mode="json")
            self.writers = Writers(self.out, cfg.log_to, config=config, resume_step=self.step_no)
        rows = []
        bar = _Bar(total, self.step_no) if self.progress else None
        try:
            if self.step_no == 0 and cfg.eval_every and self.eval_items:
                self._append({"step": 0, **self.evaluate()})
            if cfg.async_eta is not None and self.step_no < total:
                self.async_rollouts = AsyncRollouts(self, cfg.async_eta, cfg.async_workers)
                self.async_rollouts.start()
            while self.step_no < total:
                row = self.step()
                last = self.step_no == total
                if (
                    cfg.eval_every
                    and self.eval_items
                    and (self.step_no % cfg.eval_every == 0 or last)
                ):
                    row.update(self.evaluate())
                self._append(row)
                rows.append(row)
                if cfg.checkpoint_every and (self.step_no % cfg.checkpoint_every == 0 or last):
                    self.save()
                if bar:
                    bar.update(row)
        finally:
            if self.async_rollouts is not None:
                self.async_rollouts.stop()  # workers finish their batch; the buffer is let go
                self.async_rollouts = None
            if bar:
                bar.close()
            if self.writers is not None:  # [scale]
                self.writers.close()
            for env in self.envs.values():
                env.close()
        return rows

    def _append(self, row: dict[str, Any]) -> None:
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        if getattr(self, "writers", None) is not None:  # [scale] rl/writers.py
            self.writers.log(row)

    # ---- checkpoints ------------------------------------------------------------------------------
    def save(self) -> Path:
        root = self.out / "checkpoints"
        target = root / f"step-{self.step_no:06d}"
        tmp = root / f".tmp-{self.step_no:06d}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        distributed.save_pretrained(self.model, tmp / "model")  # [scale] gathered under FSDP
        self.tokenizer.save_pretrained(tmp / "model")
        torch.save(
            {
                "step": self.step_no,
                "policy_version": self.policy_version,
                "k": self.k,
                "max_new_tokens": self.max_new_tokens,
                "optimizer": self.optimizer.state_dict() if self.cfg.save_optimizer else None,
                "sampler": self.sampler.state_dict(),
                "generator": self.generator.get_state(),
                "rollout_calls": self._calls,  # seeds of episodes and server requests
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                "python_rng": random.getstate(),
                "numpy_rng": np.random.get_state(),
            },
            tmp / "trainer.pt",
        )
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        for old in sorted(root.glob("step-*"))[: -self.cfg.keep_checkpoints or None]:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def resume(self, checkpoint: str | Path | None = None) -> int:
        """Load the latest (or the given) checkpoint; returns the step to continue after (0: none).
        metrics.jsonl and rollouts.jsonl lose the lines written after that checkpoint."""
        from safetensors.torch import load_file

        if checkpoint is None:
            found = sorted((self.out / "checkpoints").glob("step-*/trainer.pt"))
            if not found:
                return 0
            checkpoint = found[-1].parent
        checkpoint = Path(checkpoint)
        if lora.is_lora(self.model):  # [scale] an adapter-only checkpoint (rl/lora.py)
            lora.load_adapter(self.model, checkpoint / "model")
        else:
            weights: dict[str, torch.Tensor] = {}
            for file in sorted((checkpoint / "model").glob("*.safetensors")):
                weights.update(load_file(file, device=str(self.device)))
            missing, unexpected = self.model.load_state_dict(weights, strict=False)
            tied = set(getattr(self.model, "_tied_weights_keys", None) or []) | {"lm_head.weight"}
            if unexpected or set(missing) - tied:
                raise RuntimeError(
                    f"checkpoint {checkpoint} does not fit the model: missing {missing[:3]}, unexpected {unexpected[:3]}"
                )
        state = torch.load(checkpoint / "trainer.pt", weights_only=False)
        if state["optimizer"] is not None:  # [scale] save_optimizer=False: Adam restarts
            self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.load_state_dict(state["sampler"])
        self.generator.set_state(state["generator"])
        self._calls = state.get("rollout_calls", 0)
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        random.setstate(state["python_rng"])
        np.random.set_state(state["numpy_rng"])
        self.step_no, self.policy_version = state["step"], state["policy_version"]
        self.k, self.max_new_tokens = state["k"], state["max_new_tokens"]
        for name in ("metrics.jsonl", "rollouts.jsonl"):
            _truncate_after(self.out / name, self.step_no)
        self.engine.update_weights(lora.for_engine(self.model, self.engine), self.policy_version)
        return self.step_no


def _mean(values) -> float:
    values = list(values)
    return float(sum(values) / len(values)) if values else 0.0


def _components(samples: list[Sample]) -> list[str]:
    return sorted({k for s in samples for k in s.components})


def _truncate_after(path: Path, step: int) -> None:
    if not path.exists():
        return
    lines = [
        line
        for line in path.read_text().splitlines()
        if line and json.loads(line).get("step", 0) <= step
    ]
    path.write_text("".join(line + "\n" for line in lines))


class _Bar:
    """A rich progress bar with the numbers one watches during a climb; when stderr is not a
    terminal (a log file, CI), one plain line per step instead, so a long run is never silent."""

    def __init__(self, total: int, done: int, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.done, self.t0 = total, done, time.perf_counter()
        self.progress = None
        if not self.stream.isatty():
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
        )
        self.progress.start()
        self.task = self.progress.add_task("train", total=total, completed=done, info="")

    def update(self, row: dict[str, Any]) -> None:
        info = (
            f"reward {row['reward_all']:.3f} · pass {row['pass_rate_all']:.2f} · groups {row['groups']} · "
            f"len {row['len/mean']:.0f} · k {row['k']:.2f} · {row['time/step']:.1f}s/step"
        )
        if "eval/pass@1" in row:
            info += f" · eval {row['eval/pass@1']:.2f}"
        self.done += 1
        if self.progress is None:
            elapsed = time.perf_counter() - self.t0
            print(f"train: step {self.done}/{self.total} · {info} · {elapsed:.0f}s elapsed", file=self.stream, flush=True)
        else:
            self.progress.update(self.task, advance=1, info=info)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
