"""What the scoring stages share: model tiers, the embedded default, answer checking, budgets.

Tiers are LLM roles or profiles named `tier-0` (weakest) .. `tier-N` (strongest). A run without
an `llm:` section scores with the embedded tier: tier-0 = SmolLM2-135M-Instruct in-process
(`backend: local`), no server needed.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rlclimb.environments.answer_check import check, extract_final_answer
from rlclimb.pipelines.llm import LLMClient, LLMConfig, ModelProfile
from rlclimb.pipelines.stage import ConfigError, Record, StageContext

TIER = re.compile(r"^tier-(\d+)$")
EMBEDDED_K = 4  # samples per tier with the embedded model: it is slow (~60 ms/token on CPU)
EMBEDDED_LLM: dict[str, Any] = {
    "profiles": {
        "tier-0": {
            "backend": "local",
            "model": "smollm2",
            "concurrency": 8,  # rows per generate call
            "params": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 256},
        }
    }
}


def embedded_config() -> LLMConfig:
    return LLMConfig.from_dict(EMBEDDED_LLM)


def run_config(llm_config: LLMConfig | None) -> LLMConfig:
    """The LLM config the scoring stages use: the run's, else the embedded default."""
    return llm_config if llm_config is not None else embedded_config()


def find_tiers(llm_config: LLMConfig, explicit: list[str] | None, stage: str) -> list[str]:
    """Tier roles, weakest first: the explicit list, else every `tier-N` role or profile."""
    if explicit:
        names = list(explicit)
    else:
        found = {n for n in [*llm_config.roles, *llm_config.profiles] if TIER.match(n)}
        names = sorted(found, key=lambda n: int(TIER.match(n).group(1)))  # type: ignore[union-attr]
    if not names:
        raise ConfigError(
            f"stage {stage}: the llm config has no model tiers; add roles or profiles named "
            "tier-0 (weakest) .. tier-N (strongest), e.g. `tier-0: {backend: local, model: "
            "smollm2}`, or set {stage}.tiers; without an `llm:` section the embedded tier is used"
        )
    for name in names:
        try:
            profile = llm_config.resolve(name)
        except ValueError as e:
            raise ConfigError(f"stage {stage}: {e}") from None
        if profile.backend == "local":
            check_local(profile, stage)
    return names


def check_local(profile: ModelProfile, stage: str) -> None:
    """A local model that cannot load would fail every item: say so before the run starts."""
    import importlib.util

    from rlclimb.rl.models import ModelNotFound, resolve

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(
            f"stage {stage}: tier {profile.name} runs {profile.model!r} in-process and needs "
            f"{', '.join(missing)}: pip install 'rlclimb[train]'"
        )
    try:
        resolve(profile.model)
    except ModelNotFound as e:
        raise ConfigError(f"stage {stage}: tier {profile.name}: {e}") from None


def ensure_llm(ctx: StageContext) -> LLMClient:
    """The run's LLM client; a run without an `llm:` section gets the embedded one, set on the
    shared context so that its tokens show in the funnel and later stages use the same client."""
    if ctx.llm is None:
        cache = ctx.run_dir / "cache" / "llm.sqlite" if ctx.run_dir is not None else None
        ctx.llm = LLMClient(embedded_config(), cache_path=cache)
    return ctx.llm


def priced(profile: ModelProfile, prompt_tokens: int, completion_tokens: int) -> float:
    return (
        prompt_tokens * profile.price_input_per_mtok
        + completion_tokens * profile.price_output_per_mtok
    ) / 1e6


def choices_block(record: Record) -> str:
    choices = record.get("choices") or []
    if not choices:
        return ""
    return "\n\nOptions:\n" + "\n".join(f"({chr(65 + i)}) {c}" for i, c in enumerate(choices))


