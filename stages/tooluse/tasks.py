"""Tasks: chains sampled from the tool graph, each turned by the LLM into a user request with
its gold actions and the entities it needs; plus requests that need no tool.

Each chain's draft is checked here (known tools, the chain's tools all used, new entities that
do not clash with the state); a draft that fails is passed on with its problem, and `verify`
ledgers it, so that every task the pipeline meant to make is accounted for. The new entities of
the usable drafts are merged into the environment's state before verification replays anything.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from pydantic import Field

from rlclimb.pipelines.llm import LLMError
from rlclimb.pipelines.stage import (
    TRANSIENT_DROP_REASONS,
    Drop,
    Record,
    Stage,
    StageConfig,
    StageContext,
)

from .bundle import dumps, loads, persona_entries
from .graph import ToolGraph
from .llm import ask_json, client, prompt, resolve_config
from .models import NoToolDraft, TaskDraft

SAMPLE_CHARS = 3000  # of the state shown with each chain


class TasksConfig(StageConfig):
    role: str = "generator"  # LLM role (or profile); without an llm: section, the embedded SmolLM2
    n_tasks: int = Field(8, ge=1)  # per environment, unless its entry says n_tasks
    no_tool_share: float = Field(0.2, ge=0, le=1)  # of them: requests that need no tool
    max_chain: int = Field(3, ge=1, le=8)  # tools per sampled chain
    write_share: float = Field(0.6, ge=0, le=1)  # chains meant to end in a write tool
    sample_entities: int = Field(3, ge=0)  # per collection, shown with each chain
    max_tokens: int = Field(1500, ge=64)  # per reply, unless the profile sets it


class MakeTasks(Stage):
    name = "tasks"
    version = "1"
    kind = "expand"
    Config = TasksConfig
    cache = True
    concurrency = 4

    def check(self, llm_config: Any) -> None:
        resolve_config(llm_config, self.config.role, self.name)

    def setup(self, ctx: StageContext) -> None:
        client(ctx)

    async def process(self, record: Record, ctx: StageContext) -> list[Record] | Drop:
        c = self.config
        bundle = loads(record["env"])
        n = record.get("n_tasks") or c.n_tasks
        n_none = min(n, round(n * c.no_tool_share)) if c.no_tool_share > 0 else 0
        graph = ToolGraph.from_bundle(bundle)
        rng = random.Random(f"{ctx.seed}:{bundle['name']}")  # str seeds hash the same in every process
        chains = graph.sample_chains(n - n_none, rng, c.max_chain, c.write_share)
        personas = persona_entries(bundle.get("personas") or ["A customer of the service"])
        kinds = {t["name"]: t["kind"] for t in bundle["tools"]}
        jobs = [self._chain_task(ctx, bundle, chain, personas[i % len(personas)], i) for i, chain in enumerate(chains)]
        jobs += [self._no_tool_task(ctx, bundle, personas[(len(chains) + i) % len(personas)], len(chains) + i)
                 for i in range(n_none)]
        results = await asyncio.gather(*jobs, return_exceptions=True)

        state = bundle["state"]
        drafts: list[tuple[dict[str, Any], str, str]] = []  # (task, problem reason, detail)
        for i, res in enumerate(results):
            chain = chains[i] if i < len(chains) else []
            persona = personas[i % len(personas)]["id"]
            task = {"id": f"{bundle['name']}-{i + 1:03d}", "persona": persona, "requires_tools": bool(chain),
                    "instruction": "", "actions": [], "outputs": [],
                    "type": "no-tool" if not chain else ("write" if any(kinds[t] == "write" for t in chain) else "read"),
                    "meta": {"chain": chain}}
            if isinstance(res, BaseException):
                reason = getattr(res, "drop_reason", None)
                if not isinstance(res, LLMError) or reason in TRANSIENT_DROP_REASONS:
                    raise res  # the moment's failure: the environment is retried on resume
                drafts.append((task, reason, f"task draft for chain {chain or '(no tool)'}: {str(res)[:600]}"))
                continue
            task.update(instruction=res.instruction, outputs=[str(o) for o in res.outputs])
            if chain:
                task["actions"] = [a.model_dump() for a in res.actions]
                problem = _check_draft(res, chain, kinds) or _merge(state, res.new_entities)
                if res.new_entities:
                    task["meta"]["new_entities"] = res.new_entities
                if problem:
                    drafts.append((task, *problem))
                    continue
            drafts.append((task, "", ""))
        if not drafts:
            return Drop("no_tasks", f"environment {bundle['name']}: no chain could be sampled from {len(kinds)} tools")
        bundle["state"] = state
        env = dumps(bundle)
        report = {"chains": len(chains), "no_tool": n_none, "graph_edges": graph.edge_count()}
        return [{"env_name": bundle["name"], "env": env, "task": json.dumps(t, ensure_ascii=False),
                 "problem": reason, "problem_detail": detail, "tasks_report": json.dumps(report)}
                for t, reason, detail in drafts]

    async def _chain_task(self, ctx: StageContext, bundle: dict[str, Any], chain: list[str], persona: dict, draw: int) -> TaskDraft:
        tools = {t["name"]: t for t in bundle["tools"]}
        lines = []
        for name in chain:
            t = tools[name]
            args = ", ".join(f"{k} ({v})" for k, v in t["parameters"].items()) or "none"
            returns = f"; returns {', '.join(t['returns'])}" if t.get("returns") else ""
            lines.append(f"- {name} ({t['kind']}): {t['description']} Arguments: {args}{returns}")
        text = prompt("task", description=bundle["description"], policy=bundle.get("policy") or "(none)",
                      chain="\n".join(lines), sample=_sample(bundle["state"], self.config.sample_entities),
                      persona=persona["description"])
        draft, _ = await ask_json(ctx, self.config.role, self.name, text, TaskDraft, self.config.max_tokens, draw)
        return draft

    async def _no_tool_task(self, ctx: StageContext, bundle: dict[str, Any], persona: dict, draw: int) -> NoToolDraft:
        text = prompt("notool", description=bundle["description"], policy=bundle.get("policy") or "(none)",
                      persona=persona["description"])
        draft, _ = await ask_json(ctx, self.config.role, self.name, text, NoToolDraft, self.config.max_tokens, draw)
        return draft


def _sample(state: dict[str, dict[str, Any]], k: int) -> str:
    sample = {name: dict(list(coll.items())[:k]) for name, coll in state.items()}
    text = json.dumps(sample, indent=1, ensure_ascii=False)
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + "\n... (cut)"


def _check_draft(draft: TaskDraft, chain: list[str], kinds: dict[str, str]) -> tuple[str, str] | None:
    names = [a.name for a in draft.actions]
    unknown = [n for n in names if n not in kinds]
    if unknown:
        return "unknown_tool", f"gold actions call {unknown[0]!r}, not a tool of this environment"
    missing = [t for t in chain if t not in names]
    if missing:
        return "off_chain", f"the chain {chain} asks for {missing[0]!r}; the gold actions {names} do not call it"
    return None


def _merge(state: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    """Add a draft's new entities to the state (all or none): an unknown collection, an entity
    that is not an object, or an id already holding something else is a problem."""
    for coll, entities in new.items():
        if coll not in state:
            return "unknown_collection", f"new entities in {coll!r}; the state has {', '.join(state)}"
        for key, entity in entities.items():
            if not isinstance(entity, dict):
                return "bad_entity", f"{coll}.{key} is a {type(entity).__name__}, not an object"
            if key in state[coll] and state[coll][key] != entity:
                return "entity_conflict", f"{coll}.{key} already exists with other values"
    for coll, entities in new.items():
        state[coll].update(entities)
    return None
