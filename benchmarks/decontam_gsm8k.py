"""Decontamination on public data: GSM8K test as the benchmark, hand-written rephrasings of 60
of its items as leaks, GSM8K train as clean training items (false flags).

GSM8K (MIT, github.com/openai/grade-school-math): pass the directory holding `test.jsonl` and
`train.jsonl` (`grade_school_math/data`). The rephrasings (benchmarks/data/decontam_gsm8k_
rephrasings.jsonl) were written by hand for this set, the way someone laundering a benchmark item
would: reordered, reworded, and with quantities written another way ("three quarters" / "3/4",
"4 hours" / "240 minutes", "half as big" / "twice the size"). Split: `dev` (30, looked at while
choosing the normalization and defaults) and `test` (30, held out; reported separately).

Reported per setting: recall (rephrasings flagged against the right benchmark item) per split,
false flags among the train items, for a sweep of the vector threshold and number policies.

    python benchmarks/decontam_gsm8k.py --gsm8k DIR [--negatives 7473] [--backend minilm]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rlclimb.stages.dedup import decontam as D  # noqa: E402

REPHRASINGS = Path(__file__).resolve().parent / "data" / "decontam_gsm8k_rephrasings.jsonl"


class MemoEmbedder:
    """Embeds each text once across the sweep."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.memo = inner, inner.name, inner.dim, {}

    def encode(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            for t, v in zip(todo, self.inner.encode(todo), strict=True):
                self.memo[t] = v
        return np.stack([self.memo[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def load(gsm8k: Path, negatives: int):
    test = [json.loads(line)["question"] for line in (gsm8k / "test.jsonl").read_text().splitlines() if line.strip()]
    train = [json.loads(line)["question"] for line in (gsm8k / "train.jsonl").read_text().splitlines() if line.strip()]
    reph = [json.loads(line) for line in REPHRASINGS.read_text().splitlines() if line.strip()]
    bench = [D.BenchmarkItem("gsm8k-test", str(i), q) for i, q in enumerate(test)]
    return bench, reph, train[:negatives]


def evaluate(bench, reph, negatives, **config) -> dict:
    cfg = D.DecontamConfig(**config)
    index = D.BenchmarkIndex(bench, cfg)
    found = index.match([r["text"] for r in reph])
    out = {}
    for split in ("dev", "test"):
        rows = [(r, m) for r, m in zip(reph, found, strict=True) if r["split"] == split]
        out[split] = sum(m is not None and m.benchmark.id == str(r["test_index"]) for r, m in rows) / len(rows)
        out[f"{split}_missed"] = [r["test_index"] for r, m in rows if m is None or m.benchmark.id != str(r["test_index"])]
    flags = [(t, m) for t, m in zip(negatives, index.match(negatives), strict=True) if m is not None]
    out["false_flags"], out["negatives"] = len(flags), len(negatives)
    out["flag_examples"] = [(t[:120], m.benchmark.text[:120], m.matcher, m.score) for t, m in flags[:5]]
    return out


SAMPLE = Path(__file__).resolve().parent / "data" / "decontam_gsm8k_sample.jsonl"


def write_sample(bench, reph, train, memo, per_item: int = 2) -> None:
    """The committed sample the tests use: the 60 rephrased benchmark items and, for each, the
    `per_item` GSM8K train items nearest to it by cosine (same-theme negatives, the hard kind)."""
    used = sorted({r["test_index"] for r in reph})
    b = memo.encode([bench[i].text for i in used])
    t = memo.encode(train)
    near = np.argsort(-(b @ t.T), axis=1)[:, :per_item]
    rows = [{"kind": "benchmark", "id": str(i), "text": bench[i].text} for i in used]
    rows += [{"kind": "negative", "id": f"train-{j}", "text": train[j]} for j in sorted({int(j) for j in near.ravel()})]
    SAMPLE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"wrote {SAMPLE}: {len(used)} benchmark items, {len(rows) - len(used)} negatives")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gsm8k", type=Path, required=True, help="directory with GSM8K test.jsonl and train.jsonl")
    ap.add_argument("--negatives", type=int, default=7473)
    ap.add_argument("--backend", default="minilm")
    ap.add_argument("--cosines", type=float, nargs="+", default=[0.7, 0.75, 0.8, 0.85, 0.9])
    ap.add_argument("--policies", nargs="+", default=["subset", "quantities"])
    ap.add_argument("--covers", type=float, nargs="+", default=[0.5, 0.6, 0.75, 1.0],
                    help="numbers_cover values swept for the quantities policy")
    ap.add_argument("--write-sample", action="store_true", help=f"write {SAMPLE.name} (for the tests) and stop")
    ap.add_argument("--examples", action="store_true", help="print missed items and false flags")
    args = ap.parse_args()
    bench, reph, negatives = load(args.gsm8k, args.negatives)
    memo = MemoEmbedder(D.load_embedder(args.backend))
    D.load_embedder = lambda backend: memo  # one embedding per text for the whole sweep
    print(f"benchmark: {len(bench)} GSM8K test items; leaks: {len(reph)} rephrasings "
          f"({sum(r['split'] == 'dev' for r in reph)} dev, {sum(r['split'] == 'test' for r in reph)} held out); "
          f"clean: {len(negatives)} GSM8K train items; backend {args.backend}")
    if args.write_sample:
        write_sample(bench, reph, negatives, memo)
        return
    t0 = time.perf_counter()
    lexical = evaluate(bench, reph, negatives, matchers=["exact", "minhash"], numbers="subset")
    print(f"exact+minhash only: recall dev {lexical['dev']:.3f} held-out {lexical['test']:.3f}, "
          f"false flags {lexical['false_flags']}/{lexical['negatives']}")
    settings = [(p, {"numbers": p}) for p in args.policies if p != "quantities"]
    if "quantities" in args.policies:
        settings += [(f"quantities cover {c}", {"numbers": "quantities", "numbers_cover": c}) for c in args.covers]
    for name, setting in settings:
        for cos in args.cosines:
            r = evaluate(bench, reph, negatives, vector_backend=args.backend, vector_threshold=cos, **setting)
            print(f"numbers={name:<22} cosine {cos:.2f}: recall dev {r['dev']:.3f} held-out {r['test']:.3f}; "
                  f"false flags {r['false_flags']}/{r['negatives']} = {r['false_flags'] / r['negatives']:.2%}")
            if args.examples:
                print(f"    missed dev {r['dev_missed']} held-out {r['test_missed']}")
                for ex in r["flag_examples"]:
                    print(f"    flag: {ex}")
    print(f"({time.perf_counter() - t0:.0f}s)", file=sys.stderr)


if __name__ == "__main__":
    main()
