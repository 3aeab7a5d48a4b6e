"""Bootstrap: a plain-English service description -> a working environment bundle.

    design (entities, tools; JSON) -> implement (tools.py + seed state + example arguments)
      -> critique-and-revise rounds -> smoke test every tool in the sandbox
      -> repair rounds fed the failures -> tools that still fail are cut out

Every LLM reply is parsed and checked; one that cannot be used is asked again once with the
reason, then ledgered (`llm_invalid_output`, `invalid_implementation`). The stage is row-cached
and every call is in the LLM client's cache: a killed run repeats no call.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import Field

from rlclimb.pipelines.llm import StructuredOutputError
from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from . import code_reply
from .bundle import dumps
from .code_reply import Implementation, ReplyError
from .llm import ask_json, client, params, prompt, resolve_config
from .models import Critique, EnvDesign
from .smoke import smoke_test


class BootstrapConfig(StageConfig):
    role: str = "generator"  # LLM role (or profile); without an llm: section, the embedded SmolLM2
    min_tools: int = Field(4, ge=2)  # fewest tools asked of the design
    max_tools: int = Field(10, ge=2)  # most tools asked of the design
    seed_size: int = Field(3, ge=1)  # seed entities per collection, asked of the implementation
    critique_rounds: int = Field(1, ge=0, le=5)  # critique -> revise rounds before the smoke test
    repair_rounds: int = Field(2, ge=0, le=5)  # smoke-test failures fed back for a fix
    min_working_tools: int = Field(2, ge=1)  # fewer tools passing: the environment is dropped
    max_tokens: int = Field(3000, ge=64)  # per reply, unless the profile sets it
    backend: str | None = None  # sandbox for the smoke tests: bwrap, docker, process (default: the runtime's)
    call_timeout_s: float = Field(10.0, gt=0)  # a smoke-test call running longer is stopped (a failure)


class BootstrapEnv(Stage):
    name = "bootstrap"
    version = "1"
    kind = "map"
    Config = BootstrapConfig
    cache = True
    concurrency = 4

    def check(self, llm_config: Any) -> None:
        self._llm_config = resolve_config(llm_config, self.config.role, self.name)
        if llm_config is None:
            self.note = "no llm config: the embedded SmolLM2 writes the environments (slow, weak)"

    def setup(self, ctx: StageContext) -> None:
        client(ctx)

    # ---- LLM calls ----------------------------------------------------------------------------
    async def _json(self, ctx: StageContext, text: str, model):
        return await ask_json(ctx, self.config.role, self.name, text, model, self.config.max_tokens)

    async def _code(self, ctx: StageContext, text: str, data_required: bool, draw: int = 0) -> Implementation:
        """A code reply, asked again once with the reason when it cannot be used. `draw` varies
        the seed per round: a round whose prompt equals the last one's is a new sample, not the
        cached reply again."""
        llm = client(ctx)
        seed = ctx.sample_seed * 1000 + draw
        messages = [{"role": "user", "content": text}]
        first = await llm.complete(self.config.role, messages, tag=self.name, seed=seed, **params(ctx, self.config.role, self.config.max_tokens))
        try:
            return code_reply.parse_implementation(first.text, data_required)
        except ReplyError as e:
            why = str(e)
        again = messages + [
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": f"That reply cannot be used: {why}. Reply again, complete, in the fenced blocks asked for."},
        ]
        second = await llm.complete(self.config.role, again, tag=self.name, seed=seed, **params(ctx, self.config.role, self.config.max_tokens))
        return code_reply.parse_implementation(second.text, data_required)

    # ---- the stage ---------------------------------------------------------------------------
    async def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        c = self.config
        personas = "\n".join(f"- {p}" for p in record.get("personas") or []) or "- (invent two or three)"
        design, _ = await self._json(ctx, prompt("design", description=record["description"], personas=personas,
                                                  min_tools=c.min_tools, max_tools=c.max_tools), EnvDesign)
        design_text = json.dumps(design.model_dump(), indent=1)
        base = {"description": record["description"], "design": design_text}
        try:
            impl = await self._code(ctx, prompt("implement", seed_size=c.seed_size, **base), data_required=True)
        except ReplyError as e:
            return Drop("invalid_implementation", f"environment {record['name']}: {e}")

        report: dict[str, Any] = {"critique": [], "repairs": [], "removed": {}}
        for round_ in range(c.critique_rounds):
            try:
                critique, _ = await self._json(ctx, prompt("critique", source=impl.source, data=_data(impl), **base), Critique)
            except StructuredOutputError as e:  # no usable critique: the smoke test still checks the code
                report["critique"].append({"round": round_ + 1, "verdict": "unusable", "issues": [str(e)[:300]]})
                break
            report["critique"].append({"round": round_ + 1, "verdict": critique.verdict, "issues": critique.issues})
            if critique.verdict == "ok" or not critique.issues:
                break
            issues = "\n".join(f"- {x}" for x in critique.issues)
            try:
                impl = await self._code(ctx, prompt("revise", source=impl.source, data=_data(impl), issues=issues, **base),
                                        data_required=True, draw=100 + round_)
            except ReplyError as e:  # the unrevised version goes on to the smoke test
                report["critique"][-1]["revision"] = f"unusable, kept the previous version: {e}"

        bundle = {
            "name": record["name"], "description": record["description"], "policy": design.policy,
            "personas": list(record.get("personas") or []) or design.personas,
            "entities": [e.model_dump() for e in design.entities], "tools": [t.model_dump() for t in design.tools],
        }
        smoke = None
        for attempt in range(c.repair_rounds + 1):
            bundle.update(tools_py=impl.source, state=impl.state, examples=impl.examples)
            smoke = await asyncio.to_thread(smoke_test, bundle, c.backend, c.call_timeout_s)
            if smoke.ok or attempt == c.repair_rounds:
                break
            failures = {"(module)": smoke.load_error} if smoke.load_error else smoke.failures
            report["repairs"].append({"round": attempt + 1, "failures": failures})
            text = "\n".join(f"- {name}: {what}" for name, what in failures.items())
            try:
                fixed = await self._code(ctx, prompt("repair", source=impl.source, data=_data(impl), failures=text),
                                         data_required=False, draw=200 + attempt)
            except ReplyError as e:
                report["repairs"][-1]["fix"] = f"unusable: {e}"
                continue
            impl = Implementation(fixed.source, fixed.state or impl.state, fixed.examples or impl.examples)
        if smoke.load_error:
            return Drop("tools_do_not_load", f"environment {record['name']}: after {len(report['repairs'])} repairs: {smoke.load_error[-600:]}")
        for _ in range(len(bundle["tools"]) + 1):  # cut what fails; that may break a tool that used a cut one
            if smoke.ok:
                break
            report["removed"].update(smoke.failures)
            bundle["tools_py"] = code_reply.remove_functions(bundle["tools_py"], set(smoke.failures))
            bundle["tools"] = [t for t in bundle["tools"] if t["name"] not in smoke.failures]
            smoke = await asyncio.to_thread(smoke_test, bundle, c.backend, c.call_timeout_s)
            if smoke.load_error:
                return Drop("tools_do_not_load", f"environment {record['name']}: after cutting failing tools: {smoke.load_error[-600:]}")
        working = [t for t in smoke.listing if t["name"] in smoke.outputs]
        if len(working) < c.min_working_tools:
            failed = "; ".join(f"{k}: {v[:160]}" for k, v in list(report["removed"].items())[:4])
            return Drop("smoke_failed", f"environment {record['name']}: {len(working)} tools pass their smoke test "
                                        f"(need {c.min_working_tools}): {failed}")
        bundle["tools"] = _tool_table(working, bundle["tools"])
        bundle["observed"] = smoke.outputs
        report["tools"] = len(working)
        bundle["synthesis"] = report  # goes into env.yaml (source.synthesis): how the tools came to be
        return {**record, "env": dumps(bundle)}


def _data(impl: Implementation) -> str:
    return json.dumps({"state": impl.state, "examples": impl.examples}, indent=1, ensure_ascii=False)


_SCHEMA_TYPES = {"string", "integer", "number", "boolean"}


def _tool_table(listing: list[dict[str, Any]], designed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools as the code defines them (kind, parameters from the derived schema), with the
    design's declared return fields."""
    by_name = {t["name"]: t for t in designed}
    out = []
    for t in listing:
        fn = t.get("schema", {}).get("function", {})
        props = fn.get("parameters", {}).get("properties", {})
        params = {k: (v.get("type") if v.get("type") in _SCHEMA_TYPES else "string") for k, v in props.items()}
        d = by_name.get(t["name"], {})
        out.append({"name": t["name"], "kind": t["kind"], "description": fn.get("description") or d.get("description", ""),
                    "parameters": params, "returns": d.get("returns", [])})
    return out
