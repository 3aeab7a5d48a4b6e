"""The local engine: rl/rollout.py's transformers loop, on the learner's model (synchronous
training) or on its own copy of the weights (async: the learner trains while this samples)."""

from __future__ import annotations

import copy

import torch

from ..rollout import generate
from .base import Engine


class LocalEngine(Engine):
    name = "local"
    replays_nucleus = True

    def __init__(self, model, *, temperature, top_p, eos_ids, pad_id, autocast, copy_model=False):
        super().__init__()
        self.copied = copy_model
        self.model = copy.deepcopy(model).requires_grad_(False) if copy_model else model
        self.temperature, self.top_p = temperature, top_p
        self.eos_ids, self.pad_id, self.autocast = eos_ids, pad_id, autocast

    def generate(self, prompts, *, n, max_new_tokens, greedy=False, generator=None, seed=0):
        with self.sampling() as version:
            return generate(
                self.model,
                prompts,
                n=n,
                max_new_tokens=max_new_tokens,
                eos_ids=self.eos_ids,
                pad_id=self.pad_id,
                temperature=self.temperature,
                top_p=self.top_p,
                greedy=greedy,
                generator=generator,
                policy_version=version,
                autocast_dtype=self.autocast,
            )

    def _load(self, model, version) -> None:
        if self.copied:  # in-process: a direct copy, tensor by tensor
            with torch.no_grad():
                for mine, theirs in zip(self.model.parameters(), model.parameters(), strict=True):
                    mine.copy_(theirs)

