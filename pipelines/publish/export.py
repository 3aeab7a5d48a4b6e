"""`rlclimb export`: a run's dataset as one file (format by extension) or a Hub-ready folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from rlclimb.schemas.io import iter_parquet_batches, write_jsonl

FILE_FORMATS = (".jsonl", ".jsonl.gz", ".parquet")


class ExportError(ValueError):
    pass


def export_format(out: Path) -> str:
    """The format an output name asks for: jsonl, parquet, or folder (no extension)."""
    name = out.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".csv", ".tsv")):
        raise ExportError(f"{out}: CSV cannot hold the nested columns (source, provenance, solve, tests): "
                          "export .jsonl, .jsonl.gz or .parquet (pandas reads all three)")
    if out.suffix:
        raise ExportError(f"{out}: unknown extension {out.suffix!r}; use one of {', '.join(FILE_FORMATS)} "
                          "or a folder name without an extension (Hub-ready: data/ and README.md)")
    return "folder"


def export_run(run_dir: Path, out: Path) -> dict:
    """Write the dataset of a finished run; returns what was written."""
    kind = export_format(out)
    files = sorted((run_dir / "data").glob("*.parquet"))
    if not files or not (run_dir / "stats.json").exists():
        raise ExportError(f"no dataset in {run_dir} (or the run is not finished): run the pipeline first")
    if kind == "jsonl":
        write_jsonl((row for batch in iter_parquet_batches(files) for row in batch), out)
        trail = provenance_path(out)  # JSONL has no file metadata: the stage trail goes beside it
        trail.write_text(json.dumps(provenance(run_dir, files), indent=2) + "\n")
        return {"kind": kind, "path": out, "provenance": trail}
    if kind == "parquet":
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        with pq.ParquetWriter(tmp, pq.read_schema(files[0]), compression="zstd") as writer:
            for f in files:  # streamed, a row group per batch: memory stays bounded
                for batch in pq.ParquetFile(f).iter_batches():
                    writer.write_batch(batch)
        tmp.replace(out)
        return {"kind": kind, "path": out}
    return export_folder(run_dir, files, out)


def provenance_path(out: Path) -> Path:
    return out.with_name(out.name + ".provenance.json")


def provenance(run_dir: Path, files: list[Path]) -> dict:
    """What the Parquet files say about their records' history: every stage since import (name,
    version, fingerprint, pipeline, input), upstream runs' stages first, as the engine wrote it."""
    meta = pq.read_schema(files[0]).metadata or {}
    return {
        "run": str(run_dir.resolve()),
        "files": [f.name for f in files],
        "stages": json.loads(meta.get(b"rlclimb.stages", b"[]")),
    }


def export_folder(run_dir: Path, files: list[Path], out: Path) -> dict:
    """data/train-*.parquet plus the dataset card (README.md with the Hub's YAML header, figures,
    croissant.json), as `huggingface-cli upload` or `load_dataset(out)` take it."""
    if out.exists() and any(out.iterdir()):
        raise ExportError(f"{out} exists and is not empty: export into a new folder")
    (out / "data").mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy2(f, out / "data" / f.name)
    from .card import write_card  # the card describes the run (funnel, sources, figures)

    written = write_card(run_dir)
    shutil.copy2(written["readme"], out / "README.md")
    shutil.copy2(written["croissant"], out / "croissant.json")
    if (run_dir / "figures").is_dir():
        shutil.copytree(run_dir / "figures", out / "figures")
    return {"kind": "folder", "path": out, "card": out / "README.md"}
