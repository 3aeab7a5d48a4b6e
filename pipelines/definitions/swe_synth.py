"""swe-synth: a github-prs run's environments -> synthetic SWE tasks (injected bugs the tests
catch), exported as swebench.jsonl with `"synthetic": true`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlclimb.stages.swe.synthesize import (
    SynthBake,
    SynthCandidates,
    SynthExport,
    SynthPick,
    SynthStatement,
    SynthValidate,
)

from ..engine import Pipeline
from ..readers import JsonlReader
from ..stage import ConfigError
from . import configure

STAGES = [SynthPick, SynthCandidates, SynthValidate, SynthBake, SynthStatement, SynthExport]


def instances_file(path: str) -> str:
    """A run directory means its swebench.jsonl."""
    p = Path(path)
    if p.is_dir():
        if not (p / "swebench.jsonl").is_file():
            raise ConfigError(f"{p}: no swebench.jsonl: give a finished `rlclimb run github-prs` run "
                              "directory or its swebench.jsonl")
        return str(p / "swebench.jsonl")
    return path


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 1_000) -> Pipeline:
    return Pipeline(
        name="swe-synth",
        reader=JsonlReader([instances_file(i) for i in inputs]),
        stages=configure(STAGES, sections),
        shard_size=min(shard_size, 50),  # a shard is minutes of Docker work: commit often
    )
