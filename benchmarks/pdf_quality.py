"""Extraction and pairing quality of the textbook-pdf pipeline, against truth.

    python benchmarks/pdf_quality.py --generated 3                 # generated textbooks (seeds 0..2)
    python benchmarks/pdf_quality.py --real /work/shared/data/textbooks   # every real textbook there
    python benchmarks/pdf_quality.py --real DIR --books levin,ostp        # some of them

Generated books: the generator's own truth (every exercise, example and answer it printed).
Real books: truth is built here, independently of the pipeline's structure code, from each
book's raw text (`page.get_text()`, no layout analysis), its PDF outline, and the label formats
its SOURCES note documents (checked by hand on sample pages):
- strickland: "Exercise N." ... "Solution:" ... "□", 80 of each;
- judson: the outline's "Exercises" / "Programming Exercises" / "Additional Exercises" /
  "Reading Questions" sections (numbered chapter.k by outline position), items "N." in
  sequence; answers = the appendix entries "c.k.N." (text after "Hint.");
- hefferon: book subsections (outline) -> the block after the "Exercises" line, items
  "[✓?] s.N" in sequence (s = the subsection number), Topic exercises "N text"; answers = the
  answer book's first copy (pages <= 221), keys "One.I.1.17" and, under Topic headings, "N".
The other books (ostp, thompson, levin, lebl) are scored against label truth in
benchmarks/truth/*.json (built by benchmarks/truth/build_truth.py from the books' LaTeX sources
where they exist, else from their raw text; see there): an item matches by (start page, label
number), a pair is right when its answer came from the truth's answer page (`score_keyed`).
Each book runs on its own; per book the report also counts pages OCR'd / repaired and pages that
ended with neither units nor a ledger entry (every page must end as one or the other).
Scores: extraction precision/recall of questions, pairing precision/recall/F1 of (question, answer)
(see tests/helpers/textbook_scoring.py for the matching rules).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.textbook_gen import make_textbook  # noqa: E402
from helpers.textbook_scoring import Truth, score, score_keyed  # noqa: E402

from rlclimb.pipelines.definitions.textbook_pdf import build  # noqa: E402
from rlclimb.pipelines.engine import RunOptions, run_pipeline  # noqa: E402
from rlclimb.schemas.io import read_rows  # noqa: E402

TRUTH = Path(__file__).resolve().parent / "truth"
# book -> its files (an answer book last); the development books first
BOOKS = {
    "strickland": ["strickland-linmath-probs.pdf"],
    "judson": ["judson-aata-2022.pdf"],
    "hefferon": ["hefferon-linalg-book-2012.pdf", "hefferon-linalg-answers-2012.pdf"],
    "ostp": ["ostp-physics-question-library-2021.pdf"],
    "thompson": ["thompson-calculus-made-easy-pg33283.pdf"],
    "levin": ["levin-dmoi-2016.pdf"],
    "lebl": ["lebl-diffyqs-fr-2023.pdf"],
}

WORDS = {w: i for i, w in enumerate("Zero One Two Three Four Five Six Seven Eight Nine".split())}
ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7}


def page_texts(path: Path, first: int = 1, last: int | None = None, furniture: list[str] = ()) -> list[str]:
    """Raw page texts; `furniture`: patterns of running-header lines, removed (with a bare page
    number) only from the first two and the last line of each page, never from the body."""
    doc = pymupdf.open(path)
    last = last or doc.page_count
    rx = [re.compile(p) for p in (*furniture, r"\d{1,3}")]
    out = []
    for i in range(first - 1, last):
        lines = doc[i].get_text().split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        for _ in range(2):
            if lines and any(r.fullmatch(lines[0].strip()) for r in rx):
                lines.pop(0)
        if lines and re.fullmatch(r"\d{1,3}", lines[-1].strip()):
            lines.pop()
        out.append("\n".join(lines))
    return out


def sequence_split(text: str, label: re.Pattern, start: int | None = None) -> list[tuple[int, str]]:
    """Items whose labels (group 'n') run 1, 2, 3... (or from `start`): [(n, text)]."""
    items: list[tuple[int, str]] = []
    pos, expect = [], start
    for m in label.finditer(text):
        n = int(m.group("n"))
        if expect is None or n == expect:
            pos.append((n, m.start(), m.end()))
            expect = n + 1
    for k, (n, _, end) in enumerate(pos):
        stop = pos[k + 1][1] if k + 1 < len(pos) else len(text)
        items.append((n, text[end:stop].strip()))
    return items


# ---- strickland ---------------------------------------------------------------------------------
def strickland_truth(path: Path) -> list[Truth]:
    text = "\n".join(page_texts(path))
    out = []
    for m in re.finditer(r"Exercise (\d+)\.(.*?)Solution:(.*?)□", text, re.S):
        out.append(Truth(str(path), m.group(2).strip(), m.group(3).strip(), f"ex{m.group(1)}"))
    return out


# ---- judson -------------------------------------------------------------------------------------
def judson_truth(path: Path) -> list[Truth]:
    doc = pymupdf.open(path)
    toc = doc.get_toc()
    furniture = [r"CHAPTER \d+\. .*", r"APPENDIX B\. .*"]
    sections: list[tuple[str, str, int, int]] = []  # (number, title, first page, last page)
    chapter, child = 0, 0
    numbered = False
    for i, (level, title, page) in enumerate(toc):
        if level == 1:
            numbered = title not in ("Acknowledgements", "Preface", "Appendices", "Back Matter")
            chapter += numbered
            child = 0
            continue
        if level != 2 or not numbered:
            continue
        child += 1
        if re.match(r"(Exercises|Programming Exercises|Reading Questions|Additional Exercises)", title):
            lv, nxt = next(((lv, p) for lv, _, p in toc[i + 1:] if lv <= 2), (1, doc.page_count + 1))
            sections.append((f"{chapter}.{child}", title, page, nxt - 1 if lv == 1 else nxt))  # chapters start a page
    label = re.compile(r"^(?P<n>\d{1,3})\.(?:\s|$)", re.M)
    questions: dict[tuple[str, int], str] = {}
    for number, title, first, last in sections:
        text = "\n".join(page_texts(path, first, last, furniture))
        start = text.find(f"{number} {title.split(':')[0]}")
        text = text[start + len(number) + len(title) + 1 :] if start >= 0 else text
        chapter_no, k = number.split(".")
        nxt = re.search(rf"^{chapter_no}\.{int(k) + 1} [A-Z]", text, re.M)
        text = text[: nxt.start()] if nxt else text
        for n, body in sequence_split(text, label, start=1):
            questions[(number, n)] = body
    # the answer appendix: "c.k.N." entries on pages of "Hints and Answers to Selected Exercises"
    first = next(p for lv, t, p in toc if t.startswith("Hints and Answers"))
    last = next(p for lv, t, p in toc if p > first and lv <= 2 and not t.startswith("Hints"))
    text = "\n".join(page_texts(path, first, last - 1, furniture))
    text = re.sub(r"^\d+ · .*$|^\d+\.\d+ · .*$", "", text, flags=re.M)
    answers: dict[tuple[str, int], str] = {}
    keys = list(re.finditer(r"^(\d+)\.(\d+)\.(\d+)\.(.*)$", text, re.M))
    for k, m in enumerate(keys):
        stop = keys[k + 1].start() if k + 1 < len(keys) else len(text)
        body = (m.group(4) + "\n" + text[m.end():stop]).strip()
        body = re.sub(r"^.*?Hint\.", "", body, count=1, flags=re.S).strip()
        answers[(f"{m.group(1)}.{m.group(2)}", int(m.group(3)))] = body
    return [Truth(str(path), q, answers.get(key), f"{key[0]}#{key[1]}") for key, q in questions.items()]


# ---- hefferon -----------------------------------------------------------------------------------
def hefferon_truth(book: Path, answer_book: Path, last_answer_page: int = 221) -> list[Truth]:
    bdoc = pymupdf.open(book)
    toc = bdoc.get_toc()
    blocks: list[tuple[tuple, int, int, str]] = []  # (key prefix, first, last, kind)
    chapter = section = 0
    for i, (level, title, page) in enumerate(toc):
        if level == 1:
            chapter, section = chapter + 1, 0
            if title == "Appendix":
                break
            continue
        nxt = next((p for lv, _, p in toc[i + 1:] if lv <= level), bdoc.page_count)
        if level == 2 and title.startswith("Topic:"):
            blocks.append(((chapter, "topic", _name(title)), page, nxt, "topic"))
        elif level == 2:
            section += 1
            sub = 0
        elif level == 3:
            sub += 1
            blocks.append(((chapter, section, sub), page, nxt, "sub"))
    furniture = [r"Chapter \w+\. .*", r"Section [IVX]+\. .*", r"Topic: .*"]
    questions: dict[tuple, str] = {}
    for key, first, last, kind in blocks:
        text = "\n".join(page_texts(book, first, last, furniture))
        idx = text.find("\nExercises\n")
        if idx < 0:
            continue
        text = text[idx + len("\nExercises\n"):]
        if kind == "sub":
            label = re.compile(rf"^(?:[✓?]\s*)*{key[2]}\.(?P<n>\d+)(?:\s|$)", re.M)
            stop = re.search(r"^(?:[IVX]+\.\d+ |[IVX]+\n|Topic: )", text, re.M)
        else:
            label = re.compile(r"^(?:[✓?]\s*)*(?P<n>\d{1,2})\s+(?=\S)", re.M)
            stop = re.search(r"^(?:Topic: |[IVX]+\n)", text, re.M)
        text = text[: stop.start()] if stop else text
        for n, body in sequence_split(text, label):
            questions[(*key, n)] = re.sub(r"^\[[^\]]*\]\s*", "", body)
    # answers: the first copy of the answer book, read as one text: "One.I.1.17" keys, and under
    # "Topic: Name" headings bare numbers on their own line
    text = "\n".join(page_texts(answer_book, 1, last_answer_page))
    text = re.sub(r"(?:^|\n)\d{1,3}\nLinear Algebra, by Hefferon\n|\nAnswers to Exercises\n\d{1,3}\n", "\n", text)
    marks = list(re.finditer(r"^(?:(?P<word>One|Two|Three|Four|Five)\.(?P<sec>[IVX]+)\.(?P<sub>\d+)\.(?P<n>\d+)(?=\s|$)"
                             r"|Chapter (?P<chapter>\w+): .*$|Topic: (?P<topic>.*)$|Subsection .*$|(?P<tn>\d{1,2})$)", text, re.M))
    answers: dict[tuple, str] = {}
    chapter, topic, expect = 0, None, 1
    keyed = []  # (key, where the mark starts, where its text starts)
    for m in marks:
        if m.group("chapter"):
            chapter, topic = WORDS.get(m.group("chapter"), 0), None
            keyed.append((None, m.start(), m.end()))
        elif m.group("topic"):
            topic, expect = _name("Topic: " + m.group("topic")), 1
            keyed.append((None, m.start(), m.end()))
        elif m.group("word"):
            topic = None
            key = (WORDS[m.group("word")], ROMAN[m.group("sec")], int(m.group("sub")), int(m.group("n")))
            keyed.append((key, m.start(), m.end()))
        elif m.group("tn") and topic and int(m.group("tn")) == expect:
            keyed.append(((chapter, "topic", topic, expect), m.start(), m.end()))
            expect += 1
        elif m.group(0).startswith("Subsection"):
            topic = None
            keyed.append((None, m.start(), m.end()))
    for k, (key, _, start) in enumerate(keyed):
        if key is not None:
            stop = keyed[k + 1][1] if k + 1 < len(keyed) else len(text)
            answers.setdefault(key, text[start:stop].strip())
    return [Truth(str(book), q, answers.get(key), "#".join(map(str, key))) for key, q in questions.items()]


def _name(title: str) -> str:
    return re.sub(r"[^a-z]", "", title.split(":", 1)[1].lower())


def _chapter_of(toc: list, i: int) -> int:
    for level, title, _ in reversed(toc[:i]):
        if level == 1:
            return WORDS[title.split()[1].rstrip(":")]
    return 0


# ---- running and reporting ----------------------------------------------------------------------
def run(inputs: list[Path], out: Path, sections: dict | None = None, workers: int = 1) -> tuple[list[dict], float]:
    t0 = time.perf_counter()
    pipeline = build([str(p) for p in inputs], sections or {})
    run_pipeline(pipeline, out, RunOptions(progress=False, workers=workers))
    rows = [r for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]
    return rows, time.perf_counter() - t0


def page_accounting(out: Path) -> dict:
    """Per run: pages parsed, OCR'd, repaired (font map), with units, ledgered, and neither."""
    import pyarrow.parquet as pq

    stages = sorted((out / "stages").glob("*"))
    parse = [d for d in stages if "-parse-" in d.name]
    structure = [d for d in stages if "-structure-" in d.name]
    pages = {}
    for d in parse:
        for f in sorted(d.glob("part-*.parquet")):
            if f.name.endswith(".ledger.parquet"):
                continue
            for r in read_rows(f):
                pages[(r["source"]["document"], r["source"]["page"])] = (r.get("backend"), r.get("text_path") == "repaired")
    covered: set = set()
    for d in structure:
        for f in sorted(d.glob("part-*.parquet")):
            if f.name.endswith(".ledger.parquet"):
                continue
            for r in read_rows(f):
                src = r["source"]
                for p in range(src["page"], (r.get("last_page") or src["page"]) + 1):
                    covered.add((src["document"], p))
    ledgered: set = set()
    reasons: dict[str, int] = {}
    for f in sorted((out / "ledger").glob("*.parquet")):
        for r in pq.read_table(f).to_pylist():
            rec = json.loads(r["record"] or "{}")
            src = rec.get("source") or {}
            doc, page = src.get("document") or r["file"], src.get("page") or r["line"]
            last = rec.get("last_page") or page
            if page is None:
                continue
            for p in range(page, last + 1):
                ledgered.add((doc, p))
            reasons[f"{r['stage']}:{r['reason']}"] = reasons.get(f"{r['stage']}:{r['reason']}", 0) + 1
    total = len(pages) + len({k for k in ledgered if k not in pages})
    neither = [k for k in pages if k not in covered and k not in ledgered]
    return {"pages": total, "ocr": sum(1 for b, _ in pages.values() if b == "tesseract"),
            "repaired": sum(1 for _, rp in pages.values() if rp), "with_units": len(covered & set(pages)),
            "ledgered": len(ledgered), "neither": len(neither), "ledger_reasons": reasons}


