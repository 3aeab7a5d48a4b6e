"""Decontamination: the dedup matchers run between a dataset and benchmark sets.

`BenchmarkIndex` holds the benchmark items (from JSONL / Parquet / Arrow files or HF-layout
directories) with their exact keys, MinHash band tables, number invariants and embeddings;
`match(texts)` returns, for each input text, the benchmark item it leaks (exact > minhash >
vector, first matcher that fires) with the matcher and score, or None. Math-aware: all matchers
compare `text_keys.canonical_text`, and fuzzy matches must state compatible numbers (`numbers`
policy), so a light paraphrase of a benchmark problem is caught while a problem from the same
template with other numbers is not.

The `decontam` stage streams its input in batches against the index: a flagged record is dropped
(`benchmark_match`, with the benchmark item, matcher and score in the detail), and every match is
listed in `<run>/reports/decontam.json`. `rlclimb decontam` (pipelines/decontam.py) runs the same
index over files.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from pydantic import Field, model_validator

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from ..embedding import Backend, load_embedder, missing_extra
from ..qa.importer import QUESTION_FIELDS
from ..quantities import compatible as quantities_compatible
from ..quantities import quantities
from ..text_keys import NumberPolicy, canonical_text, numbers, numbers_compatible
from .common import input_text, write_report
from .minhash_sketch import MinHasher
from .vector import build_index as build_vector_index
from .vector import embedding_text

Matcher = Literal["exact", "minhash", "vector"]
MATCHERS: tuple[str, ...] = ("exact", "minhash", "vector")
ID_FIELDS = ("id", "unique_id", "task_id", "problem_id", "question_id", "idx", "index")
BENCHMARK_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".json", ".parquet", ".arrow")
# Decontamination favours recall (a leak costs more than a dropped training item); chosen on
# the labeled eval set, see README "Thresholds".
DEFAULT_VECTOR_THRESHOLDS = {"minilm": 0.75, "minilm-int8": 0.75, "static": 0.75}


class BenchmarkError(Exception):
    """An unusable benchmark file: the message names the file and the fix."""


class DecontamConfig(StageConfig):
    benchmarks: list[str] = Field(default_factory=list)  # files or directories; none = stage off
    benchmark_field: str | None = None  # question field in the benchmark; None = auto-detect
    field: str = "question"  # the text of the records checked
    matchers: list[Matcher] = Field(default_factory=lambda: list(MATCHERS))
    minhash_threshold: float = Field(0.5, gt=0, le=1)
    ngram: int = Field(5, ge=1, le=32)
    num_perm: int = Field(128, ge=16, le=1024)
    vector_backend: Backend = "minilm"
    vector_threshold: float | None = Field(None, gt=0, le=1)  # None = the backend's default
    # fuzzy matches must state compatible numbers. quantities (default): quantities normalized
    # (stages/quantities.py: number words, fractions, percentages, twice/half, dozen, times of
    # day, units), one side's all found in the other and the other's at least `numbers_cover`
    # (0.6: on benchmarks/decontam_gsm8k.py 0.75 has the same recall and half the false flags,
    # 0.08% vs 0.15%, but rejects a rephrasing that adds one derived number to two, "in the two
    # months": 2 of 3 covered); exact / subset / ignore: the plain numbers multiset
    numbers: NumberPolicy | Literal["quantities"] = "quantities"
    numbers_cover: float = Field(0.6, ge=0, le=1)
    batch_size: int = Field(1024, ge=1)
    report_matches: int = Field(10_000, ge=0)  # matches listed in the report (all are ledgered)

    @model_validator(mode="after")
    def _check(self):
        if not self.matchers:
            raise ValueError("matchers is empty; use any of exact, minhash, vector")
        if self.benchmarks and "vector" in self.matchers and (msg := missing_extra(self.vector_backend)):
            raise ValueError(f"matcher 'vector' {msg.removeprefix('embedding ')}; or leave it out: "
                             f"matchers=[exact, minhash]")
        for b in self.benchmarks:
            if not Path(b).exists():
                raise ValueError(f"benchmark not found: {b}")
        return self

    @property
    def cosine(self) -> float:
        return self.vector_threshold if self.vector_threshold is not None else DEFAULT_VECTOR_THRESHOLDS[self.vector_backend]


# ---- benchmark files -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkItem:
    benchmark: str  # file (or directory) name
    id: str
    text: str


def benchmark_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(BENCHMARK_SUFFIXES)
                       and not p.name.startswith((".", "dataset_info", "state")))
        if not files:
            raise BenchmarkError(f"benchmark directory {path} has no {'/'.join(BENCHMARK_SUFFIXES)} files")
        return files
    if not path.name.endswith(BENCHMARK_SUFFIXES):
        raise BenchmarkError(f"benchmark {path}: unsupported format; expected one of {', '.join(BENCHMARK_SUFFIXES)} or an HF-layout directory")
    return [path]


def _rows(path: Path) -> Iterator[tuple[int, dict]]:
    """(1-based row or line, object) of one benchmark file."""
    name = path.name
    if name.endswith(".parquet"):
        n = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                n += 1
                yield n, row
        return
    if name.endswith(".arrow"):  # HF save_to_disk: Arrow IPC stream (or file) format
        try:
            reader = ipc.open_stream(pa.memory_map(str(path)))
        except pa.ArrowInvalid:
            reader = ipc.open_file(pa.memory_map(str(path)))
        table = reader.read_all()
        yield from enumerate(table.to_pylist(), start=1)
        return
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if name.endswith(".json") and data.lstrip()[:1] == b"[":
        try:
            rows = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise BenchmarkError(f"benchmark {path}: not valid JSON ({e}); fix the file") from None
        for i, row in enumerate(rows, start=1):
            if isinstance(row, dict):
                yield i, row
        return
    for i, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise BenchmarkError(f"benchmark {path} line {i}: not valid JSON ({e}); fix or remove the line") from None
        if not isinstance(row, dict):
            raise BenchmarkError(f"benchmark {path} line {i}: a JSON {type(row).__name__}, expected an object")
        yield i, row


def load_benchmark(path: str | Path, field: str | None = None) -> list[BenchmarkItem]:
    """The items of one benchmark (file or HF-layout directory), named after the path."""
    path = Path(path)
    if not path.exists():
        raise BenchmarkError(f"benchmark not found: {path}")
    name = path.name.removesuffix(".gz").rsplit(".", 1)[0] if path.is_file() else path.name
    items: list[BenchmarkItem] = []
    for file in benchmark_files(path):
        prefix = f"{name}:" if path.is_file() else f"{name}/{file.relative_to(path)}:"
        chosen = field
        for row_no, row in _rows(file):
            if chosen is None:
                chosen = next((f for f in QUESTION_FIELDS if f in row), None)
                if chosen is None:
                    raise BenchmarkError(
                        f"benchmark {file} row {row_no}: no question field (looked for {'/'.join(QUESTION_FIELDS)}; "
                        f"fields present: {', '.join(sorted(row)[:12])}); name it with --benchmark-field NAME")
            text = row.get(chosen)
            if text is None:
                raise BenchmarkError(f"benchmark {file} row {row_no}: no field '{chosen}' (fields present: "
                                     f"{', '.join(sorted(row)[:12])}); name the question field with --benchmark-field NAME")
            item_id = next((str(row[f]) for f in ID_FIELDS if row.get(f) not in (None, "")), None)
            items.append(BenchmarkItem(name, item_id or f"{prefix}{row_no}", str(text)))
    return items


# ---- the index -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    benchmark: BenchmarkItem
    matcher: str
    score: float


def exact_key(canonical: str) -> bytes:
    return hashlib.sha256(canonical.encode()).digest()[:16]


class BenchmarkIndex:
    """Benchmark items prepared for every configured matcher (all in memory: benchmarks are small)."""

    def __init__(self, items: list[BenchmarkItem], config: DecontamConfig):
        self.items, self.config = items, config
        canon = [canonical_text(it.text) for it in items]
        self.numbers = [self._numbers(it.text, t) for it, t in zip(items, canon, strict=True)]
        self.exact = {exact_key(t): i for i, t in reversed(list(enumerate(canon))) if t}
        self.hasher = self.bands = self.sigs = None
        if "minhash" in config.matchers:
            self.hasher = MinHasher(num_perm=config.num_perm, ngram=config.ngram, threshold=config.minhash_threshold)
            self.sigs = self.hasher.signatures(canon)
            self.bands: dict[int, list[int]] = {}
            for i, row in enumerate(self.hasher.band_keys(self.sigs).tolist()):
                if canon[i]:
                    for key in row:
                        self.bands.setdefault(key, []).append(i)
        self.embedder = self.faiss = None
        if "vector" in config.matchers:
            self.embedder = load_embedder(config.vector_backend)
            self.faiss = build_vector_index(self.embedder.encode([embedding_text(it.text) for it in items]))

    def _numbers(self, text: str, canon: str) -> tuple:
        return quantities(text) if self.config.numbers == "quantities" else numbers(canon, canonical=True)

    def _compatible(self, a: tuple, b: tuple) -> bool:
        if self.config.numbers == "quantities":
            return quantities_compatible(a, b, self.config.numbers_cover)
        return numbers_compatible(a, b, self.config.numbers)

    def match(self, texts: list[str]) -> list[Match | None]:
        c = self.config
        canon = [canonical_text(t) for t in texts]
        nums = [self._numbers(t, ct) for t, ct in zip(texts, canon, strict=True)]
        found: list[Match | None] = [None] * len(texts)
        if "exact" in c.matchers:
            for i, t in enumerate(canon):
                j = self.exact.get(exact_key(t)) if t else None
                if j is not None:
                    found[i] = Match(self.items[j], "exact", 1.0)
        todo = [i for i in range(len(texts)) if found[i] is None and canon[i]]
        if self.hasher is not None and todo:
            sigs = self.hasher.signatures([canon[i] for i in todo])
            for row, (i, keys) in enumerate(zip(todo, self.hasher.band_keys(sigs).tolist(), strict=True)):
                cands = {j for key in keys for j in self.bands.get(key, ())}
                best, best_j = 0.0, -1
                for j in cands:
                    score = float((sigs[row] == self.sigs[j]).mean())
                    if score >= c.minhash_threshold and score > best and self._compatible(nums[i], self.numbers[j]):
                        best, best_j = score, j
                if best_j >= 0:
                    found[i] = Match(self.items[best_j], "minhash", round(best, 4))
            todo = [i for i in todo if found[i] is None]
        if self.faiss is not None and todo:
            vecs = self.embedder.encode([embedding_text(texts[i]) for i in todo])
            k = min(10, len(self.items))
            sims, idx = self.faiss.search(vecs, k)
            for row, i in enumerate(todo):
                for sim, j in zip(sims[row], idx[row], strict=True):
                    if sim < c.cosine:
                        break
                    if j >= 0 and self._compatible(nums[i], self.numbers[j]):
                        found[i] = Match(self.items[j], "vector", round(float(sim), 4))
                        break
        return found


def load_index(config: DecontamConfig) -> BenchmarkIndex:
    items = [it for b in config.benchmarks for it in load_benchmark(b, config.benchmark_field)]
    if not items:
        raise BenchmarkError(f"benchmarks {', '.join(config.benchmarks)} hold no items")
    return BenchmarkIndex(items, config)


def match_record(input_id: str, text: str, m: Match) -> dict[str, Any]:
    """One line of matches.jsonl / one entry of the report."""
    return {"input_id": input_id, "input_text": text, "benchmark": m.benchmark.benchmark,
            "benchmark_id": m.benchmark.id, "benchmark_text": m.benchmark.text, "matcher": m.matcher,
            "score": m.score}


def record_input_id(record: Record) -> str:
    """The input's own id (kept by import in `meta`) when it has one, else the record id."""
    meta = record.get("meta")
    if isinstance(meta, str) and meta.startswith("{"):
        try:
            own = json.loads(meta).get("id")
        except ValueError:
            own = None
        if own not in (None, ""):
            return str(own)
    return str(record.get("id") or "")


