"""The row-level result cache of `cache = True` stages: keys, (de)serialized results, what is never cached."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from ..stage import TRANSIENT_DROP_REASONS, Drop, Keep, Record, Stage


def content_key(stage: Stage, record: Record) -> str:
    """Cache key: the stage's identity + the record's content (provenance excluded: history is
    not content, and a re-versioned upstream stage should not invalidate identical records)."""
    body = orjson.dumps({k: v for k, v in record.items() if k != "provenance"}, option=orjson.OPT_SORT_KEYS, default=str)
    return f"{stage.fingerprint}:{hashlib.sha256(body).hexdigest()}"


def rebase(res: Any, rec: Record) -> Any:
    """A cached result was keyed by content, not history: give it the current record's history."""
    history = list(rec.get("provenance") or [])
    if isinstance(res, dict):
        res["provenance"] = history
    elif isinstance(res, Keep):
        res.record["provenance"] = history
    elif isinstance(res, list):
        for child in res:
            child.pop("provenance", None)
    return res


def is_transient(res: Any) -> bool:
    """Failures worth retrying on resume (endpoint down, rate limits) are not cached."""
    return isinstance(res, Drop) and res.reason in TRANSIENT_DROP_REASONS


def encode(res: Any) -> bytes:
    if isinstance(res, Drop):
        payload = {"t": "drop", "v": res.__dict__ | {"votes": list(res.votes)}}
    elif isinstance(res, Keep):
        payload = {"t": "keep", "v": res.__dict__ | {"votes": list(res.votes)}}
    else:
        payload = {"t": "raw", "v": res}
    return json.dumps(payload, default=str).encode()


def decode(blob: bytes) -> Any:
    payload = json.loads(blob)
    v = payload["v"]
    if payload["t"] == "drop":
        return Drop(**{**v, "votes": tuple(v["votes"])})
    if payload["t"] == "keep":
        return Keep(**{**v, "votes": tuple(v["votes"])})
    return v
