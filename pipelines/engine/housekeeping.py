"""Run-directory housekeeping: scratch left by a killed run, segments no configuration uses.

- `clean_tmp`: `<run>/tmp/` holds the spill files of global stages (the fuzzy dedup stages spool
  a copy of their input there). A run removes its own when it finishes; a killed run leaves them,
  so the next start (which holds the run's lock: nobody else can be using them) removes them.
- `collect_garbage` (`rlclimb gc RUN`): committed segments whose fingerprint the current
  config.json no longer names (another threshold, model, benchmark file...) are kept so that
  switching back is free; gc removes them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..readers import InputError
from ..rundir import RunDir
from ..storage import unpush


def clean_tmp(run: RunDir) -> int:
    """Remove `<run>/tmp/` (call with the run's lock held). Returns the bytes freed (locally).
    A run at a URL: its `tmp/` in the store too (the Ray executor's scratch, never mirrored)."""
    tmp = run.path / "tmp"
    if run.url:
        unpush(tmp)
    if not tmp.is_dir():
        return 0
    freed = _size(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    return freed


def collect_garbage(path: Path, dry_run: bool = False) -> dict:
    """Remove the segment directories the run's current config.json does not list, and stale
    scratch. Returns {"removed": [names], "kept": [names], "bytes": freed}."""
    run = RunDir(path)
    if not run.config_path.is_file():
        raise InputError(f"{path} is not a run directory (no config.json)")
    with run.lock():
        current = {s["dir"] for s in json.loads(run.config_path.read_text())["segments"]}
        stages = run.path / "stages"
        old = sorted(d for d in stages.iterdir() if d.is_dir() and d.name not in current) if stages.is_dir() else []
        freed = sum(_size(d) for d in old)
        if not dry_run:
            for d in old:
                shutil.rmtree(d)
                unpush(d)  # (a run at a URL) in the store too
            freed += clean_tmp(run)
    return {"removed": [d.name for d in old], "kept": sorted(current), "bytes": freed}


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
