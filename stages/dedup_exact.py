"""Exact dedup: SHA-256 of a normalized text field; the first occurrence in input order is kept."""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from collections.abc import Iterable, Iterator

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

_WS = re.compile(r"\s+")
_LATEX_SPACING = re.compile(r"\\[,;:! ]|\\(?:q?quad|thinspace|medspace|thickspace)\b|~")
_PUNCT = str.maketrans("", "", string.punctuation.replace("\\", ""))


class ExactDedupConfig(StageConfig):
    field: str = "question"
    lowercase: bool = True
    whitespace: bool = True  # collapse all whitespace runs, trim
    latex_spacing: bool = True  # drop \, \; \quad ~ ... (spacing only, no meaning)
    punctuation: bool = False  # drop ASCII punctuation (aggressive: "2-3" == "23")


def dedup_key(text: str, c: ExactDedupConfig) -> bytes:
    text = unicodedata.normalize("NFKC", text)
    if c.latex_spacing:
        text = _LATEX_SPACING.sub(" ", text)
    if c.lowercase:
        text = text.lower()
    if c.punctuation:
        text = text.translate(_PUNCT)
    if c.whitespace:
        text = _WS.sub(" ", text).strip()
    return hashlib.sha256(text.encode("utf-8")).digest()


class ExactDedup(Stage):
    name = "dedup_exact"
    version = "1"
    kind = "global"
    Config = ExactDedupConfig

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        first: dict[bytes, str] = {}  # 32-byte digest -> id of the kept record
        for rec in records:
            key = dedup_key(rec.get(self.config.field) or "", self.config)
            kept = first.get(key)
            if kept is None:
                first[key] = rec.get("id") or ""
                yield rec
            else:
                yield rec, Drop("duplicate_exact", f"same normalized {self.config.field} as {kept}")
