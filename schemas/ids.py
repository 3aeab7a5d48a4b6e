"""Stable content ids and the text normalization they rest on."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Canonical form of free text: NFKC, unified newlines, trimmed lines, collapsed blank runs.

    Used on import so that equal content gets equal ids whatever its encoding quirks.
    """
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").replace("\ufeff", "")
    lines = [_WS.sub(" ", line).strip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def sha256_hex(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x1f")  # unit separator: ("ab", "c") != ("a", "bc")
    return h.hexdigest()


def content_id(kind: str, *parts: str, length: int = 24) -> str:
    """Id of a record from its kind and normalized content (hex prefix of a SHA-256)."""
    return f"{kind}-{sha256_hex(kind, *parts)[:length]}"
