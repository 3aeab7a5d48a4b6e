"""Semantic near-duplicate removal: sentence embeddings + faiss range search over normalized
vectors (never an n x n matrix), clusters of pairs above a cosine threshold.

Pass 1 spools the records to disk and streams their embeddings, a batch at a time, to a spill
file (`embedding`: `minilm` by default, `static` for speed; MiniLM runs on CUDA when there is
one). Pass 2 finds every pair at or above `threshold` whose numbers agree (a template variant
with other numbers embeds almost identically but is another problem) and joins them into
clusters. Pass 3 streams the spool back, keeping one representative per cluster.

The spill file is the one copy of the vectors (`storage`: float32, float16, or int8 with a
per-vector scale: 4, 2 or 1 byte per dimension, +4 bytes per vector for int8). What stays in
memory depends on the index:
- flat (exact): the file is searched tile by tile: a tile of rows (`memory_mb` of float32) in a
  faiss flat index, every earlier row range-searched against it in chunks (pairs i < j), so
  memory is `memory_mb` whatever the corpus; one tile (the whole corpus, below ~700k MiniLM
  vectors at the default 1 GB) is exactly the single-index search, tiles cost one more pass
  over the file each.
- ivf: a faiss IVF index over the whole corpus holding `storage` codes: per vector 4 x dim
  (float32), 2 x dim (float16) or dim (int8, faiss's trained 8-bit scalar quantizer) bytes plus
  8 of id (MiniLM, 384 dims: 1.5 / 0.78 / 0.39 GB per 1M vectors), in memory up to `memory_mb`;
  beyond it the lists are built in shards of `memory_mb` and merged into a file beside the
  vectors (faiss OnDiskInvertedLists, memory-mapped: the OS pages in the probed lists). Queries
  probe `nprobe` of ~4 x sqrt(n) lists; the training sample (64 per list, float32: ~1.2 GB at
  10M MiniLM vectors) is the largest transient.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from rlclimb.pipelines.spill import RecordSpool, spilling
from rlclimb.pipelines.stage import Drop, Record, Stage, StageContext

from ..embedding import Embedder, load_embedder, missing_extra
from ..text_keys import canonical_text, numbers, numbers_hash
from .common import (
    ClusterConfig,
    cluster_summary,
    clusters,
    emit_clusters,
    example_clusters,
    examples_report,
    input_text,
    rank_of,
    write_report,
)

# Cosine thresholds per backend, chosen on the labeled eval set (benchmarks/dedup_quality.py).
DEFAULT_THRESHOLDS = {"minilm": 0.9, "minilm-int8": 0.9, "static": 0.95}
_QUERY_CHUNK = 4096  # vectors range-searched at once (bounds the result lists)


class VectorDedupConfig(ClusterConfig):
    backend: Literal["minilm", "minilm-int8", "static"] = "minilm"
    threshold: float | None = Field(None, gt=0, le=1)  # cosine; None = the backend's default
    numbers: Literal["exact", "ignore"] = "exact"  # exact: duplicates state the same numbers
    batch_size: int = Field(1024, ge=1)  # records embedded per call
    # flat: exact, compares every pair; ivf: searches nprobe of ~4*sqrt(n) lists (found 99.5% of
    # flat's pairs at nprobe 16 on 50k templated questions); auto: flat below 100k records
    index: Literal["auto", "flat", "ivf"] = "auto"
    nprobe: int = Field(16, ge=1)
    # how the spill file (and an ivf index) holds the vectors: float16 halves it, int8 quarters
    # it; cosines move by ~1e-4 (float16) / ~2e-3 (int8) (benchmarks/dedup_vector_memory.py)
    storage: Literal["float32", "float16", "int8"] = "float32"
    memory_mb: int = Field(1024, ge=1)  # flat search: float32 rows held at once (one tile)

    @model_validator(mode="after")
    def _extra_installed(self):
        if msg := missing_extra(self.backend):
            raise ValueError(msg)
        return self

    @property
    def cosine(self) -> float:
        return self.threshold if self.threshold is not None else DEFAULT_THRESHOLDS[self.backend]


def embedding_text(text: str) -> str:
    """What the model reads: the math-normalized text, case kept (one spelling per formula)."""
    return canonical_text(text, lowercase=False)


class VectorDedup(Stage):
    name = "dedup_vector"
    version = "1"
    kind = "global"
    Config = VectorDedupConfig
    config_outputs = ("spill_dir",)  # scratch space, not input
    drop_reason = "duplicate_vector"
    # Loads a model (~10 s) and embeds ~100 records/s on CPU: opt in with dedup_vector.enabled=true.
    enabled_by_default = False

    def setup(self, ctx: StageContext) -> None:
        self.embedder: Embedder = load_embedder(self.config.backend)

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        with spilling(ctx, self.name, self.config.spill_dir) as workdir:
            yield from self._run(records, ctx, workdir)

    def _run(self, records: Iterable[Record], ctx: StageContext, workdir) -> Iterator[Record | tuple[Record, Drop]]:
        c, t0 = self.config, time.perf_counter()
        embedder = getattr(self, "embedder", None) or load_embedder(c.backend)
        spool = RecordSpool(workdir)
        vectors = VectorFile(workdir, embedder.dim, c.storage)
        ranks, nums, present = [], [], []
        it = iter(records)
        while batch := list(islice(it, c.batch_size)):
            texts = []
            for rec in batch:
                spool.append(rec)
                texts.append(input_text(rec, c.field))
            vectors.append(embedder.encode([embedding_text(t) for t in texts]))  # to disk: no copy held
            ranks.append(np.fromiter((rank_of(r, c) for r in batch), np.int64, len(batch)))
            nums.append(np.fromiter((numbers_hash(numbers(t)) if c.numbers == "exact" else 0 for t in texts), np.int64, len(batch)))
            present.append(np.fromiter((bool(t.strip()) for t in texts), bool, len(batch)))
        spool.close()
        n = spool.count
        vectors.finish()
        rank = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
        num = np.concatenate(nums) if nums else np.zeros(0, np.int64)
        has_text = np.concatenate(present) if present else np.zeros(0, bool)
        t1 = time.perf_counter()
        left, right, _, candidates = range_pairs(
            vectors, c.cosine, c.index, c.nprobe, keep=lambda a, b: (num[a] == num[b]) & has_text[a] & has_text[b],
            storage=c.storage, memory_mb=c.memory_mb)
        labels, rep = clusters(n, left, right, rank)
        t2 = time.perf_counter()
        score = np.zeros(n)
        for lo in range(0, n, _QUERY_CHUNK):  # cosine to the representative, chunk by chunk
            hi = min(n, lo + _QUERY_CHUNK)
            score[lo:hi] = np.einsum("ij,ij->i", vectors.read(slice(lo, hi)), vectors.read(rep[lo:hi]))
        examples = example_clusters(labels, c.examples)
        yield from emit_clusters(spool, rep, labels, score, examples, self.drop_reason, "cosine ", c.field)
        self.report = {
            "stage": self.name,
            "version": self.version,
            "matcher": "vector",
            "config": c.model_dump(mode="json"),
            "threshold": c.cosine,
            "embedder": embedder.name,
            "dim": embedder.dim,
            "records": n,
            **cluster_summary(labels, rep),
            "candidate_pairs": candidates,
            "verified_pairs": len(left),
            "time_s": {"embed": round(t1 - t0, 3), "search_and_clusters": round(t2 - t1, 3),
                       "total": round(time.perf_counter() - t0, 3)},
            "records_per_s": round(n / max(time.perf_counter() - t0, 1e-9), 1),
            "examples": [examples_report(m) for m in examples.values()],
        }
        write_report(ctx, self.name, self.report)


class VectorFile:
    """Embedding batches appended to a file as `storage` (int8: codes, plus a per-vector scale in
    a second file), read back as float32 rows. Reads map the file only for their length, so
    the pages they touch leave the process with them."""

    def __init__(self, directory, dim: int, storage: str = "float32"):
        self.path, self.dim, self.storage, self.rows = directory / "vectors.bin", dim, storage, 0
        self.dtype = np.dtype(np.int8 if storage == "int8" else storage)
        self._out = open(self.path, "wb", buffering=1 << 20)
        self._scales = open(directory / "scales.bin", "wb") if storage == "int8" else None

    def __len__(self) -> int:
        return self.rows

    def append(self, vecs: np.ndarray) -> None:
        if self._scales is not None:  # symmetric per vector: the largest component -> 127
            scale = np.maximum(np.abs(vecs).max(axis=1), 1e-12).astype(np.float32) / 127
            self._scales.write(scale.tobytes())
            vecs = np.rint(vecs / scale[:, None])
        self._out.write(np.ascontiguousarray(vecs, dtype=self.dtype).tobytes())
        self.rows += len(vecs)

    def finish(self) -> None:
        self._out.close()
        if self._scales is not None:
            self._scales.close()

    def read(self, rows: slice | np.ndarray) -> np.ndarray:
        """Rows (a range, or indices) as float32. A range is read, not mapped; indices go
        through a map in chunks, each unmapped before the next, so the file pages a read
        touches never add up in the process."""
        if isinstance(rows, slice):
            lo, hi, _ = rows.indices(self.rows)
            out = self._read_range(self.path, self.dtype, lo, max(hi - lo, 0), self.dim).astype(np.float32, copy=False)
            if self.storage == "int8":
                out *= self._read_range(self.path.with_name("scales.bin"), np.float32, lo, max(hi - lo, 0), 1)
            return out
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.dim), np.float32)  # decoded chunk by chunk: no full copy of the codes
        for at in range(0, len(rows), _QUERY_CHUNK):
            part = rows[at : at + _QUERY_CHUNK]
            mapped = np.memmap(self.path, dtype=self.dtype, mode="r", shape=(self.rows, self.dim))
            out[at : at + len(part)] = mapped[part]
            if self.storage == "int8":
                mapped = np.memmap(self.path.with_name("scales.bin"), dtype=np.float32, mode="r", shape=(self.rows, 1))
                out[at : at + len(part)] *= mapped[part]
            del mapped
        return out

    @staticmethod
    def _read_range(path, dtype, start: int, count: int, width: int) -> np.ndarray:
        itemsize = np.dtype(dtype).itemsize * width
        return np.fromfile(path, dtype=dtype, count=count * width, offset=start * itemsize).reshape(count, width)


class ArrayRows:
    """An in-memory array read like a VectorFile."""

    def __init__(self, x: np.ndarray):
        self.x, self.dim = x, x.shape[1]

    def __len__(self) -> int:
        return len(self.x)

    def read(self, rows: slice | np.ndarray) -> np.ndarray:
        return _f32(self.x[rows])


Rows = VectorFile | ArrayRows


def _rows(x: np.ndarray | Rows) -> Rows:
    return ArrayRows(x) if isinstance(x, np.ndarray) else x


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


_SQ = {"float16": "QT_fp16", "int8": "QT_8bit"}


def build_index(x: np.ndarray | Rows, index: str = "auto", nprobe: int = 16, storage: str = "float32",
                rows: slice = slice(None), memory_mb: int | None = None):
    """An inner-product faiss index over normalized vectors (inner product = cosine): flat
    (float32), or ivf holding them as `storage` (a scalar-quantized IVF for float16 / int8).
    The vectors (`rows` of them) are added in chunks, so the index is their only copy in memory.
    An ivf index whose lists would pass `memory_mb` (with a VectorFile to spill beside) keeps
    them on disk (faiss OnDiskInvertedLists, memory-mapped)."""
    import faiss

    src = _rows(x)
    lo, hi, _ = rows.indices(len(src))
    n, dim = hi - lo, src.dim
    metric = faiss.METRIC_INNER_PRODUCT
    if index == "auto":
        index = "ivf" if n >= 100_000 else "flat"
    if index != "ivf" or n < 10_000:  # fewer vectors: too few to train the lists
        idx = faiss.IndexFlatIP(dim)
        _add(idx, src, lo, hi)
        return idx
    nlist = int(4 * np.sqrt(n))
    quantizer = faiss.IndexFlatIP(dim)
    if storage in _SQ:
        idx = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, getattr(faiss.ScalarQuantizer, _SQ[storage]), metric)
    else:
        idx = faiss.IndexIVFFlat(quantizer, dim, nlist, metric)
    sample = lo + np.sort(np.random.default_rng(0).choice(n, min(n, 64 * nlist), replace=False))
    idx.train(src.read(sample))
    idx.nprobe = nprobe
    shard_rows = n if memory_mb is None else max(_QUERY_CHUNK, memory_mb * 2**20 // (idx.code_size + 8))
    if shard_rows >= n or not isinstance(src, VectorFile):
        _add(idx, src, lo, hi)
        return idx
    from faiss.contrib.ondisk import merge_ondisk

    shards = []  # each shard's lists built in memory, written, then merged into one file on disk
    for s0 in range(lo, hi, shard_rows):
        shard = faiss.clone_index(idx)
        _add(shard, src, s0, min(hi, s0 + shard_rows), ids_from=lo)
        shards.append(str(src.path.with_name(f"ivf-shard-{len(shards)}.index")))
        faiss.write_index(shard, shards[-1])
        del shard
    merge_ondisk(idx, shards, str(src.path.with_name("ivf.lists")))
    for f in shards:
        Path(f).unlink()
    return idx


def _add(idx, src: Rows, lo: int, hi: int, ids_from: int | None = None) -> None:
    for at in range(lo, hi, _QUERY_CHUNK):
        chunk = src.read(slice(at, min(hi, at + _QUERY_CHUNK)))
        if ids_from is None:
            idx.add(chunk)
        else:
            idx.add_with_ids(chunk, np.arange(at - ids_from, at - ids_from + len(chunk), dtype=np.int64))


def range_pairs(x: np.ndarray | Rows, threshold: float, index: str = "auto", nprobe: int = 16,
                keep: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                storage: str = "float32", memory_mb: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """All pairs i < j with cosine >= threshold, by faiss range search in chunks of queries.

    Flat: the rows are searched a tile at a time (`memory_mb` of float32 rows in a flat index,
    queried by every row before the tile's end), so memory does not grow with the corpus.
    `keep(left, right)` filters each chunk's pairs as they come (the numbers gate), so a
    heavily templated corpus, where thousands of variants embed alike, holds only the pairs
    that survive. Returns (left, right, cosine, candidate pairs before the filter)."""
    src = _rows(x)
    n = len(src)
    if n < 2:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float32), 0
    if index == "auto":
        index = "ivf" if n >= 100_000 else "flat"
    tile = n if index == "ivf" else max(_QUERY_CHUNK, memory_mb * 2**20 // (4 * src.dim))
    lefts, rights, sims, candidates = [], [], [], 0
    # faiss returns inner products strictly above the radius; step just below the threshold
    radius = float(np.nextafter(np.float32(threshold), np.float32(-1)))
    for b0 in range(0, n, tile):
        b1 = min(n, b0 + tile)
        idx = build_index(src, index, nprobe, storage, rows=slice(b0, b1), memory_mb=memory_mb)
        for lo in range(0, b1, _QUERY_CHUNK):  # rows after the tile pair with it in a later tile
            lims, dist, labels = idx.range_search(src.read(slice(lo, min(b1, lo + _QUERY_CHUNK))), radius)
            query = lo + np.repeat(np.arange(len(lims) - 1), np.diff(lims).astype(np.int64))
            labels = labels.astype(np.int64) + b0
            upper = labels > query  # each pair once, no self-matches
            left, right, sim = query[upper], labels[upper], dist[upper]
            candidates += len(left)
            if keep is not None:
                ok = keep(left, right)
                left, right, sim = left[ok], right[ok], sim[ok]
            lefts.append(left)
            rights.append(right)
            sims.append(sim)
        del idx
    return np.concatenate(lefts), np.concatenate(rights), np.concatenate(sims), candidates
