"""GRPO configuration: every number of the full-scale GRPO recipe as a field, with defaults scaled down for
runs that fit a CPU (a 135M model, minutes not weeks). The full-scale value is in each comment where the
default differs; `GRPOConfig.spec()` returns the full-scale values for a GPU-sized run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlclimb.environments.rewards import RewardConfig

Aggregation = Literal["token-mean", "token-sum", "sample-mean", "true-sample-mean"]


class GRPOConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    steps: int = 30
    # -- problem sampling with early exit (full scale: G_early 16, G 128, ranges below) --------------
    prompts_per_step: int = 4  # groups kept per step = per inference update (full scale: 275 x 128,
    # five gradient steps of 7040 sequences)
    group_size: int = 8  # G: responses per prompt
    early_group_size: int = 4  # G_early: sampled first; 0 turns early exit off
    early_pass_range: tuple[float, float] = (0.05, 0.8)  # continue only if the early rate is in
    pass_range: tuple[float, float] = (0.1, 0.8)  # train on a group only if its rate is in
    pass_threshold: float = 1.0  # a response "passes" when its task reward is >= this
    sampling_rounds: int = 4  # rounds of fresh prompts per step before training on fewer groups
    curriculum_floor: float = 0.1  # sampling weight of prompts last seen all-pass or all-fail
    # -- rollouts -------------------------------------------------------------------------------
    temperature: float = 1.0
    top_p: float = 0.97
    max_new_tokens: int = 128  # full scale: 8k, doubling to 128k
    max_new_tokens_cap: int = 512
    double_every: int = 0  # double max_new_tokens every N steps (0: off)
    double_above_truncation: float = 0.3  # ... or when a step's truncation rate exceeds this
    # -- loss ------------------------------------------------------------------------------------
    aggregation: Aggregation = "token-mean"  # full scale: token-level, normalized over the batch
    # (true-sample-mean differs from sample-mean only with packing: sample-mean averages per packed row)
    eps: float = 0.6  # clip range [1 - eps, (1 - eps)^-1 + k]
    k_init: float = 0.0
    k_max: float = 2.5
    k_delta: float = 0.25
    entropy_target: float = 0.3  # H*
    ratio_min: float = 0.0  # outer ratio clip, on all branches
    ratio_max: float = 50.0
    kl_coef: float = 0.0  # no KL term by default (a frozen reference copy is kept only if > 0)
    is_cap: float = 2.0  # truncated importance weight min(pi_old / pi_sampler, is_cap) per token
    # (corrects sampler/learner numerics, e.g. bf16 kernels; 0 turns it off)
    logit_chunk_tokens: int = 8192  # learner logits computed this many tokens at a time
    # -- scale (rl/packing.py, rl/lora.py, rl/distributed.py, rl/writers.py) -------------------
    packing: bool = False  # learner rows hold several samples back to back, no padding
    pack_tokens: int = 4096  # tokens per packed row (one row = one micro-batch)
    lora_rank: int = 0  # > 0: train LoRA adapters on all linear layers (MLP included), base frozen
    lora_alpha: float = 32.0
    lora_lr_multiplier: float = 10.0  # adapters learn at lr * this (LoRA wants ~10x full-FT LR)
    save_optimizer: bool = True  # False: checkpoints without Adam state (cannot resume exactly)
    log_to: list[Literal["tensorboard", "wandb"]] = Field(default_factory=list)  # beside metrics.jsonl
    # -- optimizer (full scale: AdamW 0.95/0.95, eps 1e-15, no weight decay, constant LR 1e-6) -------
    # 1e-6 moves a 135M model too little in the few dozen steps a CPU run affords; 1e-5 shows a
    # trend in ~30 steps without collapsing it. Use `GRPOConfig.spec()` for GPU runs.
    lr: float = 1e-5
    betas: tuple[float, float] = (0.95, 0.95)
    adam_eps: float = 1e-15
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    minibatches: int = 1  # gradient steps per batch of rollouts (full scale: 5 per inference update)
    micro_batch_size: int = 8  # sequences per forward/backward (memory, not math)
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"  # auto: bf16 autocast on a bf16 GPU
    device: str = "auto"
    # -- rollout engine, async mode, multi-turn episodes (rl/engines, rl/async_rollout.py) -------
    engine: Literal["local", "server", "vllm"] = "local"
    engine_options: dict[str, Any] = Field(default_factory=dict)  # e.g. server: base_url,
    # weights_dir, reload_endpoint, reload_timeout_s, timeout_s, concurrency
    async_eta: int | None = None  # None: synchronous; eta >= 0: rollout workers run ahead of
    # the learner by at most eta steps (AReaL admission; 0 reproduces synchronous training)
    async_workers: int = 1  # rollout threads in async mode
    proximal: bool = True  # decoupled objective: the ratio is clipped against a proximal policy
    # (the learner's own log-probs before the update) and the behavior log-probs stored at
    # sampling time only weight tokens (is_cap); False: pi_old = the behavior log-probs (plain PPO)
    episode_concurrency: int = 4  # episodes (sandboxes) in flight at once, multi-turn kinds
    # -- prompt sampling over the mix (rl/sampler.py) ---------------------------------------------
    sampling: Literal["edge", "prioritized", "uniform"] = "edge"  # edge: 4p(1-p); prioritized:
    # 1 - p (unsolved first); uniform: mix weights only (all times the mix weight, floor kept)
    curriculum: list[dict[str, Any]] = Field(default_factory=list)  # stages, each
    # {"until_step": N, "difficulty": [bins], "max_prior": x}: items drawn until step N (rl/sampler.py)
    # -- rewards, evaluation, bookkeeping ------------------------------------------------------
    reward: RewardConfig = Field(default_factory=RewardConfig)
    environments: dict[str, dict[str, Any]] = Field(default_factory=dict)  # kind -> options,
    # passed to get_environment, e.g. {"code": {"backend": "process", "max_tests": 5}}
    eval_items: int = 16  # held out from training; pass@1 (greedy) every eval_every steps
    eval_every: int = 10
    checkpoint_every: int = 10
    keep_checkpoints: int = 1
    log_rollouts: bool = True  # rollouts.jsonl: Rollout records (for self-distillation)

    @model_validator(mode="after")
    def _check(self) -> GRPOConfig:
        if self.early_group_size < 0 or self.early_group_size >= self.group_size:
            raise ValueError("early_group_size must be smaller than group_size (or 0)")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2 (advantages are relative to the group)")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if not 0 < self.eps < 1:
            raise ValueError("eps must be in (0, 1)")
        if self.async_eta is not None and (self.async_eta < 0 or self.async_workers < 1):
            raise ValueError("async_eta must be >= 0 and async_workers >= 1")
        return self

    @property
    def clip_low(self) -> float:
        return 1.0 - self.eps

    @property
    def sequences_per_gradient_step(self) -> float:
        return self.prompts_per_step * self.group_size / self.minibatches

    def clip_high(self, k: float) -> float:
        return 1.0 / (1.0 - self.eps) + k

    @classmethod
    def spec(cls, **overrides) -> GRPOConfig:
        """The recipe at full scale (a GPU run): 7040 sequences per gradient step, 5
        gradient steps per inference update (a synchronous stand-in for an asynchronous rollout engine)."""
        values = dict(
            group_size=128,
            early_group_size=16,
            prompts_per_step=275,  # 275 x 128 = 35200 sequences = 5 x 7040
            max_new_tokens=8192,
            max_new_tokens_cap=131072,
            lr=1e-6,
            minibatches=5,
            dtype="bfloat16",
        )
        return cls(**{**values, **overrides})
