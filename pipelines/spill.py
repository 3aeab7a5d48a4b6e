"""Spill space for stages that hold more than memory allows: a private temp directory per stage
run (under `<run>/tmp`, which the engine empties at the next start after a kill) and a spool that
writes records once, in order, and reads them back in order."""

from __future__ import annotations

import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from .stage import Record, StageContext


class RecordSpool:
    """Records written once in order to a temp file (length-prefixed orjson), read back in order."""

    def __init__(self, directory: Path):
        self.path = directory / "records.spool"
        self._out = open(self.path, "wb", buffering=1 << 20)
        self.count = 0
        self.bytes = 0

    def append(self, record: Record) -> None:
        blob = orjson.dumps(record, default=str)
        self._out.write(struct.pack("<I", len(blob)))
        self._out.write(blob)
        self.count += 1
        self.bytes += len(blob) + 4

    def __iter__(self) -> Iterator[Record]:
        if not self._out.closed:
            self._out.flush()
        with open(self.path, "rb", buffering=1 << 20) as f:
            while head := f.read(4):
                (n,) = struct.unpack("<I", head)
                yield orjson.loads(f.read(n))

    def close(self) -> None:
        self._out.close()


def spill_directory(ctx: StageContext, stage_name: str, configured: str | None) -> Path:
    """A fresh private directory for a stage's temp files (removed by the stage when done)."""
    if configured:
        base = Path(configured)
    elif ctx.run_dir is not None:
        base = Path(ctx.run_dir) / "tmp"
    else:
        base = Path(tempfile.gettempdir())
    if not base.exists():
        base.mkdir(parents=True)
        _CREATED_BASES.add(base)
    return Path(tempfile.mkdtemp(prefix=f"{stage_name}-", dir=base))


_CREATED_BASES: set[Path] = set()  # spill bases this process made (removed again when empty)


@contextmanager
def spilling(ctx: StageContext, stage_name: str, configured: str | None) -> Iterator[Path]:
    """`spill_directory` for the length of a stage's run, removed when it ends (a killed run's
    leftovers are removed at the next start)."""
    workdir = spill_directory(ctx, stage_name, configured)
    try:
        yield workdir
    finally:
        remove_directory(workdir)


def remove_directory(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.parent in _CREATED_BASES:
        try:
            path.parent.rmdir()
            _CREATED_BASES.discard(path.parent)
        except OSError:  # another stage still spills there
            pass
