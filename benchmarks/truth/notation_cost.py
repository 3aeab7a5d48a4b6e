"""Parse stage CPU time per book with and without the display-fraction/radical pass
(`parse_stacked.rebuild_stacked`), interleaved, best of 2, against raw `get_text()`:

    python benchmarks/truth/notation_cost.py judson-aata-2022.pdf thompson-calculus-made-easy-pg33283.pdf

Books are read from ../shared/data/textbooks (relative to the repository root)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pymupdf

from rlclimb.pipelines.readers_pdf import PdfPageReader
from rlclimb.stages.documents import parse_pdf

BOOKS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "textbooks"


def parse_seconds(name: str) -> float:
    parse_pdf.close_cached_pdfs()
    stage = parse_pdf.ParsePdf(ocr="off")
    stage.setup(None)
    items = list(PdfPageReader([BOOKS / name]))
    start = time.process_time()
    for item in items:
        stage.process(item, None)
    return time.process_time() - start


def raw_seconds(name: str) -> float:
    start = time.process_time()
    for page in pymupdf.open(BOOKS / name):
        page.get_text()
    return time.process_time() - start


def main() -> None:
    real = parse_pdf.rebuild_stacked
    for name in sys.argv[1:]:
        on, off, raw = [], [], []
        for _ in range(2):
            parse_pdf.rebuild_stacked = lambda *a: 0
            off.append(parse_seconds(name))
            parse_pdf.rebuild_stacked = real
            on.append(parse_seconds(name))
            raw.append(raw_seconds(name))
        r = min(raw)
        print(f"{name}: raw get_text {r:.2f}s, parse without {min(off):.2f}s ({min(off) / r:.1f}x raw), "
              f"with stacked {min(on):.2f}s ({min(on) / r:.1f}x raw)", flush=True)


if __name__ == "__main__":
    main()
