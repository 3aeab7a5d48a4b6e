"""Graders of a tool-use episode, and how their verdicts combine into the task reward.

- `state_match`: the episode's final-state hash equals the gold replay's (`task.final_hash`).
- `outputs_present`: every expected output string appears in the agent's replies to the user
  (case-insensitive, thousands separators ignored, as tau-bench checks them).
- `pattern_issues`: tool-use habits: a repeated identical call, arguments that do not match the
  tool's JSON schema, unknown tools, independent read calls made one per turn where one turn could
  have issued them together, tool calls on a task that needs none (`requires_tools: false`).
- `judge_subtasks` (optional, an LLM): splits the task into subtasks and grades each from the
  transcript; the score is the fraction done.

`combine` (GraderConfig.combine; the combined-reward modes of DESIGN.md "Trainer"):
- gated: the hard checks (state, outputs) gate everything: any failed one gives 0; past the gate
  the reward is 1 minus a small pattern penalty (patterns and the judge refine, never rescue).
- lexicographic: state first, then outputs, then patterns, then the judge: each lower component
  acts only when all higher ones are perfect, encoded in one number by decreasing weights
  (1/2, 1/4, ...) so a group whose members tie on a higher key is ordered by the next one.
- weighted: the configured weights' sum over the enabled components.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .format import GraderConfig, ToolTask

PATTERN_PENALTY = 0.25  # per issue, on the pattern score (1 = no issue)


@dataclass
class Verdict:
    task: float  # the combined task reward in [0, 1]
    components: dict[str, float] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str:
        parts = [f"{k}={v:.2f}" for k, v in self.components.items()]
        return " ".join(parts) + ("; " + "; ".join(self.issues[:6]) if self.issues else "")


def state_match(final_hash: str | None, task: ToolTask) -> float:
    return 1.0 if final_hash is not None and final_hash == task.final_hash else 0.0


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace(",", ""))


def outputs_present(replies: Sequence[str], expected: Sequence[str]) -> tuple[float, list[str]]:
    """The fraction of expected outputs found in the replies, and the missing ones."""
    if not expected:
        return 1.0, []
    said = _norm("\n".join(replies))
    missing = [o for o in expected if _norm(o) not in said]
    return 1.0 - len(missing) / len(expected), missing


def _schema_errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    from jsonschema import Draft202012Validator

    params = schema.get("function", schema).get("parameters") or {"type": "object"}
    validator = Draft202012Validator(params)
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
        for e in validator.iter_errors(arguments)
    ]


def _values(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in _values(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in _values(x)]
    return [str(obj)] if obj not in (None, "", True, False) else []


def pattern_issues(
    calls: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], task: ToolTask | None = None
) -> list[str]:
    """`calls`: [{"step", "name", "arguments", "observation"}] in order (episode.Trajectory's
    tool_calls); `tools`: the runtime's [{"name", "kind", "schema"}]."""
    by_name = {t["name"]: t for t in tools}
    issues: list[str] = []
    if task is not None and not task.requires_tools and calls:
        issues.append(f"{len(calls)} tool call(s) on a task that needs none")
    seen: set[str] = set()
    for c in calls:
        key = json.dumps([c["name"], c.get("arguments", {})], sort_keys=True)
        if key in seen:
            issues.append(f"repeated identical call {c['name']}")
        seen.add(key)
        tool = by_name.get(c["name"])
        if tool is None:
            issues.append(f"unknown tool {c['name']!r}")
            continue
        errors = _schema_errors(tool["schema"], c.get("arguments", {}))
        if errors:
            issues.append(f"bad arguments for {c['name']}: {errors[0]}")
    # Read calls in consecutive turns, one per turn, where the later one uses nothing the earlier
    # returned: one turn could have made both calls (parallel calls).
    steps: dict[int, list[dict[str, Any]]] = {}
    for c in calls:
        steps.setdefault(c.get("step", 0), []).append(c)
    order = sorted(steps)
    for a, b in zip(order, order[1:], strict=False):
        if b != a + 1 or len(steps[a]) != 1 or len(steps[b]) != 1:
            continue
        first, second = steps[a][0], steps[b][0]
        if any(by_name.get(c["name"], {}).get("kind") != "read" for c in (first, second)):
            continue
        observed = str(first.get("observation", ""))
        if not any(v in observed for v in _values(second.get("arguments", {}))):
            issues.append(
                f"{first['name']} and {second['name']} are independent reads made in separate "
                "turns (could be parallel)"
            )
    return issues


