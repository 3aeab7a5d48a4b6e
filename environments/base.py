"""The environment interface (DESIGN.md "Environments and episodes").

An environment turns a task record into a prompt, takes the policy's actions, and grades the
result into reward components (`rewards.compose`). Single-turn kinds (math, code) finish after
one action; multi-step kinds (SWE, tool use) go through the shared episode loop, which calls
`reset` once and `step` per action. Environments are looked up by name (`get_environment`) so the
trainer routes each item by its kind."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from .rewards import Reward, RewardConfig


@dataclass
class Step:
    observation: str
    done: bool


@dataclass
class Grade:
    """What the environment's grader decided: the task reward in [0, 1] and whether the response
    was in the requested format; `compose` turns it and the response into the full reward."""

    task: float
    formatted: bool
    detail: str = ""


class Environment(ABC):
    kind: str = ""

    def __init__(self, reward: RewardConfig | None = None, **options: Any) -> None:
        self.reward_config = reward or RewardConfig()
        self.options = options

    @abstractmethod
    def messages(self, task: Any) -> list[dict[str, str]]:
        """The chat prompt for `task` (system + user messages)."""

    @abstractmethod
    def grade(self, task: Any, completion: str) -> Grade:
        """Grade a finished response (or, for multi-step kinds, the final state)."""

    # Multi-step protocol; single-turn environments end after the first action.
    def reset(self, task: Any) -> str:
        self._task = task
        return self.messages(task)[-1]["content"]

    def step(self, action: str) -> Step:
        return Step(observation="", done=True)

    def score(
        self,
        task: Any,
        completion: str,
        *,
        num_tokens: int = 0,
        max_tokens: int = 0,
        pass_rate: float | None = None,
    ) -> Reward:
        from .rewards import compose

        grade = self.grade(task, completion)
        return compose(
            grade.task,
            completion,
            formatted=grade.formatted,
            num_tokens=num_tokens,
            max_tokens=max_tokens,
            pass_rate=pass_rate,
            config=self.reward_config,
            detail=grade.detail,
        )

    def close(self) -> None:  # noqa: B027 (an optional hook, not abstract)
        """Release sandboxes or other resources."""


# name -> "module:Class", imported on first use so `math` does not pull in Docker and friends.
REGISTRY: dict[str, str] = {
    "math": "rlclimb.environments.math_env:MathEnvironment",
    "code": "rlclimb.environments.code_env:CodeEnvironment",
    "swe": "rlclimb.environments.swe.env:SWEEnvironment",
    "tool": "rlclimb.environments.tooluse.env:ToolUseEnvironment",
}


def get_environment(kind: str, **options: Any) -> Environment:
    if kind not in REGISTRY:
        raise KeyError(f"unknown environment {kind!r}; known: {', '.join(sorted(REGISTRY))}")
    module, _, cls = REGISTRY[kind].partition(":")
    return getattr(importlib.import_module(module), cls)(**options)


def kind_of(record: Any) -> str:
    """Which environment a record belongs to: code problems to `code`, QA items to `math`,
    SWE-bench instances to `swe`."""
    from rlclimb.schemas.records import CodeProblem, QAItem

    if isinstance(record, dict) and "patch" in record and "base_commit" in record:
        return "swe"  # a SWE-bench instance (swebench.jsonl line)
    if type(record).__name__ == "ToolTask" or (
        isinstance(record, dict) and "instruction" in record and "actions" in record
    ):
        return "tool"  # a tool-use task (tasks.jsonl line of a tool environment)
    if isinstance(record, CodeProblem) or (
        isinstance(record, dict) and "tests" in record and "statement" in record
    ):
        return "code"
    if isinstance(record, QAItem) or (isinstance(record, dict) and "question" in record):
        return "math"
    raise ValueError(
        f"no environment for a record with fields {sorted(record)[:8] if isinstance(record, dict) else type(record).__name__}"
    )
