"""Replay every task of an environment: fill in gold final hashes, or write a replay report.

`replay_all` runs each task's gold actions in a fresh state (one runtime, reset per task: a new
sandbox each time) and returns one row per task: id, task_index (imported tasks), the tool
outputs in order, our final-state hash, whether it equals the recorded `final_hash`, and the
replay error if any. With `out`, rows go to `out/replay.jsonl` and each final state, exported in
the source's layout (`export_state`), to `out/states/<task id>.json`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .format import ToolEnvSpec, save_env
from .runtime import ToolRuntime, replay


def export_state(spec: ToolEnvSpec, state: Any) -> Any:
    """The state in the source benchmark's layout. tau-bench v1: its data dict (top-level keys
    = data file stems), which is what the runtime holds already; our own format: as is."""
    return state


def _safe_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", task_id)[:120] or "task"


def replay_all(
    spec: ToolEnvSpec,
    *,
    out: Path | None = None,
    backend: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    rows = []
    if out is not None:
        (out / "states").mkdir(parents=True, exist_ok=True)
    sink = open(out / "replay.jsonl", "w", encoding="utf-8") if out is not None else None
    try:
        with ToolRuntime(spec, backend=backend) as rt:
            for n, task in enumerate(spec.tasks):
                result = replay(spec, task, runtime=rt, keep_state=out is not None)
                row = {
                    "id": task.id,
                    **(
                        {"task_index": task.meta["task_index"]} if "task_index" in task.meta else {}
                    ),
                    "outputs": result.outputs,
                    "final_hash": result.final_hash,
                    "matches_recorded": (
                        None if task.final_hash is None else result.final_hash == task.final_hash
                    ),
                    "error": result.error,
                }
                rows.append(row)
                if sink is not None:
                    sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                    if result.state is not None:
                        (out / "states" / f"{_safe_name(task.id)}.json").write_text(
                            json.dumps(export_state(spec, result.state), ensure_ascii=False),
                            encoding="utf-8",
                        )
                if progress is not None:
                    progress(n + 1, len(spec.tasks))
    finally:
        if sink is not None:
            sink.close()
    return rows


def record_hashes(spec: ToolEnvSpec, backend: str | None = None) -> list[dict[str, Any]]:
    """Replay every task and store its final hash in tasks.jsonl (tasks whose replay failed
    keep none, and are returned with the error)."""
    rows = replay_all(spec, backend=backend)
    for task, row in zip(spec.tasks, rows, strict=True):
        task.final_hash = row["final_hash"] if not row["error"] else None
    save_env(spec, spec.root)
    return [r for r in rows if r["error"]]
