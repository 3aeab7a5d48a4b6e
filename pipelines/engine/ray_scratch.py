"""Scratch space of the Ray executor's cluster jobs (the JSONL read's chunks, MinHash signatures),
where every node can reach it without a shared mount.

A scratch directory is `<run>/tmp/<name>-XXXX`: a local path for a run directory on a path (which
a multi-node run must mount on every node anyway), or, for a run at a URL, that directory's URL
in the store (`<url>/tmp/...`: never mirrored, removed when the job ends and by the next start
after a kill). Files are written whole (a local file by rename, an object by one PUT), so a
retried task rewrites them atomically. Fixed-width rows (`Rows`) are read back by index: memory-
mapped locally, by byte ranges from the store (nearby rows coalesced into one request), so a
reader fetches the rows it needs, not whole files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .. import storage
from ..spill import spilling
from ..stage import StageContext

COALESCE_BYTES = 256 << 10  # rows closer than this in one object: one range request


@contextmanager
def scratch(ctx: StageContext, name: str) -> Iterator[str]:
    """A fresh scratch directory (path or URL) for one cluster job, removed when it ends."""
    with spilling(ctx, name, None) as local:
        location = storage.url_of(local)
        try:
            yield location
        finally:
            if storage.is_url(location):
                remove_tree(location)


def remove_tree(url: str) -> None:
    fs, inner = storage.filesystem(url)
    try:
        fs.rm(inner, recursive=True)
    except FileNotFoundError:
        pass


def put(path: str, data: bytes) -> None:
    """Write one scratch file whole (atomically: a retried task's rewrite replaces it)."""
    if storage.is_url(path):
        fs, inner = storage.filesystem(path)
        fs.pipe_file(inner, data)
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


get = storage.read_bytes  # one scratch file whole, at a path or a URL


def join(location: str, name: str) -> str:
    return storage.join(location, name) if storage.is_url(location) else os.path.join(location, name)


class Rows:
    """Rows of fixed width (`dtype`, `width` values each) in files `<location>/<prefix>-<start>.bin`,
    one per slice of the input starting at global index `start`; `take` reads rows by global index."""

    def __init__(self, location: str, prefix: str, starts: list[int], dtype, width: int):
        self.location, self.prefix, self.starts = location, prefix, np.asarray(starts, np.int64)
        self.dtype, self.width = np.dtype(dtype), width
        self.row_bytes = self.dtype.itemsize * width
        self.remote = storage.is_url(location)
        self._maps: dict[int, np.ndarray] = {}

    def path(self, start: int) -> str:
        return join(self.location, f"{self.prefix}-{start:012d}.bin")

    def write(self, start: int, rows: np.ndarray) -> None:
        put(self.path(start), np.ascontiguousarray(rows, self.dtype).tobytes())

    def take(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, np.int64)
        out = np.empty((len(index), self.width), self.dtype)
        if not len(index):
            return out
        j = np.searchsorted(self.starts, index, side="right") - 1
        local = index - self.starts[j]
        if not self.remote:
            for f in np.unique(j).tolist():
                at = np.flatnonzero(j == f)
                out[at] = self._map(f)[local[at]]
            return out
        # from the store: the distinct rows of each file, runs of nearby rows as one range each
        keys = np.unique(j.astype(np.int64) << np.int64(40) | local)
        fj, fl = keys >> np.int64(40), keys & np.int64((1 << 40) - 1)
        gap = max(1, COALESCE_BYTES // self.row_bytes)
        cut = np.flatnonzero((fj[1:] != fj[:-1]) | (fl[1:] - fl[:-1] > gap)) + 1
        lo, hi = np.concatenate(([0], cut)), np.concatenate((cut, [len(keys)]))
        fs, base = storage.filesystem(self.location)
        paths = [storage.join(base, f"{self.prefix}-{int(self.starts[fj[a]]):012d}.bin") for a in lo.tolist()]
        blobs = fs.cat_ranges(paths, (fl[lo] * self.row_bytes).tolist(), ((fl[hi - 1] + 1) * self.row_bytes).tolist())
        got = np.empty((len(keys), self.width), self.dtype)
        for a, b, blob in zip(lo.tolist(), hi.tolist(), blobs, strict=True):
            if isinstance(blob, Exception):
                raise blob
            run = np.frombuffer(blob, self.dtype).reshape(-1, self.width)
            got[a:b] = run[fl[a:b] - fl[a]]
        out[:] = got[np.searchsorted(keys, j.astype(np.int64) << np.int64(40) | local)]
        return out

    def _map(self, f: int) -> np.ndarray:
        if f not in self._maps:
            self._maps[f] = np.memmap(Path(self.path(int(self.starts[f]))), self.dtype, mode="r").reshape(-1, self.width)
        return self._maps[f]
