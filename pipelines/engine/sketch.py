"""Per-record sketches of a global stage, computed elsewhere and fed back in input order.

A global stage's expensive part is often per record and independent of the others (exact dedup's
digest, MinHash's signature): `Stage.sketch(records) -> {name: array}`. For a global stage that
runs on the driver (the dedup and decontam stages are decided on the cluster instead:
ray_dedup.py, which calls their `sketch` in its map step), the ray executor computes it on the
cluster over the committed input parts, in input order, and hands the stage a
`SketchFeed` (`ctx.extras["sketches"]`); the stage takes the sketches of the records it reads,
instead of computing them. What needs every record at once (the digest table, LSH buckets,
connected components) stays in the stage, on the driver: results are the local executor's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np


class SketchFeed:
    """Sketch batches of any size, taken n records at a time."""

    def __init__(self, batches: Iterable[dict[str, np.ndarray]]):
        self._it: Iterator[dict[str, np.ndarray]] = iter(batches)
        self._buf: dict[str, np.ndarray] = {}
        self._pos = self._len = 0

    def take(self, n: int) -> dict[str, np.ndarray]:
        parts: list[dict[str, np.ndarray]] = []
        while n > 0:
            if self._pos >= self._len:
                try:
                    self._buf = next(self._it)
                except StopIteration:
                    raise RuntimeError("the sketches ended before the records did (input changed during the run?)") from None
                self._len, self._pos = len(next(iter(self._buf.values()))), 0
                continue
            k = min(n, self._len - self._pos)
            parts.append({key: v[self._pos : self._pos + k] for key, v in self._buf.items()})
            self._pos += k
            n -= k
        if len(parts) == 1:
            return parts[0]
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
