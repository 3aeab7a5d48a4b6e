"""stem-score: QA items -> items with per-tier pass rates, a difficulty bin and tags.

Follows curation: input is a QA dataset as Parquet (e.g. a stem-curate run's `data/` directory) or
JSONL of QA items (imported first, like qa-jsonl's `import` stage).
Stages: solve (k samples per model tier, early exit, budget) -> difficulty (bins) -> grade (blind
grading of low-pass-rate items by a judge) -> guess (direct-answer guessability).
Tiers come from the `llm:` section (roles/profiles tier-0 .. tier-N, weakest first); without one,
tier-0 is the embedded SmolLM2 (CPU, no server) and grading is off (no judge).
`--set solve.dry_run=true` prints the cost estimate and exits.
"""

from __future__ import annotations

from typing import Any

from rlclimb.stages.qa.importer import ImportQA
from rlclimb.stages.score.difficulty import DifficultyStage
from rlclimb.stages.score.grade import BlindGradeStage
from rlclimb.stages.score.guess import GuessStage
from rlclimb.stages.score.solve import SolveStage

from ..engine import Pipeline
from ..readers import InputError, JsonlReader, ParquetReader
from . import configure

SCORE_STAGES = [SolveStage, DifficultyStage, BlindGradeStage, GuessStage]


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    sections = {k: dict(v or {}) for k, v in sections.items()}
    tiers = sections.get("solve", {}).get("tiers")
    if tiers and "role" not in sections.get("guess", {}):  # guess with the strongest listed tier
        sections.setdefault("guess", {})["role"] = tiers[-1]
    parquet = [p for p in inputs if str(p).endswith(".parquet") or _is_parquet_dir(p)]
    if parquet and len(parquet) != len(inputs):
        raise InputError("stem-score reads either Parquet QA datasets or JSONL files, not both")
    if parquet:
        reader, classes = ParquetReader(inputs), SCORE_STAGES
    else:
        reader, classes = JsonlReader(inputs), [ImportQA, *SCORE_STAGES]
    stages = configure(classes, sections)
    solve = next(s for s in stages if isinstance(s, SolveStage))
    solve.expected_items = reader.estimate_total()
    solve.companions = [s for s in stages if isinstance(s, GuessStage)]
    return Pipeline(
        name="stem-score",
        reader=reader,
        stages=stages,
        shard_size=shard_size,
    )


def _is_parquet_dir(path: str) -> bool:
    from pathlib import Path

    p = Path(path)
    return p.is_dir() and any(p.rglob("*.parquet")) and not any(p.rglob("*.jsonl*"))
