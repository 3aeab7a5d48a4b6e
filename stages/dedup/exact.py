"""Exact dedup: SHA-256 of the normalized text; the first occurrence in input order is kept.

Normalization is `text_keys.canonical_text`: NFKC, whitespace, case and (math-aware) LaTeX
spelling: delimiters, spacing commands, \\dfrac/\\frac, \\leq/\\le, x^{2}/x^2, spaces around
operators. Optional: punctuation. Streams; memory per distinct text: one slot of an
open-addressing table (64-bit digest prefix, a second 64 bits to check collisions, the id's
offset, a copies count: 28 bytes; at load 0.35-0.7: 40-80 bytes; peak 126 bytes measured at
200k distinct, while it doubles; a dict of digest -> id measured 184). The kept records' ids go
to a file in the spill directory, read back for the drop detail; the report is computed by
streaming over the table.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import struct
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator

import numpy as np

from rlclimb.pipelines.spill import spilling
from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from ..text_keys import canonical_text
from .common import input_text, write_report


class ExactDedupConfig(StageConfig):
    field: str = "question"
    lowercase: bool = True
    latex: bool = True  # math-aware: one spelling per formula (see text_keys.canonical_text)
    punctuation: bool = False  # drop ASCII punctuation (aggressive: "2-3" == "23")
    examples: int = 5  # duplicate groups shown in the report
    spill_dir: str | None = None  # kept ids; default: <run dir>/tmp/<stage>, else the system temp dir


def dedup_key(text: str, c: ExactDedupConfig) -> bytes:
    canonical = canonical_text(text, lowercase=c.lowercase, latex=c.latex, punctuation=c.punctuation)
    return hashlib.sha256(canonical.encode("utf-8")).digest()


class DigestTable:
    """digest -> first input index, in flat typed arrays (array.array: compact, and fast to
    index one item at a time): linear probing on the digest's first 64 bits, its next 64 bits
    stored to tell a prefix collision (then both texts are kept); a copies counter per slot."""

    def __init__(self, capacity: int = 1 << 16):
        self._alloc(capacity)
        self.count = self.collisions = 0

    def _alloc(self, capacity: int) -> None:
        self.keys = array("Q", bytes(8 * capacity))
        self.checks = array("Q", bytes(8 * capacity))
        self.values = array("q", [-1]) * capacity
        self.copies = array("I", bytes(4 * capacity))
        self.mask = capacity - 1

    @property
    def nbytes(self) -> int:
        return sum(a.itemsize * len(a) for a in (self.keys, self.checks, self.values, self.copies))

    def first(self, digest: bytes, value: int) -> int | None:
        """The value stored for `digest` (a duplicate: its copies count goes up), else stores
        `value` and returns None."""
        key, check = struct.unpack_from("<QQ", digest)
        keys, values, mask = self.keys, self.values, self.mask
        i = key & mask
        while values[i] >= 0:
            if keys[i] == key:
                if self.checks[i] == check:
                    self.copies[i] += 1
                    return values[i]
                self.collisions += 1  # same 64-bit prefix, other text: keep it, unindexed
                return None
            i = (i + 1) & mask
        keys[i], self.checks[i], values[i] = key, check, value
        self.count += 1
        if self.count * 10 > 7 * len(keys):  # load 0.7: double
            self._grow()
        return None

    def groups(self) -> Iterator[tuple[int, int]]:
        """(value, copies) of every digest seen more than once."""
        for i, c in enumerate(self.copies):
            if c:
                yield self.values[i], c

    def _grow(self) -> None:
        keys, checks, values, copies = self.keys, self.checks, self.values, self.copies
        self._alloc(2 * len(keys))
        for j, value in enumerate(values):  # one slot at a time: no temporary per entry
            if value < 0:
                continue
            key, check = keys[j], checks[j]
            i = key & self.mask
            while self.values[i] >= 0:
                i = (i + 1) & self.mask
            self.keys[i], self.checks[i], self.values[i], self.copies[i] = key, check, value, copies[j]


class ExactDedup(Stage):
    name = "dedup_exact"
    version = "2"
    config_outputs = ("spill_dir",)
    kind = "global"
    Config = ExactDedupConfig
    drop_reason = "duplicate_exact"

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        with spilling(ctx, self.name, self.config.spill_dir) as workdir:
            yield from self._run(records, ctx, workdir)

    def sketch(self, records: list[Record]) -> dict[str, np.ndarray]:
        """Per record and independent of the others (an executor may compute it in parallel):
        the digest of the normalized text, as rows of 32 bytes (an array of bytes objects would
        lose trailing zero bytes)."""
        blob = b"".join(dedup_key(input_text(r, self.config.field), self.config) for r in records)
        return {"digest": np.frombuffer(blob, np.uint8).reshape(len(records), 32)}

    def _run(self, records: Iterable[Record], ctx: StageContext, workdir) -> Iterator[Record | tuple[Record, Drop]]:
        c, t0 = self.config, time.perf_counter()
        table = DigestTable()  # digest -> offset of the kept record's id in the ids file
        ids, end = open(workdir / "ids", "w+b"), 0  # length-prefixed ids, appended
        texts: dict[str, list[str]] = {}  # kept id -> texts, for the first few groups
        n = 0
        feed = ctx.extras.get("sketches")  # digests computed on a cluster (ray executor), in order
        for rec in records:
            n += 1
            text = input_text(rec, c.field)
            own = str(rec.get("id") or n - 1).encode()
            digest = feed.take(1)["digest"][0].tobytes() if feed is not None else dedup_key(text, c)
            found = table.first(digest, end)
            if found is None:
                ids.write(struct.pack("<I", len(own)) + own)
                end += 4 + len(own)
                if len(texts) < c.examples:
                    texts[own.decode()] = [text[:500]]
                yield rec
            else:
                ids.flush()
                (size,) = struct.unpack("<I", os.pread(ids.fileno(), 4, found))
                kept = os.pread(ids.fileno(), size, found + 4).decode()
                if kept in texts and len(texts[kept]) < 6:
                    texts[kept].append(text[:500])
                yield rec, Drop(self.drop_reason, f"same normalized {c.field} as {kept}")
        ids.flush()
        sizes: Counter = Counter()
        dropped = largest = 0
        top: list[tuple[int, int]] = []  # the largest groups: (copies, offset)
        for offset, k in table.groups():  # streamed: the report costs no memory per group
            sizes[min(k + 1, 10)] += 1
            dropped, largest = dropped + k, max(largest, k)
            heapq.heappush(top, (k, -offset))
            if len(top) > 10 * max(c.examples, 1):
                heapq.heappop(top)
        copies = {}  # kept id -> dropped copies, for the groups shown
        for k, neg in sorted(top, reverse=True):
            offset = -neg
            (size,) = struct.unpack("<I", os.pread(ids.fileno(), 4, offset))
            kept = os.pread(ids.fileno(), size, offset + 4).decode()
            if kept in texts:
                copies[kept] = k
        ids.close()
        self.report = {
            "stage": self.name, "version": self.version, "matcher": "exact", "config": c.model_dump(mode="json"),
            "records": n, "clusters": sum(sizes.values()), "records_in_clusters": dropped + sum(sizes.values()),
            "largest_cluster": largest + 1 if sizes else 0, "dropped": dropped,
            "cluster_sizes": {("10+" if k == 10 else str(k)): v for k, v in sorted(sizes.items())},
            "time_s": round(time.perf_counter() - t0, 3),
            "memory": {"table_bytes": table.nbytes, "distinct": table.count, "prefix_collisions": table.collisions},
            "examples": [{"kept": k, "size": copies[k] + 1, "texts": texts[k]} for k in copies][: c.examples],
        }
        write_report(ctx, self.name, self.report)
