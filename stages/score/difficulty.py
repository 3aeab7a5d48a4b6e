"""Difficulty bins from the per-tier pass rates (after `solve`).

Default (`method: weakest_tier`): the weakest tier that solves the item at least `threshold` (half)
of the time names the bin ("tier-0" = easiest); "unsolved" when no tier does.
`method: edges`: bin a score (`on`: mean / strongest / weakest pass rate, or a tier name) by
ascending `edges` into `labels` (one more label than edges), e.g. edges [0.2, 0.6] and labels
[hard, medium, easy].
"""

from __future__ import annotations

import bisect
from typing import Literal

from pydantic import model_validator

from rlclimb.pipelines.stage import ConfigError, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import pass_rate_map


class DifficultyConfig(StageConfig):
    method: Literal["weakest_tier", "edges"] = "weakest_tier"
    threshold: float = 0.5
    unsolved_label: str = "unsolved"
    edges: list[float] = []
    labels: list[str] = []
    on: str = "mean"  # mean | strongest | weakest | a tier name

    @model_validator(mode="after")
    def _bins(self) -> DifficultyConfig:
        if self.method == "edges":
            if sorted(self.edges) != self.edges or len(self.labels) != len(self.edges) + 1:
                raise ConfigError("difficulty: edges must ascend and labels be one more than edges")
        return self


class DifficultyStage(Stage):
    name = "difficulty"
    version = "1"
    kind = "map"
    Config = DifficultyConfig

    def process(self, record: Record, ctx: StageContext) -> Record:
        rates = pass_rate_map(record.get("pass_rates"))
        tiers = [s["tier"] for s in record.get("solve") or []] or list(rates)
        if not tiers:
            return record  # not scored: leave any difficulty it came with
        c = self.config
        if c.method == "weakest_tier":
            solved = [t for t in tiers if rates.get(t, 0.0) >= c.threshold]
            record["difficulty"] = solved[0] if solved else c.unsolved_label
            return record
        values = [rates.get(t, 0.0) for t in tiers]
        score = {"mean": sum(values) / len(values), "strongest": values[-1], "weakest": values[0]}
        value = score.get(c.on, rates.get(c.on, 0.0))
        record["difficulty"] = c.labels[bisect.bisect_right(c.edges, value)]
        return record
