"""Mixes: a weighted union of curated datasets (schemas.MixSpec).

`select_rows` applies one source's selection (kinds, topic prefixes, difficulty bins, a pass-rate
band, a polars SQL filter, a cap); `rlclimb train` uses it to read a spec YAML. `build_mix`
(`rlclimb mix MIX.yaml --out DIR`) materializes a spec into a Hugging Face dataset:

1. every source is read and typed (QA items, code problems; rows that are neither are skipped);
2. its selection is applied;
3. duplicates across sources are removed: the same content id, then (`dedup: minhash`, default)
   near-duplicates by the `dedup_minhash` stage over the union, the earlier source winning. So no
   two near-duplicates are left to straddle the splits, and the split is by content id;
4. sources are balanced by sample count: with `total`, source i gets round(total * share_i)
   items (repeated when it has fewer); without it, the largest mix in which no source needs
   repeating (the scarcest source relative to its share is used in full);
5. items go to `validation` when a seeded hash of their content id falls under the share, so the
   copies of an item stay together;
6. `DIR/data/{train,validation}-NNNNN-of-NNNNN.parquet` (one folder per kind under data/ when
   the mix has several), `DIR/mix.json` (spec, per-source counts, weights, removed duplicates)
   and `DIR/mix_items.parquet` (every row: id, kind, split, source, copies).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from rlclimb.environments.base import kind_of
from rlclimb.schemas.arrow import arrow_schema
from rlclimb.schemas.io import JsonlError, load_yaml, read_jsonl, read_rows, write_parquet
from rlclimb.schemas.records import CodeProblem, MixSource, MixSpec, QAItem, pass_rate_map

MANIFEST = "mix.json"
ITEMS = "mix_items.parquet"
RECORDS = {"math": QAItem, "code": CodeProblem}
TEXT_FIELD = {"math": "question", "code": "statement"}
ROWS_PER_FILE = 50_000
SPLITS = ("train", "validation")


class MixError(ValueError):
    """A spec or source that cannot be mixed; the message names the file and the fix."""


def package_version() -> str:
    try:
        return metadata.version("rlclimb")
    except metadata.PackageNotFoundError:
        return "unknown"


# ---- reading ---------------------------------------------------------------------------------


def dataset_files(path: Path) -> list[Path]:
    """The data files behind a path: a run's or a mix's training split (data/train-*, also per
    kind under data/), another directory's files, or the file itself."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise MixError(f"{path}: no such file or directory")
    folder = path / "data" if (path / "data").is_dir() else path
    files = (sorted(folder.glob("train-*.parquet")) or sorted(folder.glob("*/train-*.parquet"))
             or sorted(folder.glob("*.parquet")))
    files = files or sorted([*folder.glob("*.jsonl"), *folder.glob("*.jsonl.gz")])
    if not files:
        raise MixError(f"{path}: no .parquet or .jsonl files (expected a run or mix dir with data/)")
    return files