# ---- the stage -----------------------------------------------------------------------------------


class Decontam(Stage):
    name = "decontam"
    version = "1"
    kind = "global"
    Config = DecontamConfig
    config_paths = ("benchmarks",)  # an edited benchmark file or directory re-runs the stage
    drop_reason = "benchmark_match"

    @property
    def active(self) -> bool:
        return bool(self.config.benchmarks)

    def setup(self, ctx: StageContext) -> None:
        self.index = load_index(self.config) if self.config.benchmarks else None

    def sketch(self, records: list[Record]) -> dict[str, Any]:
        """Each record's match, independent of the others: a cluster computes it with the
        benchmark index loaded once per actor (the broadcast); the stage on the driver only
        books the results. Benchmark items by position in the index."""
        index = getattr(self, "index", None)
        found = index.match([input_text(r, self.config.field) for r in records]) if index else [None] * len(records)
        pos = {id(item): j for j, item in enumerate(index.items)} if index else {}
        return {"item": np.array([-1 if m is None else pos[id(m.benchmark)] for m in found], np.int64),
                "matcher": np.array(["" if m is None else m.matcher for m in found], object),
                "score": np.array([0.0 if m is None else m.score for m in found], np.float64)}

    @staticmethod
    def _unsketch(sk: dict[str, Any], index: Any) -> list[Match | None]:
        return [None if j < 0 else Match(index.items[j], str(m), float(sc))
                for j, m, sc in zip(sk["item"].tolist(), sk["matcher"].tolist(), sk["score"].tolist(), strict=True)]

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        c, t0 = self.config, time.perf_counter()
        index = getattr(self, "index", None)
        if index is None and c.benchmarks:
            index = self.index = load_index(c)
        seen, matches, by_matcher, by_bench = 0, [], Counter(), Counter()
        feed = ctx.extras.get("sketches")  # matches found on a cluster (ray executor), in order
        it = iter(records)
        while batch := list(islice(it, c.batch_size)):
            seen += len(batch)
            if feed is not None:
                found = self._unsketch(feed.take(len(batch)), index)
            else:
                found = index.match([input_text(r, c.field) for r in batch]) if index else [None] * len(batch)
            for rec, m in zip(batch, found, strict=True):
                if m is None:
                    yield rec
                    continue
                by_matcher[m.matcher] += 1
                by_bench[m.benchmark.benchmark] += 1
                if len(matches) < c.report_matches:
                    matches.append(match_record(record_input_id(rec), input_text(rec, c.field), m))
                yield rec, Drop(self.drop_reason, f"matches {m.benchmark.benchmark} item {m.benchmark.id} "
                                                  f"({m.matcher} {m.score:.3f})")
        self.report = {
            "stage": self.name, "version": self.version, "config": c.model_dump(mode="json"),
            "thresholds": {"minhash_jaccard": c.minhash_threshold, "vector_cosine": c.cosine, "numbers": c.numbers},
            "benchmark_items": len(index.items) if index else 0,
            "records": seen, "flagged": sum(by_matcher.values()),
            "by_matcher": dict(by_matcher), "by_benchmark": dict(by_bench),
            "time_s": round(time.perf_counter() - t0, 3), "matches": matches,
        }
        write_report(ctx, self.name, self.report)
