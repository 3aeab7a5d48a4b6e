"""Vector dedup throughput per embedding backend (embedding included), and each fast backend's
agreement with the default MiniLM on the labeled eval set.

    python benchmarks/dedup_vector_speed.py                  # 2,000 records per MiniLM backend, 50,000 static
    python benchmarks/dedup_vector_speed.py --n 5000 --n-static 200000

Throughput: the whole `dedup_vector` stage over STEM questions from the eval-set templates with
random numbers (real English, ~20 tokens; spool, embedding, faiss range search, clusters), after
the model is loaded (load time printed apart). Agreement: on the
eval set, the duplicate pairs each backend finds at its default threshold against MiniLM's
(Jaccard of the pair sets, and the share of MiniLM's pairs found), plus each backend's recall on
paraphrases and false merges of template variants.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import random  # noqa: E402

import dedup_evalset as E  # noqa: E402

from rlclimb.pipelines.stage import StageContext  # noqa: E402
from rlclimb.stages.dedup.vector import VectorDedup  # noqa: E402
from rlclimb.stages.embedding import load_embedder  # noqa: E402


def throughput(backend: str, n: int) -> tuple[float, float, float]:
    """(stage records/s, embedding-only texts/s, model load seconds)."""
    t0 = time.perf_counter()
    embedder = load_embedder(backend)
    load_s = time.perf_counter() - t0
    rng = random.Random(1)
    records = []
    for i in range(n):
        t = rng.choice(E.TEMPLATES)
        text = rng.choice(t.phrasings).format(**t.numbers(rng))
        records.append({"id": f"q{i}", "question": text, "answer": "", "meta": "{}"})
    t0 = time.perf_counter()
    embedder.encode([r["question"] for r in records])
    embed_rate = n / (time.perf_counter() - t0)
    stage = VectorDedup(backend=backend)
    stage.setup(StageContext())
    t0 = time.perf_counter()
    for _ in stage.run(records, StageContext()):
        pass
    return n / (time.perf_counter() - t0), embed_rate, load_s


def pairs(ev: E.EvalSet, backend: str) -> tuple[set, dict]:
    rep = E.stage_clusters(VectorDedup(backend=backend), ev.items)
    return {(a, b) for a, b, _, _ in ev.pairs if rep[a] == rep[b]}, E.score_pairs(ev, rep)["matched_share"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="records for the MiniLM backends")
    ap.add_argument("--n-static", type=int, default=50_000)
    ap.add_argument("--backends", nargs="*", default=["minilm", "minilm-int8", "static"])
    args = ap.parse_args()
    print("dedup_vector throughput (records/s, embedding + range search + clusters):")
    base = None
    for backend in args.backends:
        n = args.n_static if backend == "static" else args.n
        rate, embed_rate, load_s = throughput(backend, n)
        base = base or rate
        print(f"  {backend:<12} {rate:10,.0f} rec/s  x{rate / base:6.1f}  (embedding alone {embed_rate:,.0f} texts/s) "
              f"on {n:,} records, model load {load_s:.1f} s")
    ev = E.build()
    ref, ref_share = pairs(ev, "minilm")
    print(f"\nagreement with minilm on the eval set ({len(ev.pairs)} labeled pairs; minilm joins {len(ref)}):")
    for backend in args.backends:
        got, share = pairs(ev, backend) if backend != "minilm" else (ref, ref_share)
        jacc = len(ref & got) / max(len(ref | got), 1)
        print(f"  {backend:<12} pair-set Jaccard {jacc:.3f}  finds {len(ref & got) / max(len(ref), 1):.3f} of minilm's pairs  "
              f"paraphrase {share['paraphrase']:.3f}  other_ask {share['other_ask']:.3f}  variant {share['variant']:.3f}")


if __name__ == "__main__":
    main()
