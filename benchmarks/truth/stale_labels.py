"""Labels whose text the parse has changed since they were judged, to be judged again; and merging
the new verdicts back into the label files as `revisions` (curate_textbook.judged applies them).

    python benchmarks/truth/stale_labels.py find --runs runs/r13-raw- --out /tmp/stale.jsonl
    python benchmarks/truth/stale_labels.py find --context --runs runs/r15- --out /tmp/with_context.jsonl
    python benchmarks/truth/stale_labels.py merge --inputs /tmp/stale.jsonl --verdicts /tmp/rejudged.jsonl \
        --at "parse v13 (2026-12-03)"

`find` reads each book's UNCURATED run (`<runs><file>`), splits items into parts as curation does,
finds each label's item (curate_textbook.find) and lists the labels that no revision matches and whose
question, part or answer prefix is not, whitespace aside, the item's text now. Each output line has
the label's directory, keys, old verdict, reason and note, and the item's full new question and
answer: what a re-judge sees (labeling-guide.md, last section). `find --context` lists the labels whose
part a curated run (`<runs>cur-<file>`) kept with its earlier parts put back (part_context): the
verdict judged the part alone. `merge` takes those lines and the
re-judge's (same order: dir, book, page, number, old_question_prefix, old_part_prefix,
old_answer_prefix, verdict, reason, topic, note) and appends one revision per label, with the whole
text it judged.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LABEL_DIRS = ROOT / "tests" / "data"

_spec = importlib.util.spec_from_file_location("sample_heldout", ROOT / "benchmarks" / "truth" / "sample_heldout.py")
sample_heldout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample_heldout)
curate_textbook = sample_heldout.curate_textbook


def _flat(text: str | None) -> str:
    return "".join((text or "").split())


def _labels() -> list[tuple[Path, str, list[dict]]]:
    """(label directory, book, its labels) for every label set."""
    out = []
    for d in sorted(LABEL_DIRS.glob("textbook_item_labels*")):
        by_book = defaultdict(list)
        for lab in curate_textbook.load_labels("all", root=d):
            by_book[lab["book"]].append(lab)
        out += [(d, book, labels) for book, labels in sorted(by_book.items())]
    return out


def _row(d: Path, book: str, lab: dict, item: dict, answer_page: int | None) -> dict:
    """What a re-judge sees: the label's keys, old verdict and note, and the item's text now."""
    return {"dir": d.name, "book": book, "page": lab["page"], "number": lab["number"],
            "verdict": lab["verdict"], "reason": lab["reason"], "old_note": lab.get("note"),
            "old_question_prefix": lab["question_prefix"], "old_part_prefix": lab.get("part_prefix"),
            "old_answer_prefix": lab.get("answer_prefix"), "question": item["question"],
            "answer": item["answer"], "answer_page": answer_page}


def find_stale(runs: str) -> tuple[list[dict], Counter]:
    rows, stats = [], Counter()
    for d, book, labels in _labels():
        items = sample_heldout.answered_items(Path(f"{runs}{curate_textbook.BOOK_FILES[book]}"))
        for lab in labels:
            item = curate_textbook.find(lab, items)
            if item is None:
                stats["not found"] += 1
                continue
            if curate_textbook.judged(lab, item).get("revised"):
                stats["a revision applies"] += 1
                continue
            q, a = _flat(item["question"]), _flat(item["answer"])
            same = q.startswith(_flat(lab["question_prefix"])) and a.startswith(_flat(lab.get("answer_prefix"))) \
                and _flat(lab.get("part_prefix")) in q
            if same:
                stats["same text"] += 1
                continue
            stats["stale"] += 1
            rows.append(_row(d, book, lab, item, item["answer_page"]))
    return rows, stats


def find_with_context(runs: str) -> tuple[list[dict], Counter]:
    """Labels whose item a CURATED run (`<runs>cur-<file>`) kept with part_context's earlier parts in
    its question, and no revision judged that text: the verdict was for the part alone."""
    rows, stats = [], Counter()
    for d, book, labels in _labels():
        kept, _ = curate_textbook.read_run(Path(f"{runs}cur-{curate_textbook.BOOK_FILES[book]}"))
        for lab in labels:
            item = curate_textbook.find(lab, kept)
            if item is None or curate_textbook.own_question(item) == item["question"]:
                continue
            full = _flat(item["question"])
            if any(_flat(v["question_text"]) == full for v in lab.get("revisions") or ()):
                stats["a revision applies"] += 1
                continue
            stats["with context"] += 1
            meta = json.loads(item["meta"]) if isinstance(item.get("meta"), str) else item.get("meta") or {}
            rows.append(_row(d, book, lab, item, (meta.get("answer_source") or {}).get("page")))
    return rows, stats


def merge(inputs: list[dict], verdicts: list[dict], at: str) -> Counter:
    """Append each re-judged verdict to its label as a revision; returns old -> new verdict counts."""
    if len(inputs) != len(verdicts):
        raise SystemExit(f"{len(inputs)} inputs but {len(verdicts)} verdicts: one verdict per input line, same order")
    changes: Counter = Counter()
    by_file = defaultdict(list)
    for i, v in zip(inputs, verdicts, strict=True):
        for key in ("dir", "book", "page", "number", "old_question_prefix"):
            if i[key] != v[key]:
                raise SystemExit(f"verdict for {i['book']} p{i['page']} {i['number']}: {key} differs; same order as the inputs?")
        by_file[LABEL_DIRS / i["dir"] / f"{i['book']}.jsonl"].append((i, v))
    for path, pairs in by_file.items():
        labels = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for i, v in pairs:
            hits = [lab for lab in labels if lab["page"] == i["page"] and lab["number"] == i["number"]
                    and lab["question_prefix"] == i["old_question_prefix"] and lab.get("part_prefix") == i["old_part_prefix"]]
            if len(hits) != 1:
                raise SystemExit(f"{path}: {len(hits)} labels match {i['page']} {i['number']}")
            hits[0].setdefault("revisions", []).append({
                "question_prefix": i["question"][:sample_heldout.QUESTION_PREFIX],
                "answer_prefix": i["answer"][:sample_heldout.ANSWER_PREFIX],
                "verdict": v["verdict"], "reason": v["reason"], "topic": v["topic"], "note": v["note"], "at": at,
                "question_text": i["question"], "answer_text": i["answer"]})
            changes[f"{hits[0]['verdict']} -> {v['verdict']}"] += 1
        path.write_text("".join(json.dumps(lab, ensure_ascii=False) + "\n" for lab in labels))
    return changes


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("find")
    f.add_argument("--runs", required=True, help="run prefix: <runs><file> is a book's uncurated run")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--context", action="store_true",
                   help="instead: labels whose item the curated runs <runs>cur-<file> kept with its earlier parts (part_context)")
    m = sub.add_parser("merge")
    m.add_argument("--inputs", type=Path, required=True, help="the `find` output the re-judge worked from")
    m.add_argument("--verdicts", type=Path, required=True)
    m.add_argument("--at", required=True, help="what changed the text, and when (kept in each revision)")
    args = p.parse_args(argv)
    if args.cmd == "find":
        rows, stats = find_with_context(args.runs) if args.context else find_stale(args.runs)
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        print(dict(stats), file=sys.stderr)
    else:
        print(dict(merge(_read(args.inputs), _read(args.verdicts), args.at)), file=sys.stderr)


if __name__ == "__main__":
    main()
