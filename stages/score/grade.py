"""Blind grading: guards against wrong ground truth among items the strongest tier rarely solves.

For an item whose strongest-tier pass rate is below `below`, a judge sees the question and two
unlabeled answers in a seeded random order: the strongest tier's consensus (majority) answer and
the ground truth. Judge prefers the consensus -> drop `ground_truth_suspect` (or tag it, with
`action: tag`); judge prefers the ground truth -> keep, tagged "hard". An item with no consensus
(fewer than `min_votes` samples agree) is kept as "hard" without asking.
Runs when the llm config has the judge role (`require_judge: true` makes a missing one an error);
`--set grade.enabled=false` leaves the stage out.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, Field

from rlclimb.pipelines.stage import (
    ConfigError,
    Drop,
    Keep,
    Record,
    Stage,
    StageConfig,
    StageContext,
)

from .common import (
    AnswerChecker,
    add_tag,
    ensure_llm,
    majority,
    run_config,
)

PROMPT = """Two different answers were given to the question below. Decide which one is correct. \
Solve the question yourself if you need to; judge only correctness, not style.

Question:
{question}

Answer A: {a}
Answer B: {b}

Reply with JSON: {{"correct": "A" or "B", "reason": "one sentence"}}"""


class GradeReply(BaseModel):
    correct: Literal["A", "B"]
    reason: str = Field("", max_length=2000)


class GradeConfig(StageConfig):
    role: str = "judge"
    require_judge: bool = False  # false: without the role, items pass ungraded
    below: float = 0.25  # grade items whose strongest-tier pass rate is below this
    min_votes: int = 2  # samples that must agree for a consensus answer
    action: Literal["drop", "tag"] = "drop"  # for a suspect ground truth
    hard_tag: str = "hard"


class BlindGradeStage(Stage):
    name = "grade"
    version = "1"
    kind = "map"
    Config = GradeConfig
    concurrency = 32

    def __init__(self, config=None, **overrides: Any):
        super().__init__(config, **overrides)
        self.grading = False  # known at check(): whether the run's llm config has the judge
        self._judge: Any = None

    def check(self, llm_config: Any) -> None:
        try:
            judge = run_config(llm_config).resolve(self.config.role)
        except ValueError as e:
            if self.config.require_judge:
                raise ConfigError(
                    f"stage {self.name}: {e}; add a `{self.config.role}` role "
                    f"or set {self.name}.enabled=false"
                ) from None
            self.grading, self._judge = False, None
            self.note = f"skipped: no `{self.config.role}` role in the llm config, items pass ungraded"
            return
        self.grading, self._judge = True, judge

    def llm_models(self) -> dict[str, Any]:  # the judge model is part of what a verdict means
        return {self.config.role: self._judge} if self.grading else {}

    @property
    def cache(self) -> bool:  # type: ignore[override]  # nothing worth caching when off
        return self.grading

    def setup(self, ctx: StageContext) -> None:
        if self.grading:
            ensure_llm(ctx)

    async def process(self, record: Record, ctx: StageContext) -> Any:
        solve = record.get("solve") or []
        if not self.grading or not solve:
            return record
        strongest = solve[-1]
        rate = strongest["correct"] / strongest["samples"] if strongest["samples"] else 0.0
        if rate >= self.config.below:
            return record
        checker = AnswerChecker(record)
        consensus, votes = majority(list(strongest["answers"]), checker.agree)
        tally = f"{votes}/{strongest['samples']}"
        if consensus is None or votes < self.config.min_votes or checker.correct(consensus):
            add_tag(record, self.config.hard_tag)
            return Keep(record, reason=f"no consensus against the ground truth ({tally})")
        truth = record["answer"]
        truth_first = random.Random(f"{ctx.seed}:{record['id']}").random() < 0.5
        a, b = (truth, consensus) if truth_first else (consensus, truth)
        prompt = PROMPT.format(question=record["question"], a=a, b=b)
        reply, c = await ensure_llm(ctx).structured(
            self.config.role,
            [{"role": "user", "content": prompt}],
            GradeReply,
            tag=self.name,
            seed=ctx.seed,
        )
        prefers_truth = (reply.correct == "A") == truth_first
        votes_out = (
            f"truth={truth}",
            f"{strongest['tier']}={consensus} ({tally})",
            f"judge={'truth' if prefers_truth else 'consensus'}",
        )
        if prefers_truth:
            add_tag(record, self.config.hard_tag)
            return Keep(
                record,
                reason="judge preferred the ground truth",
                model=c.model,
                votes=votes_out,
                cost=c.cost,
            )
        detail = (
            f"judge preferred {strongest['tier']}'s consensus {consensus!r} ({tally}) "
            f"over the ground truth {truth!r}: {reply.reason}"
        )[:500]
        if self.config.action == "tag":
            add_tag(record, "ground_truth_suspect")
            return Keep(record, reason=detail, model=c.model, votes=votes_out, cost=c.cost)
        return Drop("ground_truth_suspect", detail, model=c.model, votes=votes_out, cost=c.cost)
