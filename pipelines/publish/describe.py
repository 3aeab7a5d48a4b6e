"""What a run or mix directory holds, gathered once for the dataset card and the HTML report.

A run (`rlclimb run`: config.json, stats.json, data/, ledger/, reports/) or a mix (`rlclimb mix`:
mix.json, data/, reports/; its sources are runs, described in turn). Everything here is read
from those files; nothing is recomputed, so the card and the report show the numbers of
stats.json and mix.json.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from .mix import MANIFEST, SPLITS


class DescribeError(ValueError):
    """Not a run or mix directory (or an unfinished one); the message says what to run."""


@dataclass
class Description:
    path: Path
    kind: str  # "run" | "mix"
    name: str
    pipeline: str  # the run's pipeline, or "mix"
    config: dict[str, Any]  # config.json, or mix.json
    stats: dict[str, Any]  # stats.json ({} for a mix)
    data_files: dict[str, dict[str, list[str]]]  # config name -> split -> paths relative to `path`
    frame: pl.DataFrame  # every row, with a `split` column (and `config` for several kinds)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)  # "<where>/<stage>" -> report
    sources: list[Description] = field(default_factory=list)  # a mix's source runs

    @property
    def records(self) -> int:
        return self.frame.height

    @property
    def splits(self) -> dict[str, int]:
        counts = dict(self.frame.group_by("split").len().iter_rows()) if self.records else {}
        return {s: int(counts.get(s, 0)) for s in SPLITS if counts.get(s) or s == "train"}

    def funnel(self) -> list[dict[str, Any]]:
        return list(self.stats.get("stages") or [])

    def llm_usage(self) -> list[dict[str, Any]]:
        """Per stage (and per tag, e.g. model tier) with LLM use: requests, tokens, cost."""
        rows = []
        for owner in [self, *self.sources]:
            for s in owner.funnel():
                llm = s.get("llm") or {}
                if not llm:
                    continue
                tags = sorted({k.rpartition("/")[0] for k in llm if "/" in k}) or [""]
                for tag in tags:
                    p = f"{tag}/" if tag else ""
                    rows.append({"run": owner.name, "stage": s["name"], "tier": tag or "-",
                                 "requests": int(llm.get(f"{p}requests", 0)),
                                 "prompt_tokens": int(llm.get(f"{p}prompt_tokens", 0)),
                                 "completion_tokens": int(llm.get(f"{p}completion_tokens", 0)),
                                 "cost": float(llm.get(f"{p}cost", 0.0))})
        return rows

    def models(self) -> Counter:
        """Models that answered (from the records' solve blocks): model -> samples."""
        seen: Counter = Counter()
        if "solve" in self.frame.columns:
            for solves in self.frame["solve"].to_list():
                for s in solves or []:
                    seen[s["model"]] += int(s.get("samples") or 0)
        return seen

    def licenses(self) -> Counter:
        if "source" not in self.frame.columns:
            return Counter()
        docs = self.frame.select(pl.col("source").struct.field("document").alias("document"),
                                 pl.col("source").struct.field("license").alias("license"))
        return Counter((Path(d).name if d else "(none)", lic or "unknown") for d, lic in docs.iter_rows())

    def ledgers(self) -> list[Path]:
        """Drop ledgers: the run's, or a mix's source runs'."""
        if self.kind == "run":
            return sorted((self.path / "ledger").glob("*.parquet"))
        return [p for s in self.sources for p in s.ledgers()]


def read_frame(root: Path, files: dict[str, dict[str, list[str]]]) -> pl.DataFrame:
    parts = []
    for config, splits in files.items():
        for split, paths in splits.items():
            if paths:
                frame = pl.read_parquet([root / p for p in paths])
                parts.append(frame.with_columns(pl.lit(split).alias("split"), pl.lit(config).alias("config")))
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame({"split": [], "config": []})


def reports_of(root: Path, prefix: str) -> dict[str, dict[str, Any]]:
    out = {}
    for p in sorted((root / "reports").glob("*.json")):
        try:
            out[f"{prefix}{p.stem}"] = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
    return out


def describe(path: Path) -> Description:
    path = Path(path)
    if not path.is_dir():
        raise DescribeError(f"{path}: not a directory (expected a run directory from `rlclimb run` or a mix from `rlclimb mix`)")
    if (path / MANIFEST).exists():
        return describe_mix(path)
    if (path / "metrics.jsonl").exists():
        raise DescribeError(f"{path} is a training run (rlclimb train), not a dataset: `rlclimb report {path}` shows it")
    if (path / "config.json").exists():
        return describe_run(path)
    raise DescribeError(f"{path} is not a run or mix directory (no config.json or {MANIFEST}): "
                        "give a directory written by `rlclimb run` or `rlclimb mix`")


def describe_run(path: Path) -> Description:
    config = json.loads((path / "config.json").read_text())
    if not (path / "stats.json").exists():
        raise DescribeError(f"{path}: the run is not complete (no stats.json): re-run the same "
                            "`rlclimb run` command to finish it")
    stats = json.loads((path / "stats.json").read_text())
    train = sorted(str(p.relative_to(path)) for p in (path / "data").glob("train-*.parquet"))
    files = {"default": {"train": train}}
    return Description(path, "run", path.name, config.get("pipeline", "?"), config, stats, files,
                       read_frame(path, files), reports_of(path, ""))


def upstream(run: Description) -> list[Description]:
    """The runs whose data a run read (e.g. the curation run under a stem-score run), nearest first:
    their funnels belong to the dataset's story too."""
    found = []
    for file in (run.config.get("inputs") or {}).get("files") or []:
        parent = Path(file).parent
        root = parent.parent if parent.name == "data" else None
        if root is not None and (root / "config.json").exists() and (root / "stats.json").exists():
            if all(root.resolve() != f.path.resolve() for f in found):
                source = describe_run(root)
                source.name = f"{run.name} <- {root.name}"
                found += [source, *upstream(source)]
    return found


def describe_mix(path: Path) -> Description:
    manifest = json.loads((path / MANIFEST).read_text())
    files = manifest["files"]
    if len(files) == 1:
        files = {"default": next(iter(files.values()))}
    sources = []
    for s in manifest["sources"]:
        run = Path(s["run"]) if s.get("run") else None
        if run is not None and run.is_dir() and (run / "stats.json").exists() and run.resolve() != path.resolve():
            source = describe(run)
            source.name = s["name"]
            sources.append(source)
            sources += [u for u in upstream(source) if all(u.path.resolve() != x.path.resolve() for x in sources)]
    desc = Description(path, "mix", manifest["name"], "mix", manifest, {}, files, read_frame(path, files),
                       reports_of(path, "mix/"), sources)
    for source in sources:
        desc.reports.update({f"{source.name}/{k}": v for k, v in source.reports.items()})
    return desc
