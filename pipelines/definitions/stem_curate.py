"""stem-curate: QA items -> curated, verifiable, typed and topic-labeled QA items.

Input: a QA dataset as Parquet (e.g. a previous run's `data/` directory), or QA dumps as JSONL,
which are imported, normalized and validated first (the qa-jsonl stages).
Stages, cheap rules first and the embedding-bound taxonomy last:
  cleanup -> split_parts -> question_type -> verifiable -> usability -> pii -> evergreen -> convert -> part_context
  -> leakage -> taxonomy
Each stage has `method: embedded` (default, no model) or `method: llm`; with `llm`, conversion runs
`convert.runs` times (3) behind a consensus stage. `<stage>.enabled=false` leaves a stage out.
`qa-jsonl`, `textbook-pdf` and `qa-markdown` append the same stages with `--set curate=true`.
"""

from __future__ import annotations

from typing import Any

from rlclimb.stages.curate.cleanup import CleanupStage
from rlclimb.stages.curate.context import PartContext
from rlclimb.stages.curate.convert import ConvertStage, with_consensus
from rlclimb.stages.curate.evergreen import EvergreenStage
from rlclimb.stages.curate.leakage import LeakageStage
from rlclimb.stages.curate.parts import SplitParts
from rlclimb.stages.curate.pii import PIIStage
from rlclimb.stages.curate.qtype import QuestionTypeStage
from rlclimb.stages.curate.taxonomy import TaxonomyError, TaxonomyStage
from rlclimb.stages.curate.usability import UsabilityStage
from rlclimb.stages.curate.verifiable import VerifiableStage

from ..engine import Pipeline
from ..readers import InputError, ParquetReader
from ..stage import Stage
from . import ConfigError, configure

CURATE_STAGES = [CleanupStage, SplitParts, QuestionTypeStage, VerifiableStage, UsabilityStage, PIIStage, EvergreenStage, ConvertStage,
                 PartContext, LeakageStage, TaxonomyStage]
CURATE_NAMES = {cls.name for cls in CURATE_STAGES}


def split_sections(sections: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(other stages' sections, curation stages' sections)."""
    other = {k: v for k, v in sections.items() if k not in CURATE_NAMES}
    return other, {k: v for k, v in sections.items() if k in CURATE_NAMES}


def curation_stages(sections: dict[str, Any]) -> list[Stage]:
    """The configured curation stages in order, disabled ones left out, conversion behind consensus."""
    stages = configure(CURATE_STAGES, sections)
    for st in stages:
        if isinstance(st, TaxonomyStage):
            try:
                st.fingerprint  # noqa: B018  # reads the taxonomy file: a bad one fails before the run
            except TaxonomyError as e:
                raise ConfigError(str(e)) from None
    return [with_consensus(st) if isinstance(st, ConvertStage) else st for st in stages]


def curate_option(sections: dict[str, Any], before: list[type[Stage]] = ()) -> tuple[dict[str, Any], list[Stage]]:
    """Pop a pipeline's opt-in `curate` flag (`--set curate=true`): (remaining sections, stages to
    append). `before` are extra stage classes that run first when curating (e.g. the document
    pipelines' normalize -> validate -> dedup); their sections are taken out too."""
    sections = dict(sections)
    curate = sections.pop("curate", False)
    if curate is False:
        return sections, []
    if curate is not True:
        raise ConfigError(f"config curate: expected true or false, got {curate!r}")
    sections, curate_sections = split_sections(sections)
    names = {cls.name for cls in before}
    first = configure(list(before), {k: v for k, v in sections.items() if k in names})
    rest = {k: v for k, v in sections.items() if k not in names}
    return rest, first + curation_stages(curate_sections)


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    parquet = [p for p in inputs if str(p).endswith(".parquet") or _is_parquet_dir(p)]
    if sections.get("curate", True) is not True:
        raise ConfigError(f"config curate: stem-curate always curates (got {sections['curate']!r}); `curate` is a qa-jsonl option")
    sections = {k: v for k, v in sections.items() if k != "curate"}
    if not parquet:  # JSONL dumps: qa-jsonl's import, normalize, validate, dedup, then curation
        from .qa_jsonl import build as qa_jsonl

        pipeline = qa_jsonl(inputs, {**sections, "curate": True}, shard_size)
        pipeline.name = "stem-curate"
        return pipeline
    if len(parquet) != len(inputs):
        raise InputError("stem-curate reads either Parquet QA datasets or JSONL dumps, not both in one run")
    other, curate = split_sections(sections)
    if other:
        raise ConfigError(f"unknown stage section(s) {sorted(other)}; this pipeline's stages: {sorted(CURATE_NAMES)}")
    stages = curation_stages(curate)
    return Pipeline(
        name="stem-curate",
        reader=ParquetReader(inputs),
        stages=stages,
        shard_size=shard_size,
    )


def _is_parquet_dir(path: str) -> bool:
    from pathlib import Path

    p = Path(path)
    return p.is_dir() and any(p.rglob("*.parquet")) and not any(p.rglob("*.jsonl*"))
