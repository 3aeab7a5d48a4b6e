"""Shared by the agentic-trainer tests (engines, async, multi-turn): the packaged SmolLM2
tokenizer, reward and config of helpers/rl_tiny.py, a tiny model over it, and a hand-written tool
environment (real Tool objects for the episode loop)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rlclimb.environments.base import Environment, Grade

from .rl_tiny import CapitalEnv, config, items, tokenizer_or_skip  # noqa: F401 (the shared pieces)


def tiny(tokenizer, seed=0):
    from rlclimb.rl.models import tiny_causal_lm

    return tiny_causal_lm(tokenizer, seed=seed)


# ---- a hand-written tool environment ----------------------------------------------------------


@dataclass
class CounterTool:
    """A tool with state per episode: `add` adds to a counter and reports it."""

    state: dict[str, int]
    name: str = "add"
    description: str = "Add a number to the counter; returns the new value."
    parameters: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }
    )

    def __call__(self, n: int) -> str:
        self.state["value"] += int(n)
        self.state["calls"] += 1
        return f"counter = {self.state['value']}"


@dataclass
class EchoTool:
    name: str = "echo"
    description: str = "Echo the text back."
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {"text": {"type": "string"}}}
    )

    def __call__(self, text: str = "") -> str:
        return f"echo: {text}"


class CounterEnv(Environment):
    """Multi-turn: tools `add` and `echo`, one fresh counter per episode (set up on entry, torn
    down on exit, as a sandbox would be). Task reward: the final answer starts with a capital
    letter (reachable by a random model), so a climb is visible in a few steps; `opened` and
    `closed` count episodes, `in_flight_max` the most at once."""

    kind = "tool"

    def __init__(self, reward=None, **options):
        super().__init__(reward, **options)
        import threading

        self.lock = threading.Lock()
        self.opened = self.closed = self.in_flight = self.in_flight_max = 0

    def messages(self, task):
        return [{"role": "user", "content": task.question}]

    @contextmanager
    def episode(self, task):
        with self.lock:
            self.opened += 1
            self.in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self.in_flight)
        state = {"value": 0, "calls": 0}
        try:
            yield [CounterTool(state), EchoTool()]
        finally:
            with self.lock:
                self.in_flight -= 1
                self.closed += 1

    def grade(self, task, completion):
        first = completion.strip()[:1]
        return Grade(task=1.0 if first.isascii() and first.isupper() else 0.0, formatted=True)
