"""Exact dedup: SHA-256 of the normalized text; the first occurrence in input order is kept.

Normalization is `text_keys.canonical_text`: NFKC, whitespace, case and (math-aware) LaTeX
spelling: delimiters, spacing commands, \\dfrac/\\frac, \\leq/\\le, x^{2}/x^2, spaces around
operators. Optional: punctuation. Streams with one 32-byte digest per distinct text in memory.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Iterable, Iterator

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from ..text_keys import canonical_text
from .common import input_text, write_report


class ExactDedupConfig(StageConfig):
    field: str = "question"
    lowercase: bool = True
    latex: bool = True  # math-aware: one spelling per formula (see text_keys.canonical_text)
    punctuation: bool = False  # drop ASCII punctuation (aggressive: "2-3" == "23")
    examples: int = 5  # duplicate groups shown in the report


def dedup_key(text: str, c: ExactDedupConfig) -> bytes:
    canonical = canonical_text(text, lowercase=c.lowercase, latex=c.latex, punctuation=c.punctuation)
    return hashlib.sha256(canonical.encode("utf-8")).digest()


class ExactDedup(Stage):
    name = "dedup_exact"
    version = "2"
    kind = "global"
    Config = ExactDedupConfig
    drop_reason = "duplicate_exact"

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        c, t0 = self.config, time.perf_counter()
        first: dict[bytes, str] = {}  # digest -> id of the kept record
        copies: Counter = Counter()  # kept id -> dropped copies
        texts: dict[str, list[str]] = {}  # kept id -> texts, for the first few groups
        n = 0
        for rec in records:
            n += 1
            text = input_text(rec, c.field)
            key = dedup_key(text, c)
            kept = first.get(key)
            if kept is None:
                first[key] = str(rec.get("id") or n - 1)
                if len(texts) < c.examples:
                    texts[first[key]] = [text[:500]]
                yield rec
            else:
                copies[kept] += 1
                if kept in texts and len(texts[kept]) < 6:
                    texts[kept].append(text[:500])
                yield rec, Drop(self.drop_reason, f"same normalized {c.field} as {kept}")
        sizes = Counter(min(k + 1, 10) for k in copies.values())
        self.report = {
            "stage": self.name, "version": self.version, "matcher": "exact", "config": c.model_dump(mode="json"),
            "records": n, "clusters": len(copies), "records_in_clusters": sum(copies.values()) + len(copies),
            "largest_cluster": max(copies.values(), default=-1) + 1, "dropped": sum(copies.values()),
            "cluster_sizes": {("10+" if k == 10 else str(k)): v for k, v in sorted(sizes.items())},
            "time_s": round(time.perf_counter() - t0, 3),
            "examples": [{"kept": k, "size": copies[k] + 1, "texts": texts[k]} for k, _ in copies.most_common() if k in texts][: c.examples],
        }
        write_report(ctx, self.name, self.report)
