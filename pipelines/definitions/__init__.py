"""Pipeline definitions: one short module per source kind, registered by CLI name.

A definition lists its stage classes; the run config has one section per stage name
(`stages: {import: {question_field: problem}}` in YAML, or `--set import.question_field=problem`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..engine import Pipeline
from ..stage import ConfigError, Stage


def configure(stage_classes: list[type[Stage]], sections: dict[str, Any]) -> list[Stage]:
    """Instantiate stages from per-stage config sections, naming any unknown or invalid key.

    Every section may say `enabled: true|false` (`--set <stage>.enabled=false`): disabled stages,
    and stages that find nothing to do (`active` false), are left out of the pipeline."""
    known = {cls.name: cls for cls in stage_classes}
    unknown = set(sections) - set(known)
    if unknown:
        raise ConfigError(f"unknown stage section(s) {sorted(unknown)}; this pipeline's stages: {sorted(known)}")
    stages = []
    for cls in stage_classes:
        section = dict(sections.get(cls.name) or {})
        enabled = section.pop("enabled", cls.enabled_by_default)
        if not isinstance(enabled, bool):
            raise ConfigError(f"config {cls.name}.enabled: expected true or false, got {enabled!r}")
        if not enabled:
            continue
        try:
            stage = cls(section)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in (cls.name, *err["loc"]))
            raise ConfigError(f"config {where}: {err['msg']}") from None
        if stage.active:
            stages.append(stage)
    return stages


def _lazy(module: str) -> Callable[[list[str], dict[str, Any], int], Pipeline]:
    """The `build` of a definition module, imported on first use (keeps `rlclimb --help` fast)."""

    def build(inputs: list[str], sections: dict[str, Any], shard_size: int) -> Pipeline:
        return importlib.import_module(f"{__name__}.{module}").build(inputs, sections, shard_size)

    return build


PIPELINES: dict[str, Callable[[list[str], dict[str, Any], int], Pipeline]] = {
    name: _lazy(name.replace("-", "_"))
    for name in ("qa-jsonl", "stem-curate", "textbook-pdf", "qa-markdown", "code-problems", "stem-score")
}
