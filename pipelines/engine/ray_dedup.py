"""The decisions of exact dedup, MinHash dedup and decontam as Ray Data jobs (see ray_global.py).

- Exact: map (digest per record) -> groupby on the digest's partition (its top bits; within a
  group, equal digests by sorting) -> each digest's first index is kept, the rest drop naming it.
- MinHash: map (signature, numbers key, rank per record; signatures and ranks written to the
  run's scratch, `ray_scratch`: its tmp dir, or for a run at a URL its tmp prefix in the store,
  so no node needs a shared mount; band keys returned) -> groupby on the band key's
  partition (BandBuckets' split) -> candidate pairs of each partition verified on the cluster
  (estimated Jaccard, equal numbers; the pairs' signature rows read from the scratch: mapped
  locally, by coalesced byte ranges from a store) -> connected
  components on the driver over the verified edges only (memory: the edges and their endpoints,
  not the records) -> each dropped record's Jaccard to its representative and the
  representative's id, read from the scratch files by the driver (one row per dropped record).
- Decontam: map on an actor pool; each actor sets the stage up once (loads the benchmark index:
  the broadcast) and returns only the matches.
Decisions, details and reports are the local stages' (tests/test_ray_cluster.py compares them).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rlclimb.stages.dedup.common import (
    cluster_summary,
    clusters,
    example_clusters,
    input_text,
    rank_of,
    write_report,
)
from rlclimb.stages.dedup.decontam import (
    BenchmarkItem,
    Decontam,
    Match,
    load_benchmark,
    match_record,
    record_input_id,
)
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.dedup.minhash_sketch import MinHasher, estimated_jaccard
from rlclimb.stages.dedup.minhash_store import bucket_pairs, partition_of

from ..stage import StageContext, setup_stages
from .ray_global import ClusterMap, Decisions, Slice, read_range
from .ray_scratch import Rows, get, put
from .ray_scratch import join as scratch_join

EXACT_PARTITIONS = 64  # digest partitions: groups of the shuffle


def _collect(ds, schema: pa.Schema) -> pa.Table:
    tables = [pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
              for b in ds.iter_batches(batch_size=None, batch_format="pyarrow")]
    tables = [t for t in tables if t.num_rows]
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in tables]) if tables else schema.empty_table()


def _slices_ds(ray_data, slices: list[Slice]):
    return ray_data.from_items([asdict(s) for s in slices], override_num_blocks=len(slices))


def _one_slice(batch: dict) -> Slice:
    return Slice(str(batch["path"][0]), int(batch["offset"][0]), int(batch["length"][0]), int(batch["start"][0]))


def records_at(slices: list[Slice], wanted: list[int]) -> dict[int, dict]:
    """A few records by global index (the report's examples)."""
    out: dict[int, dict] = {}
    for g in sorted(set(wanted)):
        if g not in out:
            out.update(dict(read_range(slices, g, g + 1)))
    return out


def kept_indices(ordinals: np.ndarray, dropped: np.ndarray) -> np.ndarray:
    """Global indices of the kept records with these ordinals (0 = the first kept record)."""
    before = dropped - np.arange(len(dropped))
    return ordinals + np.searchsorted(before, ordinals, side="right")


# ---- exact ----------------------------------------------------------------------------------

_EXACT_KEYS = pa.schema([("part", pa.int64()), ("d0", pa.uint64()), ("d1", pa.uint64()), ("idx", pa.int64()), ("id", pa.string())])
_EXACT_DROPS = pa.schema([("idx", pa.int64()), ("head", pa.int64()), ("kept", pa.string())])


def _exact_keys(batch: dict, stage: ExactDedup) -> pa.Table:
    s = _one_slice(batch)
    records = s.read()
    # the local stage's table compares the digest's first 64 bits and the next 64
    d = stage.sketch(records)["digest"].view("<u8")
    idx = s.start + np.arange(len(records))
    ids = [str(r.get("id") or g) for r, g in zip(records, idx.tolist(), strict=True)]
    return pa.table([partition_of(d[:, 0], EXACT_PARTITIONS), d[:, 0], d[:, 1], idx, ids], schema=_EXACT_KEYS)


def _exact_group(group: pa.Table) -> pa.Table:
    """One digest partition: every record whose digest came earlier drops, naming the first."""
    d0, d1 = group["d0"].to_numpy(), group["d1"].to_numpy()
    idx, ids = group["idx"].to_numpy(), group["id"]
    order = np.lexsort((idx, d1, d0))
    d0, d1, idx = d0[order], d1[order], idx[order]
    same = np.concatenate(([False], (d0[1:] == d0[:-1]) & (d1[1:] == d1[:-1])))
    head = np.maximum.accumulate(np.where(same, 0, np.arange(len(idx))))
    member = np.flatnonzero(same)
    kept = ids.take(pa.array(order[head[member]]))
    return pa.table([idx[member], idx[head[member]], kept], schema=_EXACT_DROPS)


def exact_decisions(stage: ExactDedup, slices: list[Slice], n: int, ctx: StageContext, run: ClusterMap) -> Decisions:
    c, t0 = stage.config, time.perf_counter()
    ds = run(_slices_ds(run.ray_data, slices), _exact_keys, fn_kwargs={"stage": stage})
    drops = _collect(ds.groupby("part").map_groups(_exact_group, batch_format="pyarrow"), _EXACT_DROPS)
    idx, head = drops["idx"].to_numpy(), drops["head"].to_numpy()
    dec = Decisions(stage.drop_reason, idx, [f"same normalized {c.field} as {k}" for k in drops["kept"].to_pylist()])
    heads, copies = np.unique(head, return_counts=True)
    sizes = Counter(np.minimum(copies + 1, 10).tolist())
    examples = _exact_examples(c, slices, n, dec.idx, idx, head, heads, copies)
    dec.report = {
        "stage": stage.name, "version": stage.version, "matcher": "exact", "config": c.model_dump(mode="json"),
        "records": n, "clusters": len(heads), "records_in_clusters": len(idx) + len(heads),
        "largest_cluster": int(copies.max()) + 1 if len(heads) else 0, "dropped": len(idx),
        "cluster_sizes": {("10+" if k == 10 else str(k)): v for k, v in sorted(sizes.items())},
        "time_s": round(time.perf_counter() - t0, 3),
        "memory": {"distinct": n - len(idx), "engine": "ray: digests grouped on the cluster, drops collected"},
        "examples": examples,
    }
    write_report(ctx, stage.name, dec.report)
    stage.report = dec.report
    return dec


def _exact_examples(c, slices, n, dropped, idx, head, heads, copies) -> list[dict]:
    """As the local stage: among its first `examples` kept records, those heading the largest groups."""
    if c.examples <= 0 or not len(heads):
        return []
    first = set(kept_indices(np.arange(min(c.examples, n - len(dropped))), dropped).tolist())
    top = sorted(zip((-copies).tolist(), heads.tolist(), strict=True))[: 10 * max(c.examples, 1)]
    chosen = [(h, -k) for k, h in top if h in first][: c.examples]
    members = {h: sorted(idx[head == h].tolist())[:5] for h, _ in chosen}
    recs = records_at(slices, [g for h, m in members.items() for g in (h, *m)])
    return [{"kept": str(recs[h].get("id") or h), "size": k + 1,
             "texts": [input_text(recs[g], c.field)[:500] for g in (h, *members[h])]} for h, k in chosen]


# ---- MinHash --------------------------------------------------------------------------------

_BANDS = pa.schema([("part", pa.int64()), ("key", pa.uint64()), ("idx", pa.int64())])
_EDGES = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("rank_a", pa.int64()), ("rank_b", pa.int64()), ("checked", pa.int64())])


