"""The synthesis stages' LLM: the run's `generator` role, else the embedded SmolLM2 in-process
(as the scoring stages do without an `llm:` section), and the prompt files."""

from __future__ import annotations

from importlib import resources
from string import Template
from typing import Any

from rlclimb.pipelines.llm import LLMClient, LLMConfig
from rlclimb.pipelines.stage import ConfigError, StageContext

EMBEDDED_LLM: dict[str, Any] = {
    "profiles": {
        "generator": {
            "backend": "local",
            "model": "smollm2",
            "concurrency": 4,
            "params": {"temperature": 0.2, "top_p": 0.95, "max_tokens": 1024},
        }
    }
}


def prompt(name: str, **values: Any) -> str:
    """A prompt file from stages/data/prompts/ with its `$names` filled in."""
    text = (resources.files("rlclimb.stages") / "data" / "prompts" / f"tool_env_{name}.txt").read_text()
    return Template(text).substitute({k: str(v) for k, v in values.items()})


def resolve_config(llm_config: LLMConfig | None, role: str, stage: str) -> LLMConfig:
    """The config a stage calls `role` through: the run's, or the embedded one; fails before the
    run when the role is unknown or the local model cannot load."""
    from rlclimb.stages.score.common import check_local

    config = llm_config if llm_config is not None else LLMConfig.from_dict(EMBEDDED_LLM)
    try:
        profile = config.resolve(role)
    except ValueError as e:
        raise ConfigError(f"stage {stage}: {e}; name a profile or role '{role}' in the llm: section "
                          f"or set {stage}.role") from None
    if profile.backend == "local":
        check_local(profile, stage)
    return config


def client(ctx: StageContext) -> LLMClient:
    """The run's client; a run without an `llm:` section gets the embedded one on the shared
    context (its tokens show in the funnel, later stages reuse it)."""
    if ctx.llm is None:
        cache = ctx.run_dir / "cache" / "llm.sqlite" if ctx.run_dir is not None else None
        ctx.llm = LLMClient(LLMConfig.from_dict(EMBEDDED_LLM), cache_path=cache)
    return ctx.llm


def params(ctx: StageContext, role: str, max_tokens: int) -> dict[str, Any]:
    """Request params: the stage's max_tokens unless the role's profile sets its own."""
    profile = client(ctx).config.resolve(role)
    return {} if "max_tokens" in profile.params else {"max_tokens": max_tokens}


async def ask_json(ctx: StageContext, role: str, tag: str, text: str, model, max_tokens: int, draw: int = 0):
    """One structured call (the client repairs an invalid reply once, then raises with a drop
    reason). `draw` varies the sampling seed: the same prompt asked for several tasks is several
    requests (the client answers identical requests once)."""
    return await client(ctx).structured(role, [{"role": "user", "content": text}], model, tag=tag,
                                        seed=ctx.sample_seed * 1000 + draw, **params(ctx, role, max_tokens))
