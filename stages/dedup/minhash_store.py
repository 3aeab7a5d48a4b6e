"""Bounded-memory storage for the MinHash stage: signatures and LSH band entries that stay in
memory until the stage's budget is reached (it calls `spill()`) and go to disk from then on.

- `SignatureStore`: one row of `num_perm` uint32 per record; past the budget, rows go to a file that
  is memory-mapped for verification, with the pages released after each chunk of lookups.
- `BandBuckets`: (band key, record index) entries, hash-partitioned by the key's top bits so that
  equal keys land in one partition; past the budget, partitions are appended to files and later
  sorted one at a time. Each partition yields candidate pairs: every member of a bucket with the
  bucket's first member (star) and with its predecessor (chain), which connects a bucket with
  O(size) pairs instead of O(size^2).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

import numpy as np


class SignatureStore:
    def __init__(self, directory: Path, width: int):
        self.path, self.width = directory / "signatures.u32", width
        self._chunks: list[np.ndarray] = []
        self._held = 0
        self._file = None
        self.rows = 0
        self._mm: mmap.mmap | None = None
        self._array: np.ndarray | None = None

    @property
    def spilled(self) -> bool:
        return self._file is not None

    @property
    def held_bytes(self) -> int:
        return self._held

    def append(self, sigs: np.ndarray) -> None:
        self.rows += len(sigs)
        if self._file is not None:
            self._file.write(sigs.tobytes())
            return
        self._chunks.append(sigs)
        self._held += sigs.nbytes

    def spill(self) -> None:
        if self._file is None:
            self._file = open(self.path, "wb", buffering=1 << 20)
        for chunk in self._chunks:
            self._file.write(chunk.tobytes())
        self._chunks, self._held = [], 0

    def finish(self) -> None:
        if self._file is None:
            self._array = np.concatenate(self._chunks) if self._chunks else np.zeros((0, self.width), np.uint32)
            self._chunks = []
            return
        self._file.close()
        if self.rows:
            with open(self.path, "rb") as f:
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._array = np.frombuffer(self._mm, dtype=np.uint32).reshape(self.rows, self.width)
        else:
            self._array = np.zeros((0, self.width), np.uint32)

    def take(self, index: np.ndarray) -> np.ndarray:
        """Rows by index (a copy). Mapped pages are dropped afterwards: the file stays in the OS
        page cache, but this process does not keep them resident."""
        rows = self._array[np.asarray(index)]
        if self._mm is not None:
            self._mm.madvise(mmap.MADV_DONTNEED)
        return rows

    def close(self) -> None:
        self._array = None
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        if self._file is not None and not self._file.closed:
            self._file.close()


class BandBuckets:
    _ENTRY = 12  # bytes per entry: uint64 key + uint32 record index

    def __init__(self, directory: Path, partitions: int):
        if partitions < 1 or partitions & (partitions - 1):
            raise ValueError(f"partitions must be a power of two, got {partitions}")
        self.directory, self.partitions = directory, partitions
        self._shift = np.uint64(64 - max(partitions.bit_length() - 1, 0)) if partitions > 1 else None
        self._keys: list[list[np.ndarray]] = [[] for _ in range(partitions)]
        self._index: list[list[np.ndarray]] = [[] for _ in range(partitions)]
        self._held = 0
        self.spills = 0
        self.spilled_bytes = 0

    @property
    def held_bytes(self) -> int:
        return self._held

    def add(self, keys: np.ndarray, index: np.ndarray) -> None:
        """keys: (n, bands) uint64; index: (n,) record indices."""
        flat = keys.ravel()
        idx = np.repeat(index.astype(np.uint32), keys.shape[1])
        if self._shift is None:
            self._keys[0].append(flat)
            self._index[0].append(idx)
        else:
            part = partition_of(flat, self.partitions)
            order = np.argsort(part, kind="stable")
            bounds = np.searchsorted(part[order], np.arange(self.partitions + 1))
            flat, idx = flat[order], idx[order]
            for p in range(self.partitions):
                lo, hi = bounds[p], bounds[p + 1]
                if hi > lo:
                    self._keys[p].append(flat[lo:hi])
                    self._index[p].append(idx[lo:hi])
        self._held += len(flat) * self._ENTRY

    def spill(self) -> None:
        for p in range(self.partitions):
            if not self._keys[p]:
                continue
            with open(self.directory / f"band-{p:04d}.keys", "ab") as fk, open(self.directory / f"band-{p:04d}.idx", "ab") as fi:
                for k, i in zip(self._keys[p], self._index[p], strict=True):
                    fk.write(k.tobytes())
                    fi.write(i.tobytes())
            self._keys[p], self._index[p] = [], []
        self.spills += 1
        self.spilled_bytes += self._held
        self._held = 0

    def _partition(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        keys, idx = list(self._keys[p]), list(self._index[p])
        kf, xf = self.directory / f"band-{p:04d}.keys", self.directory / f"band-{p:04d}.idx"
        if kf.exists():  # spilled entries come first: they were added first
            keys.insert(0, np.fromfile(kf, dtype=np.uint64))
            idx.insert(0, np.fromfile(xf, dtype=np.uint32))
        if not keys:
            return np.zeros(0, np.uint64), np.zeros(0, np.uint32)
        return np.concatenate(keys), np.concatenate(idx)

    def candidate_pairs(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(left, right) index arrays with left < right, one partition at a time."""
        for p in range(self.partitions):
            keys, idx = self._partition(p)
            self._keys[p], self._index[p] = [], []
            pairs = bucket_pairs(keys, idx)
            if len(pairs[0]):
                yield pairs


def partition_of(keys: np.ndarray, partitions: int) -> np.ndarray:
    """The band partition of each key: its top bits (BandBuckets' split; the ray executor groups by it)."""
    if partitions <= 1:
        return np.zeros(len(keys), np.int64)
    return (keys >> np.uint64(64 - (partitions.bit_length() - 1))).astype(np.int64)


def bucket_pairs(keys: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs (left < right) of the buckets (equal keys) among these entries: every member
    with its bucket's first member (star) and with its predecessor (chain)."""
    empty = np.zeros(0, np.int64)
    if len(keys) < 2:
        return empty, empty
    order = np.argsort(keys, kind="stable")  # stable: indices stay ascending in a bucket
    keys, idx = keys[order], idx[order].astype(np.int64)
    same = keys[1:] == keys[:-1]
    if not same.any():
        return empty, empty
    pos = np.arange(len(keys))
    start = np.where(np.concatenate(([True], ~same)), pos, 0)
    first = np.maximum.accumulate(start)  # position of each entry's bucket head
    member = np.flatnonzero(np.concatenate(([False], same)))
    star_l, star_r = idx[first[member]], idx[member]
    chain = member[first[member] != member - 1]  # the predecessor is not the head already
    left = np.concatenate((star_l, idx[chain - 1]))
    right = np.concatenate((star_r, idx[chain]))
    keep = left != right  # one record in one bucket twice (equal keys in two bands)
    return np.minimum(left, right)[keep], np.maximum(left, right)[keep]
