"""The first N items of any reader (`rlclimb run --limit N`): try a pipeline on a few items."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa


class HeadReader:
    """Wraps a reader; items are the reader's own (JSONL lines, Parquet rows, PDF pages), in
    its order, so a limited run is the start of the full run and resumes like one."""

    def __init__(self, reader: Any, limit: int):
        if limit < 1:
            raise ValueError(f"--limit must be at least 1, got {limit}")
        self.reader, self.limit = reader, limit
        self.schema = getattr(reader, "schema", None)

    def fingerprint(self) -> str:
        return f"{self.reader.fingerprint()}|head={self.limit}"

    def estimate_total(self) -> int:
        total = self.reader.estimate_total()
        return self.limit if total is None else min(total, self.limit)

    def shards(self, size: int) -> Iterator[list | pa.RecordBatch]:
        left = self.limit
        for shard in self.reader.shards(size):
            take = shard.slice(0, left) if isinstance(shard, pa.RecordBatch) else shard[:left]
            left -= len(take)
            yield take
            if left <= 0:
                return

    def describe(self) -> dict:
        return {**self.reader.describe(), "limit": self.limit}
