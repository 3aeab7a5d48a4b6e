"""Parquet and JSONL reading/writing for records (rows are plain dicts matching an Arrow schema)."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from pydantic import BaseModel

from .arrow import arrow_schema


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    return False


def to_rows(batch: pa.RecordBatch | pa.Table) -> list[dict[str, Any]]:
    """Rows as dicts; maps become dicts (that conversion is 3x slower, so only when needed)."""
    if any(_has_map(f.type) for f in batch.schema):
        return batch.to_pylist(maps_as_pydicts="strict")
    return batch.to_pylist()


def to_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def write_parquet(rows_or_table: list[dict] | pa.Table, path: str | Path, schema: pa.Schema) -> Path:
    """Write atomically: a reader (or a resumed run) never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = rows_or_table if isinstance(rows_or_table, pa.Table) else to_table(rows_or_table, schema)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return path


def iter_parquet_batches(paths: Iterable[str | Path], batch_size: int = 10_000) -> Iterator[list[dict]]:
    """Stream rows from Parquet files as lists of dicts, `batch_size` rows at a time."""
    for path in paths:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=batch_size):
            yield to_rows(batch)


def read_rows(path: str | Path) -> list[dict]:
    return to_rows(pq.read_table(path))


def read_records(path: str | Path, model: type[BaseModel]) -> list[BaseModel]:
    return [model.model_validate(r) for r in read_rows(path)]


def write_records(records: list[BaseModel], path: str | Path) -> Path:
    if not records:
        raise ValueError("write_records needs at least one record to know its kind")
    model = type(records[0])
    return write_parquet([r.model_dump() for r in records], path, arrow_schema(model))


_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """`text` as valid Unicode: a lone surrogate (JSON's "\\ud800" can carry one, UTF-8 and so
    Parquet cannot) becomes U+FFFD. Free for the usual text, which encodes on the first try."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def safe_value(value: Any) -> Any:
    """`value` (a record, a list, ...) with every string, keys included, made `safe_text`."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_value(k): safe_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_value(v) for v in value]
    return value


# ---- YAML config ---------------------------------------------------------------------------------


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without aliases: `*name` re-uses a node, so a few lines of nested aliases
    ("billion laughs") expand to gigabytes. Config files never need them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not allowed in config files: write it out", mark
            )
        return super().compose_node(parent, index)


def load_yaml(text: str | bytes) -> Any:
    """`yaml.safe_load` for config text, refusing aliases (raises yaml.YAMLError): the one way
    rlclimb reads YAML configs (run config, LLM config, mix spec, taxonomy, trainer config)."""
    return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (a SafeLoader subclass)


# ---- JSONL -------------------------------------------------------------------------------------


MAX_LINE_BYTES = 16 << 20  # default cap on one JSONL line; $RLCLIMB_MAX_LINE_BYTES overrides
MAX_JSON_DEPTH = 200  # nesting a record may have (orjson, which writes ledger rows, stops at 254)


@dataclass(frozen=True)
class JsonlError:
    """A line that could not be read; the caller ledgers it with file and line."""

    path: str
    line: int
    reason: str  # "bad_json", "bad_encoding", "not_an_object", "too_deep", "line_too_long"
    detail: str


def max_line_bytes() -> int:
    raw = os.environ.get("RLCLIMB_MAX_LINE_BYTES")
    try:
        return int(raw) if raw else MAX_LINE_BYTES
    except ValueError:
        raise ValueError(f"RLCLIMB_MAX_LINE_BYTES must be a number of bytes, got {raw!r}") from None


def open_text_lines(path: str | Path, limit: int | None = None) -> Iterator[bytes | int]:
    """Raw lines of a `.jsonl` or `.jsonl.gz` file (decoding is per line, so one bad byte costs
    one line). A line longer than `limit` bytes is skipped without being held in memory: its
    length (an int) comes in its place."""
    if "://" in str(path):  # a URL (an input on object storage): read through fsspec
        import fsspec

        raw = fsspec.open(str(path), "rb").open()  # (its readline takes no size: buffer it)
        opened = gzip.GzipFile(fileobj=raw) if str(path).endswith(".gz") else io.BufferedReader(raw, 1 << 20)
    else:
        path = Path(path)
        opened = (gzip.open if path.suffix == ".gz" else open)(path, "rb")
    with opened as f:
        if limit is None:
            yield from f
            return
        while raw := f.readline(limit + 1):
            if len(raw) <= limit or raw.endswith(b"\n"):
                yield raw
                continue
            size = len(raw)
            while (chunk := f.readline(1 << 20)) and not chunk.endswith(b"\n"):
                size += len(chunk)
            yield size + len(chunk) - chunk.endswith(b"\n")  # the line's length, not its newline


def read_jsonl(path: str | Path, limit: int | None = None) -> Iterator[tuple[int, dict | JsonlError]]:
    """Yield (line number, object) for every non-blank line; unreadable lines come as JsonlError.
    `limit`: the longest line read, in bytes (default: max_line_bytes())."""
    limit = max_line_bytes() if limit is None else limit
    for no, raw in enumerate(open_text_lines(path, limit), start=1):
        if isinstance(raw, int):
            yield no, JsonlError(str(path), no, "line_too_long",
                                 f"{raw:,} bytes, over the {limit:,}-byte limit (RLCLIMB_MAX_LINE_BYTES)")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield no, JsonlError(str(path), no, "bad_encoding", f"not UTF-8 at byte {e.start}")
            continue
        text = text.lstrip("\ufeff").strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            yield no, JsonlError(str(path), no, "bad_json", f"{e.msg} at column {e.colno}")
            continue
        except RecursionError:
            yield no, JsonlError(str(path), no, "too_deep", f"nested deeper than {MAX_JSON_DEPTH} levels")
            continue
        if not isinstance(obj, dict):
            yield no, JsonlError(str(path), no, "not_an_object", f"a JSON {type(obj).__name__}")
            continue
        # Cheap guards first (C-speed counts): only a line with that many brackets can be that
        # deep, and only a \\uD8xx-\\uDFxx escape can make a lone surrogate (raw bytes cannot).
        if text.count("{") + text.count("[") > MAX_JSON_DEPTH and _too_deep(obj, MAX_JSON_DEPTH):
            yield no, JsonlError(str(path), no, "too_deep", f"nested deeper than {MAX_JSON_DEPTH} levels")
            continue
        if ("\\ud" in text or "\\uD" in text) and not _encodable(obj):
            yield no, JsonlError(str(path), no, "bad_encoding",
                                 "a lone UTF-16 surrogate escape (e.g. \\ud800) in a string: not text")
            continue
        yield no, obj


def _too_deep(obj: Any, limit: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        o, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(o, dict):
            stack.extend((v, depth + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, depth + 1) for v in o)
    return False


def _encodable(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def write_jsonl(rows: Iterable[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with opener(tmp, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)
    return path
