"""The engine interface and the factory."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import Any

import torch

from ..rollout import Sample


class EngineError(RuntimeError):
    """An engine that cannot serve or take weights (unreachable server, reload timeout)."""


class Engine(ABC):
    name = ""
    replays_nucleus = False  # True when samples carry the top-p nucleus of each token
    # a weight update waits for in-flight generation calls (weights changed in place under a
    # running forward would tear); a server swaps weights itself, so its requests in flight
    # go on, labeled with the version at their start (staleness is never under-counted)
    drain_on_update = True

    def __init__(self) -> None:
        self.version = 0  # the learner step whose weights this engine samples with
        self._busy = 0
        self.last_wait_s = 0.0
        self._pending = 0  # weight updates waiting: new generation calls wait behind them
        self._cond = threading.Condition()

    @abstractmethod
    def generate(
        self,
        prompts: list[list[int]],
        *,
        n: int,
        max_new_tokens: int,
        greedy: bool = False,
        generator: torch.Generator | None = None,
        seed: int = 0,
    ) -> list[list[Sample]]:
        """n samples per prompt (token ids), policy_version = self.version."""

    @abstractmethod
    def _load(self, model: Any, version: int) -> None:
        """Make the engine sample with `model`'s current weights."""

    def update_weights(self, model: Any, version: int) -> None:
        """Push the learner's weights; waits until no generation is in flight (a sample is
        never drawn from half-updated weights)."""
        with self._cond:
            self._pending += 1
            t = time.perf_counter()
            try:
                self._cond.wait_for(lambda: self._busy == 0 or not self.drain_on_update)
                self.last_wait_s = time.perf_counter() - t  # the learner idles here too
                self._load(model, version)
                self.version = version
            finally:
                self._pending -= 1
                self._cond.notify_all()

    @contextmanager
    def sampling(self):
        """Held around a generation call so a weight update waits for it."""
        with self._cond:
            self._cond.wait_for(lambda: self._pending == 0 or not self.drain_on_update)
            self._busy += 1
            version = self.version
        try:
            yield version
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def close(self) -> None:  # noqa: B027 (most engines hold nothing to close)
        pass


def make_engine(cfg, model, tokenizer, *, eos_ids, pad_id, autocast, copy_model: bool) -> Engine:
    """The engine named by cfg.engine ("local" | "server" | "vllm"); options in cfg.engine_options.
    copy_model: the local engine samples from its own copy of the weights (async mode, where the
    learner updates its model while rollouts run)."""
    options = dict(cfg.engine_options)
    common = dict(temperature=cfg.temperature, top_p=cfg.top_p, eos_ids=eos_ids)
    if cfg.engine == "local":
        from .local import LocalEngine

        return LocalEngine(model, pad_id=pad_id, autocast=autocast, copy_model=copy_model, **common)
    if cfg.engine == "server":
        from .server import ServerEngine

        return ServerEngine(tokenizer=tokenizer, **common, **options)
    if cfg.engine == "vllm":
        from .vllm_engine import VLLMEngine

        return VLLMEngine(model, tokenizer, **common, **options)
    raise ValueError(f"unknown engine {cfg.engine!r}; known: local, server, vllm")
