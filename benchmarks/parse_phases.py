"""Where the parse stage's time goes, per pass, on real PDFs (CPU ms per page, best of `--repeat`).

    python benchmarks/parse_phases.py ../shared/data/textbooks/judson-aata-2022.pdf [more.pdf ...]
    python benchmarks/parse_phases.py --tree /tmp/other-checkout BOOK.pdf   # another checkout's stage

Each pass `ParsePdf._process` calls (the names `parse_pdf` imports: `stext_blocks`,
`rebuild_stacked`, ..., `assess`) is wrapped with a CPU-time counter. The passes run one after
another, so their times add up; `other` is the rest of `process` (opening the page, the text
page, the record, the repair loop). MuPDF's primitives are counted separately, inside whichever
pass calls them (the text page in `other`, the raw dict in the first glyph-level pass that
needs it, drawings in `rebuild_stacked` / `rebuild_delimited`). Raw `page.get_text()` on the
same pages, timed between the stage's rounds, gives the ratio. The wrappers cost a little
(~1-2 us a call): `pdf_throughput.py` measures totals.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import types
from collections import defaultdict
from pathlib import Path

import pymupdf

from rlclimb.pipelines.readers_pdf import PdfPageReader

PASSES = ("stext_blocks", "_glyphs", "PageExtraction", "rebuild_stacked", "rebuild_delimited", "rebuild_accents",
          "wants_spans", "rebuild_lines", "attach_marks", "page_lines", "has_candidates", "main_script",
          "suspect_chars", "repair", "assess", "dropped_glyphs")
PRIMITIVES = ((pymupdf.Page, "get_textpage", "MuPDF text page"), (pymupdf.TextPage, "extractRAWDICT", "MuPDF raw dict"),
              (pymupdf.TextPage, "extractDICT", "MuPDF dict"), (pymupdf.Page, "get_cdrawings", "MuPDF drawings"))
SPENT: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def _timed(owner, name: str, label: str) -> None:
    fn = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time() - t0
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def stage_module(tree: Path | None):
    """`parse_pdf` of this checkout, or of another one as package `_phases_tree`."""
    if tree is None:
        from rlclimb.stages.documents import parse_pdf
        return parse_pdf
    pkg = types.ModuleType("_phases_tree")
    pkg.__path__ = [str(tree.resolve() / "stages")]
    sys.modules["_phases_tree"] = pkg
    return importlib.import_module("_phases_tree.documents.parse_pdf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdf", type=Path, nargs="+")
    ap.add_argument("--tree", type=Path, help="another checkout whose parse stage is profiled")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ocr", default="off", help="the stage's OCR backend (tesseract: repaired fonts learn their table "
                    "in the first round, OCR'd pages count in `other`)")
    args = ap.parse_args()
    parse_pdf = stage_module(args.tree)
    for name in PASSES:
        if hasattr(parse_pdf, name) and name != "_glyphs":
            _timed(parse_pdf, name, name)
    _timed(parse_pdf.ParsePdf, "_glyphs", "_glyphs")
    _timed(parse_pdf.ParsePdf, "process", "total")
    for owner, name, label in PRIMITIVES:
        _timed(owner, name, label)
    for pdf in args.pdf:
        items = list(PdfPageReader([pdf]))
        best: dict[str, float] = {}
        calls: dict[str, int] = {}
        raw = float("inf")
        doc = pymupdf.open(pdf)
        for _ in range(args.repeat):  # per label, its best round (documents' tables, repairs are per process)
            SPENT.clear()
            CALLS.clear()
            parse_pdf.close_cached_pdfs()
            stage = parse_pdf.ParsePdf(ocr=args.ocr)
            stage.setup(None)
            for item in items:
                stage.process(item, None)
            for label, spent in SPENT.items():
                best[label] = min(best.get(label, spent), spent)
            calls = {k: max(v, calls.get(k, 0)) for k, v in CALLS.items()}
            t0 = time.process_time()
            for page in doc:
                page.get_text()
            raw = min(raw, time.process_time() - t0)
        n = len(items)
        total = best.pop("total")
        print(f"{pdf.name}: {n} pages; raw get_text() {raw / n * 1e3:.2f} ms/page, parse {total / n * 1e3:.2f} "
              f"ms/page ({total / raw:.1f}x)")
        prim = {label for _, _, label in PRIMITIVES}
        passes = {k: v for k, v in best.items() if k not in prim}
        passes["other"] = max(0.0, total - sum(passes.values()))
        for label, spent in sorted(passes.items(), key=lambda kv: -kv[1]):
            print(f"  {label:18s} {spent / n * 1e3:6.2f} ms/page {spent / raw:5.2f}x raw  ({calls.get(label, n)} calls)")
        for label in sorted(prim & best.keys(), key=lambda k: -best[k]):
            print(f"  [{label:16s}] {best[label] / n * 1e3:6.2f} ms/page {best[label] / raw:5.2f}x raw  ({calls.get(label, 0)} calls)")


if __name__ == "__main__":
    main()
