"""Where the parse stage's time goes, per phase, on real PDFs (CPU ms per page, second of two runs).

    python benchmarks/parse_phases.py ../shared/data/textbooks/judson-aata-2022.pdf [more.pdf ...]

Each phase function of `parse_pdf` (and MuPDF's text page, dict and raw-dict extractions) is
wrapped with a CPU-time counter; nested phases count in their callers too (`rebuild_stacked`
includes `page_rules`, the raw-dict extraction and `rebuild_from`). Raw `page.get_text()` on the
same pages is printed for the ratio. Not a benchmark of totals (the wrappers cost a little):
`pdf_throughput.py` is.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

import pymupdf

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.stages.documents import parse_delimited, parse_pdf, parse_stacked

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


def main() -> None:
    for name in ("stext_blocks", "rebuild_stacked", "rebuild_delimited", "wants_spans", "rebuild_lines",
                 "page_lines", "suspect_chars", "assess", "rebuild_accents", "attach_marks"):
        _timed(parse_pdf, name, name)
    for name in ("page_rules", "rebuild_from"):
        _timed(parse_stacked, name, name)
    parse_delimited.page_rules = parse_stacked.page_rules
    _timed(pymupdf.TextPage, "extractRAWDICT", "MuPDF raw dict")
    _timed(pymupdf.TextPage, "extractDICT", "MuPDF dict")
    _timed(pymupdf.Page, "get_textpage", "MuPDF text page")
    for pdf in map(Path, sys.argv[1:]):
        items = list(PdfPageReader([pdf]))
        for _ in range(2):  # the second run: documents' glyph tables and the like are per process
            SPENT.clear()
            CALLS.clear()
            parse_pdf.close_cached_pdfs()
            stage = parse_pdf.ParsePdf(ocr="off")
            stage.setup(None)
            t0 = time.process_time()
            for item in items:
                stage.process(item, None)
            total = time.process_time() - t0
        phases = dict(SPENT), dict(CALLS)
        doc = pymupdf.open(pdf)
        t0 = time.process_time()
        for page in doc:
            page.get_text()
        raw = time.process_time() - t0
        n = len(items)
        print(f"{pdf.name}: {n} pages; raw get_text() {raw / n * 1e3:.2f} ms/page, parse {total / n * 1e3:.2f} "
              f"ms/page ({total / raw:.1f}x)")
        for label, spent in sorted(phases[0].items(), key=lambda kv: -kv[1]):
            print(f"  {label:18s} {spent / n * 1e3:6.2f} ms/page  ({phases[1][label]} calls)")


if __name__ == "__main__":
    main()
