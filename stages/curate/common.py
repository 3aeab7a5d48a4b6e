"""What the curation stages share: the embedded-or-LLM switch, flags that drop or tag, math masking.

Every curation stage has an embedded (rules, no model) implementation and an LLM one; the stage's
`method` setting picks. The embedded path is a plain sync stage (cheap, runs in worker processes);
the LLM path is async and row-cached (paid calls run concurrently and are never repeated).
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from rlclimb.pipelines.stage import (
    ConfigError,
    Drop,
    Keep,
    Record,
    Stage,
    StageConfig,
    StageContext,
)

M = TypeVar("M", bound=BaseModel)
Action = Literal["drop", "tag"]


class CurateConfig(StageConfig):
    method: Literal["embedded", "llm"] = "embedded"
    role: str = "judge"  # LLM role (or profile) used when method = llm


class CurateStage(Stage):
    """A map stage with `embedded(record, ctx)` (sync) and `async llm(record, ctx)`."""

    kind = "map"
    Config = CurateConfig
    concurrency = 32

    @property
    def is_async(self) -> bool:  # the engine awaits process() only on the LLM path
        return self.config.method == "llm"

    @property
    def cache(self) -> bool:  # type: ignore[override]  # paid calls are cached, rules recompute
        return self.config.method == "llm"

    def check(self, llm_config: Any) -> None:
        if self.config.method != "llm":
            return
        if llm_config is None:
            raise ConfigError(
                f"stage {self.name}: method 'llm' needs an `llm:` section in the run config "
                f"(profiles and a role {self.config.role!r}); or set {self.name}.method=embedded"
            )
        try:
            llm_config.resolve(self.config.role)  # an unknown role fails here, not per record
        except ValueError as e:
            raise ConfigError(f"stage {self.name}: {e}") from None

    def process(self, record: Record, ctx: StageContext) -> Any:
        if self.config.method == "llm":
            return self.llm(record, ctx)  # a coroutine: the engine awaits it
        return self.embedded(record, ctx)

    def embedded(self, record: Record, ctx: StageContext) -> Any:
        raise NotImplementedError

    async def llm(self, record: Record, ctx: StageContext) -> Any:
        raise NotImplementedError

    async def ask(self, ctx: StageContext, prompt: str, model: type[M]) -> tuple[M, Any]:
        """One structured call; errors raise with a `drop_reason` that the engine ledgers."""
        return await ctx.llm.structured(
            self.config.role, [{"role": "user", "content": prompt}], model, tag=self.name,
            seed=ctx.sample_seed,
        )


def kept(record: Record, completion: Any, reason: str | None = None) -> Keep:
    """A record kept by an LLM decision: the model and cost go to its provenance."""
    return Keep(record, reason=reason, model=completion.model, cost=completion.cost)


def add_tag(record: Record, tag: str) -> Record:
    tags = list(record.get("tags") or [])
    if tag not in tags:
        tags.append(tag)
    record["tags"] = tags
    return record


def flag(record: Record, action: Action, reason: str, detail: str = "") -> Record | Drop:
    """A flagged record is dropped (ledgered with the reason) or kept with the reason as a tag."""
    if action == "drop":
        return Drop(reason, detail)
    return add_tag(record, reason)


# ---- text helpers ------------------------------------------------------------------------------

_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)


def math_spans(text: str) -> list[str]:
    return [m.group(0).strip("$").removeprefix("\\(").removesuffix("\\)").removeprefix("\\[").removesuffix("\\]")
            for m in _MATH.finditer(text)]


def mask_math(text: str, placeholder: str = " MATH ") -> str:
    """Text with its LaTeX math spans replaced: numbers in formulas are not phone numbers."""
    return _MATH.sub(placeholder, text)


def sentences(text: str) -> list[str]:
    masked = mask_math(text, " MATH ")
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", masked) if s.strip()]


def question_stem(record: Record) -> str:
    """The question without its multiple-choice options (they legitimately contain the answer)."""
    from .qtype import split_options

    stem, options = split_options(record.get("question") or "")
    return stem if options else record.get("question") or ""
