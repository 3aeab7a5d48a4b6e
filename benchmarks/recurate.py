"""Re-run only the curation stages of curated textbook runs on their cached pre-curation records.

    python benchmarks/recurate.py --from runs/h7m- --to runs/c7f- [--book levin ...] [--taxonomy]

For each `<from>cur-<book>` run (a `textbook-pdf --set curate=true` run), the records its last
pre-curation stage (`*-dedup_minhash-*`) wrote go through `stem-curate` with the run's own curation
config into `<to>cur-<book>`, and the run's pre-curation ledger parts are copied along, so that
`benchmarks/curate_textbook.py --runs <to>` finds every labeled item (kept, dropped by curation, or
dropped before it). The parse and pairing are the source run's: a before / after comparison of
curation alone, in under a minute for the seven books instead of full runs. The taxonomy stage is
left out unless `--taxonomy` (it only labels topics; domain accuracy needs it).
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from curate_textbook import BOOK_FILES  # noqa: E402

CURATION = ["cleanup", "split_parts", "question_type", "verifiable", "usability", "pii", "evergreen", "convert", "part_context",
            "leakage", "taxonomy"]


def recurate(src: Path, dst: Path, taxonomy: bool = False) -> None:
    import pyarrow.parquet as pq

    config = json.loads((src / "config.json").read_text())["config"]
    sections = {k: config[k] for k in CURATION if k in config}
    if not taxonomy:
        sections["taxonomy"] = {"enabled": False}
    pre = sorted(glob.glob(str(src / "stages" / "*-dedup_minhash-*")))
    if not pre:
        raise SystemExit(f"{src}: no dedup_minhash stage output to start from (a curated textbook-pdf run is needed)")
    if dst.exists():
        shutil.rmtree(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    cfg = dst.parent / f".{dst.name}.yaml"
    cfg.write_text(yaml.safe_dump({"stages": sections}))
    # the stage's record parts only: its directory also holds `*.ledger.parquet` (its drops), which
    # read as input would be records without a question (a cleanup error per ledger row)
    inputs = dst.parent / f".{dst.name}.in"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir()
    for part in sorted(glob.glob(str(Path(pre[-1]) / "part-*.parquet"))):
        if not part.endswith(".ledger.parquet"):
            (inputs / Path(part).name).symlink_to(part)
    run = subprocess.run(["rlclimb", "run", "stem-curate", "-q", "-i", str(inputs), "-o", str(dst), "-c", str(cfg)],
                         capture_output=True, text=True)
    cfg.unlink()
    shutil.rmtree(inputs)
    if run.returncode:
        raise SystemExit(f"{src}: stem-curate failed:\n{run.stderr[-2000:]}")
    for i, part in enumerate(sorted(glob.glob(str(src / "ledger" / "*.parquet")))):
        if not set(pq.read_table(part, columns=["stage"]).column("stage").to_pylist()) & set(CURATION):
            shutil.copy(part, dst / "ledger" / f"pre-{i:05d}.parquet")  # drops before curation: validate, dedup


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="prefix of the source runs: <from>cur-<file>")
    ap.add_argument("--to", dest="dst", required=True, help="prefix of the new runs")
    ap.add_argument("--book", action="append", help="only these books (names as in curate_textbook.BOOK_FILES)")
    ap.add_argument("--taxonomy", action="store_true")
    args = ap.parse_args()
    for book, file in BOOK_FILES.items():
        if args.book and book not in args.book:
            continue
        src = Path(f"{args.src}cur-{file}")
        if not (src / "config.json").exists():
            print(f"skip {book}: no run at {src}")
            continue
        recurate(src, Path(f"{args.dst}cur-{file}"), args.taxonomy)
        print(f"{book}: {args.dst}cur-{file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
