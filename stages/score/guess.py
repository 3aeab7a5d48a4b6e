"""Guessability: an item answered correctly with no reasoning within `tries` (8) direct-answer
attempts is too easy or guessable (e.g. a yes/no or small-integer answer): tagged (default) or
dropped. Attempts run `parallel` at a time and stop at the first correct one. The model is the
strongest tier unless `role` names another. `--set guess.enabled=false` leaves the stage out.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field

from rlclimb.pipelines.llm import LLMConfig
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
    choices_block,
    ensure_llm,
    find_tiers,
    run_config,
    stated_answer,
)
from .cost import EstimateLine

PROMPT = (
    "Give only the final answer to the question below: no explanation, no working, "
    "just the answer.\n\n{question}\n\nFinal answer:"
)


class GuessConfig(StageConfig):
    role: str | None = None  # None: the strongest tier
    tries: int = Field(8, ge=1)
    parallel: int = Field(4, ge=1)  # attempts per round; stop after a round with a correct one
    temperature: float = 1.0
    max_tokens: int = 32
    prompt: str = PROMPT
    action: Literal["tag", "drop"] = "tag"
    tag: str = "guessable"


class GuessStage(Stage):
    name = "guess"
    version = "1"
    kind = "map"
    Config = GuessConfig
    concurrency = 32

    def __init__(self, config=None, **overrides: Any):
        super().__init__(config, **overrides)
        self.role = self.config.role
        self._model: Any = None

    def check(self, llm_config: Any) -> None:
        config = run_config(llm_config)
        self.role = self.config.role or find_tiers(config, None, self.name)[-1]
        try:
            self._model = config.resolve(self.role)
        except ValueError as e:
            raise ConfigError(f"stage {self.name}: {e}") from None

    def llm_models(self) -> dict[str, Any]:  # the guessing model is part of what a tag means
        return {self.role: self._model} if self._model is not None else {}

    cache = True

    def setup(self, ctx: StageContext) -> None:
        ensure_llm(ctx)

    def cost_lines(self, config: LLMConfig, items: int) -> list[EstimateLine]:
        if self.role is None:
            return []
        prompt = len(self.config.prompt) // 3 + 140
        first = min(self.config.parallel, self.config.tries)
        return [
            EstimateLine(
                f"{self.name}",
                config.resolve(self.role),
                items * first,
                items * self.config.tries,
                prompt,
                self.config.max_tokens,
            )
        ]

    async def process(self, record: Record, ctx: StageContext) -> Any:
        llm = ensure_llm(ctx)
        checker = AnswerChecker(record)
        question = record["question"] + choices_block(record)
        messages = [{"role": "user", "content": self.config.prompt.format(question=question)}]
        c = self.config
        guesses: list[str] = []
        cost, model = 0.0, None
        for start in range(0, c.tries, c.parallel):
            replies = await asyncio.gather(
                *(
                    llm.complete(
                        self.role,
                        messages,
                        tag=self.name,
                        seed=ctx.seed * 1000 + i,
                        temperature=c.temperature,
                        max_tokens=c.max_tokens,
                    )
                    for i in range(start, min(start + c.parallel, c.tries))
                )
            )
            for reply in replies:
                cost, model = cost + reply.cost, reply.model
                guesses.append(_guess(reply.text))
            hit = next((i for i, g in enumerate(guesses) if checker.correct(g)), None)
            if hit is not None:
                reason = f"guessed in {hit + 1} of {c.tries} tries: {guesses[hit]!r}"[:300]
                if c.action == "drop":
                    return Drop("guessable", reason, model=model, cost=cost)
                add_tag(record, c.tag)
                return Keep(record, reason=reason, model=model, cost=cost)
        return Keep(record, reason=f"not guessed in {c.tries} tries", model=model, cost=cost)


def _guess(text: str) -> str:
    """A direct answer: a stated one if any, else the first non-empty line."""
    stated = stated_answer(text)
    if stated:
        return stated
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0].removeprefix("Final answer:").strip() if lines else ""
