"""JSONL inputs read on the cluster: the project's reader as a Ray Data source.

The local executor's first shards are the reader's items in order, `shard_size` at a time
across file boundaries. On Ray, each input file is read by a worker with the same reader (one
file each: `JsonlReader` with that path alone, so ids, `file` names, licenses and `Rejected`
lines are the local ones), which writes its items in chunks to a scratch directory in the run
dir (shared storage) and returns only the count. From the counts the driver cuts the same
shards as the local executor, each a list of pieces of those chunks (`ReadPieces`, a few bytes),
and a shard's worker loads its pieces itself. So the items never pass through the driver; a
file is the unit of parallel reading (one large file is read by one worker).
"""

from __future__ import annotations

import copy
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from ..readers import JsonlReader


@dataclass(frozen=True)
class ReadPieces:
    """One shard of the first segment: (chunk file, offset, length) pieces, in order."""

    pieces: tuple[tuple[str, int, int], ...]

    def __len__(self) -> int:
        return sum(n for _, _, n in self.pieces)

    def load(self) -> list:
        out: list = []
        for path, offset, length in self.pieces:
            with open(path, "rb") as f:
                out.extend(pickle.load(f)[offset : offset + length])
        return out


def worker_readable(reader) -> bool:
    """A plain JSONL reader over files every node sees at the same path (not URLs)."""
    return type(reader) is JsonlReader and all(isinstance(p, Path) for p in reader.paths)


def _chunk(scratch: str, j: int, c: int) -> str:
    return os.path.join(scratch, f"read-{j:05d}-{c:06d}.pkl")


def read_file(batch: dict, *, reader: JsonlReader, scratch: str, size: int) -> dict:
    """A Ray Data UDF: one input file's items, in chunks of `size`, to the scratch directory."""
    out: dict[str, list] = {"j": [], "count": []}
    for j in batch["j"].tolist():
        one = copy.copy(reader)
        one.paths = [reader.paths[j]]
        it, count, c = iter(one), 0, 0
        while chunk := list(islice(it, size)):
            path = _chunk(scratch, j, c)
            tmp = f"{path}.tmp-{os.getpid()}"
            with open(tmp, "wb") as f:
                pickle.dump(chunk, f, protocol=5)
            os.replace(tmp, path)  # a retried task rewrites it whole
            count, c = count + len(chunk), c + 1
        out["j"].append(j)
        out["count"].append(count)
    return out


def cluster_shards(ray_data, reader: JsonlReader, scratch: Path, size: int, cpus: float) -> tuple[int, Iterator[ReadPieces]]:
    """Read every file on the cluster; (item count, the local executor's shards as pieces)."""
    files = [{"j": j} for j in range(len(reader.paths))]
    ds = ray_data.from_items(files, override_num_blocks=len(files)).map_batches(
        read_file, batch_size=1, num_cpus=cpus,  # retried when its worker dies (Ray Data's default)
        fn_kwargs={"reader": reader, "scratch": str(scratch), "size": size})
    counts = dict.fromkeys(range(len(files)), 0)
    for row in ds.iter_rows():
        counts[int(row["j"])] = int(row["count"])
    return sum(counts.values()), _shards([counts[j] for j in range(len(files))], str(scratch), size)


def _shards(counts: list[int], scratch: str, size: int) -> Iterator[ReadPieces]:
    pieces: list[tuple[str, int, int]] = []
    room = size
    for j, count in enumerate(counts):
        local = 0
        while local < count:
            c, offset = divmod(local, size)
            take = min(room, size - offset, count - local)
            pieces.append((_chunk(scratch, j, c), offset, take))
            local, room = local + take, room - take
            if room == 0:
                yield ReadPieces(tuple(pieces))
                pieces, room = [], size
    if pieces:
        yield ReadPieces(tuple(pieces))
