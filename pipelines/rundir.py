"""The run directory: where a run keeps its config, shard outputs, caches, ledger, stats and data.

runs/NAME/
  .rlclimb-run                the marker: this directory was created by rlclimb and is its to manage
  config.json                 resolved pipeline config, stages (name, version, fingerprint), inputs
  stages/NN-<stage>-<fp>/     per-segment shard parts: part-*.parquet, part-*.ledger.parquet,
                              part-*.done.json (the commit marker, with that shard's stats)
  cache/stages.sqlite         row-level results of cached stages (LLM, sandbox)
  cache/llm.sqlite            LLM request cache
  data/train-*.parquet        the final dataset (Hugging Face datasets layout)
  ledger/part-*.parquet       every dropped record: stage, reason, detail, file, line, record
  stats.json                  the funnel: per stage in / kept / dropped by reason / time / LLM cost

A run directory may be a URL (`s3://bucket/runs/NAME`, any fsspec filesystem): the run works in
a local mirror of it and pushes each file to the store as it commits (storage.py); its caches
are objects under `cache/stages/` and `cache/llm/` there, its lock a lease object.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlclimb.schemas.io import write_parquet

from .bookkeeping import LEDGER_SCHEMA, READ_STAGE, StageStats
from .readers import InputError
from .storage import (
    LOCAL_ONLY_TOP,
    MARKER,
    Lease,
    LeaseHeld,
    Mirror,
    copy_pushed,
    is_url,
    join,
    push,
    unpush,
)

if TYPE_CHECKING:
    from .engine import Pipeline, RunOptions, RunResult, Segment

DATA_FILES = "train-*-of-*.parquet"  # what finalize creates (and so may replace) in data/
LEDGER_FILES = "part-*.parquet"  # ... and in ledger/


class RunDir:
    def __init__(self, path: Path | str):
        self.mirror = Mirror.open(str(path)) if is_url(path) else None
        self.url = self.mirror.url if self.mirror else None  # None: a local run directory
        self.path = self.mirror.local if self.mirror else Path(path)
        self.config_path = self.path / "config.json"
        self.stats_path = self.path / "stats.json"
        self.stage_cache: Path | str = join(self.url, "cache", "stages") if self.url else self.path / "cache" / "stages.sqlite"
        self.llm_cache: Path | str = join(self.url, "cache", "llm") if self.url else self.path / "cache" / "llm.sqlite"
        self.data_dir = self.path / "data"
        self.ledger_dir = self.path / "ledger"

    def segment_dir(self, name: str) -> Path:
        return self.path / "stages" / name

    @contextlib.contextmanager
    def lock(self):
        """One writer per run directory; the OS releases the lock if the process is killed. A run
        at a URL also holds the store's lease (storage.Lease), then pulls the store's state."""
        with contextlib.ExitStack() as stack:
            if self.mirror is not None:
                stack.enter_context(self._flock())  # another process on this machine, same mirror
                stack.enter_context(self._lease())
                if why := self.mirror.is_foreign("run"):
                    raise InputError(why)
                self.mirror.pull()
            claim_dir(self.path, "run")
            if self.mirror is None:
                stack.enter_context(self._flock())
            yield

    @contextlib.contextmanager
    def _flock(self):
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InputError(f"run directory {self.url or self.path} is in use by another rlclimb process") from None
            yield

    @contextlib.contextmanager
    def _lease(self):
        lease = Lease(self.url)
        try:
            lease.acquire()
        except LeaseHeld as e:
            raise InputError(str(e)) from None
        except Exception as e:  # no such bucket, no credentials, endpoint down: one line, exit 2
            raise InputError(f"--out {self.url}: cannot write there: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        try:
            yield
        finally:
            try:
                lease.release()
            except Exception:  # the store is unreachable now: the lease lapses by itself (TTL)
                pass

    def write_config(self, pipeline: Pipeline, options: RunOptions) -> None:
        """The run's config; a directory holding a run of another pipeline or other input files
        is replaced only with `force` (stages whose fingerprint is unchanged are still reused)."""
        from .engine import plan_segments

        segments = plan_segments(pipeline)
        config = {
            "pipeline": pipeline.name,
            "config": pipeline.config,
            "inputs": pipeline.reader.describe(),
            "shard_size": pipeline.shard_size,
            "stages": [s.describe() for s in pipeline.stages],
            "segments": [
                {"dir": s.dirname, "stages": [st.name for st in s.stages], "global": s.is_global}
                for s in segments
            ],
            "options": {"workers": options.workers, "seed": options.seed,
                        "llm": _redacted(options.llm)},
        }
        if changed := self._changed(config):
            if not options.force:
                raise InputError(
                    f"run directory {self.path} holds a run with another {changed}: "
                    "pass --force to replace that run, or choose a new --out"
                )
            reports = self.path / "reports"  # the old run's reports would describe it, not us
            if reports.is_dir():
                for f in reports.glob("*.json"):
                    f.unlink()
                    unpush(f)
        if self.stats_path.exists():  # a new invocation: the old funnel is no longer current
            self.stats_path.unlink()
            unpush(self.stats_path)
        _write_json(self.config_path, config)

    def _changed(self, config: dict[str, Any]) -> str | None:
        """What makes `config` another run than the one in config.json (None: the same run)."""
        try:
            old = json.loads(self.config_path.read_text())
        except (OSError, ValueError):
            return None  # nothing recorded yet (or a write killed halfway): nothing to replace
        new = json.loads(json.dumps(config, default=str))  # as it would read back
        if old.get("pipeline") != new["pipeline"]:
            return f"pipeline ({old.get('pipeline')!r}, not {new['pipeline']!r})"
        # A changed stage config is the same run, iterated on: the stages it affects recompute;
        # so is one with input files added (a new book in the input directory). Dropping one of
        # its input files, or reading them another way, would replace its dataset.
        before, now = dict(old.get("inputs") or {}), dict(new["inputs"])
        kept = set(before.pop("files", [])) <= set(now.pop("files", []))
        return None if kept and before == now else "inputs"

    def segment_rows(self, dirname: str) -> int:
        return sum(json.loads(p.read_text())["rows"] for p in self.segment_dir(dirname).glob("part-*.done.json"))

    # ---- funnel ------------------------------------------------------------------------------
    def collect_stats(self, config: dict[str, Any]) -> tuple[list[tuple[str, StageStats]], bool]:
        """Per-stage stats summed over committed shards; and whether every segment finished."""
        order = [READ_STAGE] + [s["name"] for s in config["stages"]]
        totals: dict[str, StageStats] = {}
        for seg in config["segments"]:
            seg_dir = self.segment_dir(seg["dir"])
            files = [seg_dir / "_SUCCESS.json"] if seg["global"] else sorted(seg_dir.glob("part-*.done.json"))
            for f in files:
                if f.exists():
                    for name, d in json.loads(f.read_text())["stats"].items():
                        totals.setdefault(name, StageStats()).add(StageStats.from_dict(d))
        return [(n, totals[n]) for n in order if n in totals], self.stats_path.exists()

    def finalize(self, segments: list[Segment], elapsed_s: float) -> RunResult:
        from .engine import RunResult

        last = self.segment_dir(segments[-1].dirname)
        parts = sorted(last.glob("part-*[0-9].parquet"))
        _unify_schemas(parts)
        _clear(self.data_dir, DATA_FILES)
        n = max(len(parts), 1)
        records = 0
        for i, part in enumerate(parts):
            dest = self.data_dir / f"train-{i:05d}-of-{n:05d}.parquet"
            _link(part, dest)
            records += pq.ParquetFile(part).metadata.num_rows
        if not parts:
            schema = segments[-1].schema or pa.schema([])
            write_parquet(schema.empty_table(), self.data_dir / "train-00000-of-00001.parquet", schema)
            push(self.data_dir / "train-00000-of-00001.parquet")
        self._link_ledger(segments)
        config = json.loads(self.config_path.read_text())
        stages, _ = self.collect_stats(config)
        stats = {
            "pipeline": config["pipeline"],
            "status": "complete",
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "elapsed_s": round(elapsed_s, 3),
            "records": records,
            "drops": sum(sum(s.dropped.values()) for _, s in stages),
            "stages": [{"name": name, **s.to_dict()} for name, s in stages],
        }
        _write_json(self.stats_path, stats)
        return RunResult(self.path, records, stats)

    def _link_ledger(self, segments: list[Segment]) -> None:
        """The ledger is the shards' ledger parts, linked in order (read it with pq.read_table)."""
        _clear(self.ledger_dir, LEDGER_FILES)
        parts = [p for seg in segments for p in sorted(self.segment_dir(seg.dirname).glob("part-*.ledger.parquet"))]
        for i, part in enumerate(parts):
            _link(part, self.ledger_dir / f"part-{i:05d}.parquet")
        if not parts:  # an empty table, so readers need no special case
            write_parquet(LEDGER_SCHEMA.empty_table(), self.ledger_dir / "part-00000.parquet", LEDGER_SCHEMA)
            push(self.ledger_dir / "part-00000.parquet")


