"""An environment in the making, as records carry it (a JSON string: states differ in shape from
one environment to the next, which Arrow columns would not hold), and its directory form."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rlclimb.environments.tooluse.format import ToolEnvSpec, ToolTask, load_env, save_env


def dumps(bundle: dict[str, Any]) -> str:
    return json.dumps(bundle, sort_keys=True, ensure_ascii=False)


def loads(text: str) -> dict[str, Any]:
    return json.loads(text)


def persona_entries(personas: list[str]) -> list[dict[str, str]]:
    """env.yaml personas: [{id, description}], ids from the first words (unique)."""
    out, seen = [], set()
    for i, text in enumerate(personas):
        base = re.sub(r"[^a-z0-9]+", "_", " ".join(text.lower().split()[:3])).strip("_") or f"persona_{i + 1}"
        pid, n = base, 2
        while pid in seen:
            pid, n = f"{base}_{n}", n + 1
        seen.add(pid)
        out.append({"id": pid, "description": text})
    return out


def spec_of(bundle: dict[str, Any], tasks: list[ToolTask] | None = None) -> ToolEnvSpec:
    return ToolEnvSpec(
        name=bundle["name"],
        description=bundle["description"],
        policy=bundle.get("policy", ""),
        personas=persona_entries(bundle.get("personas") or []),
        source={"format": "rlclimb-synth", "tools": bundle["tools"], "synthesis": bundle.get("synthesis", {})},
        tasks=list(tasks or []),
    )


def materialize(bundle: dict[str, Any], root: Path, tasks: list[ToolTask] | None = None) -> ToolEnvSpec:
    """Write the bundle as an environment directory and load it back (the runtime's input)."""
    save_env(spec_of(bundle, tasks), root, tools_source=bundle["tools_py"], state=bundle["state"])
    return load_env(root)
