"""Exercises in parts, per book: how many items have part labels, how many split_parts splits,
before / after a change, and part alignment on hand-made truth.

    python benchmarks/parts_census.py --runs /work/runs/s8m-raw- [--base /work/base-47c33cf] \
        [--truth benchmarks/truth/parts-round7.json] [--split dev|heldout]

`--runs`: prefix of uncurated `textbook-pdf` runs (<prefix><book>/data/*.parquet). `--base`: a
checkout whose stages/curate/parts.py is the "before" splitter (same records, so the difference
is the splitter's alone). Truth entries are keyed by book, page and number (an item found by
them) and say how the item must split: the letters and each part's answer prefix, or "whole".
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rlclimb.stages.curate.parts import split_exercise  # noqa: E402

_ANY = re.compile(r"(?:(?<![\w)\]])\(([a-h])\)|(?:^|(?<=\s))([a-h])\))")


def load_rows(run: str) -> list[dict]:
    cols = ["question", "answer", "source", "meta"]
    return [r for f in sorted(glob.glob(f"{run}/data/*.parquet")) for r in pq.read_table(f, columns=cols).to_pylist()]


def has_parts(question: str) -> bool:
    letters = {a or b for a, b in _ANY.findall(question)}
    return {"a", "b"} <= letters


def base_splitter(tree: str):
    spec = importlib.util.spec_from_file_location("base_parts", f"{tree}/stages/curate/parts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.split_parts


def find(rows: list[dict], page: int, number: str) -> dict | None:
    got = [r for r in rows if r["source"]["page"] == page and (r["source"].get("number") or "") == number]
    # two sets on one page (Exercises, Reading Questions) can share a number: the answered one in parts
    got.sort(key=lambda r: not (has_parts(r["question"]) and (r["answer"] or "").strip()))
    return got[0] if got else None


def score(entry: dict, parts: list[tuple[str, str, str]]) -> str:
    want = entry["expect"]
    if want == "whole":
        return "right" if not parts else "wrong"
    if not parts:
        return "whole"
    got = {k: (q, a) for k, q, a in parts}
    if sorted(got) != sorted(want):
        return "wrong"
    for k, w in want.items():
        q, a = got[k]
        if not a.startswith(w["answer"]) or w.get("question", "") not in q or w.get("question_not", "\0") in q:
            return "wrong"
    return "right"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True)
    ap.add_argument("--base")
    ap.add_argument("--truth")
    ap.add_argument("--split", choices=["dev", "heldout"])
    ap.add_argument("--show", action="store_true", help="print each truth item's verdict")
    args = ap.parse_args()
    before = base_splitter(args.base) if args.base else None
    books = sorted(Path(p).name[len(Path(args.runs).name):] for p in glob.glob(f"{args.runs}*") if Path(p).is_dir())
    cache = {b: load_rows(f"{args.runs}{b}") for b in books}
    print(f"{'book':40} {'items':>6} {'w/parts':>7} {'split-before':>12} {'split-after':>11} {'parts-after':>11} {'refused':>7}")
    for b in books:
        rows = cache[b]
        multi = [r for r in rows if has_parts(r["question"])]
        after = [split_exercise(r["question"], r["answer"] or "") for r in rows]
        n_before = sum(1 for r in rows if before(r["question"], r["answer"] or "")) if before else "-"
        print(f"{b:40} {len(rows):6} {len(multi):7} {n_before!s:>12} {sum(1 for s in after if s.parts):11} "
              f"{sum(len(s.parts) for s in after):11} {sum(1 for s in after if s.refused):7}")
    if args.truth:
        truth = json.loads(Path(args.truth).read_text())
        tally: dict[str, dict[str, int]] = {}
        for e in truth:
            if args.split and e["split"] != args.split:
                continue
            book = next((b for b in books if b.startswith(e["book"])), None)
            row = find(cache[book], e["page"], e["number"]) if book else None
            if row is None:
                verdict = "missing"
            else:
                verdict = score(e, split_exercise(row["question"], row["answer"] or "").parts)
                if before:
                    verdict_b = score(e, [(k, q, a) for k, q, a in before(row["question"], row["answer"] or "")])
                    tally.setdefault(f"{e['book']} before", {}).setdefault(verdict_b, 0)
                    tally[f"{e['book']} before"][verdict_b] += 1
            tally.setdefault(f"{e['book']} after", {}).setdefault(verdict, 0)
            tally[f"{e['book']} after"][verdict] += 1
            if args.show:
                print(e["book"], e["page"], e["number"], verdict)
        for k in sorted(tally):
            print(f"{k:30} " + " ".join(f"{v}={n}" for v, n in sorted(tally[k].items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
