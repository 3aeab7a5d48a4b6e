"""Write: each environment with its verified tasks as a directory RUN/envs/<name>/ (the format
of environments/tooluse/format.py), written beside and renamed into place, so a killed run never
leaves half an environment; one summary record per environment goes on as the run's data."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rlclimb.environments.tooluse.format import ToolTask
from rlclimb.environments.tooluse.state import canonical_hash
from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from ..dedup.common import write_report
from .bundle import loads, materialize


class WriteConfig(StageConfig):
    subdir: str = "envs"  # under the run directory


class WriteEnvs(Stage):
    name = "write"
    version = "1"
    kind = "global"
    Config = WriteConfig

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        groups: dict[str, list[Record]] = {}
        for r in records:
            groups.setdefault(r["env_name"], []).append(r)
        root = Path(ctx.run_dir or ".") / self.config.subdir
        root.mkdir(parents=True, exist_ok=True)
        for stale in root.glob(".*.tmp-*"):  # half-written by a killed run
            shutil.rmtree(stale, ignore_errors=True)
        summary: dict[str, Any] = {}
        for name, recs in groups.items():
            bundle = loads(recs[0]["env"])
            tasks = [ToolTask.model_validate(json.loads(r["task"])) for r in recs]
            target = root / name
            tmp = root / f".{name}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            materialize(bundle, tmp, tasks)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
            types = Counter(t.type or "task" for t in tasks)
            row = {"name": name, "path": f"{self.config.subdir}/{name}", "tools": len(bundle["tools"]),
                   "write_tools": sum(t["kind"] == "write" for t in bundle["tools"]), "tasks": len(tasks),
                   "tasks_by_type": json.dumps(dict(sorted(types.items()))),
                   "entities": sum(len(c) for c in bundle["state"].values()),
                   "state_hash": canonical_hash(bundle["state"])}
            summary[name] = {k: v for k, v in row.items() if k != "tasks_by_type"} | {"tasks_by_type": dict(types)}
            yield row
        write_report(ctx, self.name, {"environments": summary})