class MinHashScratch:
    """Where the signature job keeps each slice's signatures, (rank, numbers key, answer key) and ids
    (`ray_scratch`: the run dir's tmp, or its URL in the store: no shared mount needed)."""

    def __init__(self, location: str, starts: list[int], num_perm: int):
        self.location, self.starts = location, starts
        self.sig = Rows(location, "sig", starts, np.uint32, num_perm)
        self.meta = Rows(location, "meta", starts, np.int64, 3)

    def ids_path(self, start: int) -> str:
        return scratch_join(self.location, f"ids-{start:012d}.parquet")

    def write(self, start: int, sigs: np.ndarray, meta: np.ndarray, ids: list[str]) -> None:
        self.sig.write(start, sigs)
        self.meta.write(start, meta)
        buf = pa.BufferOutputStream()
        pq.write_table(pa.table({"id": ids}), buf)
        put(self.ids_path(start), buf.getvalue().to_pybytes())

    def ids(self, index: np.ndarray) -> list[str]:
        """Ids by global index (read once per slice file needed: the driver's representatives)."""
        starts = np.asarray(self.starts, np.int64)
        j = np.searchsorted(starts, index, side="right") - 1
        out: list[str] = [""] * len(index)
        for f in np.unique(j).tolist():
            at = np.flatnonzero(j == f)
            col = pq.read_table(pa.BufferReader(get(self.ids_path(self.starts[f]))))["id"]
            for k, v in zip(at.tolist(), col.take(pa.array(index[at] - starts[f])).to_pylist(), strict=True):
                out[k] = v
        return out


