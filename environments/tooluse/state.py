"""Canonical final-state hashing: equal states hash equal in any process, on any machine.

The state is a JSON document (dict of collections) or a SQLite database exported as
{table: [row, ...]}. The hash is the SHA-256 of canonical JSON: keys sorted, floats normalized
(an integral float is its int, others rounded to 12 significant digits, -0.0 is 0, NaN/inf by
name), and the lists named `unordered` (SQLite tables always) sorted by their items' canonical
text, since a table's row order or a set's order means nothing. Other lists keep their order (an
order's line items, a payment history are sequences).

`unordered` paths are dotted with `*` for any key or index: "tables.*", "users.*.tags".
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from typing import Any

ALL = "*"


def _number(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 2**53:
        return int(x)
    return float(f"{x:.12g}")


def _match(path: tuple[str, ...], patterns: list[tuple[str, ...]]) -> bool:
    return any(
        len(p) == len(path) and all(a == ALL or a == b for a, b in zip(p, path, strict=True))
        for p in patterns
    )


def _plain(value: Any) -> Any:
    """`canonical` with no unordered lists: the fast path (no paths to track)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        return {str(k): _plain(v) for k, v in value.items()}  # dumps sorts the keys
    if t is list or t is tuple:
        return [_plain(v) for v in value]
    return canonical(value, [], ("",))


def canonical(value: Any, unordered: Iterable[str] = (), _path: tuple[str, ...] = ()) -> Any:
    """`value` as plain JSON types in canonical form (dict keys as strings, sets sorted)."""
    if not _path and not unordered:
        return _plain(value)
    patterns = [tuple(p.split(".")) for p in unordered] if not _path else unordered
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, dict):
        if not patterns:
            return {str(k): _plain(v) for k, v in value.items()}
        return {
            str(k): canonical(v, patterns, (*_path, str(k)))
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [canonical(v, patterns, (*_path, str(i))) for i, v in enumerate(value)]
        if isinstance(value, (set, frozenset)) or _match(_path, patterns):
            items.sort(key=dumps)
        return items
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"state holds a {type(value).__name__} at {'.'.join(_path) or 'top level'}")


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonical_hash(state: Any, unordered: Iterable[str] = ()) -> str:
    return hashlib.sha256(dumps(canonical(state, list(unordered))).encode()).hexdigest()