def pattern_score(issues: Sequence[str]) -> float:
    return max(0.0, 1.0 - PATTERN_PENALTY * len(issues))


class Subtask(BaseModel):
    subtask: str
    done: bool
    evidence: str = ""


class JudgeVerdict(BaseModel):
    subtasks: list[Subtask]


JUDGE_PROMPT = """You grade an AI customer-service agent. Split the user's request into its
subtasks (each a thing the agent had to find out, do or tell the user), then decide from the
transcript whether each subtask was done correctly and within the policy.

Policy:
{policy}

User request:
{instruction}

Transcript (assistant turns, tool calls and tool results):
{transcript}

Reply with JSON: {{"subtasks": [{{"subtask": "...", "done": true|false, "evidence": "..."}}]}}"""


async def judge_subtasks(
    llm: Any,
    task: ToolTask,
    transcript: str,
    *,
    policy: str = "",
    role: str = "judge",
    seed: int | None = 0,
) -> tuple[float, list[str]]:
    """The fraction of subtasks the LLM judge finds done, and the undone ones."""
    prompt = JUDGE_PROMPT.format(
        policy=policy or "(none)", instruction=task.instruction, transcript=transcript[-24000:]
    )
    reply, _ = await llm.structured(
        role, [{"role": "user", "content": prompt}], JudgeVerdict, tag="tool_judge", seed=seed
    )
    if not reply.subtasks:
        return 0.0, ["judge found no subtasks"]
    undone = [s.subtask for s in reply.subtasks if not s.done]
    return 1.0 - len(undone) / len(reply.subtasks), undone


def combine(components: dict[str, float], config: GraderConfig) -> float:
    """One task reward from the enabled components (absent ones are skipped)."""
    keys = [k for k in ("state", "outputs", "patterns", "judge") if k in components]
    if not keys:
        return 0.0
    if config.combine == "weighted":
        total = sum(config.weights.get(k, 0.0) for k in keys) or 1.0
        return sum(config.weights.get(k, 0.0) * components[k] for k in keys) / total
    if config.combine == "gated":
        hard = [k for k in ("state", "outputs") if k in components]
        if any(components[k] < 1.0 for k in hard):
            return 0.0
        soft = [components[k] for k in ("patterns", "judge") if k in components]
        if not hard:  # nothing gates: the soft checks are the reward
            return sum(soft) / len(soft)
        return 1.0 - 0.1 * sum(1.0 - s for s in soft) / max(len(soft), 1)
    # lexicographic: key i weighs 2^-(i+1) and counts only while every higher key is perfect;
    # the last key gets the remaining weight so a perfect episode scores 1.
    reward, weight = 0.0, 1.0
    for i, k in enumerate(keys):
        w = weight / 2 if i < len(keys) - 1 else weight
        reward += w * components[k]
        if components[k] < 1.0:
            break
        weight -= w
    return reward


def grade_episode(
    task: ToolTask,
    *,
    final_hash: str | None,
    replies: Sequence[str],
    calls: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
    config: GraderConfig,
    judge_score: tuple[float, list[str]] | None = None,
) -> Verdict:
    components: dict[str, float] = {}
    issues: list[str] = []
    if config.state:
        components["state"] = state_match(final_hash, task)
        if components["state"] < 1.0:
            issues.append("final state differs from the gold replay")
    if config.outputs and task.outputs:
        components["outputs"], missing = outputs_present(replies, task.outputs)
        issues += [f"missing output {m!r}" for m in missing]
    if config.patterns:
        found = pattern_issues(calls, tools, task)
        components["patterns"] = pattern_score(found)
        issues += found
    if config.judge and judge_score is not None:
        components["judge"], undone = judge_score
        issues += [f"judge: not done: {u}" for u in undone]
    return Verdict(combine(components, config), components, issues)
