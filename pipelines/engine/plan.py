"""Planning: a pipeline's stages grouped into segments, each named by a chained fingerprint."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlclimb.schemas.arrow import arrow_schema
from rlclimb.schemas.records import StageEvent

from ..stage import Stage
from ..storage import RemoteFile, parquet_file


@dataclass
class Pipeline:
    """A source reader and the stages that turn its items into records."""

    name: str
    reader: Any  # an iterable of dict | Rejected with fingerprint(), estimate_total(), describe()
    stages: list[Stage]
    config: dict[str, Any] | None = None  # the resolved config; default: each stage's config
    shard_size: int = 10_000

    def __post_init__(self) -> None:
        if self.config is None:  # a stage behind a combinator (consensus) reports its inner config
            self.config = {s.name: getattr(s, "inner", s).config.model_dump(mode="json") for s in self.stages}


@dataclass
class RunOptions:
    engine: str = "local"  # "local": worker processes on this machine; "ray": Ray Data on a cluster
    workers: int = 1  # processes (local) or CPUs of a new local Ray instance (ray, no address)
    ray_address: str | None = None  # a cluster to join (else RAY_ADDRESS, else a local Ray)
    progress: bool = True
    seed: int = 0
    llm: Any = None  # an LLMConfig; the run's LLMClient is built from it
    shards_in_flight: int = 0  # 0: 2 x workers (local), the cluster's CPUs / a stage's num_cpus (ray)
    retry_transient: bool = False  # redo the shards of a finished run that ledgered transient drops
    force: bool = False  # replace a run of another pipeline or other inputs in the run directory


@dataclass
class RunResult:
    run_dir: Path
    records: int
    stats: dict[str, Any]


PROVENANCE_FIELD = pa.field("provenance", pa.list_(pa.struct(list(arrow_schema(StageEvent)))))


@dataclass
class Segment:
    index: int
    stages: list[Stage]
    fingerprint: str
    schema: pa.Schema | None  # of the segment's output records (None: inferred per shard)
    first: bool  # reads from the pipeline's reader (vs the previous segment's parts)
    metadata: dict[bytes, bytes] = field(default_factory=dict)  # Parquet metadata of its parts

    @property
    def is_global(self) -> bool:
        return self.stages[0].kind == "global"

    @property
    def is_async(self) -> bool:
        return any(s.is_async for s in self.stages)

    @property
    def dirname(self) -> str:
        return f"{self.index:02d}-{self.stages[-1].name}-{self.fingerprint}"


def plan_segments(pipeline: Pipeline) -> list[Segment]:
    groups: list[list[Stage]] = []
    for st in pipeline.stages:
        if st.kind == "global" or not groups or groups[-1][0].kind == "global":
            groups.append([st])
        else:
            groups[-1].append(st)
    if not groups:
        raise ValueError(f"pipeline {pipeline.name} has no stages")
    segments, prev_fp, schema = [], pipeline.reader.fingerprint(), pipeline.reader.schema
    trail: list[dict[str, str]] = upstream_trail(pipeline.reader)  # what the input records passed
    run = {"pipeline": pipeline.name, "input": prev_fp}
    for i, stages in enumerate(groups):
        h = hashlib.sha256(f"{prev_fp}|{pipeline.shard_size}".encode())
        for st in stages:
            h.update(st.fingerprint.encode())
            if st.output_model is not None:
                schema = arrow_schema(st.output_model)
        if schema is not None and "provenance" not in schema.names:  # every record carries its history
            schema = schema.append(PROVENANCE_FIELD)
        trail.extend({"name": st.name, "version": st.version, "fingerprint": st.fingerprint, **run} for st in stages)
        metadata = {b"rlclimb.stages": json.dumps(trail).encode()}  # each data file names the stages its records passed
        if schema is not None:
            schema = schema.with_metadata({**(schema.metadata or {}), **metadata})
        prev_fp = h.hexdigest()[:12]
        segments.append(Segment(i, stages, prev_fp, schema, first=i == 0, metadata=metadata))
    return segments


def upstream_trail(reader: Any) -> list[dict[str, str]]:
    """The stage trail stored in the input files by the runs that made them (a chained run reads
    another run's data): carried forward, so a dataset names every stage since import."""
    trail: list[dict[str, str]] = []
    seen: set[tuple] = set()
    for path in getattr(reader, "paths", None) or []:
        if not str(path).endswith(".parquet"):
            continue
        try:
            meta = (parquet_file(path).schema_arrow if isinstance(path, RemoteFile) else pq.read_schema(path)).metadata or {}
            entries = json.loads(meta.get(b"rlclimb.stages", b"[]"))
        except (OSError, ValueError, pa.ArrowInvalid):
            continue
        for e in entries:  # several input files of one run hold the same trail: once
            key = (e.get("name"), e.get("fingerprint"), e.get("pipeline"), e.get("input"))
            if key not in seen:
                seen.add(key)
                trail.append(e)
    return trail
