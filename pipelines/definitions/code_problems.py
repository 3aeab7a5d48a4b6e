"""code-problems: coding problems (JSONL: statement, tests, reference solutions, limits) ->
problems verified in a sandbox (competitive-coding style)."""

from __future__ import annotations

from typing import Any

from rlclimb.stages.code.importer import ImportCode
from rlclimb.stages.code.verify import VerifyCode
from rlclimb.stages.dedup.exact import ExactDedup

from ..engine import Pipeline
from ..readers import JsonlReader
from . import configure

STAGES = [ImportCode, ExactDedup, VerifyCode]


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    sections = dict(sections)
    # Duplicates are the same statement (whitespace and case aside); no LaTeX canonicalization.
    sections["dedup_exact"] = {
        "field": "statement",
        "latex": False,
        **(sections.get("dedup_exact") or {}),
    }
    stages = configure(STAGES, sections)
    return Pipeline(
        name="code-problems",
        reader=JsonlReader(inputs),
        stages=stages,
        shard_size=shard_size,
    )
