"""Per-stage precision / recall of the embedded curation stages on a labeled set, and the answer
checker's agreement with hand-labeled equivalence triples.

    python benchmarks/curate_eval.py [--labeled tests/data/curate_labeled.jsonl] [--no-taxonomy] [--json OUT]

Each stage runs alone on every item, given the upstream facts it needs from the labels (e.g. the
verifiable stage sees the labeled question type), so one stage's error does not count against
the next. "Positive" is the class a stage acts on: flagged / dropped / converted.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections import Counter
from pathlib import Path

from rlclimb.environments.answer_check import check, infer_answer_type
from rlclimb.pipelines.stage import Drop, StageContext
from rlclimb.schemas.records import QAItem
from rlclimb.stages.curate.cleanup import external_reference, needs_figure, strip_non_problem
from rlclimb.stages.curate.convert import ConvertStage
from rlclimb.stages.curate.evergreen import time_sensitivity
from rlclimb.stages.curate.leakage import LeakageStage
from rlclimb.stages.curate.pii import PIIStage
from rlclimb.stages.curate.qtype import QuestionTypeStage, split_options
from rlclimb.stages.curate.verifiable import VerifiableStage

ROOT = Path(__file__).resolve().parent.parent
LABELED = ROOT / "tests" / "data" / "curate_labeled.jsonl"
TRIPLES = ROOT / "tests" / "data" / "answer_equivalence.jsonl"
CTX = StageContext()


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def record(item: dict) -> dict:
    return QAItem(question=item["question"], answer=item["answer"]).model_dump()


def prf(pairs: list[tuple[bool, bool]]) -> dict:
    """pairs of (label, prediction) for the positive class."""
    tp = sum(1 for y, p in pairs if y and p)
    fp = sum(1 for y, p in pairs if not y and p)
    fn = sum(1 for y, p in pairs if y and not p)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"n": len(pairs), "positives": tp + fn, "tp": tp, "fp": fp, "fn": fn,
            "precision": round(precision, 3), "recall": round(recall, 3)}


def labeled_record(item: dict) -> dict:
    """The item as a downstream stage would see it: question type, options, answer type."""
    rec = record(item)
    qtype = item["labels"]["qtype"]
    rec["question_type"] = qtype
    if qtype == "multiple_choice":
        rec["choices"] = split_options(rec["question"])[1]
        out = QuestionTypeStage().embedded(copy.deepcopy(rec), CTX)
        if not isinstance(out, Drop):
            rec = out
    rec["answer_type"] = infer_answer_type(rec["answer"], choices=rec.get("choices") or [], question_type=qtype)
    return rec


def evaluate(items: list[dict], taxonomy: bool = True) -> dict:
    out: dict = {}
    out["cleanup.needs_figure"] = prf([(it["labels"]["figure"], needs_figure(strip_non_problem(it["question"])) is not None) for it in items])
    out["cleanup.external_reference"] = prf([(it["labels"]["external"], external_reference(strip_non_problem(it["question"])) is not None) for it in items])

    qt = QuestionTypeStage()
    preds = []
    for it in items:
        res = qt.embedded(record(it), CTX)
        preds.append((it["labels"]["qtype"], "multiple_choice" if isinstance(res, Drop) else res["question_type"]))
    out["question_type.accuracy"] = {"n": len(preds), "accuracy": round(sum(y == p for y, p in preds) / len(preds), 3)}
    for cls in ("multiple_choice", "true_false", "proof", "open"):
        out[f"question_type.{cls}"] = prf([(y == cls, p == cls) for y, p in preds])

    ver = VerifiableStage()
    out["verifiable (drop = not verifiable)"] = prf(
        [(not it["labels"]["verifiable"], isinstance(ver.embedded(labeled_record(it), CTX), Drop)) for it in items])
    pii = PIIStage()
    out["pii"] = prf([(it["labels"]["pii"], isinstance(pii.embedded(record(it), CTX), Drop)) for it in items])
    out["evergreen"] = prf([(it["labels"]["time_sensitive"], time_sensitivity(it["question"]) is not None) for it in items])
    leak = LeakageStage()
    out["leakage"] = prf([(it["labels"]["leak"], isinstance(leak.embedded(labeled_record(it), CTX), Drop))
                          for it in items if it["labels"]["qtype"] == "open"])
    conv = ConvertStage(keep_mcq_share=0.0)
    convertible = [it for it in items if it["labels"]["qtype"] in ("multiple_choice", "proof") and it["labels"]["verifiable"]]
    def converted(result) -> bool:  # an MCQ that stays MCQ (`mcq_unconverted`) is not converted
        return not isinstance(result, Drop) and "mcq_unconverted" not in (result.get("tags") or [])

    out["convert (positive = converted)"] = prf(
        [(it["labels"].get("convertible", False), converted(conv.embedded(labeled_record(it), CTX))) for it in convertible])
    if taxonomy:
        out.update(evaluate_taxonomy([it for it in items if not it["labels"].get("topic_na")]))
    return out


def evaluate_taxonomy(items: list[dict], backend: str = "minilm") -> dict:
    import asyncio

    from rlclimb.stages.curate.taxonomy import TaxonomyStage

    stage = TaxonomyStage(backend=backend, min_similarity=0.0)
    t0 = time.perf_counter()
    stage.setup(CTX)
    load_s = time.perf_counter() - t0

    async def run_all():
        return await asyncio.gather(*(stage.process(record(it), CTX) for it in items))

    t0 = time.perf_counter()
    results = asyncio.run(run_all())
    per_item_ms = (time.perf_counter() - t0) / max(len(items), 1) * 1000
    domain = [(it["labels"]["topic"].split("/")[0], r["topic"][0]) for it, r in zip(items, results, strict=True)]
    sub = [(it["labels"]["topic"], "/".join(r["topic"])) for it, r in zip(items, results, strict=True)]
    out = {f"taxonomy[{backend}].domain": {"n": len(domain), "accuracy": round(sum(a == b for a, b in domain) / len(domain), 3)},
           f"taxonomy[{backend}].subtopic": {"n": len(sub), "accuracy": round(sum(a == b for a, b in sub) / len(sub), 3),
                                             "load_s": round(load_s, 1), "ms_per_item": round(per_item_ms, 1)}}
    for d in sorted({a for a, _ in domain}):
        out[f"taxonomy[{backend}].{d}"] = prf([(a == d, b == d) for a, b in domain])
    out["_taxonomy_errors"] = [f"{a} -> {b}" for a, b in sub if a != b]
    return out


def answer_agreement(triples: list[dict]) -> dict:
    by_form: dict[str, Counter] = {}
    mismatches = []
    for t in triples:
        v = check(t["gold"], t["pred"], t.get("answer_type"), choices=t.get("choices", ()))
        ok = bool(v.equivalent) == t["expected"]
        c = by_form.setdefault(t["form"], Counter())
        c["n"] += 1
        c["agree"] += ok
        if not ok:
            mismatches.append(f"{t['form']}: {t['gold']!r} vs {t['pred']!r} expected {t['expected']} ({t.get('note', '')})")
    total = sum(c["n"] for c in by_form.values())
    agree = sum(c["agree"] for c in by_form.values())
    return {"n": total, "agree": agree, "agreement": round(agree / total, 3),
            "by_form": {f: f"{c['agree']}/{c['n']}" for f, c in sorted(by_form.items())}, "mismatches": mismatches}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labeled", type=Path, default=LABELED)
    ap.add_argument("--triples", type=Path, default=TRIPLES)
    ap.add_argument("--no-taxonomy", action="store_true")
    ap.add_argument("--backend", action="append", default=None, help="taxonomy embedding backend(s)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    items = load(args.labeled)
    report = evaluate(items, taxonomy=False)
    if not args.no_taxonomy:
        for backend in args.backend or ["minilm"]:
            report.update(evaluate_taxonomy([it for it in items if not it["labels"].get("topic_na")], backend))
    report["answer_check"] = answer_agreement(load(args.triples))
    print(f"labeled items: {len(items)} ({args.labeled})")
    for name, r in report.items():
        if name.startswith("_") or name == "answer_check":
            continue
        cells = " ".join(f"{k}={v}" for k, v in r.items())
        print(f"{name:40s} {cells}")
    a = report["answer_check"]
    print(f"answer_check agreement {a['agree']}/{a['n']} = {a['agreement']}  by form: {a['by_form']}")
    for m in a["mismatches"]:
        print("  mismatch:", m)
    for e in report.get("_taxonomy_errors", []):
        print("  taxonomy error:", e)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