def claim_dir(path: Path, kind: str) -> None:
    """Make `path` an rlclimb output directory of `kind` ("run", "decontam", "train", ...), or refuse
    with an InputError (the CLI's one-line exit 2). rlclimb replaces files in its output
    directories, so it only writes into one it created: a new or empty directory gets the marker;
    one with the marker is ours; anything else in the way is refused rather than touched."""
    path = Path(path)
    if check_dir(path, kind) and (path / MARKER).is_file():
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (NotADirectoryError, FileExistsError):  # lost a race with whoever made a file there
        raise InputError(f"--out {path}: it, or a directory above it, is a file") from None
    except PermissionError as e:
        raise InputError(f"cannot create {path}: {e.strerror}") from None
    _write_json(path / MARKER, {"kind": kind, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def check_dir(path: Path, kind: str) -> bool:
    """Whether `path` already is an rlclimb `kind` directory (True) or may become one (False: it
    does not exist, or is empty); raises InputError for a file, a path under a file, another
    kind's directory, or a non-empty directory without the marker. Writes nothing."""
    path = Path(path)
    for above in [path, *path.parents]:
        if above.exists() or above.is_symlink():
            if not above.is_dir():
                raise InputError(f"--out {path}: {'it' if above == path else above} is a file, not a directory")
            break
    if not path.is_dir():
        return False
    marker = path / MARKER
    if marker.is_file():
        try:
            recorded = json.loads(marker.read_text() or "{}").get("kind", "run")
        except (ValueError, AttributeError):
            recorded = "?"
        if recorded != kind:
            raise InputError(f"{path} is an rlclimb {recorded} directory, not a {kind} directory: choose another --out")
        return True
    if not any(f.name not in LOCAL_ONLY_TOP for f in path.iterdir()):  # (a mirror's own files)
        return False
    if _legacy(path, kind):  # written before the marker existed (claim_dir adds it)
        return True
    raise InputError(
        f"{path} exists, is not empty and is not an rlclimb {kind} directory "
        f"(no {MARKER} file): choose a new --out, or empty it"
    )


_LEGACY_KEYS = {"run": {"pipeline", "segments"}, "train": {"grpo"}}  # in their config.json


def _legacy(path: Path, kind: str) -> bool:
    if kind == "decontam":
        return (path / "report.json").is_file() and (path / "matches.jsonl").is_file()
    if kind == "mix":  # `rlclimb mix` writes no marker: its manifest says what the directory is
        return (path / "mix.json").is_file()
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return kind in _LEGACY_KEYS and isinstance(config, dict) and _LEGACY_KEYS[kind] <= config.keys()


def _clear(directory: Path, pattern: str) -> None:
    """Remove what finalize made in `directory` last time, and nothing else."""
    directory.mkdir(parents=True, exist_ok=True)
    for f in directory.glob(pattern):
        if f.is_file() or f.is_symlink():
            f.unlink()
            unpush(f)


def _unify_schemas(parts: list[Path]) -> None:
    """Parts whose schema was inferred per shard can differ (a column all-null in one shard):
    cast them to one schema so the dataset reads as one table."""
    schemas = [pq.read_schema(p) for p in parts]
    if len({s.remove_metadata() for s in schemas}) <= 1:
        return
    unified = pa.unify_schemas(schemas, promote_options="permissive")
    for part, schema in zip(parts, schemas, strict=True):
        if not schema.remove_metadata().equals(unified.remove_metadata()):
            write_parquet(pq.read_table(part).cast(unified), part, unified)
            push(part)


def _redacted(llm: Any) -> dict | None:
    """The LLM config without literal API keys (config.json is meant to be shared)."""
    if llm is None:
        return None
    data = llm.model_dump(mode="json")
    for profile in data.get("profiles", {}).values():
        if profile.get("api_key") not in (None, "EMPTY"):
            profile["api_key"] = "***"
    return data


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)  # committed parts are immutable: share, don't copy
    except OSError:
        shutil.copyfile(src, dest)
    copy_pushed(src, dest)


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)
    push(path)
