"""Cost control for scoring: what a run may cost, printed before anything is spent.

    rlclimb run stem-score -i runs/curated/data -o runs/scored -c llm.yaml --set solve.dry_run=true

prints, per stage and tier, calls x tokens x price (a range: early exit and guessing stop early)
and exits 0 without writing anything. A real run prints the same estimate to stderr when any
tier is priced; `solve.budget_usd` caps the solve calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlclimb.pipelines.llm import LLMConfig, ModelProfile

from .common import priced


class DryRun(SystemExit):
    """Raised after a dry run's estimate is printed: the CLI exits 0, nothing written."""


@dataclass
class EstimateLine:
    what: str  # stage and tier / role
    profile: ModelProfile
    calls_min: int
    calls_max: int
    prompt_tokens: int  # per call
    output_tokens: int  # per call

    @property
    def cost_min(self) -> float:
        return self.calls_min * priced(self.profile, self.prompt_tokens, self.output_tokens)

    @property
    def cost_max(self) -> float:
        return self.calls_max * priced(self.profile, self.prompt_tokens, self.output_tokens)


def estimate(stages: list[Any], config: LLMConfig, items: int | None) -> list[EstimateLine]:
    lines: list[EstimateLine] = []
    for stage in stages:
        if hasattr(stage, "cost_lines"):
            lines.extend(stage.cost_lines(config, items or 1))
    return lines


def format_estimate(lines: list[EstimateLine], items: int | None) -> str:
    scope = f"{items:,} items" if items else "per item (input size unknown)"
    rows = [f"cost estimate, {scope}:"]
    for ln in lines:
        calls = (
            f"{ln.calls_min:,}"
            if ln.calls_min == ln.calls_max
            else f"{ln.calls_min:,}-{ln.calls_max:,}"
        )
        cost = (
            f"${ln.cost_min:.4f}"
            if ln.cost_min == ln.cost_max
            else f"${ln.cost_min:.4f}-{ln.cost_max:.4f}"
        )
        tokens = (ln.prompt_tokens + ln.output_tokens) * ln.calls_max
        rows.append(
            f"  {ln.what:<22} {ln.profile.name:<14} calls {calls:<14} <= {tokens:,} tokens  {cost}"
        )
    low, high = sum(ln.cost_min for ln in lines), sum(ln.cost_max for ln in lines)
    rows.append(f"  total ${low:.4f}-{high:.4f} (expected tokens per call are estimates)")
    return "\n".join(rows)
