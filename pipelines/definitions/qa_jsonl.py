"""qa-jsonl: QA dumps (JSONL / JSONL.gz with question and answer fields) -> a clean QA dataset."""

from __future__ import annotations

from typing import Any

from rlclimb.stages.dedup.decontam import Decontam
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.dedup.vector import VectorDedup
from rlclimb.stages.qa.importer import ImportQA
from rlclimb.stages.text import NormalizeText, ValidateQA

from ..engine import Pipeline
from ..readers import JsonlReader
from . import configure

STAGES = [ImportQA, NormalizeText, ValidateQA, ExactDedup, MinHashDedup, VectorDedup, Decontam]


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    # Vector dedup is opt-in (--set dedup_vector.enabled=true); decontam runs once benchmarks are given.
    from .stem_curate import curate_option

    sections, extra = curate_option(sections)  # opt-in (`--set curate=true`): the stem-curate stages
    stages = configure(STAGES, sections) + extra
    return Pipeline(
        name="qa-jsonl",
        reader=JsonlReader(inputs),
        stages=stages,
        shard_size=shard_size,
    )