class MinHashSketcher:
    """Per slice: signatures, numbers keys and ranks to the scratch; band keys returned."""

    def __init__(self, stage: MinHashDedup, scratch: MinHashScratch):
        c = stage.config
        self.stage, self.scratch = stage, scratch
        self.hasher = MinHasher(num_perm=c.num_perm, ngram=c.ngram, seed=c.seed, threshold=c.threshold)

    def __call__(self, batch: dict) -> pa.Table:
        c, s = self.stage.config, _one_slice(batch)
        records = s.read()
        sk = self.stage.sketch(records, self.hasher)
        idx = s.start + np.arange(len(records))
        meta = np.stack([np.fromiter((rank_of(r, c) for r in records), np.int64, len(records)), sk["nums"], sk["answers"]],
                        axis=1)
        self.scratch.write(s.start, sk["sigs"], meta, [str(r.get("id") or g) for r, g in zip(records, idx.tolist(), strict=True)])
        present = sk["present"]
        salt = sk["nums"][present] if c.numbers == "exact" else None
        keys = self.hasher.band_keys(sk["sigs"][present], salt)
        flat = keys.ravel()
        return pa.table([partition_of(flat, c.partitions), flat, np.repeat(idx[present], keys.shape[1])], schema=_BANDS)


def _verify_group(group: pa.Table, stage: MinHashDedup, scratch: MinHashScratch) -> pa.Table:
    """One band partition: its candidate pairs, verified like the local stage's."""
    keys, idx = group["key"].to_numpy(), group["idx"].to_numpy()
    order = np.lexsort((idx, keys))  # the local stage's order: entries by key, then input index
    left, right = bucket_pairs(keys[order], idx[order])
    codes = np.unique(left.astype(np.uint64) << np.uint64(32) | right.astype(np.uint64))
    a = (codes >> np.uint64(32)).astype(np.int64)
    b = (codes & np.uint64(0xFFFFFFFF)).astype(np.int64)
    ok = np.zeros(len(a), bool)
    ma, mb = np.zeros((len(a), 3), np.int64), np.zeros((len(a), 3), np.int64)
    for lo in range(0, len(a), 8192):
        sl, k = slice(lo, lo + 8192), len(a[lo : lo + 8192])
        both = np.concatenate((a[sl], b[sl]))  # one read of the chunk's rows (from the store: by ranges)
        meta, sigs = scratch.meta.take(both), scratch.sig.take(both)
        ma[sl], mb[sl] = meta[:k], meta[k:]
        ok[sl] = stage.duplicates(estimated_jaccard(sigs[:k], sigs[k:]), ma[sl, 1], mb[sl, 1], ma[sl, 2], mb[sl, 2])
    checked = np.zeros(int(ok.sum()) + 1, np.int64)
    checked[-1] = len(codes)  # the last row counts the candidates (a = b = -1)
    return pa.table([np.append(a[ok], -1), np.append(b[ok], -1), np.append(ma[ok, 0], 0), np.append(mb[ok, 0], 0), checked],
                    schema=_EDGES)


