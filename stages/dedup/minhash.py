"""Near-duplicate removal by MinHash LSH over character n-grams of the math-normalized text.

Pass 1 streams the input: records go to a disk spool; each batch gets vectorized MinHash
signatures and LSH band keys (`minhash_sketch`), held up to `memory_mb` and then spilled to disk
(`minhash_store`). Pass 2 turns each band partition's buckets into candidate pairs, verifies them
by estimated Jaccard (and, by default, equal numbers: a template variant with other numbers is a
different problem; and agreeing short answers: a minimal pair, "series" / "parallel" with "Circuit
B" / "Circuit A", is two problems), and joins verified pairs into clusters. Pass 3 streams the spool back: each
cluster keeps one representative (`keep` rule) and drops the rest with the representative's id
and the estimated Jaccard to it. A JSON report goes to `<run>/reports/dedup_minhash.json`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Literal

import numpy as np
from pydantic import Field

from rlclimb.pipelines.spill import RecordSpool, spilling
from rlclimb.pipelines.stage import Drop, Record, Stage, StageContext

from ..text_keys import canonical_text, numbers, numbers_hash
from .common import (
    ClusterConfig,
    cluster_summary,
    clusters,
    emit_clusters,
    example_clusters,
    examples_report,
    input_text,
    rank_of,
    write_report,
)
from .minhash_sketch import MinHasher, estimated_jaccard
from .minhash_store import BandBuckets, SignatureStore

_VERIFY_CHUNK = 8192  # candidate pairs verified per signature lookup (bounds mapped pages)


class MinHashDedupConfig(ClusterConfig):
    # estimated Jaccard of 5-gram sets above which two texts are duplicates (see README: measured)
    threshold: float = Field(0.7, gt=0, le=1)
    ngram: int = Field(5, ge=1, le=32)
    num_perm: int = Field(128, ge=16, le=1024)
    seed: int = 1
    lowercase: bool = True
    latex: bool = True  # math-aware normalization (text_keys.canonical_text)
    punctuation: bool = False
    numbers: Literal["exact", "ignore"] = "exact"  # exact: duplicates state the same numbers
    # distinct: two questions that differ (estimated Jaccard below `distinct_below`) and whose short
    # answers (up to `answer_chars`, normalized as the text is) differ are two problems, not one:
    # a book's minimal pairs ("has finite order?" False, "has finite index?" True). The same
    # question printed twice, or a near-identical copy whose answer is formatted otherwise, still is one.
    answers: Literal["distinct", "ignore"] = "distinct"
    answer_field: str = "answer"
    answer_chars: int = Field(200, ge=1)
    distinct_below: float = Field(0.95, gt=0, le=1)
    batch_size: int = Field(4096, ge=1)
    memory_mb: float = Field(256, gt=0)  # signatures + band entries held before spilling to disk
    partitions: int = 64  # band partitions on disk (a power of two)


class MinHashDedup(Stage):
    name = "dedup_minhash"
    version = "3"  # v3: near-duplicate questions with different short answers are two problems
    kind = "global"
    Config = MinHashDedupConfig
    config_outputs = ("spill_dir",)  # scratch space, not input
    drop_reason = "duplicate_minhash"

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        with spilling(ctx, self.name, self.config.spill_dir) as workdir:
            yield from self._run(records, ctx, workdir)

    def _run(self, records: Iterable[Record], ctx: StageContext, workdir) -> Iterator[Record | tuple[Record, Drop]]:
        c, t0 = self.config, time.perf_counter()
        hasher = MinHasher(num_perm=c.num_perm, ngram=c.ngram, seed=c.seed, threshold=c.threshold)
        spool = RecordSpool(workdir)
        half = int(c.memory_mb * (1 << 19))  # half the budget for signatures, half for band entries
        sigs = SignatureStore(workdir, c.num_perm)
        buckets = BandBuckets(workdir, c.partitions)
        ranks: list[np.ndarray] = []
        nums: list[np.ndarray] = []
        answers: list[np.ndarray] = []
        feed = ctx.extras.get("sketches")
        it = iter(records)
        while batch := list(islice(it, c.batch_size)):
            base = spool.count
            for rec in batch:
                spool.append(rec)
            ranks.append(np.fromiter((rank_of(r, c) for r in batch), np.int64, len(batch)))
            # the per-record part (normalize, hash): computed here, or on a cluster (ray executor)
            sk = feed.take(len(batch)) if feed is not None else self.sketch(batch, hasher)
            nums.append(sk["nums"])
            answers.append(sk["answers"])
            batch_sigs = sk["sigs"]
            sigs.append(batch_sigs)
            present = sk["present"]  # empty text: no match
            # numbers: exact -> the numbers key is in every band key: template variants with other
            # numbers never share a bucket, so they cannot crowd out the pairs that can match
            salt = nums[-1][present] if c.numbers == "exact" else None
            buckets.add(hasher.band_keys(batch_sigs[present], salt), base + np.flatnonzero(present))
            if sigs.held_bytes > half or buckets.held_bytes > half:
                sigs.spill()
                buckets.spill()
        spool.close()
        sigs.finish()
        n = spool.count
        rank = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
        num = np.concatenate(nums) if nums else np.zeros(0, np.int64)
        ans = np.concatenate(answers) if answers else np.zeros(0, np.int64)
        t1 = time.perf_counter()
        left, right, candidates = self._verified_pairs(buckets, sigs, num, ans)
        labels, rep = clusters(n, left, right, rank)
        t2 = time.perf_counter()
        dropped = np.flatnonzero(rep != np.arange(n))
        score = np.ones(n)
        for lo in range(0, len(dropped), _VERIFY_CHUNK):
            d = dropped[lo : lo + _VERIFY_CHUNK]
            score[d] = estimated_jaccard(sigs.take(d), sigs.take(rep[d]))
        sigs.close()
        examples = example_clusters(labels, c.examples)
        yield from emit_clusters(spool, rep, labels, score, examples, self.drop_reason, "jaccard≈", c.field)
        report = {
            "stage": self.name,
            "version": self.version,
            "matcher": "minhash",
            "config": c.model_dump(mode="json"),
            "lsh": {"bands": hasher.bands, "rows": hasher.rows, "num_perm": c.num_perm},
            "records": n,
            **cluster_summary(labels, rep),
            "candidate_pairs": candidates,
            "verified_pairs": len(left),
            "spill": {"spilled": sigs.spilled or buckets.spills > 0, "spills": buckets.spills,
                      "band_bytes_spilled": buckets.spilled_bytes, "spool_bytes": spool.bytes},
            "time_s": {"sketch": round(t1 - t0, 3), "pairs_and_clusters": round(t2 - t1, 3),
                       "total": round(time.perf_counter() - t0, 3)},
            "examples": [examples_report(m) for m in examples.values()],
        }
        write_report(ctx, self.name, report)
        self.report = report

    def sketch(self, records: list[Record], hasher: MinHasher | None = None) -> dict[str, np.ndarray]:
        """Per record, independent of all others (so an executor may compute it in parallel, in
        input order): the MinHash signature, the numbers key, whether there is text at all."""
        c = self.config
        if hasher is None:
            hasher = MinHasher(num_perm=c.num_perm, ngram=c.ngram, seed=c.seed, threshold=c.threshold)
        texts = [canonical_text(input_text(r, c.field), lowercase=c.lowercase, latex=c.latex, punctuation=c.punctuation)
                 for r in records]
        return {"sigs": hasher.signatures(texts), "nums": self._numbers(texts), "answers": self._answers(records),
                "present": np.fromiter((bool(t) for t in texts), bool, len(texts))}

    def _answers(self, records: list[Record]) -> np.ndarray:
        """Per record, a key of its short answer (0: none, too long, or `answers: ignore`): the
        numbers it states when it states any ("75" and "75 km/h" agree), else its normalized text
        ("False." and "True" do not)."""
        c = self.config
        out = np.zeros(len(records), np.int64)
        if c.answers == "ignore":
            return out
        for i, r in enumerate(records):
            text = input_text(r, c.answer_field)
            if text.strip() and len(text) <= c.answer_chars:
                key = canonical_text(text, lowercase=c.lowercase, latex=c.latex, punctuation=c.punctuation)
                stated = numbers(key, canonical=True)
                out[i] = numbers_hash(("n", *stated) if stated else ("t", key)) or 1
        return out

    def duplicates(self, jaccard: np.ndarray, num_a: np.ndarray, num_b: np.ndarray, ans_a: np.ndarray,
                   ans_b: np.ndarray) -> np.ndarray:
        """Which candidate pairs are duplicates (the local and the Ray executor's one test)."""
        c = self.config
        ok = (num_a == num_b) & (jaccard >= c.threshold)
        if c.answers == "distinct":
            ok &= ~((ans_a != ans_b) & (ans_a != 0) & (ans_b != 0) & (jaccard < c.distinct_below))
        return ok

    def _numbers(self, texts: list[str]) -> np.ndarray:
        if self.config.numbers == "ignore":
            return np.zeros(len(texts), np.int64)
        return np.fromiter((numbers_hash(numbers(t, canonical=True)) for t in texts), np.int64, len(texts))

    def _verified_pairs(self, buckets: BandBuckets, sigs: SignatureStore, num: np.ndarray,
                        ans: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Candidate pairs partition by partition, verified in chunks: only verified pairs are
        kept, so memory follows the duplicates, not the candidates. Returns (left, right,
        candidates checked; a pair met in two partitions counts twice)."""
        verified, checked = [], 0
        for left, right in buckets.candidate_pairs():
            codes = np.unique(left.astype(np.uint64) << np.uint64(32) | right.astype(np.uint64))
            checked += len(codes)
            for lo in range(0, len(codes), _VERIFY_CHUNK):
                chunk = codes[lo : lo + _VERIFY_CHUNK]
                a = (chunk >> np.uint64(32)).astype(np.int64)
                b = (chunk & np.uint64(0xFFFFFFFF)).astype(np.int64)
                ok = self.duplicates(estimated_jaccard(sigs.take(a), sigs.take(b)), num[a], num[b], ans[a], ans[b])
                verified.append(chunk[ok])
        codes = np.unique(np.concatenate(verified)) if verified else np.zeros(0, np.uint64)
        return (codes >> np.uint64(32)).astype(np.int64), (codes & np.uint64(0xFFFFFFFF)).astype(np.int64), checked
