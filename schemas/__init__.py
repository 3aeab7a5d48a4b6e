"""rlclimb.schemas: typed records (pydantic v2), their Arrow schemas, and Parquet/JSONL I/O."""

from .arrow import arrow_schema
from .ids import content_id, normalize_text, sha256_hex
from .io import (
    JsonlError,
    iter_parquet_batches,
    read_jsonl,
    read_records,
    read_rows,
    write_jsonl,
    write_parquet,
    write_records,
)
from .records import (
    RECORD_KINDS,
    CodeProblem,
    MixSource,
    MixSpec,
    QAItem,
    Rollout,
    Solution,
    Source,
    StageEvent,
    SWETask,
    TestCase,
    ToolCall,
    ToolEnvironment,
    ToolSpec,
    ToolTask,
    qa_id,
)

__all__ = [
    "RECORD_KINDS", "CodeProblem", "JsonlError", "MixSource", "MixSpec", "QAItem", "Rollout",
    "SWETask", "Solution", "Source", "StageEvent", "TestCase", "ToolCall", "ToolEnvironment",
    "ToolSpec", "ToolTask", "arrow_schema", "content_id", "iter_parquet_batches",
    "normalize_text", "qa_id", "read_jsonl", "read_records", "read_rows", "sha256_hex",
    "write_jsonl", "write_parquet", "write_records",
]
