"""Training items for `rlclimb train MIX`: MIX is a curated run directory (its data/*.parquet), a
dataset directory or file (.parquet, .jsonl, .jsonl.gz; a mix directory: its train split), or a mix spec YAML (schemas.MixSpec:
weighted sources, each with an optional polars SQL filter and max_items).

Each row becomes a typed record (QAItem or CodeProblem) and is routed to its environment by
`environments.base.kind_of` (SWE-bench instance rows, e.g. a SWE run's swebench.jsonl, stay rows
for the multi-turn `swe` environment); a tool environment directory (env.yaml + tasks.jsonl), given as MIX
or as a mix source, gives its tasks to the multi-turn `tool` environment, so one mix can hold
several kinds. Mix weights become sampling weights: with `total`, each source
contributes round(total * share) items (repeated if it has fewer); without it, every item is kept
and a source is drawn in proportion to its weight (balance by sample count)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlclimb.pipelines.publish.mix import MixError, read_dataset, select_rows, typed_records
from rlclimb.schemas.io import load_yaml
from rlclimb.schemas.records import MixSource, MixSpec

DataError = MixError  # one error for unreadable mixes, from `rlclimb mix` and `rlclimb train`
# Curation's tag for an answer no rule can compare (a statement, a verdict in words): the math
# environment grades with the rule checker only, so it would score every rollout 0 on such an item.
JUDGED = "needs_judge"


@dataclass
class Item:
    record: Any  # QAItem, CodeProblem, or a tool-use task (environments.tooluse)
    kind: str  # environment name
    weight: float = 1.0  # relative sampling weight

    @property
    def id(self) -> str:
        if isinstance(self.record, dict):  # a SWE-bench instance, kept as its row
            return str(self.record["instance_id"])
        return self.record.id


def is_swe(row: Any) -> bool:
    """A SWE-bench instance row (environments.base.kind_of's rule), for the `swe` environment."""
    return isinstance(row, dict) and "patch" in row and "base_commit" in row


def to_items(rows: list[dict[str, Any]], where: str, skipped: list[str]) -> list[Item]:
    swe = []
    for n, row in enumerate(rows):
        if is_swe(row):
            if row.get("instance_id") and row.get("problem_statement"):
                swe.append(Item(row, "swe"))
            else:
                skipped.append(f"{where}: row {n}: a SWE instance without instance_id or problem_statement")
    rest = [r for r in rows if not is_swe(r)]
    items = []
    for kind, rec in typed_records(rest, where, skipped, "a training item"):
        if kind == "math" and JUDGED in rec.tags:
            skipped.append(f"{where}: item {rec.id}: its answer is a statement only an LLM judge can grade "
                           f"(tag {JUDGED}); the math environment's rule checker cannot, so it is left out")
        else:
            items.append(Item(rec, kind))
    return swe + items


def tool_env_items(path: Path) -> list[Item]:
    """The tasks of a tool environment directory (env.yaml + tasks.jsonl, environments.tooluse),
    each naming its directory, for the `tool` environment (multi-turn, rl/episodes.py)."""
    try:
        from rlclimb.environments.tooluse.format import load_env
    except ImportError as e:
        raise DataError(f"{path}: a tool environment, but environments.tooluse is missing: {e}") from None
    try:
        spec = load_env(path)
    except Exception as e:
        raise DataError(f"tool environment {path}: {str(e).splitlines()[0]}") from None
    return [Item(t.model_copy(update={"env": str(path.resolve())}), "tool") for t in spec.tasks]


def is_tool_env(path: Path) -> bool:
    return path.is_dir() and (path / "env.yaml").is_file()


def load_source(source: MixSource, base: Path, seed: int, skipped: list[str]) -> list[Item]:
    path = Path(source.path).expanduser()
    if not path.is_absolute() and (base / path).exists():
        path = base / path
    if is_tool_env(path):  # a tool environment's tasks (kinds/filters are for datasets)
        items = tool_env_items(path)
        if source.max_items is not None and len(items) > source.max_items:
            items = random.Random(seed).sample(items, source.max_items)
        return items
    rows = select_rows(read_dataset(path, skipped), source, seed)  # the same selection as `rlclimb mix`
    return to_items(rows, str(path), skipped)


def load_mix(spec: MixSpec, base: Path, skipped: list[str]) -> list[Item]:
    parts = [load_source(s, base, spec.seed, skipped) for s in spec.sources]
    total_weight = sum(s.weight for s in spec.sources) or 1.0
    rng = random.Random(spec.seed)
    items: list[Item] = []
    for source, part in zip(spec.sources, parts, strict=True):
        if not part:
            continue
        if spec.total is not None:
            count = round(spec.total * source.weight / total_weight)
            picked = rng.sample(part, count) if count <= len(part) else rng.choices(part, k=count)
            items += [Item(i.record, i.kind) for i in picked]
        else:
            items += [Item(i.record, i.kind, source.weight / len(part)) for i in part]
    return items


def load_items(mix: str | Path, skipped: list[str] | None = None) -> list[Item]:
    """The items of a mix; rows that cannot be read or typed are left out and described in
    `skipped` (file, line or row, reason)."""
    skipped = [] if skipped is None else skipped
    path = Path(mix).expanduser()
    if path.suffix in (".yaml", ".yml"):
        try:
            spec = MixSpec.model_validate(load_yaml(path.read_text()))
        except OSError as e:
            raise DataError(f"cannot read mix spec {path}: {e.strerror}") from None
        except Exception as e:
            raise DataError(f"mix spec {path}: {str(e).splitlines()[0]}") from None
        items = load_mix(spec, path.parent, skipped)
    elif is_tool_env(path):
        items = tool_env_items(path)
    else:
        items = to_items(read_dataset(path, skipped), str(path), skipped)
    if not items:
        raise DataError(f"{mix}: no training items")
    return items


def split_eval(items: list[Item], n: int, seed: int) -> tuple[list[Item], list[Item]]:
    """Hold out n distinct items for evaluation (never trained on, duplicates included)."""
    ids = sorted({i.id for i in items})
    n = min(n, len(ids) // 2)  # keep at least half for training
    held = set(random.Random(seed).sample(ids, n)) if n > 0 else set()
    train = [i for i in items if i.id not in held]
    seen: set[str] = set()
    evals = [i for i in items if i.id in held and not (i.id in seen or seen.add(i.id))]
    return train, sorted(evals, key=lambda i: i.id)
