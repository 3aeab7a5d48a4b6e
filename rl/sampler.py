"""Problem sampling with early exit, and the per-prompt pass-rate store.

Per step: draw prompts; sample G_early responses each and score them; a prompt continues only if
its early pass rate is in `early_pass_range` (all-fail and all-pass prompts teach nothing and cost
a full group); survivors get the rest of the group, and a group is trained on only if its full
pass rate is in `pass_range`. Rounds of fresh prompts repeat until `prompts_per_step` groups are
kept or `sampling_rounds` run out.

Curriculum: the last pass rate p of each prompt is kept; a prompt is drawn with weight
(its mix weight) * max(4 p (1 - p), floor), unseen prompts with weight 1 * mix weight, so prompts
near the model's edge come back and solved or hopeless ones rarely do. The length penalty's rho_q
is not this stored rate but the current group's own (`score` sees the whole group).

`sampling` picks the weight of a seen prompt: "edge" (above), "prioritized" (1 - p, floored:
unsolved prompts first, as in prioritized replay by pass rate) or "uniform" (the mix weight
alone). A `curriculum` is a list of stages, each {"until_step": N, plus a selection: "difficulty":
[bins] (the records' difficulty field) and/or "max_prior": x (the records' offline pass rate,
mean over tiers, at most x; items without one stay in)}: until step N only its items are drawn;
after the last stage, all of them. Draws and records hold a lock (async rollout workers share
the sampler)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import GRPOConfig
from .data import Item
from .rollout import Sample


@dataclass
class Group:
    item: Item
    samples: list[Sample]

    @property
    def pass_rate(self) -> float:
        return sum(s.passed for s in self.samples) / max(len(self.samples), 1)


@dataclass
class Draw:
    """What one step's sampling produced: the groups to train on and what was spent on the rest."""

    groups: list[Group] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)  # every scored sample, dropped ones too
    item_of: dict[int, Item] = field(default_factory=dict)  # id(sample) -> its prompt
    prompts: int = 0
    dropped_early: int = 0
    dropped_full: int = 0

    def add(self, item: Item, samples: list[Sample]) -> None:
        self.samples += samples
        self.item_of.update((id(s), item) for s in samples)


class PromptSampler:
    def __init__(
        self,
        items: list[Item],
        seed: int = 0,
        floor: float = 0.1,
        mode: str = "edge",
        curriculum: list[dict[str, Any]] | None = None,
    ):
        self.items = items
        self.floor = floor
        self.mode = mode
        self.curriculum = sorted(curriculum or [], key=lambda stage: stage["until_step"])
        self.step = 0  # the learner step the next draw is for (curriculum stages)
        self.rng = np.random.default_rng(seed)
        self.pass_rates: dict[str, float] = {}
        self.lock = threading.Lock()

    def weight(self, item: Item) -> float:
        p = self.pass_rates.get(item.id)
        if p is None or self.mode == "uniform":
            return item.weight
        if self.mode == "prioritized":
            return item.weight * max(1 - p, self.floor)
        return item.weight * max(4 * p * (1 - p), self.floor)

    def stage(self) -> dict[str, Any] | None:
        return next((s for s in self.curriculum if self.step < s["until_step"]), None)

    def in_stage(self, item: Item, stage: dict[str, Any] | None) -> bool:
        if stage is None:
            return True
        if "difficulty" in stage and getattr(item.record, "difficulty", None) not in stage["difficulty"]:
            return False
        if "max_prior" in stage:
            rates = [r.rate for r in getattr(item.record, "pass_rates", None) or []]
            if rates and sum(rates) / len(rates) > stage["max_prior"]:
                return False
        return True

    def draw(self, n: int, exclude: set[str] = frozenset()) -> list[Item]:
        with self.lock:
            stage = self.stage()
            weights = np.array(
                [
                    0.0 if i.id in exclude or not self.in_stage(i, stage) else self.weight(i)
                    for i in self.items
                ]
            )
            n = min(n, int((weights > 0).sum()))
            if n <= 0:
                return []
            picked = self.rng.choice(
                len(self.items), size=n, replace=False, p=weights / weights.sum()
            )
        chosen, ids = [], set()
        for index in picked.tolist():  # the same record can be listed twice in a mix
            if self.items[index].id not in ids:
                ids.add(self.items[index].id)
                chosen.append(self.items[index])
        return chosen

    def record(self, item_id: str, pass_rate: float) -> None:
        with self.lock:
            self.pass_rates[item_id] = pass_rate

    def state_dict(self) -> dict:
        return {
            "rng": self.rng.bit_generator.state,
            "pass_rates": dict(self.pass_rates),
            "step": self.step,
        }

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.pass_rates = dict(state["pass_rates"])
        self.step = state.get("step", 0)


def in_range(rate: float, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= rate <= bounds[1]


def sample_groups(
    sampler: PromptSampler,
    cfg: GRPOConfig,
    rollout: Callable[[list[Item], int], list[list[Sample]]],
    score: Callable[[Item, list[Sample]], None],
) -> Draw:
    """Collect up to cfg.prompts_per_step groups. `rollout(items, n)` returns n samples per item;
    `score(item, samples)` is given a prompt's whole group so far (the early samples, then all of
    them) and sets each sample's reward, components and `passed` (grading each sample once)."""
    draw = Draw()
    used: set[str] = set()
    early = cfg.early_group_size
    for _ in range(cfg.sampling_rounds):
        need = cfg.prompts_per_step - len(draw.groups)
        items = sampler.draw(need, used) if need > 0 else []
        if not items:
            break
        used |= {i.id for i in items}
        draw.prompts += len(items)
        groups = []
        for item, samples in zip(items, rollout(items, early or cfg.group_size), strict=True):
            score(item, samples)
            draw.add(item, samples)
            group = Group(item, samples)
            if early and not in_range(group.pass_rate, cfg.early_pass_range):
                sampler.record(item.id, group.pass_rate)
                draw.dropped_early += 1
                continue
            groups.append(group)
        if early and groups:  # the rest of each surviving group
            more = rollout([g.item for g in groups], cfg.group_size - early)
            for group, samples in zip(groups, more, strict=True):
                draw.add(group.item, samples)
                group.samples += samples
                score(group.item, group.samples)  # rewards composed with the full group's rate
        for group in groups:
            sampler.record(group.item.id, group.pass_rate)
            if in_range(group.pass_rate, cfg.pass_range):
                draw.groups.append(group)
            else:
                draw.dropped_full += 1
    return draw
