"""Is the parse stage's output byte-identical between two source trees? (For speed work: a
change meant to make parse faster must not change one byte of what it produces.)

    python benchmarks/parse_identical.py --base /tmp/base-tree [--new .] [--pdf BOOK.pdf ...] [--ocr vlm]

`--base` / `--new`: roots of two checkouts of this repository (e.g. `git worktree add --detach
/tmp/base-tree HEAD` before the change; `--new` defaults to this checkout). Each tree runs in a
process of its own (its `rlclimb` package imported from that root), parses every page of every
PDF (default: all of ../shared/data/textbooks/) and writes one canonical JSON line per page:
the stage's whole output record (lines, text, blocks, boxes, quality, ledger fields) or its Drop
(reason and detail). The two dumps are compared line by line; the first differing pages are
printed. Exit status 1 when any page differs. `--ocr vlm` (default) marks pages that need OCR
instead of running Tesseract on them (the text-layer path is what speed work changes); `--ocr
tesseract` runs the full stage, repair learning included. `--lines N`: for a change meant to
alter the output (a notation fix), the first N changed text lines of all differing pages, base
then new (a review of every line a change touches, not only the first pages).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BOOKS = HERE.parent / "shared" / "data" / "textbooks"
PACKAGES = ("environments", "pipelines", "rl", "schemas", "stages")


def _shim(root: Path, into: Path) -> Path:
    """A directory whose `rlclimb` package is the tree at `root` (the editable install maps
    `rlclimb.*` to this checkout; a regular package earlier on sys.path wins over it)."""
    pkg = into / "rlclimb"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in PACKAGES:
        if (root / name).is_dir():
            (pkg / name).symlink_to(root / name)
    return into


def dump(pdfs: list[Path], ocr: str, out: Path) -> None:
    """(In the child process) one canonical JSON line per page of each PDF into `out`."""
    import orjson

    from rlclimb.pipelines.readers_pdf import PdfPageReader
    from rlclimb.pipelines.stage import Drop
    from rlclimb.stages.documents.parse_pdf import ParsePdf, close_cached_pdfs

    with out.open("wb") as f:
        for pdf in pdfs:
            close_cached_pdfs()
            stage = ParsePdf(ocr=ocr)
            stage.setup(None)
            for item in PdfPageReader([pdf]):
                got = stage.process(item, None)
                rec = {"drop": got.reason, "detail": got.detail} if isinstance(got, Drop) else got
                f.write(orjson.dumps({"page": f"{pdf.name}:{item['source']['page']}", "out": rec},
                                     option=orjson.OPT_SORT_KEYS) + b"\n")


def run_tree(root: Path, pdfs: list[Path], ocr: str, out: Path, tmp: Path) -> None:
    shim = _shim(root.resolve(), tmp / f"shim-{out.stem}")
    env = dict(os.environ, PYTHONPATH=f"{shim}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import rlclimb; "
            "assert rlclimb.__file__.startswith(sys.argv[1]), rlclimb.__file__; "
            f"sys.path.insert(0, {str(HERE / 'benchmarks')!r}); import parse_identical as p; "
            "p.dump([Path(a) for a in sys.argv[4:]], sys.argv[2], Path(sys.argv[3]))")
    subprocess.run([sys.executable, "-c", code, str(shim), ocr, str(out), *map(str, pdfs)], check=True, env=env)


def _changed_lines(differ: list[tuple[bytes, bytes]], limit: int) -> None:
    import difflib

    import orjson

    shown = 0
    for x, y in differ:
        a, b = orjson.loads(x), orjson.loads(y)
        texts = [[ln["text"] if isinstance(ln, dict) else ln for ln in (r["out"].get("lines") or [])] for r in (a, b)]
        for op in difflib.SequenceMatcher(None, *texts, autojunk=False).get_opcodes():
            if op[0] == "equal":
                continue
            print(f"{b['page']}:\n  - " + "\n  - ".join(texts[0][op[1]:op[2]]) + "\n  + " + "\n  + ".join(texts[1][op[3]:op[4]]))
            shown += 1
            if shown >= limit:
                return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="root of the tree before the change")
    ap.add_argument("--new", type=Path, default=HERE, help="root of the tree after it (default: this checkout)")
    ap.add_argument("--pdf", type=Path, action="append", help="PDF(s) (default: every book in shared/data/textbooks)")
    ap.add_argument("--ocr", choices=("vlm", "tesseract"), default="vlm")
    ap.add_argument("--show", type=int, default=5, help="differing pages to print")
    ap.add_argument("--lines", type=int, default=0, help="changed text lines to print (all differing pages)")
    args = ap.parse_args()
    pdfs = args.pdf or sorted(BOOKS.glob("*.pdf"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        dumps = {}
        for name, root in (("base", args.base), ("new", args.new)):
            dumps[name] = tmp / f"{name}.jsonl"
            run_tree(root, pdfs, args.ocr, dumps[name], tmp)
        a, b = (dumps[n].read_bytes().splitlines() for n in ("base", "new"))
    if len(a) != len(b):
        print(f"page counts differ: base {len(a)}, new {len(b)}")
        return 1
    differ = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if args.lines:
        _changed_lines(differ, args.lines)
    for x, y in differ[: 0 if args.lines else args.show]:
        print(f"DIFF base: {x[:600].decode(errors='replace')}\n     new:  {y[:600].decode(errors='replace')}")
    digest = hashlib.sha256(b"\n".join(b)).hexdigest()[:16]
    print(f"{len(b)} pages of {len(pdfs)} PDFs: {len(differ)} differ; new dump sha256 {digest}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
