"""Readers turn input files into a deterministic stream of raw items (the engine shards it).

Every reader has `shards(size)`: the input in a fixed order, cut into shards, each a list of items
(record dicts or `Rejected`: an unreadable item with its location) or an Arrow record batch; and
a fingerprint that changes when its inputs change. JSONL and Parquet inputs may be URLs
(`s3://bucket/prefix/`, any fsspec filesystem): listed and streamed through the filesystem.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pyarrow as pa

from rlclimb.schemas.io import JsonlError, read_jsonl

from .stage import Drop
from .storage import RemoteFile, is_url, list_inputs, open_input, parquet_file


class InputError(Exception):
    """Bad invocation (missing file, wrong format): the CLI prints it on one line and exits 2."""


@dataclass(frozen=True)
class Rejected:
    drop: Drop
    file: str
    line: int | None
    raw: str = ""


def _files_fingerprint(paths: list[Path | RemoteFile]) -> str:
    h = hashlib.sha256()
    for p in paths:
        if isinstance(p, RemoteFile):  # the store's version (ETag) stands for size + mtime
            h.update(f"{p.url}|{p.size}|{p.version}\n".encode())
            continue
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def check_inputs(paths: list[str | Path], suffixes: tuple[str, ...], urls: bool = False) -> list[Path]:
    """Expand directories, check existence and format; raise InputError naming the problem.
    `urls`: the reader reads through fsspec, so a URL input is listed there (RemoteFile items)."""
    out: list[Path] = []
    if not paths:
        raise InputError("no input given: pass --input FILE (repeatable)")
    for raw in paths:
        if is_url(raw):
            if not urls:
                raise InputError(f"input {raw}: this reader takes local files only (URLs: JSONL, Parquet and PDF inputs)")
            out.extend(list_inputs(str(raw), suffixes))
            continue
        p = Path(raw)
        if not p.exists():
            raise InputError(f"input not found: {p}")
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(suffixes))
            if not found:
                raise InputError(f"no {'/'.join(suffixes)} files in directory: {p}")
            out.extend(found)
        elif not p.name.endswith(suffixes):
            raise InputError(f"unsupported input {p}: expected {' or '.join(suffixes)}")
        else:
            out.append(p)
    return out


def document_name(file: Path, inputs: list[str | Path]) -> str:
    """How records name their input file: relative to the `--input` it was found under (the file
    name for a file given directly; DIR/sub/file.jsonl for one found in directory DIR), so no
    local absolute path lands in a dataset."""
    if isinstance(file, RemoteFile):
        for raw in inputs:
            root = str(raw).rstrip("/")
            if file.url.startswith(root + "/"):
                return f"{root.rsplit('/', 1)[-1]}/{file.url[len(root) + 1:]}"
        return file.name
    for raw in inputs:
        if is_url(raw):
            continue
        root = Path(raw)
        if root == file:
            return file.name
        if root.is_dir() and file.is_relative_to(root):
            return (Path(root.resolve().name) / file.relative_to(root)).as_posix()
    return file.name


def sidecar_license(file: Path) -> str | None:
    """The license of an input file from its sidecar `FILE.license` (first line, e.g. cc-by-4.0)."""
    if isinstance(file, RemoteFile):
        side = file.sibling(file.name + ".license")
        if not side.exists():
            return None
        with side.open() as f:
            text = f.read().decode("utf-8", errors="replace")
    else:
        side = file.with_name(file.name + ".license")
        if not side.is_file():
            return None
        text = side.read_text(encoding="utf-8", errors="replace")
    first = text.strip().splitlines()
    return first[0].strip() if first else None


class JsonlReader:
    """JSONL / JSONL.gz files; each item is {"file", "line", "data"} for an import stage to map."""

    schema: pa.Schema | None = None

    def __init__(self, paths: list[str | Path]):
        self.paths = check_inputs(paths, (".jsonl", ".jsonl.gz", ".json.gz", ".ndjson"), urls=True)
        self.inputs = list(paths)

    def fingerprint(self) -> str:
        return _files_fingerprint(self.paths)

    def estimate_total(self) -> int | None:
        if any(p.suffix == ".gz" for p in self.paths):
            return None
        total = 0
        for p in self.paths:
            with open_input(p, "rb") as f:
                total += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        return total

    def __iter__(self) -> Iterator[dict | Rejected]:
        for path in self.paths:
            name, license_ = document_name(path, self.inputs), sidecar_license(path)
            for line, obj in read_jsonl(path):
                if isinstance(obj, JsonlError):
                    yield Rejected(Drop(obj.reason, obj.detail), name, obj.line)
                else:
                    yield {"file": name, "line": line, "data": obj, **({"license": license_} if license_ else {})}

    def shards(self, size: int) -> Iterator[list[dict | Rejected]]:
        it = iter(self)
        while chunk := list(islice(it, size)):
            yield chunk

    def describe(self) -> dict:
        return {"reader": "jsonl", "files": [str(p) for p in self.paths]}


class ParquetReader:
    """Parquet files whose rows already are records (e.g. a previous run's dataset)."""

    def __init__(self, paths: list[str | Path]):
        self.paths = check_inputs(paths, (".parquet",), urls=True)
        self.schema = parquet_file(self.paths[0]).schema_arrow

    def fingerprint(self) -> str:
        return _files_fingerprint(self.paths)

    def estimate_total(self) -> int:
        return sum(parquet_file(p).metadata.num_rows for p in self.paths)

    def shards(self, size: int) -> Iterator[pa.RecordBatch]:
        """Arrow batches: cheap to send to worker processes, which convert them to rows."""
        yield from parquet_shards(self.paths, size)

    def describe(self) -> dict:
        return {"reader": "parquet", "files": [str(p) for p in self.paths]}


def parquet_shards(paths: list[Path | RemoteFile], size: int) -> Iterator[pa.RecordBatch]:
    for path in paths:
        yield from parquet_file(path).iter_batches(batch_size=size)
