"""Per-stage stats and the drop ledger: what the engine records about every decision."""

from __future__ import annotations

import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from .stage import Drop, Record

LEDGER_SCHEMA = pa.schema(
    [
        pa.field("stage", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("detail", pa.string()),
        pa.field("record_id", pa.string()),
        pa.field("file", pa.string()),
        pa.field("line", pa.int64()),
        pa.field("model", pa.string()),
        pa.field("votes", pa.list_(pa.string())),
        pa.field("cost", pa.float64()),
        pa.field("record", pa.string()),  # JSON of the dropped record, for audit and re-runs
    ]
)
MAX_LEDGER_RECORD_CHARS = 100_000
READ_STAGE = "read"  # the pseudo-stage that ledgers unreadable input items


@dataclass
class StageStats:
    """Counts for one stage: `in` records seen, `kept` passed on, `out` emitted (expand > kept)."""

    seen: int = 0
    kept: int = 0
    out: int = 0
    dropped: Counter = field(default_factory=Counter)
    time_s: float = 0.0
    cached: int = 0  # records answered from the row cache (resumed or repeated work)
    llm: dict[str, float] = field(default_factory=dict)

    def add(self, other: StageStats) -> None:
        self.seen += other.seen
        self.kept += other.kept
        self.out += other.out
        self.dropped.update(other.dropped)
        self.time_s += other.time_s
        self.cached += other.cached
        for k, v in other.llm.items():
            self.llm[k] = self.llm.get(k, 0) + v

    def to_dict(self) -> dict[str, Any]:
        return {
            "in": self.seen,
            "kept": self.kept,
            "out": self.out,
            "dropped": dict(sorted(self.dropped.items(), key=lambda kv: -kv[1])),
            "time_s": round(self.time_s, 4),
            "cached": self.cached,
            "llm": self.llm,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StageStats:
        return cls(
            seen=d["in"], kept=d["kept"], out=d["out"], dropped=Counter(d["dropped"]),
            time_s=d["time_s"], cached=d.get("cached", 0), llm=dict(d.get("llm", {})),
        )


def locate(record: Record) -> tuple[str | None, int | None]:
    """(file, line) of a record: its source block, or a raw reader item's position."""
    src = record.get("source")
    if isinstance(src, dict) and (src.get("document") or src.get("line")):
        return src.get("document"), src.get("line")
    return record.get("file"), record.get("line")


def ledger_row(stage: str, drop: Drop, record: Record | None, file=None, line=None, raw: str = "") -> dict:
    if record is not None:
        file, line = locate(record)
        raw = orjson.dumps(record, default=str).decode()  # 7x faster than json here: drops can be many
    return {
        "stage": stage,
        "reason": drop.reason,
        "detail": drop.detail,
        "record_id": record.get("id") if record is not None else None,
        "file": file,
        "line": line,
        "model": drop.model,
        "votes": list(drop.votes),
        "cost": drop.cost,
        "record": raw[:MAX_LEDGER_RECORD_CHARS],
    }


def exception_drop(exc: BaseException) -> Drop:
    """A stage raised on one record: ledger it (reason from the exception when it has one)."""
    reason = getattr(exc, "drop_reason", None) or "error"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return Drop(reason, f"{type(exc).__name__}: {exc}{where}"[:2000])
