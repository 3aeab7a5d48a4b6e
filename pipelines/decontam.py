"""`rlclimb decontam`: check input files against benchmark sets, write every match and a clean copy.

    rlclimb decontam --benchmark math500.jsonl --input train.jsonl --out decontam/

writes
    DIR/matches.jsonl      one line per flagged input item: input_id, input_text, benchmark,
                           benchmark_id, benchmark_text, matcher, score (+ input_file, input_line)
    DIR/clean/<input>      the input without the flagged items, same format (JSONL lines are
                           copied byte for byte; Parquet keeps its schema)
    DIR/report.json        counts by matcher and benchmark, thresholds, unreadable lines

Everything that can be wrong with the invocation (missing files, unknown fields, a missing extra)
is found before DIR is touched. Unreadable JSONL lines cannot be vouched for: they are left out of
the clean copy and listed in the report with file and line.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
from pydantic import ValidationError

from rlclimb.stages.dedup.decontam import (
    BenchmarkError,
    BenchmarkIndex,
    DecontamConfig,
    Match,
    load_index,
    match_record,
)
from rlclimb.stages.qa.importer import QUESTION_FIELDS

from .readers import InputError, check_inputs
from .rundir import check_dir, claim_dir

INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".parquet")
MAX_LISTED_UNREADABLE = 100


@dataclass
class InputFile:
    path: Path
    dest: Path  # relative path of its clean copy under DIR/clean
    field: str = ""


@dataclass
class Tally:
    records: int = 0
    flagged: int = 0
    no_text: int = 0
    by_matcher: Counter = field(default_factory=Counter)
    by_benchmark: Counter = field(default_factory=Counter)
    unreadable: list[dict] = field(default_factory=list)
    unreadable_count: int = 0


def plan_inputs(inputs: list[str], field_name: str | None) -> list[InputFile]:
    """Expand directories, name each clean copy, and settle the question field per file."""
    files: list[InputFile] = []
    used: set[Path] = set()
    for raw in inputs:
        root = Path(raw)
        for path in check_inputs([raw], INPUT_SUFFIXES):
            dest = Path(root.name) / path.relative_to(root) if root.is_dir() else Path(path.name)
            k = 2
            while dest in used:  # two inputs with one name: keep both
                dest = dest.with_name(f"{k}-{dest.name}")
                k += 1
            used.add(dest)
            files.append(InputFile(path, dest, _question_field(path, field_name)))
    return files


def _question_field(path: Path, field_name: str | None) -> str:
    if path.name.endswith(".parquet"):
        names = pq.read_schema(path).names
    else:
        first = next((obj for obj in _jsonl_objects(path) if isinstance(obj[2], dict)), None)
        if first is None:
            raise InputError(f"input {path} has no readable JSON object")
        names = list(first[2])
    if field_name is not None:
        if field_name not in names:
            raise InputError(f"input {path}: no field '{field_name}' (fields: {', '.join(sorted(names)[:12])}); "
                             f"pass the question field with --field NAME")
        return field_name
    found = next((f for f in QUESTION_FIELDS if f in names), None)
    if found is None:
        raise InputError(f"input {path}: no question field (looked for {'/'.join(QUESTION_FIELDS)}; fields: "
                         f"{', '.join(sorted(names)[:12])}); pass it with --field NAME")
    return found


def _jsonl_objects(path: Path) -> Iterator[tuple[int, bytes, Any]]:
    """(line, raw line, object | error message) for every non-blank line."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        for no, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                yield no, raw, f"bad_json: {e}"
                continue
            yield no, raw, obj if isinstance(obj, dict) else f"not_an_object: a JSON {type(obj).__name__}"


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _own_id(obj: dict, fallback: str) -> str:
    value = obj.get("id")
    return fallback if value in (None, "") else str(value)


class _Writer:
    """Matches and bookkeeping shared by the JSONL and Parquet paths."""

    def __init__(self, index: BenchmarkIndex, matches, tally: Tally, batch_size: int):
        self.index, self.matches, self.tally, self.batch_size = index, matches, tally, batch_size

    def check(self, file: InputFile, items: list[tuple[int, str, str | None]]) -> list[bool]:
        """items: (line or row, input id, text). Returns keep flags; writes flagged items' matches."""
        t = self.tally
        texts = [text or "" for _, _, text in items]
        found: list[Match | None] = self.index.match(texts)
        keep = []
        for (where, input_id, text), m in zip(items, found, strict=True):
            t.records += 1
            t.no_text += text is None
            if m is None:
                keep.append(True)
                continue
            keep.append(False)
            t.flagged += 1
            t.by_matcher[m.matcher] += 1
            t.by_benchmark[m.benchmark.benchmark] += 1
            line = {**match_record(input_id, text or "", m), "input_file": str(file.path), "input_line": where}
            self.matches.write(orjson.dumps(line) + b"\n")
        return keep


