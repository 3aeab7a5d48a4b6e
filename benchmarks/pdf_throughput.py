"""Pages per second of the textbook-pdf stages, against raw `page.get_text()` in the same run.

    python benchmarks/pdf_throughput.py                          # a generated 200-page textbook
    python benchmarks/pdf_throughput.py --pdf BOOK.pdf [--pdf ...] --repeat 3
    python benchmarks/pdf_throughput.py --ocr-pages 6            # also Tesseract OCR pages/s
    python benchmarks/pdf_throughput.py --books --parse-only --repeat 5   # every real book, parse only
    python benchmarks/pdf_throughput.py --books --parse-only --base-tree /tmp/old   # old code vs this, A/B

Measured (best of `--repeat`, process CPU time, one core), per PDF:
- raw: open the document, `page.get_text()` for every page (the baseline);
- parse: the parse stage (text layer with layout, quality check) on every page, OCR off so that
  text pages are compared with text pages (pages needing OCR are counted, not OCRed);
- parse+structure+extract: the same plus the structure stage over the pages and the extract
  stage over its units (what the pipeline does per page before pairing).
Prints pages/s for each and the ratio to raw (the target: within 3x for text pages).
`--base-tree DIR` (another checkout, e.g. `git worktree add --detach /tmp/old HEAD~3`) also
times that tree's parse stage in the same process, interleaved with this one's (its
`stages/documents` loaded as a package of its own): the before/after of a change, A/B, for the
books, the repaired-font book and the OCR pages alike; `--tree DIR` times another checkout as
"this" (e.g. HEAD plus one change, while the working tree holds others' unfinished edits).
Repaired fonts: a generated book whose body font maps digits to Coptic letters (issue 15's
failure) through the parse stage with repair: the first pass (learning the substitution from
Tesseract on a few sample pages, once per document) and the steady state; ratio to raw (target:
within 5x in the steady state).
OCR: a generated scanned (image-only) document of `--ocr-pages` pages through the parse stage
with Tesseract, against the `tesseract` CLI on the same pages rasterized at the same dpi (PNG
files), same language, best of `--repeat`; CPU time (the stage's process; the CLI's child
processes) and wall time (target: >= 90% of the CLI's pages/s). Same settings first: one OpenMP
thread, as the stage (a parse worker per core), and page segmentation mode 6, the C API's
default that the stage (like MuPDF's own OCR) runs (the CLI's default is 3, automatic layout
analysis: ~15% more CPU, printed too); one process per page, as a shell loop would, and one
process for all pages (the model read once, as the stage does: Tesseract's own speed). With its
default threads the CLI spins on a busy machine and is slower in both measures (printed too).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.textbook_gen import FONT, ChapterSpec, break_tounicode, make_textbook, rasterize_pages  # noqa: E402

from rlclimb.pipelines.readers_pdf import PdfPageReader  # noqa: E402
from rlclimb.stages.documents import parse_pdf  # noqa: E402
from rlclimb.stages.documents.extract_qa import ExtractQA  # noqa: E402
from rlclimb.stages.documents.structure import StructureDocument  # noqa: E402


def raw(path: Path) -> int:
    doc = pymupdf.open(path)
    n = 0
    for page in doc:
        n += len(page.get_text())
    doc.close()
    return n


def parse_pages(path: Path, ocr: str = "off", module=parse_pdf) -> list[dict]:
    module.close_cached_pdfs()  # re-open the document, as raw() does
    stage = module.ParsePdf(ocr=ocr)
    stage.setup(None)
    out = [stage.process(item, None) for item in PdfPageReader([path])]
    return [p for p in out if isinstance(p, dict)]


def base_parse_stage(tree: Path, name: str = "_base_tree"):
    """The parse stage module of another checkout's `stages/documents`, as package `name`
    (its modules import each other relatively; `rlclimb.pipelines` stays this checkout's)."""
    import importlib
    import types

    pkg = types.ModuleType(name)
    pkg.__path__ = [str(tree.resolve() / "stages")]
    sys.modules[name] = pkg
    return importlib.import_module(f"{name}.documents.parse_pdf")


def parse_pages_with(module, path: Path) -> int:
    module.close_cached_pdfs()
    stage = module.ParsePdf(ocr="off")
    stage.setup(None)
    return sum(isinstance(stage.process(item, None), dict) for item in PdfPageReader([path]))


def full(path: Path) -> int:
    pages = parse_pages(path)
    units = [u for u in StructureDocument().run(pages, None) if isinstance(u, dict)]
    extract = ExtractQA()
    return sum(len(r) for u in units if isinstance(r := extract.process(u, None), list))


def best_cpu(fns: list, repeat: int) -> list[float]:
    """Best-of-`repeat` CPU seconds of each function, runs interleaved (raw, parse, full, raw, ...)
    so that a change in machine load between phases cannot skew the ratios; every other round
    runs them in reverse order (the one run second on a document ran up to ~10% faster: an A/B
    must not depend on which side goes first)."""
    best = [float("inf")] * len(fns)
    for r in range(repeat):
        for k in range(len(fns)) if r % 2 == 0 else reversed(range(len(fns))):
            fn = fns[k]
            t0 = time.process_time()
            fn()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def generated_book(tmp: Path, pages: int) -> Path:
    """A text-only generated textbook of about `pages` pages (inline and key answers, two columns)."""
    chapters = []
    while sum(c.exercises for c in chapters) < pages * 9:
        chapters += [ChapterSpec("Algebra", "inline", exercises=12, example=True, prose=2),
                     ChapterSpec("Functions", "key", exercises=16, instruction=(5, 8), prose=3),
                     ChapterSpec("Counting", "key", exercises=24, columns=2, prose=0)]
    return make_textbook(tmp / "throughput.pdf", chapters=chapters).path


def broken_font_book(path: Path, pages: int) -> Path:
    """`pages` pages of numbered text in an embedded font whose ToUnicode map sends digits to
    Coptic letters."""
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        page.insert_font(fontname="BODY", fontbuffer=pymupdf.Font(FONT).buffer)
        for i in range(40):
            page.insert_text((72, 60 + 17 * i), f"{i + 1}. Compute {13 * i + p} + {5 * i + 20} and check Section {p}.{i}.",
                             fontname="BODY", fontsize=11)
    break_tounicode(doc, "coptic")
    doc.save(path)
    return path


def repaired(tmp: Path, pages: int, repeat: int, module=parse_pdf, base=None) -> None:
    pdf = broken_font_book(tmp / "broken-font.pdf", pages)
    for m in filter(None, (module, base)):
        m._REPAIRS.clear()
    t0 = time.process_time()
    first = parse_pages(pdf, ocr="tesseract", module=module)
    t_first = time.process_time() - t0
    paths = {p["text_path"] for p in first}
    if base:
        parse_pages(pdf, ocr="tesseract", module=base)  # its own learning pass, not timed
    fns = [lambda: raw(pdf), lambda: parse_pages(pdf, ocr="tesseract", module=module)]
    fns += [lambda: parse_pages(pdf, ocr="tesseract", module=base)] if base else []
    times = best_cpu(fns, repeat)
    t_raw, t_steady = times[:2]
    print(f"repaired font ({pages} pages, paths {sorted(paths)}): raw {pages / t_raw:.0f} p/s; parse first pass "
          f"(learning included) {pages / t_first:.0f} p/s = {t_first / t_raw:.1f}x raw; steady {pages / t_steady:.0f} p/s "
          f"= {t_steady / t_raw:.2f}x raw" + (f"; base tree steady {times[2] / t_raw:.2f}x raw" if base else ""))


def tesseract_cli(scanned: Path, tmp: Path, dpi: int = 200, threads: str | None = "1", psm: int | None = 6,
                  batch: bool = False) -> tuple[float, float]:
    """(CPU, wall) seconds of the tesseract CLI over the pages rasterized to PNG (rasterizing not
    timed); `threads`: OMP_THREAD_LIMIT (None: Tesseract's default); `psm`: its page segmentation
    mode (None: the CLI's default, 3 = automatic layout analysis; the stage, like MuPDF's own OCR,
    runs the C API's default, 6 = one uniform block); `batch`: one process for all pages (a list
    file: the model read once, as the stage does) instead of one per page."""
    doc = pymupdf.open(scanned)
    images = []
    for i, page in enumerate(doc):
        png = tmp / f"cli-{i}.png"
        page.get_pixmap(dpi=dpi).save(png)
        images.append(png)
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    if threads:
        env["OMP_THREAD_LIMIT"] = threads
    opts = ["-l", "eng"] + (["--psm", str(psm)] if psm is not None else [])
    jobs = [(png, png.with_suffix("")) for png in images]
    if batch:
        (tmp / "cli-list.txt").write_text("".join(f"{png}\n" for png in images))
        jobs = [(tmp / "cli-list.txt", tmp / "cli-all")]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    for image, out in jobs:
        subprocess.run(["tesseract", str(image), str(out), *opts], check=True, capture_output=True, env=env)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, wall


def ocr_stage(scanned: Path, module=parse_pdf) -> tuple[float, float, int]:
    """(CPU, wall) seconds of the parse stage with Tesseract over the scanned pages, pages OCR'd."""
    c0, t0 = time.process_time(), time.perf_counter()
    pages = parse_pages(scanned, ocr="tesseract", module=module)
    return time.process_time() - c0, time.perf_counter() - t0, sum(1 for p in pages if p["backend"] == "tesseract")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdf", type=Path, action="append", help="PDF(s) to measure (default: a generated book)")
    ap.add_argument("--books", action="store_true", help="every PDF in ../shared/data/textbooks (the real books)")
    ap.add_argument("--base-tree", type=Path, help="another checkout whose parse stage is timed too, interleaved (A/B)")
    ap.add_argument("--tree", type=Path, help="time this checkout's parse stage as 'this' (default: the installed one)")
    ap.add_argument("--parse-only", action="store_true", help="parse only: no parse+structure+extract, no OCR count")
    ap.add_argument("--pages", type=int, default=200, help="pages of the generated book")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ocr-pages", type=int, default=4, help="scanned pages for the OCR measurement (0: skip)")
    ap.add_argument("--repaired-pages", type=int, default=40, help="pages of the broken-font book (0: skip)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        books = sorted((Path(__file__).resolve().parents[2] / "shared" / "data" / "textbooks").glob("*.pdf"))
        pdfs = (args.pdf or []) + (books if args.books else []) or [generated_book(tmp, args.pages)]
        base = base_parse_stage(args.base_tree) if args.base_tree else None
        this = base_parse_stage(args.tree, "_this_tree") if args.tree else parse_pdf
        print(f"{'document':40s} {'pages':>6s} {'raw p/s':>9s} {'parse p/s':>10s} {'x raw':>6s} "
              f"{'p+s+e p/s':>10s} {'x raw':>6s} {'need OCR':>8s}" + ("  base-tree parse: p/s, x raw" if base else ""))
        for pdf in pdfs:
            n = pymupdf.open(pdf).page_count
            # this tree's parse stage timed as the base tree's is (no page kept: a list of every
            # page's output makes each later collection scan it, a cost the other side would not pay)
            fns = [lambda pdf=pdf: raw(pdf), lambda pdf=pdf: parse_pages_with(this, pdf)]
            fns += [] if args.parse_only else [lambda pdf=pdf: full(pdf)]
            fns += [lambda pdf=pdf: parse_pages_with(base, pdf)] if base else []
            times = best_cpu(fns, args.repeat)
            t_raw, t_parse = times[:2]
            t_full = float("nan") if args.parse_only else times[2]
            need = -1 if args.parse_only else sum(1 for p in parse_pages(pdf, ocr="vlm") if p["needs_ocr"])
            print(f"{pdf.name[:40]:40s} {n:6d} {n / t_raw:9.0f} {n / t_parse:10.0f} {t_parse / t_raw:6.2f} "
                  f"{n / t_full:10.0f} {t_full / t_raw:6.2f} {need:8d}"
                  + (f"  {n / times[-1]:6.0f} {times[-1] / t_raw:6.2f}" if base else ""))
        if args.repaired_pages:
            repaired(tmp, args.repaired_pages, args.repeat, this, base)
        if args.ocr_pages:
            src = make_textbook(tmp / "to-scan.pdf", chapters=[ChapterSpec("Rates", "inline", exercises=10 * args.ocr_pages)])
            scan = rasterize_pages(pymupdf.open(src.path), set(range(1, src.pages + 1)))
            while scan.page_count > args.ocr_pages:
                scan.delete_page(-1)
            scanned = tmp / "scanned.pdf"
            scan.save(scanned)
            n = scan.page_count
            sides = [("this tree", this)] + ([("base tree", base)] if base else [])
            for _, module in sides:  # the stage's per-process setup (model loaded) is not per page
                parse_pages(scanned, ocr="tesseract", module=module)
            runs: dict[str, list] = {what: [] for what, _ in sides}
            for r in range(args.repeat):  # the two trees interleaved, order alternating
                for what, module in sides if r % 2 == 0 else sides[::-1]:
                    runs[what].append(ocr_stage(scanned, module))
            stage = {}
            for what, got in runs.items():
                cpu, wall, ocred = min(x[0] for x in got), min(x[1] for x in got), got[0][2]
                stage[what] = cpu, wall
                print(f"OCR, parse stage of {what} (Tesseract, 200 dpi, eng): {ocred} of {n} scanned pages OCR'd; "
                      f"CPU {n / cpu:.2f} pages/s, wall {n / wall:.2f} pages/s")
            if shutil.which("tesseract"):
                for threads, psm, batch, what in (
                        ("1", 6, False, "one thread, psm 6, one process per page: the stage's settings"),
                        ("1", 6, True, "one thread, psm 6, one process for all pages: Tesseract's own speed"),
                        ("1", None, False, "one thread, its default psm 3, one process per page"),
                        (None, 6, False, "default threads, psm 6, one process per page")):
                    cli = [tesseract_cli(scanned, tmp, threads=threads, psm=psm, batch=batch) for _ in range(args.repeat)]
                    c_cpu, c_wall = min(r[0] for r in cli), min(r[1] for r in cli)
                    print(f"tesseract CLI ({what}; same 200 dpi pages as PNG): CPU {n / c_cpu:.2f} pages/s, "
                          f"wall {n / c_wall:.2f} pages/s; parse stage at "
                          + ", ".join(f"{c_cpu / cpu:.0%} (CPU) {c_wall / wall:.0%} (wall) [{w}]" for w, (cpu, wall) in stage.items()))


if __name__ == "__main__":
    main()