def read_dataset(path: Path, skipped: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for file in dataset_files(path):
        if file.suffix == ".parquet":
            rows.extend(read_rows(file))
            continue
        for line, row in read_jsonl(file):
            if isinstance(row, JsonlError):  # a bad line costs that line, not the mix
                skipped.append(f"{file} line {line}: {row.reason} ({row.detail})")
            else:
                rows.append(row)
    return rows


def typed_records(rows: list[dict[str, Any]], where: str, skipped: list[str], what: str) -> list[tuple[str, QAItem | CodeProblem]]:
    """(kind, record) for every row that validates as a QA item or a code problem; the others are
    named in `skipped` as not being `what`. Shared by `rlclimb mix` and `rlclimb train`."""
    out = []
    for i, row in enumerate(rows):
        try:
            kind = kind_of(row)
            model = RECORDS[kind]
            known = {k: v for k, v in row.items() if k in model.model_fields and v is not None}
            out.append((kind, model.model_validate(known)))
        except Exception as e:
            skipped.append(f"{where} row {i}: not {what} ({str(e).splitlines()[0]})")
    return out


def typed_rows(rows: list[dict[str, Any]], where: str, skipped: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(kind, row in its record schema) for every row that is a QA item or a code problem."""
    return [(kind, rec.model_dump(mode="json")) for kind, rec in typed_records(rows, where, skipped, "a QA item or code problem")]


# ---- selection -------------------------------------------------------------------------------


def pass_rate_of(row: dict[str, Any], tier: str | None) -> float | None:
    rates = pass_rate_map(row.get("pass_rates"))
    if tier is not None:
        return rates.get(tier)
    return sum(rates.values()) / len(rates) if rates else None


def topic_matches(topic: list[str] | None, prefixes: list[str]) -> bool:
    path = "/".join(topic or [])
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def sql_filter(rows: list[dict[str, Any]], where: str, source: str) -> list[dict[str, Any]]:
    """Rows for which a polars SQL WHERE clause holds (the rows themselves, not polars' copies)."""
    if not rows:
        return rows
    try:
        frame = pl.DataFrame(rows, infer_schema_length=None).with_row_index("__row")
        keep = frame.sql(f"SELECT __row FROM self WHERE {where}")["__row"].to_list()
    except Exception as e:
        raise MixError(f"{source}: filter {where!r} failed: {str(e).splitlines()[0]}") from None
    return [rows[i] for i in keep]


def select_rows(rows: list[dict[str, Any]], source: MixSource, seed: int,
                counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """One source's selection, filter by filter; `counts` gets the rows left after each."""
    counts = {} if counts is None else counts
    counts["read"] = len(rows)
    if source.kinds:
        rows = [r for r in rows if kind_of(r) in source.kinds]
        counts["kinds"] = len(rows)
    if source.topics:
        rows = [r for r in rows if topic_matches(r.get("topic"), source.topics)]
        counts["topics"] = len(rows)
    if source.difficulty:
        rows = [r for r in rows if r.get("difficulty") in source.difficulty]
        counts["difficulty"] = len(rows)
    if source.pass_rate is not None:
        lo, hi = source.pass_rate
        rates = [(r, pass_rate_of(r, source.pass_rate_tier)) for r in rows]
        rows = [r for r, p in rates if p is not None and lo <= p <= hi]
        counts["pass_rate"] = len(rows)
    if source.filter:
        rows = sql_filter(rows, source.filter, source.path)
        counts["filter"] = len(rows)
    if source.max_items is not None and len(rows) > source.max_items:
        picked = sorted(random.Random(seed).sample(range(len(rows)), source.max_items))
        rows = [rows[i] for i in picked]
        counts["max_items"] = len(rows)
    return rows


# ---- spec ------------------------------------------------------------------------------------


def load_spec(path: Path) -> MixSpec:
    try:
        raw = load_yaml(path.read_text())
    except OSError as e:
        raise MixError(f"cannot read mix spec {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise MixError(f"mix spec {path} is not valid YAML: {getattr(e, 'problem', e)}") from None
    try:
        return MixSpec.model_validate(raw)
    except Exception as e:
        errors = getattr(e, "errors", None)
        if callable(errors) and errors():
            err = errors()[0]
            where = ".".join(map(str, err["loc"])) or "spec"
            raise MixError(f"mix spec {path}: {where}: {err['msg']}") from None
        raise MixError(f"mix spec {path}: {str(e).splitlines()[0]}") from None


def source_path(source: MixSource, base: Path) -> Path:
    path = Path(source.path).expanduser()
    if not path.is_absolute() and (base / path).exists():
        path = base / path
    return path


def source_info(path: Path) -> dict[str, Any]:
    """What a source run says about itself: its pipeline, dedup reports, licenses."""
    root = path if path.is_dir() else path.parent
    if root.name == "data":
        root = root.parent
    info: dict[str, Any] = {"run": None, "pipeline": None, "dedup_reports": []}
    if (root / "config.json").exists() or (root / MANIFEST).exists():
        info["run"] = str(root)
        if (root / "config.json").exists():
            info["pipeline"] = json.loads((root / "config.json").read_text()).get("pipeline")
        else:
            info["pipeline"] = "mix"
        info["dedup_reports"] = sorted(p.stem for p in (root / "reports").glob("*dedup*.json"))
    return info


# ---- building --------------------------------------------------------------------------------


def split_of(item_id: str, seed: int, validation: float) -> str:
    h = int(hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()[:12], 16) / float(1 << 48)
    return "validation" if h < validation else "train"


def draw(pool: list[int], count: int, rng: random.Random) -> list[tuple[int, int]]:
    """(index, copies): every item `count // n` times, plus a seeded sample for the rest."""
    n = len(pool)
    if n == 0 or count <= 0:
        return []
    full, rest = divmod(count, n)
    extra = set(rng.sample(range(n), rest))
    return [(pool[i], full + (i in extra)) for i in range(n) if full + (i in extra) > 0]


def near_duplicates(rows: list[dict[str, Any]], kind: str, seed: int) -> tuple[set[int], list[dict], dict]:
    """Indices the `dedup_minhash` stage drops from rows (the earliest in the list is kept), the
    drops (id, reason, detail), and the stage's report."""
    from rlclimb.pipelines.stage import Drop, StageContext
    from rlclimb.stages.dedup.minhash import MinHashDedup

    stage = MinHashDedup(field=TEXT_FIELD[kind])
    index = {r["id"]: i for i, r in enumerate(rows)}
    dropped, drops = set(), []
    for out in stage.run(iter(rows), StageContext(seed=seed)):
        if isinstance(out, tuple) and isinstance(out[1], Drop):
            rec, drop = out
            dropped.add(index[rec["id"]])
            drops.append({"id": rec["id"], "reason": drop.reason, "detail": drop.detail})
    return dropped, drops, getattr(stage, "report", {})


def build_mix(spec: MixSpec, base: Path, out: Path, spec_file: str | None = None,
              log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Materialize `spec` (paths relative to `base`) into `out`; returns the manifest."""
    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    sources: list[dict[str, Any]] = []
    pooled: list[tuple[int, str, dict[str, Any]]] = []  # (source index, kind, row)
    for i, source in enumerate(spec.sources):
        path = source_path(source, base)
        skipped: list[str] = []
        typed = typed_rows(read_dataset(path, skipped), str(path), skipped)
        kinds = {id(row): kind for kind, row in typed}
        counts: dict[str, int] = {}
        rows = select_rows([row for _, row in typed], source, spec.seed + i, counts)
        licenses = Counter((r.get("source") or {}).get("license") for r in rows)
        sources.append({
            "name": source.name or source.path, "path": source.path, "resolved": str(path),
            "weight": source.weight, "skipped": len(skipped), "skipped_examples": skipped[:5],
            "selection": counts, "licenses": {str(k): v for k, v in licenses.items()},
            **source_info(path),
        })
        pooled += [(i, kinds[id(r)], r) for r in rows]
        say(f"{sources[-1]['name']}: {counts['read']:,} read, {len(rows):,} selected")

    # duplicates across sources: the same content id, then near-duplicates (earlier source wins)
    removed: list[dict[str, Any]] = []
    keep = [True] * len(pooled)
    reports: dict[str, Any] = {}
    if spec.dedup != "none":
        seen: dict[str, int] = {}
        for j, (i, _, row) in enumerate(pooled):
            if row["id"] in seen:
                keep[j] = False
                removed.append({"id": row["id"], "source": sources[i]["name"], "reason": "same_id",
                                "detail": f"also in {sources[pooled[seen[row['id']]][0]]['name']}"})
            else:
                seen[row["id"]] = j
    if spec.dedup == "minhash":
        for kind in sorted({k for _, k, _ in pooled}):
            members = [j for j, (_, k, _) in enumerate(pooled) if k == kind and keep[j]]
            dropped, drops, report = near_duplicates([pooled[j][2] for j in members], kind, spec.seed)
            for d in dropped:
                keep[members[d]] = False
            by_id = {pooled[j][2]["id"]: pooled[j][0] for j in members}
            removed += [{**d, "source": sources[by_id[d["id"]]]["name"]} for d in drops]
            reports[kind] = report
    pools: list[list[int]] = [[] for _ in spec.sources]
    for j, (i, _, _) in enumerate(pooled):
        if keep[j]:
            pools[i].append(j)

    # balance by sample count
    live = [i for i, p in enumerate(pools) if p]
    if not live:
        left = "; ".join(f"{s['name']}: {s['selection']}" for s in sources)
        raise MixError(f"the mix is empty: no source has items left after its selection ({left})")
    weight = sum(spec.sources[i].weight for i in live)
    share = {i: spec.sources[i].weight / weight for i in live}
    if spec.total is not None:
        target = {i: round(spec.total * share[i]) for i in live}
    else:
        scale = min(len(pools[i]) / share[i] for i in live)
        target = {i: min(len(pools[i]), round(scale * share[i])) for i in live}
    drawn: list[tuple[int, int]] = []
    for i in live:
        picks = draw(pools[i], target[i], random.Random(f"{spec.seed}:{i}"))
        drawn += picks
        s = sources[i]
        s.update(share=round(share[i], 6), available=len(pools[i]), rows=sum(c for _, c in picks),
                 unique=len(picks), repeated=sum(1 for _, c in picks if c > 1))
    for i, s in enumerate(sources):
        s.setdefault("share", 0.0)
        s.update({k: s.get(k, 0) for k in ("available", "rows", "unique", "repeated")})
        s["removed_as_duplicates"] = sum(1 for r in removed if r["source"] == s["name"])
        if not pools[i]:
            s["note"] = "no items left after selection and dedup: its share went to the others"

    # split by content id (copies stay together), then write per kind
    kinds = sorted({pooled[j][1] for j, _ in drawn})
    data = out / "data"
    if data.exists():
        shutil.rmtree(data)
    items: list[dict[str, Any]] = []
    by_split: dict[str, dict[str, list[dict]]] = {k: {s: [] for s in SPLITS} for k in kinds}
    for j, copies in drawn:
        i, kind, row = pooled[j]
        split = split_of(row["id"], spec.seed, spec.validation)
        by_split[kind][split] += [row] * copies
        items.append({"id": row["id"], "kind": kind, "split": split, "source": sources[i]["name"],
                      "source_path": sources[i]["path"], "copies": copies})
    files: dict[str, dict[str, list[str]]] = {}
    for kind in kinds:
        folder = data if len(kinds) == 1 else data / kind
        files[kind] = {}
        for split in SPLITS:
            rows = by_split[kind][split]
            random.Random(f"{spec.seed}:{kind}:{split}").shuffle(rows)
            files[kind][split] = write_split(rows, folder, split, RECORDS[kind], out)
    pl.DataFrame(items, schema={"id": pl.String, "kind": pl.String, "split": pl.String, "source": pl.String,
                                "source_path": pl.String, "copies": pl.Int64}).write_parquet(out / ITEMS)
    (out / "reports").mkdir(exist_ok=True)
    for kind, report in reports.items():
        (out / "reports" / f"mix_dedup_minhash_{kind}.json").write_text(
            json.dumps(report, indent=1, ensure_ascii=False, default=str))

    split_counts = {s: sum(len(by_split[k][s]) for k in kinds) for s in SPLITS}
    manifest = {
        "name": spec.name,
        "spec": spec.model_dump(mode="json"),
        "spec_file": spec_file,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rlclimb_version": package_version(),
        "kinds": kinds,
        "rows": sum(split_counts.values()),
        "unique_items": len(drawn),
        "splits": split_counts,
        "files": files,
        "split_by": split_note(spec, sources),
        "balance": ("total: each source gets round(total * share) rows, repeated when it has fewer"
                    if spec.total is not None else
                    "no total: the largest mix in which no source is repeated"),
        "sources": sources,
        "removed": {"count": len(removed), "by_reason": dict(Counter(r["reason"] for r in removed)),
                    "examples": removed[:50]},
        "elapsed_s": round(time.perf_counter() - t0, 3),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


def split_note(spec: MixSpec, sources: list[dict[str, Any]]) -> str:
    if spec.dedup == "minhash":
        return ("content id (seeded hash); near-duplicates across and within sources were removed "
                "first (dedup_minhash), so none straddle the splits")
    unchecked = [s["name"] for s in sources if not s.get("dedup_reports")]
    note = f"content id (seeded hash); dedup: {spec.dedup}, near-duplicates were not looked for"
    if unchecked:
        note += f"; sources without a dedup report: {', '.join(unchecked)} (near-duplicates in them may straddle the splits)"
    return note


def write_split(rows: list[dict], folder: Path, split: str, model, out: Path) -> list[str]:
    """`split-NNNNN-of-NNNNN.parquet` files (Hugging Face's naming); none for an empty split."""
    chunks = [rows[i : i + ROWS_PER_FILE] for i in range(0, len(rows), ROWS_PER_FILE)]
    paths = []
    for n, chunk in enumerate(chunks):
        path = folder / f"{split}-{n:05d}-of-{len(chunks):05d}.parquet"
        write_parquet(chunk, path, arrow_schema(model))
        paths.append(str(path.relative_to(out)))
    return paths


def read_manifest(path: Path) -> dict[str, Any] | None:
    file = path / MANIFEST
    return json.loads(file.read_text()) if file.exists() else None