class AnswerChecker:
    """Checks stated answers against one item's ground truth, each distinct answer once."""

    def __init__(self, record: Record):
        self.gold = record.get("answer") or ""
        self.answer_type = record.get("answer_type")
        self.choices = tuple(record.get("choices") or ())
        self._seen: dict[str, bool] = {}

    def correct(self, answer: str | None) -> bool:
        if not answer:
            return False
        if answer not in self._seen:
            verdict = check(self.gold, answer, self.answer_type, choices=self.choices)
            self._seen[answer] = verdict.equivalent is True  # undecided counts as not correct
        return self._seen[answer]

    def agree(self, a: str, b: str) -> bool:
        return a == b or check(a, b, self.answer_type, choices=self.choices).equivalent is True


def stated_answer(text: str) -> str | None:
    return extract_final_answer(text or "")


def majority(answers: list[str], agree) -> tuple[str | None, int]:
    """(the most common answer, its votes), grouping answers that `agree`; None when none."""
    counts = Counter(a for a in answers if a)
    groups: list[tuple[str, int]] = []
    for answer, n in counts.most_common():
        for i, (rep, votes) in enumerate(groups):
            if agree(rep, answer):
                groups[i] = (rep, votes + n)
                break
        else:
            groups.append((answer, n))
    if not groups:
        return None, 0
    return max(groups, key=lambda g: g[1])


def add_tag(record: Record, tag: str) -> None:
    tags = list(record.get("tags") or [])
    if tag not in tags:
        tags.append(tag)
    record["tags"] = tags


class BudgetExceeded(Exception):
    drop_reason = "budget_exceeded"


class Budget:
    """A spending cap. A call reserves its worst case (prompt + max tokens at the tier's price)
    before it starts and settles at its real cost, so calls in flight never overshoot the cap.
    Cached answers count at their original price: the budget is what the run's results cost,
    so a re-run with a higher cap continues where the lower one stopped."""

    def __init__(self, limit_usd: float | None):
        self.limit = limit_usd
        self.spent = 0.0
        self.reserved = 0.0
        self.exhausted = False

    def reserve(self, amount: float) -> None:
        if self.limit is None:
            return
        if self.exhausted or self.spent + self.reserved + amount > self.limit:
            self.exhausted = True  # stop cleanly: no new call starts once one did not fit
            raise BudgetExceeded(
                f"budget ${self.limit:g} reached (spent ${self.spent:.4f}); "
                "raise it to continue: finished samples are not paid again"
            )
        self.reserved += amount

    def settle(self, reserved: float, actual: float) -> None:
        if self.limit is None:
            return
        self.reserved -= reserved
        self.spent += actual


class Breaker:
    """Fails calls to a tier fast once its endpoint looks down: after `failures` transient errors
    in a row (each already retried by the client), calls fail at once with a transient error for
    `cooldown_s`; then calls go through again, and one more failure opens it again. Without it, a
    dead endpoint would make every remaining item wait through the client's whole retry backoff
    before being ledgered."""

    def __init__(self, failures: int, cooldown_s: float):
        self.failures, self.cooldown_s = failures, cooldown_s
        self._streak: dict[str, int] = {}
        self._open_until: dict[str, float] = {}

    def before(self, tier: str) -> None:
        import time

        from rlclimb.pipelines.llm import LLMConnectionError

        if self.failures <= 0:
            return
        until = self._open_until.get(tier, 0.0)
        if until and time.monotonic() < until:
            raise LLMConnectionError(
                f"{tier}: endpoint looks down ({self._streak[tier]} failures in a row); "
                "not called: re-run later to retry (finished samples are cached)"
            )
        if until:  # cooldown over: let this call probe; close again only on success
            self._open_until[tier] = 0.0
            self._streak[tier] = self.failures - 1

    def after(self, tier: str, ok: bool) -> None:
        import time

        if ok:
            self._streak[tier] = 0
            return
        self._streak[tier] = self._streak.get(tier, 0) + 1
        if self.failures > 0 and self._streak[tier] >= self.failures:
            self._open_until[tier] = time.monotonic() + self.cooldown_s
