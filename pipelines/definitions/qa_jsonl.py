"""qa-jsonl: QA dumps (JSONL / JSONL.gz with question and answer fields) -> a clean QA dataset."""

from __future__ import annotations

from typing import Any

from rlclimb.stages.dedup_exact import ExactDedup
from rlclimb.stages.qa_import import ImportQA
from rlclimb.stages.text import NormalizeText, ValidateQA

from ..engine import Pipeline
from ..readers import JsonlReader
from . import configure

STAGES = [ImportQA, NormalizeText, ValidateQA, ExactDedup]


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    stages = configure(STAGES, sections)
    return Pipeline(
        name="qa-jsonl",
        reader=JsonlReader(inputs),
        stages=stages,
        config={s.name: s.config.model_dump(mode="json") for s in stages},
        shard_size=shard_size,
    )
