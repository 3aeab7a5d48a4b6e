"""qa-jsonl: QA dumps (JSONL / JSONL.gz with question and answer fields) -> a clean QA dataset."""

from __future__ import annotations

from typing import Any

from rlclimb.stages.decontam import Decontam
from rlclimb.stages.dedup_exact import ExactDedup
from rlclimb.stages.dedup_minhash import MinHashDedup
from rlclimb.stages.dedup_vector import VectorDedup
from rlclimb.stages.qa_import import ImportQA
from rlclimb.stages.text import NormalizeText, ValidateQA

from ..engine import Pipeline
from ..readers import JsonlReader
from . import ConfigError, configure

STAGES = [ImportQA, NormalizeText, ValidateQA, ExactDedup, MinHashDedup, VectorDedup, Decontam]


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    sections = dict(sections)
    # Vector dedup loads a model (~10 s) and embeds ~100 records/s on CPU: opt in with
    # --set dedup_vector.enabled=true. Decontam runs once benchmarks are given.
    sections["dedup_vector"] = {"enabled": False, **(sections.get("dedup_vector") or {})}
    curate = sections.pop("curate", False)  # opt-in (`--set curate=true`): append the stem-curate stages
    extra: list = []
    if curate is not False:
        from .stem_curate import curation_stages, split_sections

        if curate is not True:
            raise ConfigError(f"config curate: expected true or false, got {curate!r}")
        sections, curate_sections = split_sections(sections)
        extra = curation_stages(curate_sections)
    stages = [s for s in configure(STAGES, sections) if getattr(s, "active", True)] + extra
    return Pipeline(
        name="qa-jsonl",
        reader=JsonlReader(inputs),
        stages=stages,
        config={s.name: getattr(s, "inner", s).config.model_dump(mode="json") for s in stages},
        shard_size=shard_size,
    )
