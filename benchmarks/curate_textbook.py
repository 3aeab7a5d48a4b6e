"""Are curated textbook items worth training on? Measured on hand labels of real-book items.

    python benchmarks/curate_textbook.py [--runs runs/curate16-] [--split dev|heldout|all] [--labels DIR] [--json OUT]
        [--compare BASE_RUNS_PREFIX]

Labels (tests/data/textbook_item_labels/<book>.jsonl) were written by hand from a random sample of
the UNCURATED `textbook-pdf` output (answered items, split into parts as curation splits them), so
they also measure what curation wrongly drops. Each says good / marginal / bad, a reason class and
the topic. A label is keyed by book, page, exercise number and question (and part) text prefixes,
not by item id: the document pipeline changes, and fuzzy text matching survives small changes.
A verdict is for the text it judged: when the parse changes a labelled item's text, the item is
judged again and the new verdict added to the label's `revisions` with the whole question and
answer it judged; it grades runs whose item has exactly that text (`judged`).

For each book the curated run (`<runs>cur-<file>`, `textbook-pdf --set curate=true`) is read: its
data (kept items) and its ledger (dropped items, with the reason). Reported per book: the share
of good / bad items among the labeled items curation kept (precision), the yield (good items kept
/ good items labeled), the precision of each drop reason (share of the items it dropped that were
not good), the recall of each failure class (share of the items labeled so that were dropped), and
the domain accuracy of the kept items' topics. Splits: `dev` (tuned on); `heldout`, kept aside by
the first labelling round and looked at since (so in-sample now); `heldout2`, half of the second
round's labels (ostp, thompson, lebl), kept aside until the end of that round's tuning;
`curated_sample` (45 items) was sampled afterwards from the final curated output (its precision
only: yield and recall need the uncurated sample). `heldout3` (`--split heldout3 --labels
tests/data/textbook_item_labels_heldout3`): 20 items per book drawn blind (seed 2027) from the
uncurated output of commit 8a26bf6, none matching an earlier label, in their own directory so that
no tuning round reads them.
`heldout4` (`--split heldout4 --labels tests/data/textbook_item_labels_heldout4`): a second such set,
20 items per book drawn blind (seed 2028) from the uncurated output of efede23, none matching a
heldout3 or earlier label, labeled while curation was being tuned and kept from the tuner until the end.
`heldout5` (`--split heldout5 --labels tests/data/textbook_item_labels_heldout5`): a third such set,
20 items per book drawn blind (seed 2029) from the uncurated output of f711b8d, none matching a
heldout4 or earlier label, labeled while curation was being tuned and kept from the tuner until the end.
`heldout6` (`--split heldout6 --labels tests/data/textbook_item_labels_heldout6`): a fourth, drawn by
benchmarks/truth/sample_heldout.py (seed 2030) from the uncurated output of 5c1358e, none matching a
heldout5 or earlier label: 20 items per book, strickland's last 2 unlabelled ones, measured once at the end.
`heldout7` (seed 2031, 47c33cf's uncurated output, none matching a heldout6 or earlier label; 20 items
per book, none left for strickland): measured once on 47c33cf, then tuned on by the eighth round.
`heldout8` (seed 2032, same output, none matching a heldout7 or earlier label): kept from the eighth
round's tuners, measured once at its end (`--compare` shows which outcomes changed).
`heldout9` (seed 2033, c648a51's uncurated output, none matching a heldout8 or earlier label nor a part of
an exercise an earlier label judged whole): 20 items per book of judson, hefferon, levin, thompson and ostp
(strickland and lebl have none left), labeled blind before the ninth round changed curation.
`heldout10` (seed 2041, a568850's uncurated output, none matching a heldout9 or earlier label): 20 items per
book of judson, hefferon, levin, thompson and ostp, labeled blind before the tenth round changed curation and
kept from its tuners until the lead measures the final code.
`heldout11` (seed 2042, b4d62b5's uncurated output, none matching a heldout10 or earlier label): 20 items per
book of judson, hefferon, levin and ostp, thompson's last 6, labeled blind by helpers who saw only the items,
the books and the labeling guide (benchmarks/truth/labeling-guide.md), before the twelfth round changed
curation; measured once, on that round's final code.
`heldout12` (seed 2043, 5f9091d's uncurated output, none matching a heldout11 or earlier label): 20 items per
book of judson, hefferon, levin and ostp, labeled blind the same way before the thirteenth round changed
curation; measured once, on that round's final code.
`heldout13` (seed 2044, 7e1774a's uncurated output, none matching a heldout12 or earlier label): 20 items per
book of hefferon, levin and ostp and judson's last 10, labeled blind the same way before the fourteenth
round changed curation; measured once, on that round's starting code, before any change.
`heldout14` (seed 2045, 198ae12's uncurated output, none matching a heldout13 or earlier label): 20 items per
book of hefferon, levin and ostp, labeled blind the same way before the fifteenth round changed curation;
measured on that round's starting code (totals only) and on its final code.
`heldout15` (seed 2046, 8a56815's uncurated output, none matching a heldout14 or earlier label): 20 items per
book of hefferon, levin and ostp, labeled blind the same way before the sixteenth round changed anything;
measured on that round's starting code (totals only) and on its final code.
`heldout16` (seed 2047, 7aad3ff's uncurated output, none matching a heldout15 or earlier label): 20 items per
book of hefferon, levin and ostp, labeled blind the same way before the seventeenth round changed anything
(hefferon's drawn from a run on a machine without Tesseract, so two of its answer-key pages were ledgered
`ocr_unavailable` instead of OCR'd: the draw differs from an OCR'd run's, every drawn item is in both);
measured on that round's starting code and on its final code.
`heldout17` (seed 2048, ddf1a29's uncurated output, none matching a heldout16 or earlier label): 20 items per
book of hefferon, levin and ostp, labeled blind the same way before the eighteenth round changed anything;
measured on that round's starting code and on its final code.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from collections import Counter, defaultdict
from difflib import SequenceMatcher
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "data" / "textbook_item_labels"
BOOK_FILES = {"judson": "judson-aata-2022", "hefferon": "hefferon", "strickland": "strickland-linmath-probs",
              "levin": "levin-dmoi-2016", "thompson": "thompson-calculus-made-easy-pg33283",
              "ostp": "ostp-physics-question-library-2021", "lebl": "lebl-diffyqs-fr-2023"}


def load_labels(split: str = "all", root: Path = LABELS) -> list[dict]:
    out = []
    for path in sorted(root.glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    splits = set(split.split(","))  # "dev,heldout": several splits pooled
    return [x for x in out if split == "all" or x["split"] in splits]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w]+", " ", text.casefold())).strip()


def _similar(prefix: str, text: str) -> float:
    a, b = _norm(prefix), _norm(text)
    if not a:
        return 0.0
    if a in b:
        return 1.0
    m = SequenceMatcher(None, a, b, autojunk=False)
    return sum(block.size for block in m.get_matching_blocks()) / len(a)


def match_score(label: dict, record: dict) -> float:
    """How well a record is the labeled item (0..1): same page, number and question (part) text.
    A parent exercise (number "3" for the label "3(g)") that contains the part also matches, a bit
    lower: curation may drop an exercise before it splits it."""
    src = record.get("source") or {}
    number, want = str(src.get("number") or ""), str(label.get("number") or "")
    base = want.split("(")[0]
    if number == want:
        num = 1.0
    elif number == base and "(" in want:
        num = 0.8
    elif number.split("(")[0] == base:
        return 0.0  # a sibling part
    else:
        num = 0.3
    page = 1.0 if src.get("page") == label.get("page") else 0.5
    q = record.get("question") or ""
    text = _similar(label["question_prefix"][:60], q)
    if label.get("part_prefix"):
        text = min(text, _similar(label["part_prefix"], q))
    return num * page * text


def find(label: dict, records: list[dict], threshold: float = 0.6) -> dict | None:
    # only a record on the label's page can reach the threshold (another page scores at most 0.5),
    # so the costly text match runs on those alone
    records = [r for r in records if (r.get("source") or {}).get("page") == label.get("page")] if threshold > 0.5 else records
    best = max(records, key=lambda r: match_score(label, r), default=None)
    return best if best is not None and match_score(label, best) >= threshold else None


def read_run(run: Path) -> tuple[list[dict], list[dict]]:
    """(kept records, dropped records with `_stage` and `_reason`) of a curated run."""
    import pyarrow.parquet as pq

    kept = [r for f in sorted(glob.glob(str(run / "data" / "*.parquet"))) for r in pq.read_table(f).to_pylist()]
    dropped = []
    for f in sorted(glob.glob(str(run / "ledger" / "*.parquet"))):
        for row in pq.read_table(f).to_pylist():
            if not row.get("record"):
                continue
            rec = json.loads(row["record"])
            rec["_stage"], rec["_reason"] = row["stage"], row["reason"]
            dropped.append(rec)
    return kept, dropped


def _text(text: str) -> str:
    # no whitespace at all: curation's normalize joins "φ :" and ". . ." (the parse's spacing), a change
    # of no verdict
    return "".join((text or "").split())


def own_question(record: dict) -> str:
    """The question without the earlier parts part_context put in (the text a part's verdict was
    judged on: the context only adds what the book printed before it)."""
    question = record.get("question") or ""
    meta = record.get("meta") or {}
    context = (json.loads(meta) if isinstance(meta, str) else meta).get("context")
    if not context or f"{context['earlier_parts']}\n" not in question:
        return question
    return question.replace(f"{context['earlier_parts']}\n", "", 1).rsplit("\n", 1)[0]


def judged(label: dict, record: dict) -> dict:
    """The label as it applies to `record`'s text. A verdict is for the text it was given on: when
    the parse changes an item's text (a flattened power rebuilt), the item is judged again and the
    new verdict added under `revisions` with the whole question and answer it judged
    (`question_text`, `answer_text`); it applies to a record with exactly that text (whitespace
    aside; the answer may be in `solution`, where verifiable moves a worked answer). Prefixes cannot tell: the change may lie past them, and `_norm` drops the symbols
    ("e^{x2}" is the text "e^{x^2}" was parsed from)."""
    answers = {_text(record.get("answer")), _text(record.get("solution"))}  # a worked answer's final value moved it there
    # the question as trained on first (a part with its earlier parts, judged so), then the part's own text
    for q in dict.fromkeys((_text(record.get("question")), _text(own_question(record)))):
        for version in label.get("revisions") or ():
            if _text(version["question_text"]) == q and _text(version["answer_text"]) in answers:
                return {**label, **{k: v for k, v in version.items() if k not in ("question_text", "answer_text")}, "revised": True}
    return label


def outcome(label: dict, kept: list[dict], dropped: list[dict]) -> dict:
    """{"status": kept | dropped | missing, "reason", "topic", "verdict"} of one labeled item in a
    curated run (`verdict`: the label's, or its revision's for the text the run has)."""
    rec = find(label, kept)
    if rec is not None:
        return {"status": "kept", "topic": "/".join(rec.get("topic") or []), "tags": rec.get("tags") or [],
                "label": judged(label, rec)}
    rec = find(label, dropped)
    if rec is not None:
        return {"status": "dropped", "reason": f"{rec['_stage']}.{rec['_reason']}", "label": judged(label, rec)}
    return {"status": "missing", "label": label}


def summarize(rows: list[tuple[dict, dict]]) -> dict:
    labeled = Counter(lab["verdict"] for lab, _ in rows)
    kept = [(lab, out) for lab, out in rows if out["status"] == "kept"]
    k = Counter(lab["verdict"] for lab, _ in kept)
    n_kept = len(kept)
    good = labeled["good"]
    report = {
        "labeled": len(rows), "labeled_good": good, "labeled_marginal": labeled["marginal"], "labeled_bad": labeled["bad"],
        "missing": sum(out["status"] == "missing" for _, out in rows),
        "kept": n_kept,
        "kept_good_share": round(k["good"] / n_kept, 3) if n_kept else None,
        "kept_bad_share": round(k["bad"] / n_kept, 3) if n_kept else None,
        "yield_good": round(k["good"] / good, 3) if good else None,
    }
    by_reason: dict[str, Counter] = defaultdict(Counter)
    for lab, out in rows:
        if out["status"] == "dropped":
            by_reason[out["reason"]]["n"] += 1
            by_reason[out["reason"]]["right"] += lab["verdict"] != "good"
    report["drop_precision"] = {r: f"{c['right']}/{c['n']}" for r, c in sorted(by_reason.items())}
    by_class: dict[str, Counter] = defaultdict(Counter)
    for lab, out in rows:
        if lab["verdict"] != "good":
            by_class[lab["reason"]]["n"] += 1
            by_class[lab["reason"]]["dropped"] += out["status"] == "dropped"
    report["class_recall"] = {r: f"{c['dropped']}/{c['n']}" for r, c in sorted(by_class.items())}
    topics = [(lab["topic"], out["topic"]) for lab, out in kept]
    if topics:
        report["domain_accuracy"] = round(sum(a.split("/")[0] == b.split("/")[0] for a, b in topics) / len(topics), 3)
        report["topic_accuracy"] = round(sum(a == b for a, b in topics) / len(topics), 3)
    return report


def outcomes(runs_prefix: str, split: str, books: list[str] | None = None,
             labels: Path = LABELS) -> dict[str, list[tuple[dict, dict]] | str]:
    """book -> [(label, outcome)] in the curated runs `<runs_prefix>cur-<file>`, or an error string."""
    out: dict[str, list[tuple[dict, dict]] | str] = {}
    for book, labs in sorted(_by_book(load_labels(split, labels)).items()):
        if books and book not in books:
            continue
        run = Path(f"{runs_prefix}cur-{BOOK_FILES[book]}")
        if not (run / "data").exists():
            out[book] = f"no curated run at {run}"
            continue
        kept, dropped = read_run(run)
        out[book] = [(res["label"], res) for res in (outcome(lab, kept, dropped) for lab in labs)]
    return out


def evaluate(runs_prefix: str, split: str, books: list[str] | None = None, labels: Path = LABELS) -> dict:
    report, pooled = {}, []
    for book, rows in outcomes(runs_prefix, split, books, labels).items():
        if isinstance(rows, str):
            report[book] = {"error": rows}
            continue
        pooled += rows
        report[book] = summarize(rows)
    report["ALL"] = summarize(pooled)
    return report


def _state(out: dict) -> str:
    return out["status"] + (f" {out['reason']}" if out["status"] == "dropped" else "")


def compare(base_prefix: str, new_prefix: str, split: str, books: list[str] | None = None,
            labels: Path = LABELS) -> dict:
    """Which labeled items changed outcome between two sets of runs (base -> new), by the
    label's verdict: e.g. {"good": {"dropped usability.x -> kept": 2}}. Item text is not shown,
    so a blind set can be compared without being read."""
    base, new = outcomes(base_prefix, split, books, labels), outcomes(new_prefix, split, books, labels)
    report: dict = {}
    both_base, both_new = [], []
    for book in sorted(set(base) | set(new)):
        if isinstance(base.get(book), str) or isinstance(new.get(book), str) or book not in base or book not in new:
            report[book] = {"error": base.get(book) if isinstance(base.get(book), str) else new.get(book, "missing")}
            continue
        changes: dict[str, Counter] = defaultdict(Counter)
        for (lab, a), (lab_new, b) in zip(base[book], new[book]):
            verdict = lab["verdict"] if lab_new["verdict"] == lab["verdict"] else f"{lab['verdict']} -> {lab_new['verdict']} (judged again)"
            if _state(a) != _state(b) or verdict != lab["verdict"]:
                changes[verdict][f"{_state(a)} -> {_state(b)}"] += 1
            if a["status"] != "missing" and b["status"] != "missing":
                both_base.append((lab, a))
                both_new.append((lab_new, b))
        report[book] = {verdict: dict(c) for verdict, c in sorted(changes.items())} or "no change"
    # an item labeled whole that the new runs split into parts (or whose text changed past matching)
    # is 'missing' there: its label cannot grade the parts, so both sides are also summarized on
    # the labels both find
    keys = ("labeled", "kept", "kept_good_share", "kept_bad_share", "yield_good")
    report["found in both: base"] = {k: summarize(both_base)[k] for k in keys}
    report["found in both: new"] = {k: summarize(both_new)[k] for k in keys}
    return report


def taxonomy_accuracy(runs_prefix: str, split: str, prior: float, books: list[str] | None = None,
                      labels: Path = LABELS) -> dict:
    """Domain / topic accuracy of the taxonomy stage on every labeled item (kept or not), classified
    with the other answered items of its uncurated run as the stage sees a shard: the document prior
    (`prior`, 0 = off) included."""
    import asyncio

    import pyarrow.parquet as pq

    from rlclimb.pipelines.stage import StageContext
    from rlclimb.stages.curate.parts import split_parts
    from rlclimb.stages.curate.taxonomy import TaxonomyStage

    stage = TaxonomyStage(document_prior=prior, with_heading=prior > 0, min_similarity=0.0)
    stage.setup(StageContext())
    out: dict = {}
    pairs_all = []
    for book, labs in sorted(_by_book(load_labels(split, labels)).items()):
        if books and book not in books:
            continue
        run = Path(f"{runs_prefix}raw-{BOOK_FILES[book]}")
        rows = [r for f in sorted(glob.glob(str(run / "data" / "*.parquet"))) for r in pq.read_table(f).to_pylist()
                if (r.get("answer") or "").strip()]
        records = []
        for r in rows:  # split into parts as curation does, so part labels find their part
            parts = split_parts(r["question"], r["answer"])
            for k, q, a in parts or [(None, r["question"], r["answer"])]:
                src = {**r["source"], "number": f"{r['source']['number']}({k})" if k else r["source"]["number"]}
                records.append({**r, "question": q, "answer": a, "source": src})

        async def run_all(recs=records):
            return await asyncio.gather(*(stage.process(dict(x), StageContext()) for x in recs))

        results = asyncio.run(run_all())
        pairs = []
        for lab in labs:
            rec = find(lab, records)
            if rec is not None:
                pairs.append((lab["topic"], "/".join(results[records.index(rec)]["topic"])))
        pairs_all += pairs
        out[book] = _accuracy(pairs)
    out["ALL"] = _accuracy(pairs_all)
    return out


def _accuracy(pairs: list[tuple[str, str]]) -> dict:
    n = len(pairs) or 1
    return {"n": len(pairs), "domain": round(sum(a.split("/")[0] == b.split("/")[0] for a, b in pairs) / n, 3),
            "topic": round(sum(a == b for a, b in pairs) / n, 3),
            "wrong_domains": dict(Counter(b.split("/")[0] for a, b in pairs if a.split("/")[0] != b.split("/")[0]))}


def _by_book(labels: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for lab in labels:
        out[lab["book"]].append(lab)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default=str(ROOT / "runs" / "curate16-"), help="prefix of the curated runs: <runs>cur-<file>")
    ap.add_argument("--split", default="dev", help="dev | heldout | heldout2 | curated_sample | heldout3 .. heldout13 | all, or several joined by commas")
    ap.add_argument("--labels", type=Path, default=LABELS, help="label directory (<book>.jsonl files)")
    ap.add_argument("--book", action="append")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--taxonomy", action="store_true", help="also: the taxonomy stage on every labeled item, prior off and on")
    ap.add_argument("--compare", metavar="BASE_RUNS", help="also: which labeled items changed outcome from the runs <BASE_RUNS>cur-* to --runs (counts by verdict, no item text)")
    args = ap.parse_args()
    report = evaluate(args.runs, args.split, args.book, args.labels)
    if args.compare:
        report["changed outcomes (--compare -> --runs)"] = compare(args.compare, args.runs, args.split, args.book, args.labels)
    if args.taxonomy:
        report["taxonomy (no document prior)"] = taxonomy_accuracy(args.runs, args.split, 0.0, args.book, args.labels)
        report["taxonomy (document prior)"] = taxonomy_accuracy(args.runs, args.split, 1.0, args.book, args.labels)
    print(f"split: {args.split}  runs: {args.runs}cur-*")
    for book, r in report.items():
        print(f"\n[{book}]")
        for key, value in r.items():
            print(f"  {key:18s} {value}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