def report_keyed(name: str, rows: list[dict], truth: list[dict], verbose: int) -> dict:
    s = score_keyed(rows, truth)
    print(f"{name}: {s.summary()}")
    for what, items in (("missed", s.missed), ("wrong pairs", s.wrong_pairs)):
        if items and verbose:
            print(f"  {what} ({len(items)}): " + " | ".join(items[:verbose]))
    return {"name": name, "extraction_precision": s.extraction_precision, "extraction_recall": s.extraction_recall,
            "pairing_precision": s.pairing_precision, "pairing_recall": s.pairing_recall, "pairing_f1": s.pairing_f1,
            "questions_truth": s.questions_truth, "questions_found": s.questions_matched,
            "answers_truth": s.answers_truth}


def report(name: str, rows: list[dict], truth: list[Truth], verbose: int) -> dict:
    s = score(rows, truth)
    print(f"{name}: {s.summary()}")
    for what, items in (("missed", s.missed), ("spurious", s.spurious), ("wrong pairs", s.wrong_pairs)):
        if items and verbose:
            print(f"  {what} ({len(items)}): " + " | ".join(items[:verbose]))
    p, r = s.pairing_precision, s.pairing_recall
    return {"name": name, "extraction_precision": s.extraction_precision, "extraction_recall": s.extraction_recall,
            "pairing_precision": p, "pairing_recall": r, "pairing_f1": 2 * p * r / (p + r) if p + r else 0.0,
            "questions_truth": s.questions_truth, "questions_found": s.questions_matched,
            "answers_truth": s.answers_truth}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generated", type=int, default=0, help="number of generated books (seeds 0..N-1)")
    ap.add_argument("--real", type=Path, help="directory with the real textbooks (see SOURCES.md there)")
    ap.add_argument("--books", default=",".join(BOOKS), help="which of them, comma-separated")
    ap.add_argument("--set", action="append", default=[], metavar="STAGE.KEY=VALUE", help="stage config")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("-v", "--verbose", type=int, default=3, help="examples of misses to print")
    ap.add_argument("--json", type=Path, help="write the scores here")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for seed in range(args.generated):
            book = make_textbook(tmp / f"generated-{seed}.pdf", seed=seed)
            rows, secs = run([book.path], tmp / f"run-gen-{seed}", workers=args.workers)
            truth = [Truth(str(book.path), t.question, t.answer, f"{t.section}#{t.number}") for t in book.items]
            results.append(report(f"generated seed {seed} ({book.pages} pages, {secs:.1f}s)", rows, truth, args.verbose))
        if args.real:
            sections: dict = {}
            for kv in args.set:
                key, value = kv.split("=", 1)
                stage, opt = key.split(".", 1)
                sections.setdefault(stage, {})[opt] = json.loads(value) if value[:1] in "0123456789[{tf" else value
            for name in args.books.split(","):
                files = [args.real / f for f in BOOKS[name]]
                out = tmp / f"run-{name}"
                rows, secs = run(files, out, sections, workers=args.workers)
                acct = page_accounting(out)
                print(f"{name}: {len(rows)} items in {secs:.1f}s; pages {acct}")
                doc_rows = [r for r in rows if r["source"]["document"] == files[0].name]  # named relative to --input
                if name in ("strickland", "judson", "hefferon"):
                    truth = (strickland_truth(files[0]) if name == "strickland" else judson_truth(files[0])
                             if name == "judson" else hefferon_truth(files[0], files[1]))
                    res = report(name, doc_rows, truth, args.verbose)
                else:
                    truth = json.loads((TRUTH / f"{name}.json").read_text())["exercises"]
                    res = report_keyed(name, doc_rows, truth, args.verbose)
                results.append({**res, "seconds": round(secs, 1), "pages": acct})
                if name == "hefferon":  # Topic exercises sit among figures the raw-text truth misreads
                    sub_rows = [r for r in doc_rows if not any(t.startswith("t:") for t in json.loads(r["meta"]).get("path") or [])]
                    sub_truth = [t for t in truth if "topic" not in t.key]
                    results.append(report("hefferon (subsection exercises only)", sub_rows, sub_truth, args.verbose))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
