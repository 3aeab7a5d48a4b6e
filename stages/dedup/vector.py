"""Semantic near-duplicate removal: sentence embeddings + faiss range search over normalized
vectors (never an n x n matrix), clusters of pairs above a cosine threshold.

Pass 1 spools the records to disk and embeds them in batches (`embedding`: `minilm` by default,
`static` for speed). Pass 2 range-searches every vector against the index in chunks, keeps
pairs at or above `threshold` whose numbers agree (a template variant with other numbers embeds
almost identically but is another problem), and joins them into clusters. Pass 3 streams the
spool back, keeping one representative per cluster. Memory: one copy of the vectors, in the
faiss index (dim x 4 bytes per record: 1.5 KB for MiniLM, 1 KB for static: 15 GB for 10M MiniLM
vectors; `storage: float16` halves it at a large search-time cost); the batches stream to a file
in the spill directory, read back in chunks for the index, the queries and the scores; records
stay on disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from rlclimb.pipelines.stage import Drop, Record, Stage, StageContext

from ..embedding import Embedder, load_embedder, missing_extra
from ..text_keys import canonical_text, numbers, numbers_hash
from .common import (
    ClusterConfig,
    RecordSpool,
    cluster_summary,
    clusters,
    emit_clusters,
    example_clusters,
    examples_report,
    input_text,
    rank_of,
    spilling,
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
    # how the index (the one copy in memory) holds the vectors: float16 halves it, but faiss's
    # range search over a float16 flat index measured ~45x slower (4k x 64 dims: 42 s vs 0.9 s);
    # cosines move by ~1e-3 (tests/test_dedup_vector.py)
    storage: Literal["float16", "float32"] = "float32"

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
        x = vectors.finish()  # memory-mapped
        rank = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
        num = np.concatenate(nums) if nums else np.zeros(0, np.int64)
        has_text = np.concatenate(present) if present else np.zeros(0, bool)
        t1 = time.perf_counter()
        left, right, _, candidates = range_pairs(
            x, c.cosine, c.index, c.nprobe, keep=lambda a, b: (num[a] == num[b]) & has_text[a] & has_text[b],
            storage=c.storage)
        labels, rep = clusters(n, left, right, rank)
        t2 = time.perf_counter()
        score = np.zeros(n)
        for lo in range(0, n, _QUERY_CHUNK):  # cosine to the representative, chunk by chunk
            hi = min(n, lo + _QUERY_CHUNK)
            score[lo:hi] = np.einsum("ij,ij->i", _f32(x[lo:hi]), _f32(x[rep[lo:hi]]))
        del x
        vectors.close()
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
    """Embedding batches appended to a file (as `dtype`), memory-mapped once complete."""

    def __init__(self, directory, dim: int, dtype: str):
        self.path, self.dim, self.dtype, self.rows = directory / "vectors.bin", dim, np.dtype(dtype), 0
        self._out = open(self.path, "wb", buffering=1 << 20)
        self._map: np.memmap | None = None

    def append(self, vecs: np.ndarray) -> None:
        self._out.write(np.ascontiguousarray(vecs, dtype=self.dtype).tobytes())
        self.rows += len(vecs)

    def finish(self) -> np.ndarray:
        self._out.close()
        if not self.rows:
            return np.zeros((0, self.dim), self.dtype)
        self._map = np.memmap(self.path, dtype=self.dtype, mode="r", shape=(self.rows, self.dim))
        return self._map

    def close(self) -> None:
        self._map = None
        if not self._out.closed:
            self._out.close()


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def build_index(x: np.ndarray, index: str = "auto", nprobe: int = 16, storage: str = "float32"):
    """An inner-product faiss index over normalized vectors (inner product = cosine), holding
    them as `storage` (float16: a scalar-quantized index, half the memory); `x` (an array or a
    memmap) is added in chunks, so the index is the only full copy in memory."""
    import faiss

    dim = x.shape[1]
    metric = faiss.METRIC_INNER_PRODUCT
    if index == "auto":
        index = "ivf" if len(x) >= 100_000 else "flat"
    if index == "ivf" and len(x) >= 10_000:  # fewer vectors: too few to train the lists
        nlist = int(4 * np.sqrt(len(x)))
        quantizer = faiss.IndexFlatIP(dim)
        if storage == "float16":
            idx = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, faiss.ScalarQuantizer.QT_fp16, metric)
        else:
            idx = faiss.IndexIVFFlat(quantizer, dim, nlist, metric)
        sample = np.sort(np.random.default_rng(0).choice(len(x), min(len(x), 64 * nlist), replace=False))
        idx.train(_f32(x[sample]))
        idx.nprobe = nprobe
    elif storage == "float16":
        idx = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, metric)
    else:
        idx = faiss.IndexFlatIP(dim)
    for lo in range(0, len(x), _QUERY_CHUNK):
        idx.add(_f32(x[lo : lo + _QUERY_CHUNK]))
    return idx


def range_pairs(x: np.ndarray, threshold: float, index: str = "auto", nprobe: int = 16,
                keep: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                storage: str = "float32") -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """All pairs i < j with cosine >= threshold, by faiss range search in chunks of queries.

    `keep(left, right)` filters each chunk's pairs as they come (the numbers gate), so a
    heavily templated corpus, where thousands of variants embed alike, holds only the pairs
    that survive. Returns (left, right, cosine, candidate pairs before the filter)."""
    if len(x) < 2:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float32), 0
    idx = build_index(x, index, nprobe, storage)
    lefts, rights, sims, candidates = [], [], [], 0
    # faiss returns inner products strictly above the radius; step just below the threshold
    radius = float(np.nextafter(np.float32(threshold), np.float32(-1)))
    for lo in range(0, len(x), _QUERY_CHUNK):
        lims, dist, labels = idx.range_search(_f32(x[lo : lo + _QUERY_CHUNK]), radius)
        query = lo + np.repeat(np.arange(len(lims) - 1), np.diff(lims).astype(np.int64))
        upper = labels > query  # each pair once, no self-matches
        left, right, sim = query[upper], labels[upper].astype(np.int64), dist[upper]
        candidates += len(left)
        if keep is not None:
            ok = keep(left, right)
            left, right, sim = left[ok], right[ok], sim[ok]
        lefts.append(left)
        rights.append(right)
        sims.append(sim)
    return np.concatenate(lefts), np.concatenate(rights), np.concatenate(sims), candidates


