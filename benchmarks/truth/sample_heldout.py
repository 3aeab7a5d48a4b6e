"""Draw a blind label sample from the UNCURATED `textbook-pdf` output of the 7 books.

    python benchmarks/truth/sample_heldout.py --runs runs/h7m-raw- --seed 2030 --count 20 \
        --exclude tests/data/textbook_item_labels --exclude tests/data/textbook_item_labels_heldout5 ... \
        --out /tmp/sample.jsonl

Only answered items are drawn, split into parts as curation splits them (stages/curate/parts.py),
so a label measures both what curation keeps and what it wrongly drops. An item that matches any
label in an --exclude directory (every split; curate_textbook.find, same page, number and text) is
never drawn again. Each book is drawn with its own random.Random(seed) over the items in run
order, so one book's sample does not depend on the others'. A book with fewer unlabelled items
than --count gives all it has. Each output line carries the label keys (book, page, number,
question_prefix, part_prefix, answer_prefix), and the full question, answer and answer page to label from.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq

from rlclimb.stages.curate import parts as parts_stage
from rlclimb.stages.curate.parts import split_parts

ROOT = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location("curate_textbook", ROOT / "benchmarks" / "curate_textbook.py")
curate_textbook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(curate_textbook)

# the prefix lengths earlier label sets use
QUESTION_PREFIX, PART_PREFIX, ANSWER_PREFIX = 80, 40, 60


def _field(value):
    return json.loads(value) if isinstance(value, str) and value[:1] in "{[" else value


def answered_items(run: Path) -> list[dict]:
    """The run's answered items, each exercise split into its answered parts."""
    files = sorted(glob.glob(str(run / "data" / "*.parquet")))
    if not files:
        raise SystemExit(f"no data in {run}: is the run finished?")
    out = []
    for rec in (r for f in files for r in pq.read_table(f).to_pylist()):
        answer = (rec.get("answer") or "").strip()
        if not answer:
            continue
        source = _field(rec.get("source")) or {}
        answer_page = ((_field(rec.get("meta")) or {}).get("answer_source") or {}).get("page")
        parts = split_parts(rec["question"], answer)
        if not parts:
            out.append({"question": rec["question"], "answer": answer, "source": source, "part": None,
                        "answer_page": answer_page})
            continue
        for label, question, part_answer in parts:
            number = f"{source.get('number')}({label})" if source.get("number") else None
            out.append({"question": question, "answer": part_answer, "source": {**source, "number": number},
                        "part": part_text(question, label), "answer_page": answer_page})
    return out


def part_text(question: str, label: str) -> str:
    """The part's own text in a split question, which split_parts writes as 'stem\n(a) text' or,
    for a book that labels its parts 'a)' (lebl), 'stem\na) text'."""
    for marker in (f"\n({label}) ", f"\n{label}) "):
        if marker in question:
            return question.rsplit(marker, 1)[1]
        if question.startswith(marker[1:]):  # an exercise with no stem: "(a) Define ..." stands alone
            return question[len(marker) - 1:]
    raise ValueError(f"part ({label}) has no label line in {question[:80]!r}")


def load_excluded(dirs: list[Path]) -> list[dict]:
    labels = []
    for d in dirs:
        if not d.is_dir():
            raise SystemExit(f"--exclude {d}: not a directory")
        labels += curate_textbook.load_labels("all", root=d)
    return labels


def unlabelled(items: list[dict], labels: list[dict]) -> list[dict]:
    """Items no label matches (curate_textbook.find: the label finds them in a run), and no part of
    an exercise labelled whole: a label "77" judged 77's text, which a finer split later cuts into
    77(a), 77(b) that `find` scores as siblings, not as the labelled item."""
    taken = set()
    for lab in labels:
        rec = curate_textbook.find(lab, items)
        while rec is not None:  # a label may match several records (a parent and its part): drop each
            taken.add(id(rec))
            rec = curate_textbook.find(lab, [r for r in items if id(r) not in taken])
    wholes = {(lab.get("page"), str(lab.get("number"))) for lab in labels if "(" not in str(lab.get("number") or "")}
    for r in items:
        number = str(r["source"].get("number") or "")
        if "(" in number and (r["source"].get("page"), number.split("(")[0]) in wholes:
            taken.add(id(r))
    return [r for r in items if id(r) not in taken]


def label_keys(book: str, item: dict) -> dict:
    src = item["source"]
    row = {"book": book, "page": src.get("page"), "number": src.get("number"),
           "question_prefix": item["question"][:QUESTION_PREFIX]}
    if item["part"] is not None:
        row["part_prefix"] = item["part"][:PART_PREFIX]
    row["answer_prefix"] = item["answer"][:ANSWER_PREFIX]
    return row


def sample_book(book: str, run: Path, labels: list[dict], seed: int, count: int) -> list[dict]:
    items = unlabelled(answered_items(run), [lab for lab in labels if lab["book"] == book])
    drawn = random.Random(seed).sample(items, min(count, len(items)))
    return [{**label_keys(book, it), "question": it["question"], "answer": it["answer"], "answer_page": it["answer_page"]}
            for it in drawn]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", required=True, help="run prefix: <runs><file> is a book's uncurated run")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, default=20, help="items per book")
    p.add_argument("--exclude", action="append", default=[], type=Path, help="a label directory (repeatable)")
    p.add_argument("--books", default=",".join(curate_textbook.BOOK_FILES))
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    books = args.books.split(",")
    if unknown := set(books) - set(curate_textbook.BOOK_FILES):
        raise SystemExit(f"unknown book(s): {sorted(unknown)}")
    labels = load_excluded(args.exclude)
    # the draw splits parts with whatever parts.py this checkout imports (uncommitted edits included):
    # say which, so a sample meant for one commit's output can be checked against it
    print(f"split_parts: {parts_stage.__file__} (SplitParts version {parts_stage.SplitParts.version})", file=sys.stderr)
    rows = []
    for book in books:
        drawn = sample_book(book, Path(f"{args.runs}{curate_textbook.BOOK_FILES[book]}"), labels, args.seed, args.count)
        print(f"{book}: {len(drawn)} drawn", file=sys.stderr)
        rows += drawn
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


if __name__ == "__main__":
    main()
