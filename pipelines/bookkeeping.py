"""Per-stage stats and the drop ledger: what the engine records about every decision."""

from __future__ import annotations

import json
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from rlclimb.schemas.io import safe_text

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
    """Counts for one stage: `in` records seen, `kept` not dropped, `out` passed on (an expand
    stage's out counts its children); in = dropped + out - created + merged."""

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
            "created": self.created,
            "merged": self.merged,
        }

    @property
    def created(self) -> int:
        """Records an expand stage made beyond the ones it passed on (one part -> several)."""
        return max(self.out - (self.seen - sum(self.dropped.values())), 0)

    @property
    def merged(self) -> int:
        """Records neither dropped nor passed on: folded into others (e.g. an answer into its
        question by `pair`), so not in the ledger."""
        return max(self.seen - sum(self.dropped.values()) - self.out, 0)

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
    """One ledger row. Never raises on what a record holds: user text (a lone surrogate, an id
    that is a number) is made safe for the string columns, so a bad record is ledgered, not fatal."""
    if record is not None:
        file, line = locate(record)
        raw = _record_json(record)
    return {
        "stage": stage,
        "reason": drop.reason,
        "detail": _text(drop.detail),
        "record_id": _text(record.get("id")) if record is not None else None,
        "file": _text(file),
        "line": line if type(line) is int else None,
        "model": _text(drop.model),
        "votes": [_text(v) for v in drop.votes],
        "cost": drop.cost,
        "record": safe_text(raw[:MAX_LEDGER_RECORD_CHARS]),
    }


def _record_json(record: Record) -> str:
    try:
        return orjson.dumps(record, default=str).decode()  # 7x faster than json: drops can be many
    except TypeError:  # a lone surrogate, nesting past orjson's limit: the slow, tolerant way
        try:
            return json.dumps(record, default=str)  # ASCII escapes keep the offending text as is
        except (ValueError, RecursionError) as e:
            return f"<record not serializable: {type(e).__name__}>"


def _text(value: Any) -> str | None:
    return None if value is None else safe_text(value if isinstance(value, str) else str(value))


def exception_drop(exc: BaseException) -> Drop:
    """A stage raised on one record: ledger it (reason from the exception when it has one)."""
    reason = getattr(exc, "drop_reason", None) or "error"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return Drop(reason, f"{type(exc).__name__}: {exc}{where}"[:2000])


PASS_RATE_BINS = ("0", "(0, 0.5)", "[0.5, 1)", "1")


def _rate_bin(rate: float) -> str:
    if rate <= 0:
        return "0"
    if rate >= 1:
        return "1"
    return "(0, 0.5)" if rate < 0.5 else "[0.5, 1)"


def dataset_summary(data_dir: Path) -> dict[str, Any]:
    """What a finished dataset holds beyond its size: items with no answer (a textbook whose
    answer key lacks them), and the difficulty and per-tier pass-rate distributions of scored runs."""
    files = sorted(Path(data_dir).glob("*.parquet"))
    names = set(pq.read_schema(files[0]).names) if files else set()
    columns = [c for c in ("answer", "difficulty", "pass_rates") if c in names]
    if not columns:
        return {}
    rows = pq.read_table(data_dir, columns=columns).to_pylist()
    summary: dict[str, Any] = {}
    if "answer" in names:
        summary["unanswered"] = sum(1 for r in rows if not (r["answer"] or "").strip())
    if "difficulty" in names and any(r["difficulty"] for r in rows):
        summary["difficulty"] = dict(Counter(r["difficulty"] or "none" for r in rows).most_common())
    by_tier: dict[str, Counter] = {}
    for r in rows if "pass_rates" in names else []:
        for tr in r["pass_rates"] or []:
            by_tier.setdefault(tr["tier"], Counter())[_rate_bin(tr["rate"])] += 1
    if by_tier:
        summary["pass_rates"] = {t: {b: c[b] for b in PASS_RATE_BINS} for t, c in sorted(by_tier.items())}
    return summary