def _clean_jsonl(file: InputFile, dest: Path, w: _Writer) -> None:
    opener = gzip.open if dest.name.endswith(".gz") else open
    with opener(dest, "wb") as out:
        batch: list[tuple[int, bytes, dict]] = []

        def flush() -> None:
            items = [(no, _own_id(obj, f"{file.path.name}:{no}"), _text(obj.get(file.field))) for no, _, obj in batch]
            for (_, raw, _), keep in zip(batch, w.check(file, items), strict=True):
                if keep:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
            batch.clear()

        for no, raw, obj in _jsonl_objects(file.path):
            if isinstance(obj, str):
                w.tally.unreadable_count += 1
                if len(w.tally.unreadable) < MAX_LISTED_UNREADABLE:
                    w.tally.unreadable.append({"file": str(file.path), "line": no, "reason": obj})
                continue
            batch.append((no, raw, obj))
            if len(batch) >= w.batch_size:
                flush()
        if batch:
            flush()


def _clean_parquet(file: InputFile, dest: Path, w: _Writer) -> None:
    import pyarrow as pa

    pf = pq.ParquetFile(file.path)
    has_id = "id" in pf.schema_arrow.names
    row = 0
    with pq.ParquetWriter(dest, pf.schema_arrow, compression="zstd") as out:
        for batch in pf.iter_batches(batch_size=w.batch_size):
            texts = batch.column(file.field).to_pylist()
            ids = batch.column("id").to_pylist() if has_id else [None] * len(texts)
            items = [(row + k + 1, f"{file.path.name}:{row + k + 1}" if i in (None, "") else str(i), _text(t))
                     for k, (i, t) in enumerate(zip(ids, texts, strict=True))]
            row += len(texts)
            keep = w.check(file, items)
            out.write_batch(batch.filter(pa.array(keep, type=pa.bool_())))


def run_decontam(benchmarks: list[str], inputs: list[str], out: Path, *, field_name: str | None = None,
                 log: Callable[[str], None] | None = None, **settings: Any) -> dict[str, Any]:
    """Check `inputs` against `benchmarks` into `out` (see module doc); returns the report.

    `settings` are DecontamConfig fields (matchers, minhash_threshold, vector_backend, ...).
    Raises InputError for a bad invocation, before anything is written."""
    t0 = time.perf_counter()
    log = log or (lambda _msg: None)
    if not benchmarks:
        raise InputError("no benchmark given: pass --benchmark FILE (repeatable)")
    try:
        config = DecontamConfig(benchmarks=benchmarks, **settings)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise InputError(f"{where + ': ' if where else ''}{err['msg'].removeprefix('Value error, ')}") from None
    files = plan_inputs(inputs, field_name)
    check_dir(out, "decontam")  # never write into (or over) a directory rlclimb did not create
    try:
        log(f"loading benchmarks: {', '.join(benchmarks)}")
        index = load_index(config)
    except BenchmarkError as e:
        raise InputError(str(e)) from None
    log(f"{len(index.items):,} benchmark items; matchers: {', '.join(config.matchers)}")

    claim_dir(out, "decontam")
    clean = out / "clean"
    if clean.exists():
        shutil.rmtree(clean)  # a re-run replaces the previous result
    tally = Tally()
    tmp_matches = out / f".matches.jsonl.tmp-{os.getpid()}"
    with open(tmp_matches, "wb") as matches:
        writer = _Writer(index, matches, tally, config.batch_size)
        for file in files:
            dest = clean / file.dest
            dest.parent.mkdir(parents=True, exist_ok=True)
            before = (tally.records, tally.flagged)
            (_clean_parquet if file.path.name.endswith(".parquet") else _clean_jsonl)(file, dest, writer)
            log(f"{file.path}: {tally.records - before[0]:,} items, {tally.flagged - before[1]:,} flagged")
    os.replace(tmp_matches, out / "matches.jsonl")
    report = {
        "benchmarks": dict(Counter(it.benchmark for it in index.items)),
        "inputs": [str(f.path) for f in files],
        "question_fields": {str(f.path): f.field for f in files},
        "records": tally.records,
        "flagged": tally.flagged,
        "kept": tally.records - tally.flagged,
        "by_matcher": dict(tally.by_matcher),
        "by_benchmark": dict(tally.by_benchmark),
        "no_text": tally.no_text,
        "unreadable_count": tally.unreadable_count,
        "unreadable": tally.unreadable,
        "thresholds": {"minhash_jaccard": config.minhash_threshold, "vector_cosine": config.cosine,
                       "vector_backend": config.vector_backend, "numbers": config.numbers,
                       "numbers_cover": config.numbers_cover},
        "config": config.model_dump(mode="json"),
        "time_s": round(time.perf_counter() - t0, 3),
    }
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return report