def minhash_decisions(stage: MinHashDedup, slices: list[Slice], n: int, ctx: StageContext, run: ClusterMap, location: str) -> Decisions:
    """`location`: the scratch directory (ray_scratch.scratch), a path or a URL."""
    c, t0 = stage.config, time.perf_counter()
    scratch = MinHashScratch(location, [s.start for s in slices], c.num_perm)
    bands = run(_slices_ds(run.ray_data, slices), MinHashSketcher, actor={"stage": stage, "scratch": scratch})
    edges = _collect(bands.groupby("part").map_groups(
        _verify_group, batch_format="pyarrow", fn_kwargs={"stage": stage, "scratch": scratch}), _EDGES)
    t1 = time.perf_counter()
    real = edges.filter(pc.greater_equal(edges["a"], 0))
    candidates = int(pc.sum(edges["checked"]).as_py() or 0)
    a, b = real["a"].to_numpy(), real["b"].to_numpy()
    codes = np.unique(a.astype(np.uint64) << np.uint64(32) | b.astype(np.uint64))  # an edge found in two partitions once
    # connected components over the edges' endpoints only: the driver's memory follows the duplicates
    nodes = np.unique(np.concatenate((a, b)))
    la, lb = np.searchsorted(nodes, a), np.searchsorted(nodes, b)
    rank = np.zeros(len(nodes), np.int64)
    rank[la], rank[lb] = real["rank_a"].to_numpy(), real["rank_b"].to_numpy()
    labels, rep = clusters(len(nodes), la, lb, rank)
    drop = np.flatnonzero(rep != np.arange(len(nodes)))
    size = np.bincount(labels)[labels[drop]] if len(drop) else np.zeros(0, np.int64)
    t2 = time.perf_counter()
    # each dropped record's Jaccard to its representative, and the representative's id: read on
    # the driver from the scratch, a chunk at a time (a Ray job would cost more to start)
    score, rep_id = np.ones(len(nodes)), {}
    by_rep = drop[np.argsort(nodes[rep[drop]], kind="stable")]  # a chunk's representatives: a few files
    for lo in range(0, len(by_rep), 8192):
        d = by_rep[lo : lo + 8192]
        sigs = scratch.sig.take(np.concatenate((nodes[d], nodes[rep[d]])))
        score[d] = estimated_jaccard(sigs[: len(d)], sigs[len(d) :])
        rep_id.update(zip(d.tolist(), scratch.ids(nodes[rep[d]]), strict=True))
    details = [f"near-duplicate of {rep_id[int(i)]} (jaccard≈{score[i]:.3f}; cluster of {int(k)})" for i, k in zip(drop, size, strict=True)]
    dec = Decisions(stage.drop_reason, nodes[drop], details, respool=True)
    hasher = MinHasher(num_perm=c.num_perm, ngram=c.ngram, seed=c.seed, threshold=c.threshold)
    dec.report = {
        "stage": stage.name, "version": stage.version, "matcher": "minhash", "config": c.model_dump(mode="json"),
        "lsh": {"bands": hasher.bands, "rows": hasher.rows, "num_perm": c.num_perm},
        "records": n, **cluster_summary(labels, rep), "candidate_pairs": candidates, "verified_pairs": len(codes),
        "spill": {"engine": "ray: signatures in the run dir's scratch (its tmp, or its URL in the store), band keys shuffled", "nodes_in_edges": len(nodes)},
        "time_s": {"sketch_and_pairs": round(t1 - t0, 3), "clusters": round(t2 - t1, 3), "total": round(time.perf_counter() - t0, 3)},
        "examples": _minhash_examples(c, slices, nodes, labels, rep, score),
    }
    write_report(ctx, stage.name, dec.report)
    stage.report = dec.report
    return dec


