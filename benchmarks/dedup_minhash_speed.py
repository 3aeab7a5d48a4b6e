"""MinHash dedup: the stage against a straightforward datasketch loop, and its peak memory.

    python benchmarks/dedup_minhash_speed.py                         # 100k records, speed + recall
    python benchmarks/dedup_minhash_speed.py --memory 100000 1000000 # peak RSS per size (own process each)

Both sides get the same synthetic QA questions (math-flavoured text, numbers, LaTeX) with 20%
injected duplicates: 10% re-spellings (case, spacing, LaTeX delimiters) and 10% light edits (one
or two words replaced, inserted or deleted). Both compare the same canonical text with the same
shingles, num_perm, threshold and LSH bands/rows; the baseline is what one writes first with
datasketch: per record `MinHash.update_batch` over its shingles, `MinHashLSH.query`, verify the
candidates with `MinHash.jaccard`, `insert` when new. Recall = injected duplicates dropped;
false drops = original records dropped.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator

from datasketch import MinHash, MinHashLSH

from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.dedup.minhash_sketch import shingles
from rlclimb.stages.text_keys import canonical_text

_SYLLABLES = "ka lo mi ne ru sa te vo zi pa qu ex an is or ul em ip ta ro".split()


def _vocab(rng: random.Random, size: int = 4000) -> list[str]:
    return ["".join(rng.choices(_SYLLABLES, k=rng.randint(1, 4))) for _ in range(size)]


def _base_text(rng: random.Random, vocab: list[str], weights: list[float]) -> str:
    words = rng.choices(vocab, weights=weights, k=rng.randint(14, 40))
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randrange(len(words)), str(rng.randint(2, 999)))
    if rng.random() < 0.4:
        words.insert(rng.randrange(len(words)), f"$x^{{{rng.randint(2, 5)}}} + {rng.randint(1, 50)}x = {rng.randint(1, 99)}$")
    return " ".join(words).capitalize() + "?"


def _respell(text: str, rng: random.Random) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        return text.upper()
    if choice == 1:
        return "  " + text.replace(" ", "   ")
    return text.replace("$", "\\(", 1).replace("$", "\\)", 1) if "$" in text else text.lower()


def _light_edit(text: str, rng: random.Random, vocab: list[str]) -> str:
    words = text.split(" ")
    for _ in range(rng.randint(1, 2)):
        op, at = rng.randrange(3), rng.randrange(len(words))
        if op == 0 and not any(c.isdigit() for c in words[at]):
            words[at] = rng.choice(vocab)
        elif op == 1:
            words.insert(at, rng.choice(vocab))
        elif len(words) > 8 and not any(c.isdigit() for c in words[at]):
            del words[at]
    return " ".join(words)


def corpus(n: int, seed: int = 0, dup_rate: float = 0.2) -> Iterator[dict]:
    """n records; duplicates have ids 'dup-<i>-of-<base id>' (streamed: never all in memory)."""
    rng = random.Random(seed)
    vocab = _vocab(rng)
    weights = [1.0 / (k + 1) for k in range(len(vocab))]  # Zipf-like word frequencies
    recent: list[tuple[str, str]] = []
    for i in range(n):
        if recent and rng.random() < dup_rate:
            base_id, text = rng.choice(recent)
            text = _respell(text, rng) if rng.random() < 0.5 else _light_edit(text, rng, vocab)
            rec_id = f"dup-{i}-of-{base_id}"
        else:
            text = _base_text(rng, vocab, weights)
            rec_id = f"q-{i}"
            recent.append((rec_id, text))
            if len(recent) > 5000:
                recent.pop(rng.randrange(len(recent)))
        yield {"id": rec_id, "question": text, "answer": str(rng.randint(1, 100)), "meta": "{}"}


def baseline(records: list[dict], threshold: float, num_perm: int, ngram: int) -> set[str]:
    """The straightforward datasketch loop: ids it drops."""
    permutations = MinHash(num_perm=num_perm, seed=1, scheme="affine32").permutations
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    kept: dict[str, MinHash] = {}
    dropped: set[str] = set()
    for rec in records:
        m = MinHash(num_perm=num_perm, permutations=permutations, scheme="affine32")
        m.update_batch([s.encode("utf-8") for s in shingles(canonical_text(rec["question"]), ngram)])
        if any(m.jaccard(kept[k]) >= threshold for k in lsh.query(m)):
            dropped.add(rec["id"])
        else:
            lsh.insert(rec["id"], m)
            kept[rec["id"]] = m
    return dropped


def staged(records, **config) -> tuple[set[str], MinHashDedup]:
    stage = MinHashDedup(**config)
    dropped = {out[0]["id"] for out in stage.run(records, StageContext()) if isinstance(out, tuple)}
    return dropped, stage


def quality(records: list[dict], dropped: set[str]) -> tuple[float, int]:
    dups = sum(r["id"].startswith("dup-") for r in records)
    caught = sum(d.startswith("dup-") for d in dropped)
    return caught / max(dups, 1), sum(not d.startswith("dup-") for d in dropped)


def speed(n: int, threshold: float, repeats: int) -> None:
    records = list(corpus(n))
    print(f"{n:,} records ({sum(r['id'].startswith('dup-') for r in records):,} injected duplicates), "
          f"threshold {threshold}, num_perm 128, 5-gram shingles; best of {repeats}")
    rows = []
    for name, fn in (
        ("datasketch loop (update_batch + LSH insert/query)", lambda: baseline(records, threshold, 128, 5)),
        ("dedup_minhash stage, numbers=ignore", lambda: staged(records, threshold=threshold, numbers="ignore")[0]),
        ("dedup_minhash stage (default: numbers=exact)", lambda: staged(records, threshold=threshold)[0]),
    ):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            dropped = fn()
            best = min(best, time.perf_counter() - t0)
        recall, false_drops = quality(records, dropped)
        rows.append((name, best, recall, false_drops))
    base = rows[0][1]
    for name, secs, recall, false_drops in rows:
        print(f"  {name:<52} {secs:7.2f} s  {n / secs:9,.0f} rec/s  x{base / secs:4.1f}  "
              f"recall {recall:.4f}  false drops {false_drops}")


def memory_child(n: int) -> None:
    """Runs in its own process: the stage over a streamed corpus; prints peak RSS as JSON."""
    import numpy  # noqa: F401  (imports counted in the start figure)

    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    dropped, stage = staged(corpus(n))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"n": n, "start_mb": start / 1024, "peak_mb": peak / 1024, "seconds": time.perf_counter() - t0,
                      "dropped": len(dropped), "spilled": stage.report["spill"]["spilled"]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--memory", type=int, nargs="*", help="sizes for the peak-memory runs")
    ap.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    if args.memory:
        print("peak RSS of the dedup_minhash stage over a streamed corpus (own process per size):")
        for n in args.memory:
            out = subprocess.run([sys.executable, __file__, "--memory-child", str(n)], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"  {n:>10,} records: peak {r['peak_mb']:6.0f} MB (after imports {r['start_mb']:4.0f} MB), "
                  f"{r['seconds']:6.1f} s, spilled={r['spilled']}, dropped {r['dropped']:,}")
        return
    speed(args.n, args.threshold, args.repeats)


if __name__ == "__main__":
    main()
