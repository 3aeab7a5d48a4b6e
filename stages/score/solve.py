"""Solve: each item is answered `k` times by each model tier; per-tier pass rates go on the item.

Early exit: the first `k_early` samples of every tier come first; an item that is already decided
(all of them wrong on the strongest tier, or all right on the weakest) gets no more samples.

Fault policy (per sample):
- 429 / 5xx / timeouts / connection errors: retried by the LLM client with backoff; a sample that
  still fails drops the item with that (transient) reason: not cached, so a re-run retries it, and
  the item's finished samples come back from the request cache, unpaid.
- truncated (finish_reason "length") with no stated final answer, or no final answer at all:
  a valid attempt that counted as wrong (recorded in `truncated` / `no_answer`).
- a refusal counts as wrong; a bad request (4xx) drops the item (`llm_bad_request`).
- over `budget_usd`: the item is dropped as `budget_exceeded` and no further call starts.
- endpoint down: after `breaker_failures` failed samples in a row, the tier is not called for
  `breaker_cooldown_s` and its items are ledgered at once as `llm_connection` (transient).
Each sample's request carries its index as `seed`: cache keys differ per sample, stable across runs.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from rlclimb.pipelines.llm import LLMConfig, LLMError, LLMRefusalError
from rlclimb.pipelines.stage import (
    TRANSIENT_DROP_REASONS,
    Drop,
    Keep,
    Record,
    Stage,
    StageConfig,
    StageContext,
)
from rlclimb.schemas.records import QAItem, pass_rate_list

from .common import (
    EMBEDDED_K,
    AnswerChecker,
    Breaker,
    Budget,
    BudgetExceeded,
    choices_block,
    ensure_llm,
    find_tiers,
    priced,
    run_config,
    stated_answer,
)
from .cost import DryRun, EstimateLine, estimate, format_estimate

PROMPT = (
    "Solve the following problem. Think step by step, then give the final answer on the last "
    "line in the form \\boxed{{answer}}.\n\n{question}"
)


class SolveConfig(StageConfig):
    tiers: list[str] | None = None  # roles, weakest first; None: every tier-N role/profile
    k: int | None = Field(None, ge=1)  # samples per tier; None: 8 (4 with the embedded tier)
    k_early: int = Field(2, ge=1)  # first samples per tier before deciding whether to go on
    early_exit: bool = True
    # Sampling, unless the tier's profile `params` (or tier_params) set it.
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 2048
    tier_params: dict[str, dict[str, Any]] = Field(default_factory=dict)  # tier -> request params
    prompt: str = PROMPT  # {question} is replaced; ask for the final answer in \boxed{}
    system: str | None = None
    keep_texts: bool = False  # store full responses in the item's `solve` record
    budget_usd: float | None = Field(None, ge=0)  # cap on what the solve calls cost
    # A tier whose calls fail this many times in a row (after the client's retries) is not called
    # for cooldown_s: its remaining items are ledgered at once (transient: a re-run retries them).
    breaker_failures: int = Field(8, ge=0)  # 0: off
    breaker_cooldown_s: float = 30.0
    dry_run: bool = False  # print the cost estimate and exit before anything is written
    expected_output_tokens: int = Field(400, ge=1)  # per sample, for the estimate


@dataclass(slots=True)
class _Sample:
    answer: str  # the stated final answer, "" when none
    correct: bool
    finish: str  # stop / truncated / no_answer / refusal
    text: str
    pt: int  # prompt tokens
    ct: int  # completion tokens
    cost: float  # at the tier's price, cached or not
    model: str  # profile name


class SolveStage(Stage):
    name = "solve"
    version = "2"  # 2: pass_rates as a list of {tier, rate}
    kind = "map"
    Config = SolveConfig
    cache = True
    concurrency = 32  # items in flight; the LLM client limits requests per endpoint
    output_model = QAItem  # adds pass_rates / solve to inputs written before those fields

    def __init__(self, config=None, **overrides: Any):
        super().__init__(config, **overrides)
        self.expected_items: int | None = None  # set by the pipeline from its reader
        self.companions: list[Stage] = []  # later stages whose calls the estimate includes
        self._tiers: list[str] = []
        self._k = self.config.k or 8
        self._llm_config: LLMConfig | None = None
        self._budget = Budget(self.config.budget_usd)
        self._breaker = Breaker(self.config.breaker_failures, self.config.breaker_cooldown_s)

    # ---- configuration ----------------------------------------------------------------------
    def check(self, llm_config: Any) -> None:
        config = run_config(llm_config)
        self._llm_config = config
        self._tiers = find_tiers(config, self.config.tiers, self.name)
        self._k = self.config.k or (EMBEDDED_K if llm_config is None else 8)
        if llm_config is None:  # say in the funnel why every item may come out `unsolved`
            self.note = "no llm config: the one tier is the embedded SmolLM2-135M on the CPU (slow, weak)"
        for stage in self.companions:  # resolve their settings (the guessing role) to estimate
            stage.check(llm_config)
        lines = estimate([self, *self.companions], config, self.expected_items)
        if self.config.dry_run:
            print(format_estimate(lines, self.expected_items), flush=True)
            raise DryRun(0)
        if any(line.cost_max > 0 for line in lines):  # say what paid calls may cost, up front
            print(format_estimate(lines, self.expected_items), file=sys.stderr, flush=True)

    def llm_models(self) -> dict[str, Any]:  # the tiers' models (not the companions')
        if self._llm_config is None:
            return {}
        return {t: self._llm_config.resolve(t) for t in self._tiers}

    def identity(self) -> dict[str, Any]:  # samples per tier: the config's or the default
        return {**super().identity(), "k": self._k}

    @property
    def tiers(self) -> list[str]:
        return self._tiers

    @property
    def usage_tags(self) -> tuple[str, ...]:
        return (self.name, *(f"{self.name}.{t}" for t in self._tiers))

    def setup(self, ctx: StageContext) -> None:
        ensure_llm(ctx)

    def request_params(self, tier: str) -> dict[str, Any]:
        """Stage defaults for what the tier's profile does not set, then tier_params."""
        profile = self._llm_config.resolve(tier)  # type: ignore[union-attr]
        defaults = {
            "temperature": self.config.temperature,
            "top_p": self.config.top_p,
            "max_tokens": self.config.max_tokens,
        }
        params = {k: v for k, v in defaults.items() if k not in profile.params}
        return {**params, **self.config.tier_params.get(tier, {})}

    def messages(self, record: Record) -> list[dict[str, str]]:
        question = record["question"] + choices_block(record)
        msgs = [{"role": "system", "content": self.config.system}] if self.config.system else []
        return [*msgs, {"role": "user", "content": self.config.prompt.format(question=question)}]

    def cost_lines(self, config: LLMConfig, items: int) -> list[EstimateLine]:
        typical = self.messages({"question": "x" * 400})  # a typical question: ~100 tokens
        k_min = min(self.config.k_early, self._k) if self.config.early_exit else self._k
        lines = []
        for tier in self._tiers:
            params = {**config.resolve(tier).params, **self.request_params(tier)}
            out = min(self.config.expected_output_tokens, int(params.get("max_tokens") or 1 << 30))
            lines.append(
                EstimateLine(
                    f"{self.name} {tier}",
                    config.resolve(tier),
                    items * k_min,
                    items * self._k,
                    _tokens(typical),
                    out,
                )
            )
        return lines

    # ---- per item ---------------------------------------------------------------------------
    async def process(self, record: Record, ctx: StageContext) -> Keep | Drop:
        llm = ensure_llm(ctx)
        checker = AnswerChecker(record)
        messages = self.messages(record)
        samples: dict[str, list[_Sample]] = {t: [] for t in self._tiers}
        k, k_early = self._k, min(self.config.k_early, self._k)
        first = k_early if self.config.early_exit else k
        failure = await self._draw(llm, ctx, checker, messages, samples, 0, first)
        decided = None
        if failure is None and first < k:
            decided = self._decided(samples)
            if decided is None:
                failure = await self._draw(llm, ctx, checker, messages, samples, first, k)
        if failure is not None:
            return failure
        return self._result(record, samples, decided)

    def _decided(self, samples: dict[str, list[_Sample]]) -> str | None:
        weakest, strongest = samples[self._tiers[0]], samples[self._tiers[-1]]
        if all(s.correct for s in weakest):
            return f"early exit: all {len(weakest)} right on {self._tiers[0]}"
        if not any(s.correct for s in strongest):
            return f"early exit: all {len(strongest)} wrong on {self._tiers[-1]}"
        return None

    async def _draw(self, llm, ctx, checker, messages, samples, start: int, stop: int):
        jobs = [(t, i) for t in self._tiers for i in range(start, stop)]
        results = await asyncio.gather(
            *(self._sample(llm, ctx, checker, messages, t, i) for t, i in jobs),
            return_exceptions=True,
        )
        failures: list[BaseException] = []
        for (tier, _), res in zip(jobs, results, strict=True):
            if isinstance(res, _Sample):
                samples[tier].append(res)
            elif isinstance(res, LLMError | BudgetExceeded):
                failures.append(res)
            else:
                raise res  # a bug: the engine ledgers it as an error
        if not failures:
            return None
        first = failures[0]
        detail = f"{len(failures)} of {len(jobs)} samples failed; first: {first}"
        return Drop(first.drop_reason, detail[:500])  # type: ignore[attr-defined]

    async def _sample(self, llm, ctx, checker, messages, tier: str, i: int) -> _Sample:
        profile = llm.config.resolve(tier)
        params = self.request_params(tier)
        worst = priced(profile, _tokens(messages), int(params.get("max_tokens") or 0))
        self._breaker.before(tier)
        self._budget.reserve(worst)
        actual = 0.0
        try:
            c = await llm.complete(
                tier, messages, tag=f"{self.name}.{tier}", seed=ctx.seed * 1000 + i, **params
            )
            actual = priced(profile, c.prompt_tokens, c.completion_tokens)
        except LLMRefusalError:
            return _Sample("", False, "refusal", "", 0, 0, 0.0, profile.name)
        except LLMError as e:
            self._breaker.after(tier, ok=e.drop_reason not in TRANSIENT_DROP_REASONS)
            raise
        finally:
            self._budget.settle(worst, actual)
        self._breaker.after(tier, ok=True)
        answer = stated_answer(c.text) or ""
        finish = c.finish_reason or "stop"
        if not answer:
            finish = "truncated" if finish == "length" else "no_answer"
        correct = checker.correct(answer)
        return _Sample(
            answer, correct, finish, c.text, c.prompt_tokens, c.completion_tokens, actual, c.model
        )

    def _result(self, record: Record, samples: dict[str, list[_Sample]], decided: str | None):
        solve, rates, cost = [], {}, 0.0
        for tier, got in samples.items():
            correct = sum(s.correct for s in got)
            rates[tier] = correct / len(got) if got else 0.0
            cost += sum(s.cost for s in got)
            solve.append(
                {
                    "tier": tier,
                    "model": got[0].model if got else "",
                    "samples": len(got),
                    "correct": correct,
                    "answers": [s.answer for s in got],
                    "verdicts": [s.correct for s in got],
                    "truncated": sum(s.finish == "truncated" for s in got),
                    "no_answer": sum(s.finish in ("no_answer", "refusal") for s in got),
                    "texts": [s.text for s in got] if self.config.keep_texts else [],
                    "prompt_tokens": sum(s.pt for s in got),
                    "completion_tokens": sum(s.ct for s in got),
                    "cost": sum(s.cost for s in got),
                }
            )
        record["solve"], record["pass_rates"] = solve, pass_rate_list(rates)
        models = ",".join(dict.fromkeys(s["model"] for s in solve if s["model"]))
        votes = tuple(f"{t}={r:.3g}" for t, r in rates.items())
        return Keep(record, reason=decided, model=models or None, votes=votes, cost=cost)


def _tokens(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages) // 3 + 8
