"""Committing shards: data part, ledger part, then the done marker (the marker is the commit).

In a mirror of a run directory at a URL each file is pushed to the store as it is written, in
that order, so the marker's object is the commit there too (storage.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa

from rlclimb.schemas.io import safe_value, write_parquet

from ..bookkeeping import LEDGER_SCHEMA, StageStats
from ..stage import Record
from ..storage import copy_pushed, mirror_of, push, unpush
from .plan import PROVENANCE_FIELD, Segment


def _part(seg_dir: Path, i: int) -> Path:
    return seg_dir / f"part-{i:05d}.parquet"


def _infer_table(rows: list[Record], metadata: dict[bytes, bytes]) -> pa.Table:
    """A shard of records with no declared schema: infer it, with the typed provenance column.
    (Shards may still differ, e.g. an all-null column; finalize unifies the data files.)"""
    table = pa.Table.from_pylist(rows)
    if "provenance" in table.column_names:
        idx = table.column_names.index("provenance")
        table = table.set_column(idx, PROVENANCE_FIELD, table["provenance"].cast(PROVENANCE_FIELD.type))
    else:
        table = table.append_column(PROVENANCE_FIELD, pa.nulls(len(table), PROVENANCE_FIELD.type))
    return table.replace_schema_metadata(metadata)


def _table(rows: list[Record], seg: Segment) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=seg.schema) if seg.schema is not None else _infer_table(rows, seg.metadata)


def commit_shard(seg_dir: Path, i: int, rows: list[Record], ledger: list[dict], stats: dict[str, StageStats], seg: Segment) -> None:
    """Write data, then ledger, then the done marker: the marker is the commit."""
    if rows:
        try:
            table = _table(rows, seg)
        except UnicodeEncodeError:  # a lone surrogate a stage produced: Parquet holds only UTF-8
            table = _table([safe_value(r) for r in rows], seg)
        write_parquet(table, _part(seg_dir, i), table.schema)
        push(_part(seg_dir, i))
    else:
        _part(seg_dir, i).unlink(missing_ok=True)
        unpush(_part(seg_dir, i))
    ledger_path = seg_dir / f"part-{i:05d}.ledger.parquet"
    if ledger:
        write_parquet(ledger, ledger_path, LEDGER_SCHEMA)
        push(ledger_path)
    else:
        ledger_path.unlink(missing_ok=True)
        unpush(ledger_path)
    done = {"rows": len(rows), "drops": len(ledger), "stats": {k: v.to_dict() for k, v in stats.items()}}
    write_json(seg_dir / f"part-{i:05d}.done.json", done)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)
    if path.name == "_SUCCESS.json":  # (a run at a URL) a global segment's reports go before its marker
        push(*sorted(path.parent.glob("report.*.json")))
    push(path)


def publish_reports(run_dir: Path, seg_dirs: list[Path]) -> None:
    """`<run>/reports/<stage>.json`: the reports of the current segments only, so that a report
    always describes the data next to it (a reused segment brings its own report back)."""
    reports = run_dir / "reports"
    shutil.rmtree(reports, ignore_errors=True)
    unpush(reports)
    for seg_dir in seg_dirs:
        for src in sorted(seg_dir.glob("report.*.json")):
            reports.mkdir(exist_ok=True)
            dest = reports / src.name.removeprefix("report.")
            try:
                os.link(src, dest)
            except OSError:
                shutil.copyfile(src, dest)
            copy_pushed(src, dest)


def read_parts(seg_dir: Path) -> list[Path]:
    """The committed data parts: those whose done marker exists (a part a killed attempt left
    without its marker is not trusted; on storage without atomic renames it may be partial)."""
    return sorted(p for p in seg_dir.glob("part-*[0-9].parquet") if p.with_name(p.name[: -len(".parquet")] + ".done.json").exists())


def fetch_commit(seg_dir: Path, i: int) -> None:
    """A run at a URL: bring shard i as another process (a Ray worker) committed it to the store
    into this mirror, marker last (nothing for a local run directory: the worker wrote it here)."""
    if (m := mirror_of(seg_dir / "x")) is None:
        return
    name = f"part-{i:05d}"
    marker = seg_dir / f"{name}.done.json"
    marker.unlink(missing_ok=True)
    if not m.exists(marker):
        return
    for f in (seg_dir / f"{name}.parquet", seg_dir / f"{name}.ledger.parquet"):
        if not m.fetch(f):
            f.unlink(missing_ok=True)
    m.fetch(marker)
