"""A scripted tier world for the scoring tests: per item and model, the answer of each sample.

Questions carry a marker `[name]`; `script[name]` says what each model answers, indexed by the
request's `seed` (= the sample index), and what the judge prefers ("truth" or "consensus").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

MARKER = re.compile(r"\[(\w+)\]")


def handler(script: dict[str, dict[str, Any]]):
    def reply(body: dict[str, Any], n: int) -> Reply:
        text = body["messages"][-1]["content"]
        name = MARKER.search(text).group(1)
        item, model, seed = script[name], body["model"], body.get("seed", 0)
        if model == "judge":
            a = re.search(r"Answer A: (.*)", text).group(1).strip()
            truth_is_a = a == item["truth"]
            pick = "A" if truth_is_a == (item["judge"] == "truth") else "B"
            return Reply(json.dumps({"correct": pick, "reason": "scripted"}))
        if text.startswith("Give only the final answer"):
            guesses = item.get("guess", ["0"])
            return Reply(guesses[seed % len(guesses)])
        answers = item[model]
        answer = answers[seed % len(answers)]
        if isinstance(answer, Reply):
            return answer
        return Reply(f"Some work.\nSo the answer is \\boxed{{{answer}}}")

    return reply


def tier_config(
    server: ScriptedServer, models=("m0", "m1", "m2"), judge=True, **extra
) -> LLMConfig:
    base = {
        "base_url": server.base_url,
        "api_key": "k",
        "backoff_s": 0.01,
        "timeout_s": 5.0,
        "max_retries": 1,
    }
    profiles = {f"tier-{i}": {**base, "model": m, **extra.get(m, {})} for i, m in enumerate(models)}
    if judge:
        profiles["judge"] = {**base, "model": "judge"}
    return LLMConfig.from_dict({"profiles": profiles})


def write_items(path: Path, script: dict[str, dict[str, Any]]) -> Path:
    rows = [
        {"question": f"[{name}] What is the value?", "answer": item["truth"]}
        for name, item in script.items()
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def requests_by_item(server: ScriptedServer) -> dict[str, list[tuple[str, int]]]:
    """item -> [(model or "guess", seed)] of the solve / guess / judge requests made."""
    out: dict[str, list[tuple[str, int]]] = {}
    for body in server.requests:
        text = body["messages"][-1]["content"]
        name = MARKER.search(text).group(1)
        kind = "guess" if text.startswith("Give only the final answer") else body["model"]
        out.setdefault(name, []).append((kind, body.get("seed", 0)))
    return out