def _minhash_examples(c, slices, nodes, labels, rep, score) -> list[dict]:
    members = example_clusters(labels, c.examples)
    shown = {int(nodes[i]) for m in members.values() for i in m[:6]}
    recs = records_at(slices, sorted(shown))
    out = []
    for m in members.values():
        out.append({"size": len(m), "members": [
            {"index": int(nodes[i]), "id": recs[int(nodes[i])].get("id"), "text": input_text(recs[int(nodes[i])], c.field)[:500],
             "kept": bool(rep[i] == i), "score_to_kept": round(float(score[i]), 4)} for i in m[:6]]})
    return out


# ---- decontam ---------------------------------------------------------------------------------

_MATCHES = pa.schema([("idx", pa.int64()), ("benchmark", pa.string()), ("benchmark_id", pa.string()), ("benchmark_text", pa.string()),
                      ("matcher", pa.string()), ("score", pa.float64()), ("input_id", pa.string()), ("input_text", pa.string())])


class DecontamMatcher:
    """An actor holding the benchmark index (loaded once: the broadcast); returns the matches of a slice."""

    def __init__(self, stage: Decontam, ctx: StageContext):
        setup_stages([stage], ctx)
        self.stage = stage

    def __call__(self, batch: dict) -> pa.Table:
        s, c = _one_slice(batch), self.stage.config
        records = s.read()
        sk = self.stage.sketch(records)
        hit = np.flatnonzero(sk["item"] >= 0)
        items = [self.stage.index.items[j] for j in sk["item"][hit].tolist()] if len(hit) else []
        recs = [records[i] for i in hit.tolist()]
        return pa.table([s.start + hit, [it.benchmark for it in items], [it.id for it in items], [it.text for it in items],
                         sk["matcher"][hit].tolist(), sk["score"][hit].astype(np.float64),
                         [record_input_id(r) for r in recs], [input_text(r, c.field) for r in recs]], schema=_MATCHES)


def decontam_decisions(stage: Decontam, slices: list[Slice], n: int, ctx: StageContext, run: ClusterMap) -> Decisions:
    c, t0 = stage.config, time.perf_counter()
    shipped = StageContext(run_dir=ctx.run_dir, seed=ctx.seed, segment_dir=ctx.segment_dir)
    m = _collect(run(_slices_ds(run.ray_data, slices), DecontamMatcher, actor={"stage": stage, "ctx": shipped}), _MATCHES)
    m = m.sort_by("idx")
    rows = m.to_pylist()
    dec = Decisions(stage.drop_reason, m["idx"].to_numpy(),
                    [f"matches {r['benchmark']} item {r['benchmark_id']} ({r['matcher']} {r['score']:.3f})" for r in rows])
    matches = [match_record(r["input_id"], r["input_text"], Match(BenchmarkItem(r["benchmark"], r["benchmark_id"], r["benchmark_text"]),
                                                                  r["matcher"], r["score"])) for r in rows[: c.report_matches]]
    dec.report = {
        "stage": stage.name, "version": stage.version, "config": c.model_dump(mode="json"),
        "thresholds": {"minhash_jaccard": c.minhash_threshold, "vector_cosine": c.cosine, "numbers": c.numbers},
        "benchmark_items": sum(len(load_benchmark(b, c.benchmark_field)) for b in c.benchmarks),
        "records": n, "flagged": len(rows),
        "by_matcher": dict(Counter(r["matcher"] for r in rows)), "by_benchmark": dict(Counter(r["benchmark"] for r in rows)),
        "time_s": round(time.perf_counter() - t0, 3), "matches": matches,
    }
    write_report(ctx, stage.name, dec.report)
    stage.report = dec.report
    return dec


def planner(stage) -> str | None:
    """Which distributed plan a global stage has (None: it runs on the driver)."""
    for cls, name in ((ExactDedup, "exact"), (MinHashDedup, "minhash"), (Decontam, "decontam")):
        if type(stage) is cls:
            return name
    return None
