"""MinHash dedup recall by true Jaccard, on a corpus the thresholds were not tuned on.

Bases are real questions (GSM8K train, MIT, github.com/openai/grade-school-math: pass the path
of `grade_school_math/data/train.jsonl`). Around each base:
  edits      word-level edits at a random rate (drop, repeat, swap, replace a word with one of
             another question), numbers untouched: a duplicate whose true 5-gram Jaccard (of the
             stage's normalized text) lands anywhere from ~0.4 to 1
  variants   the base with its numbers changed: another problem (must stay apart)
Scored: the share of (base, edit) pairs put in one cluster, per true-Jaccard bucket (pairs below
the threshold are reported too; there merging is the stage's choice, not a miss), variant pairs
merged, candidate pairs verified, time. `--compare` also runs the previous behaviour (datasketch's
default band split, no numbers key in the band keys) in the same process.

    python benchmarks/dedup_minhash_recall.py --gsm8k PATH/train.jsonl --bases 1500 --compare
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dedup_evalset as E  # noqa: E402

from rlclimb.stages.dedup import minhash_sketch as S  # noqa: E402
from rlclimb.stages.dedup.minhash import MinHashDedup  # noqa: E402
from rlclimb.stages.text_keys import canonical_text, numbers  # noqa: E402

BUCKETS = [0.4, 0.5, 0.6, 0.65, 0.7, 0.725, 0.75, 0.8, 0.9, 1.0001]
NUM = re.compile(r"\d")


def edit(text: str, rate: float, vocab: list[str], rng: random.Random) -> str:
    words = text.split()
    out: list[str] = []
    for w in words:
        if NUM.search(w) or numbers(w) or rng.random() >= rate:  # quantities stay (six, dozen, half)
            out.append(w)
            continue
        op = rng.randrange(4)
        if op == 0:  # drop
            continue
        if op == 1:  # repeat
            out += [w, w]
        elif op == 2 and out and not (NUM.search(out[-1]) or numbers(out[-1])):  # swap with the previous word
            out[-1], w = w, out[-1]
            out.append(w)
        else:  # replace with a word from elsewhere in the corpus
            out.append(rng.choice(vocab))
    return " ".join(out)


def renumber(text: str, rng: random.Random) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group()) + rng.randint(1, 9)), text, count=1)


def true_jaccard(a: str, b: str, ngram: int = 5) -> float:
    sa = S.shingles(canonical_text(a), ngram)
    sb = S.shingles(canonical_text(b), ngram)
    return len(sa & sb) / len(sa | sb)


def build(path: Path, bases: int, seed: int) -> tuple[list[E.Item], list[tuple[str, str, float]], list[tuple[str, str]]]:
    rng = random.Random(seed)
    questions = [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]
    rng.shuffle(questions)
    questions = [q for q in questions if len(NUM.findall(q)) >= 1][:bases]
    vocab = [w for q in questions for w in q.split() if w.isalpha() and not numbers(w)]
    items, dups, variants = [], [], []
    for k, q in enumerate(questions):
        base = f"b{k}"
        items.append(E.Item(base, q, f"g{k}", "base"))
        for e in range(2):
            t = edit(q, rng.uniform(0.02, 0.35), vocab, rng)
            items.append(E.Item(f"{base}-e{e}", t, f"g{k}", "edit"))
            dups.append((base, f"{base}-e{e}", true_jaccard(q, t)))
        v = renumber(q, rng)
        if v != q:
            items.append(E.Item(f"{base}-v", v, f"v{k}", "variant"))
            variants.append((base, f"{base}-v"))
    rng.shuffle(items)  # no help from input order
    return items, dups, variants


def score(rep: dict[str, str], dups, variants) -> dict:
    hist = {}
    for a, b, j in dups:
        k = int(np.searchsorted(BUCKETS, j, side="right")) - 1
        if k < 0:
            continue
        found, total = hist.get(k, (0, 0))
        hist[k] = (found + (rep[a] == rep[b]), total + 1)
    return {"by_bucket": hist, "variants_merged": sum(rep[a] == rep[b] for a, b in variants), "variants": len(variants)}


def run(items, dups, variants, threshold: float) -> dict:
    stage = MinHashDedup(threshold=threshold)
    t0 = time.perf_counter()
    rep = E.stage_clusters(stage, items)
    out = score(rep, dups, variants)
    out.update(seconds=time.perf_counter() - t0, candidates=stage.report["candidate_pairs"],
               verified=stage.report["verified_pairs"], lsh=stage.report["lsh"])
    return out


def previous_behaviour():
    """Monkeypatch in the old band split and band keys (for --compare)."""
    from datasketch import MinHashLSH

    post, keys = S.MinHasher.__post_init__, S.MinHasher.band_keys

    def old_post(self):
        post(self)
        lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm)
        self.bands, self.rows = lsh.b, lsh.r

    S.MinHasher.__post_init__ = old_post
    S.MinHasher.band_keys = lambda self, sigs, salt=None: keys(self, sigs, None)
    return lambda: (setattr(S.MinHasher, "__post_init__", post), setattr(S.MinHasher, "band_keys", keys))


def show(name: str, r: dict, threshold: float) -> None:
    print(f"  {name}: bands x rows {r['lsh']['bands']} x {r['lsh']['rows']}, {r['candidates']:,} candidate pairs, "
          f"{r['verified']:,} verified, {r['seconds']:.1f}s; variants merged {r['variants_merged']}/{r['variants']}")
    above = [0, 0]
    for k in sorted(r["by_bucket"]):
        found, total = r["by_bucket"][k]
        lo, hi = BUCKETS[k], min(BUCKETS[k + 1], 1.0)
        if lo >= threshold:
            above[0] += found
            above[1] += total
        print(f"    J {lo:.3f}-{hi:.3f}: {found}/{total} = {found / total:.3f}")
    if above[1]:
        print(f"    all pairs with J >= {threshold}: {above[0]}/{above[1]} = {above[0] / above[1]:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gsm8k", type=Path, required=True, help="grade_school_math/data/train.jsonl")
    ap.add_argument("--bases", type=int, default=1500)
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.7])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", action="store_true", help="also the previous band split and band keys")
    args = ap.parse_args()
    items, dups, variants = build(args.gsm8k, args.bases, args.seed)
    print(f"{len(items):,} items: {args.bases} GSM8K bases, {len(dups):,} edit pairs, {len(variants):,} number variants")
    for t in args.thresholds:
        print(f"threshold {t}")
        show("now", run(items, dups, variants, t), t)
        if args.compare:
            restore = previous_behaviour()
            try:
                show("before", run(items, dups, variants, t), t)
            finally:
                restore()


if __name__ == "__main__":
    main()
