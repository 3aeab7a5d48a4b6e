"""The consensus combinator: run a stage n times, store every vote, keep on agreement.

The inner stage says what a vote is (`vote(record) -> str`, e.g. the extracted answer) and when two
votes agree (`agree(a, b) -> bool`, e.g. the answer checker). A dropped run votes `DROP:<reason>`.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from .stage import TRANSIENT_DROP_REASONS, Drop, Keep, Record, Stage, StageContext


def default_vote(record: Record) -> str:
    return json.dumps({k: v for k, v in record.items() if k != "provenance"}, sort_keys=True, default=str)


class Consensus(Stage):
    kind = "map"
    cache = True  # the n inner runs are the expensive part

    def __init__(self, inner: Stage, n: int = 3, quorum: int | None = None):
        if inner.kind != "map":
            raise ValueError(f"consensus needs a map stage, got {inner.kind} stage {inner.name}")
        if not 1 <= (quorum or n) <= n:
            raise ValueError(f"quorum must be in 1..{n}, got {quorum}")
        super().__init__()
        self.inner, self.n, self.quorum = inner, n, quorum or n
        self.name = f"{inner.name}.consensus"
        self.version = f"{inner.version}.n{n}.q{self.quorum}"
        self.output_model = inner.output_model
        self.concurrency = inner.concurrency

    def identity(self) -> dict[str, Any]:  # the inner stage is part of the identity
        return {**super().identity(), "inner": self.inner.identity(), "n": self.n, "quorum": self.quorum}

    def code_modules(self) -> list[str]:
        return [*super().code_modules(), *self.inner.code_modules()]

    def llm_models(self) -> dict[str, Any] | None:
        return self.inner.llm_models()

    @property
    def seeded(self) -> bool | None:  # type: ignore[override]
        return self.inner.seeded

    @property
    def config_paths(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.inner.config_paths

    @property
    def config_outputs(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.inner.config_outputs

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "inner": self.inner.describe(), "n": self.n, "quorum": self.quorum}

    @property
    def is_async(self) -> bool:
        return self.inner.is_async

    @property
    def usage_tags(self) -> tuple[str, ...]:  # the inner runs' calls are this stage's cost
        return (self.name, *self.inner.usage_tags)

    def check(self, llm_config: Any) -> None:
        self.inner.check(llm_config)

    def setup(self, ctx: StageContext) -> None:
        self.inner.setup(ctx)

    def process(self, record: Record, ctx: StageContext) -> Any:
        runs = [(copy.deepcopy(record), ctx.for_sample(i)) for i in range(self.n)]
        if self.inner.is_async:
            return self._gather(runs)
        return self._decide(record, [self._safe(lambda r=r, c=c: self.inner.process(r, c)) for r, c in runs])

    async def _gather(self, runs) -> Any:
        async def one(r, c):
            try:
                return await self.inner.process(r, c)
            except Exception as e:  # a failed run is a vote, not a crash
                return Drop(getattr(e, "drop_reason", "error"), f"{type(e).__name__}: {e}")

        results = await asyncio.gather(*(one(r, c) for r, c in runs))
        return self._decide(runs[0][0], list(results))

    @staticmethod
    def _safe(fn) -> Any:
        try:
            return fn()
        except Exception as e:
            return Drop(getattr(e, "drop_reason", "error"), f"{type(e).__name__}: {e}")

    def _vote(self, result: Any) -> str:
        if isinstance(result, Drop):
            return f"DROP:{result.reason}"
        rec = result.record if isinstance(result, Keep) else result
        vote = getattr(self.inner, "vote", None)
        return vote(rec) if vote else default_vote(rec)

    def _agree(self, a: str, b: str) -> bool:
        if a.startswith("DROP:") or b.startswith("DROP:"):
            return a == b
        agree = getattr(self.inner, "agree", None)
        return agree(a, b) if agree else a == b

    def _decide(self, record: Record, results: list[Any]) -> Keep | Drop:
        votes = [self._vote(r) for r in results]
        cost = sum(getattr(r, "cost", 0.0) for r in results)
        models = {getattr(r, "model", None) for r in results} - {None}
        model = ",".join(sorted(models)) or None
        groups: list[list[int]] = []  # greedy clustering by the inner stage's notion of agreement
        for i, v in enumerate(votes):
            for g in groups:
                if self._agree(votes[g[0]], v):
                    g.append(i)
                    break
            else:
                groups.append([i])
        best = max(groups, key=len)
        if len(best) < self.quorum:
            detail = f"{len(best)}/{self.n} agree, quorum {self.quorum}"
            failed = [r for r in results if isinstance(r, Drop) and r.reason in TRANSIENT_DROP_REASONS]
            if failed:  # a run that failed transiently is no evidence of disagreement: retry later
                return Drop(failed[0].reason, f"{detail}; a run failed: {failed[0].detail}"[:500],
                            model=model, votes=tuple(votes), cost=cost)
            return Drop("no_consensus", detail, model=model, votes=tuple(votes), cost=cost)
        winner = results[best[0]]
        if isinstance(winner, Drop):
            return Drop(winner.reason, winner.detail, model=model, votes=tuple(votes), cost=cost)
        rec = winner.record if isinstance(winner, Keep) else winner
        return Keep(rec, reason=f"{len(best)}/{self.n} agree", model=model, votes=tuple(votes), cost=cost)
