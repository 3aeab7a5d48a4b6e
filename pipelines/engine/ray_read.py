"""JSONL inputs read on the cluster: the project's reader as a Ray Data source.

The local executor's first shards are the reader's items in order, `shard_size` at a time
across file boundaries. On Ray, each input file is read by a worker with the same reader (one
file each: `JsonlReader` with that path alone, so ids, `file` names, licenses and `Rejected`
lines are the local ones; a file at a URL is streamed from its store by the worker), which
writes its items in chunks to the run's scratch (`ray_scratch`: the run dir's tmp, or its URL
in the store: no shared mount needed) and returns only the count. From the counts the driver cuts the same
shards as the local executor, each a list of pieces of those chunks (`ReadPieces`, a few bytes),
and a shard's worker loads its pieces itself. So the items never pass through the driver; a
file is the unit of parallel reading (one large file is read by one worker).

Parquet inputs need no read job: the local reader's shards are `size`-row batches of each file
in turn (`iter_batches`, which crosses row groups), so the driver cuts them from the files'
footers alone (`parquet_pieces`) and each shard's worker reads its rows itself (the row groups
that hold them, from a path or a URL): the same batches, never through the driver.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pyarrow as pa

from ..readers import JsonlReader, ParquetReader
from ..storage import RemoteFile, parquet_file
from .ray_scratch import get, join, put


@dataclass(frozen=True)
class ReadPieces:
    """One shard of the first segment: (chunk file, offset, length) pieces, in order."""

    pieces: tuple[tuple[str, int, int], ...]

    def __len__(self) -> int:
        return sum(n for _, _, n in self.pieces)

    def load(self) -> list:
        out: list = []
        for path, offset, length in self.pieces:
            out.extend(pickle.loads(get(path))[offset : offset + length])
        return out


@dataclass(frozen=True)
class ParquetPiece:
    """One shard of a Parquet input: rows [offset, offset + length) of one file (path or URL)."""

    path: str
    offset: int
    length: int

    def __len__(self) -> int:
        return self.length

    def load(self) -> pa.RecordBatch:
        f = parquet_file(self.path)
        meta, groups, first, row = f.metadata, [], None, 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if row + n > self.offset and row < self.offset + self.length:
                groups.append(g)
                first = row if first is None else first
            row += n
        table = f.read_row_groups(groups).slice(self.offset - (first or 0), self.length)
        return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema=f.schema_arrow)


def parquet_pieces(reader, size: int) -> Iterator[ParquetPiece] | None:
    """The local executor's shards of a plain Parquet reader, as pieces (None: another reader)."""
    if type(reader) is not ParquetReader:
        return None
    return (ParquetPiece(str(p), offset, min(size, n - offset))
            for p in reader.paths for n in [parquet_file(p).metadata.num_rows] for offset in range(0, n, size))


def count_pages(batch: dict) -> dict:
    """A Ray Data UDF: one PDF's page count, or why it cannot be read (count -1)."""
    from ..readers_pdf import page_count

    out: dict[str, list] = {"j": [], "count": [], "reason": [], "detail": []}
    for j, path in zip(batch["j"].tolist(), batch["path"].tolist(), strict=True):
        n = page_count(path)  # a local path or a URL (fetched through the store)
        out["j"].append(j)
        out["count"].append(n if isinstance(n, int) else -1)
        out["reason"].append("" if isinstance(n, int) else n.drop_reason)
        out["detail"].append("" if isinstance(n, int) else n.detail)
    return out


def count_pdf_pages(ray_data, reader, cpus: float) -> None:
    """A PDF reader's documents opened on the cluster, one per task, for their page counts (the
    reader's shards are then cut from them as locally: page references across documents)."""
    from rlclimb.stages.documents.parse_pdf import PdfUnreadable

    from ..readers_pdf import PdfPageReader

    if type(reader) is not PdfPageReader or not reader.paths:
        return
    docs = [{"j": j, "path": str(p)} for j, p in enumerate(reader.paths)]
    # retried when its worker dies (Ray Data's default; `max_retries` as a map_batches argument goes away in Ray 2.64)
    ds = ray_data.from_items(docs, override_num_blocks=len(docs)).map_batches(count_pages, batch_size=1, num_cpus=cpus)
    counts = {}
    for row in ds.iter_rows():
        n = int(row["count"])
        counts[reader.paths[int(row["j"])]] = n if n >= 0 else PdfUnreadable(str(row["reason"]), str(row["detail"]))
    reader.known_counts(counts)


def worker_readable(reader) -> bool:
    """A plain JSONL reader over local files (which every node must see at the same path, as
    the run dir) or files at URLs (which every node reads from their store)."""
    return type(reader) is JsonlReader and all(isinstance(p, Path | RemoteFile) for p in reader.paths)


def _chunk(scratch: str, j: int, c: int) -> str:
    return join(scratch, f"read-{j:05d}-{c:06d}.pkl")


def read_file(batch: dict, *, reader: JsonlReader, scratch: str, size: int) -> dict:
    """A Ray Data UDF: one input file's items, in chunks of `size`, to the scratch directory."""
    out: dict[str, list] = {"j": [], "count": []}
    for j in batch["j"].tolist():
        one = copy.copy(reader)
        one.paths = [reader.paths[j]]
        it, count, c = iter(one), 0, 0
        while chunk := list(islice(it, size)):
            put(_chunk(scratch, j, c), pickle.dumps(chunk, protocol=5))  # a retried task rewrites it whole
            count, c = count + len(chunk), c + 1
        out["j"].append(j)
        out["count"].append(count)
    return out


def cluster_shards(ray_data, reader: JsonlReader, scratch: str, size: int, cpus: float) -> tuple[int, Iterator[ReadPieces]]:
    """Read every file on the cluster into `scratch` (a path or URL); (item count, the local
    executor's shards as pieces)."""
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
