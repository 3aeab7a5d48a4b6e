"""`rlclimb card RUN_OR_MIX`: a Hugging Face dataset card (README.md with the YAML header the Hub
reads), PNG figures (figures/) and Croissant JSON-LD metadata (croissant.json), written into the
directory, next to data/, so the folder can be uploaded as a dataset repository as it is.

Every number comes from stats.json / mix.json / reports/*.json and the data files
(`describe.Description`).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from .describe import Description, describe
from .mix import package_version

TASKS = {"math": ["question-answering", "text-generation"], "code": ["text-generation"]}
TOPIC_DEPTH = 2  # topic paths are shown to this depth ("math/algebra")
EXAMPLES = 3


def size_category(n: int) -> str:
    """The Hub's size_categories bucket."""
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")):
        if n < limit:
            return label
    return "100M<n<1B"


def kinds_of(d: Description) -> list[str]:
    if d.kind == "mix":
        return list(d.config["kinds"])
    return ["code"] if "statement" in d.frame.columns else ["math"]


def license_of(d: Description) -> str:
    """The spec's license, else the one license all records carry, else "unknown"."""
    if d.kind == "mix" and d.config["spec"].get("license"):
        return d.config["spec"]["license"]
    found = {lic for (_, lic) in d.licenses()}
    return found.pop().lower() if len(found) == 1 and "unknown" not in found else ("other" if found - {"unknown"} else "unknown")


def hub_configs(d: Description) -> list[dict[str, Any]]:
    """The `configs` section: one per kind, data_files by split as glob patterns."""
    configs = []
    for name, splits in d.data_files.items():
        files = []
        for split, paths in splits.items():
            if paths:
                folder = str(Path(paths[0]).parent)
                files.append({"split": split, "path": f"{folder}/{split}-*"})
        configs.append({"config_name": name, "data_files": files, **({"default": True} if not configs else {})})
    return configs


def topics(d: Description) -> pl.DataFrame:
    if "topic" not in d.frame.columns or not d.records:
        return pl.DataFrame({"topic": [], "len": []})
    return (d.frame.select(pl.col("topic").list.head(TOPIC_DEPTH).list.join("/").alias("topic"))
            .with_columns(pl.when(pl.col("topic") == "").then(pl.lit("(none)")).otherwise(pl.col("topic")).alias("topic"))
            .group_by("topic").len().sort(["len", "topic"], descending=[True, False]))


def difficulties(d: Description) -> pl.DataFrame:
    if "difficulty" not in d.frame.columns or not d.records:
        return pl.DataFrame({"difficulty": [], "len": []})
    return (d.frame.select(pl.col("difficulty").fill_null("(unscored)"))
            .group_by("difficulty").len().sort("difficulty"))


# ---- figures -------------------------------------------------------------------------------------


def figures(d: Description, folder: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / f"{name}.png", dpi=110)
        plt.close(fig)
        out[name] = folder / f"{name}.png"

    for owner in [d, *d.sources]:
        stages = owner.funnel()
        if not stages:
            continue
        names = [s["name"] for s in stages][::-1]
        fig, ax = plt.subplots(figsize=(7, 0.32 * len(names) + 1.2))
        ax.barh(names, [s["in"] for s in stages][::-1], color="#c9d6e8", label="in")
        ax.barh(names, [s.get("out", s["kept"]) for s in stages][::-1], color="#3b6ea8", height=0.5, label="out")
        ax.set_xlabel("records")
        ax.set_title(f"curation funnel: {owner.name}")
        ax.legend(loc="lower right")
        save(fig, "funnel" if owner is d else f"funnel-{slug(owner.name)}")
    for name, table, column in (("difficulty", difficulties(d), "difficulty"), ("topics", topics(d), "topic")):
        if table.height == 0:
            continue
        table = table.head(20)
        fig, ax = plt.subplots(figsize=(7, 0.3 * table.height + 1.3))
        ax.barh(table[column].to_list()[::-1], table["len"].to_list()[::-1], color="#3b6ea8")
        ax.set_xlabel("items")
        ax.set_title(f"{name} ({d.records:,} items)")
        save(fig, name)
    return out


def slug(name: str) -> str:
    return re.sub("-+", "-", "".join(c if c.isalnum() else "-" for c in name)).strip("-").lower() or "source"


# ---- markdown ------------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        text = f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def funnel_table(stages: list[dict[str, Any]]) -> str:
    """in / out / dropped per stage (and created / merged where a stage makes or folds records)."""
    extra = [k for k in ("created", "merged") if any(s.get(k) for s in stages)]
    rows = []
    for s in stages:
        dropped = s.get("dropped") or {}
        reasons = ", ".join(f"{r} {n:,}" for r, n in sorted(dropped.items(), key=lambda x: -x[1])) or "-"
        rows.append([s["name"], s["in"], s.get("out", s["kept"]), sum(dropped.values()),
                     *(int(s.get(k) or 0) for k in extra), reasons])
    return table(["stage", "in", "out", "dropped", *extra, "dropped by reason"], rows)


def dedup_section(d: Description) -> str:
    parts = []
    for where, r in d.reports.items():
        if "benchmark_items" in r or r.get("stage") == "decontam":
            parts.append(f"**{where}** (decontamination): {r.get('records', 0):,} items checked against "
                         f"{r.get('benchmark_items', 0):,} benchmark items; {r.get('flagged', 0):,} removed "
                         f"(by matcher: {r.get('by_matcher') or {}}; by benchmark: {r.get('by_benchmark') or {}}).")
            for m in (r.get("matches") or [])[:EXAMPLES]:
                parts.append(f"- `{m.get('matcher')}` {m.get('score')}: {clip(m.get('input_text'))} ⟷ "
                             f"{clip(m.get('benchmark_text'))} ({m.get('benchmark')})")
            continue
        if "records" not in r:
            continue
        line = (f"**{where}** ({r.get('matcher') or r.get('stage')}): {r['records']:,} records, "
                f"clusters of duplicates: {r.get('clusters', 0):,}; removed: {r.get('dropped', 0):,}")
        threshold = (r.get("config") or {}).get("threshold")
        parts.append(line + (f" (threshold {threshold})." if threshold is not None else "."))
        for ex in (r.get("examples") or [])[:2]:
            members = ex.get("members") or []
            kept = next((m for m in members if m.get("kept")), None)
            for m in members:
                if kept is not None and m is not kept:
                    parts.append(f"- kept: {clip(kept.get('text'))} — removed: {clip(m.get('text'))} "
                                 f"(score {m.get('score_to_kept')})")
    if d.kind == "mix":
        removed = d.config["removed"]
        parts.append(f"**across sources** (`rlclimb mix`, dedup `{d.config['spec']['dedup']}`): "
                     f"{removed['count']:,} removed" + (f" ({removed['by_reason']})." if removed["by_reason"] else "."))
    if not any("benchmark_items" in r for r in d.reports.values()):
        parts.append("No benchmark decontamination was run (set `decontam.benchmarks` in the pipeline).")
    return "\n\n".join(parts) or "No dedup reports."


def clip(text: Any, n: int = 120) -> str:
    text = " ".join(str(text or "").split())
    return (text[: n - 1] + "…") if len(text) > n else text


def schema_section(d: Description) -> str:
    data = [c for c in d.frame.columns if c not in ("split", "config")]
    return table(["column", "type"], [[f"`{c}`", f"`{d.frame.schema[c]}`"] for c in data])


def examples_section(d: Description) -> str:
    if not d.records:
        return "No records."
    field = "statement" if "statement" in d.frame.columns else "question"
    out = []
    for row in d.frame.head(EXAMPLES).iter_rows(named=True):
        src = row.get("source") or {}
        where = ", ".join(f"{k} {v}" for k, v in (("document", Path(src.get("document") or "").name),
                                                   ("page", src.get("page")), ("line", src.get("line"))) if v)
        item = {"id": row["id"], field: row[field], "answer": row.get("answer"), "topic": row.get("topic"),
                "difficulty": row.get("difficulty"), "source": where}
        out.append("```json\n" + json.dumps({k: v for k, v in item.items() if v is not None}, indent=1,
                                            ensure_ascii=False) + "\n```")
    return "\n".join(out)


def models_section(d: Description) -> str:
    usage = d.llm_usage()
    models = d.models()
    parts = []
    if models:
        parts.append("Model profiles that answered (samples): " + ", ".join(f"`{m}` {n:,}" for m, n in models.most_common())
                     + ". Runs record profile names, not endpoints or keys; the run's `llm:` config maps them.")
    if usage:
        parts.append(table(["run", "stage", "tier / tag", "requests", "prompt tokens", "completion tokens", "cost $"],
                           [[u["run"], u["stage"], u["tier"], u["requests"], u["prompt_tokens"],
                             u["completion_tokens"], f"{u['cost']:.4f}"] for u in usage]))
        total = sum(u["cost"] for u in usage)  # a stage's rows are per tag when it has tags, else one
        parts.append(f"Total LLM cost: ${total:.4f}.")
    return "\n\n".join(parts) or "No LLM or model calls: every stage ran on embedded rules."


def limitations(d: Description) -> str:
    notes = []
    dif = difficulties(d)
    if dif.height and set(dif["difficulty"].to_list()) == {"(unscored)"}:
        notes.append("No difficulty scores: run `rlclimb run stem-score` on the data to add pass rates by model tier.")
    if "tags" in d.frame.columns:
        unanswered = d.frame.filter(pl.col("tags").list.contains("unanswered")).height
        if unanswered:
            notes.append(f"{unanswered:,} items have no answer (tag `unanswered`): not verifiable as they are.")
    if license_of(d) in ("unknown", "other"):
        notes.append("The license could not be taken from the records; check every source's license before use.")
    if d.kind == "mix":
        notes.append(f"Split: {d.config['split_by']}.")
        if any(s.get("repeated") for s in d.config["sources"]):
            notes.append("Some items appear several times (a source with fewer items than its share is repeated).")
    notes.append("Answers were checked by rules and, where configured, models; errors in source material can remain.")
    return "\n".join(f"- {n}" for n in notes)


def reproduction(d: Description) -> str:
    version = package_version()
    if d.kind == "mix":
        spec = yaml.safe_dump(d.config["spec"], sort_keys=False, allow_unicode=True)
        lines = [f"```bash\nrlclimb mix {d.config.get('spec_file') or 'MIX.yaml'} --out {d.path}\n```",
                 f"Mix spec (resolved):\n\n```yaml\n{spec}```",
                 f"rlclimb {d.config.get('rlclimb_version', version)}. The sources were made by:"]
        for s in d.sources:
            lines.append(f"\n**{s.name}**\n\n{reproduction(s)}")
        return "\n\n".join(lines)
    files = (d.config.get("inputs") or {}).get("files") or []
    inputs = " ".join(f"--input {f}" for f in files) or "--input INPUT"
    cfg = yaml.safe_dump({"shard_size": d.config.get("shard_size"), "stages": d.config.get("config")},
                         sort_keys=False, allow_unicode=True)
    stages = table(["stage", "version", "fingerprint"],
                   [[s["name"], s.get("version"), s.get("fingerprint")] for s in d.config.get("stages") or []])
    return (f"```bash\nrlclimb run {d.pipeline} {inputs} --out {d.path} --config config.yaml\n```\n\n"
            f"`config.yaml` (the resolved config of this run):\n\n```yaml\n{cfg}```\n\n{stages}\n\n"
            f"rlclimb {version}; finished {d.stats.get('finished_at', '?')} in {d.stats.get('elapsed_s', '?')} s.")


def header(d: Description) -> dict[str, Any]:
    kinds = kinds_of(d)
    tags = ["rlclimb", "reinforcement-learning", *kinds, *({d.pipeline} if d.kind == "run" else set())]
    top = [t for t in topics(d)["topic"].to_list() if t != "(none)"][:5]
    tags += sorted({t.split("/")[-1].replace("_", "-") for t in top} - set(tags))
    return {
        "license": license_of(d),
        "language": ["en"],
        "pretty_name": d.name,
        "task_categories": sorted({t for k in kinds for t in TASKS[k]}),
        "size_categories": [size_category(d.records)],
        "tags": tags,
        "configs": hub_configs(d),
    }


def render(d: Description, figs: dict[str, Path], root: Path) -> str:
    head = yaml.safe_dump(header(d), sort_keys=False, allow_unicode=True)

    def fig(name: str) -> str:
        return f"\n\n![{name}]({figs[name].relative_to(root).as_posix()})" if name in figs else ""

    splits = ", ".join(f"{k}: {v:,}" for k, v in d.splits.items())
    what = (f"a mix of {len(d.config['sources'])} sources" if d.kind == "mix" else f"the `{d.pipeline}` pipeline")
    summary = (d.config.get("spec", {}).get("description") if d.kind == "mix" else None) or (
        f"{d.records:,} {' and '.join(kinds_of(d))} items ({splits}) made by rlclimb from {what}, "
        "curated for reinforcement learning with verifiable rewards.")
    lic = d.licenses()
    sources = table(["document", "license", "items"], [[doc, name, n] for (doc, name), n in lic.most_common()])
    funnel = []
    if d.kind == "mix":
        sel = [[s["name"], s["weight"], f"{s['share']:.3f}", s["selection"].get("read", 0),
                ", ".join(f"{k} {v:,}" for k, v in s["selection"].items() if k != "read") or "-",
                s["removed_as_duplicates"], s["available"], s["rows"], s["repeated"]] for s in d.config["sources"]]
        funnel.append("The mix (`mix.json`): per source, rows read, left after each selection filter, removed "
                      "as duplicates of another source, available, and drawn (copies included).\n\n"
                      + table(["source", "weight", "share", "read", "after filters", "duplicates removed",
                               "available", "rows", "repeated"], sel))
        funnel.append(f"Balance: {d.config['balance']}.")
    for owner in ([d] if d.kind == "run" else d.sources):
        name = "funnel" if owner is d else f"funnel-{slug(owner.name)}"
        funnel.append(f"**{owner.name}** (`{owner.pipeline}`, stats.json: {owner.stats.get('records', 0):,} records, "
                      f"{owner.stats.get('drops', 0):,} drops):\n\n{funnel_table(owner.funnel())}{fig(name)}")
    dif, top = difficulties(d), topics(d)
    sections = [
        f"# {d.name}", summary,
        "## Sources and licenses", sources,
        "## Curation funnel", "\n\n".join(funnel),
        "## Dedup and decontamination", dedup_section(d),
        "## Difficulty", (table(["difficulty", "items"], dif.rows()) if dif.height else "No items.") + fig("difficulty"),
        "## Topics", (table(["topic", "items"], top.rows()) if top.height else "No items.") + fig("topics"),
        "## Schema", schema_section(d),
        "## Example records", examples_section(d),
        "## Models and endpoints", models_section(d),
        "## Known limitations", limitations(d),
        "## Reproduction", reproduction(d),
    ]
    return f"---\n{head}---\n\n" + "\n\n".join(sections) + "\n"


# ---- croissant -----------------------------------------------------------------------------------


CROISSANT_TYPES = {"String": "sc:Text", "Int64": "sc:Integer", "Float64": "sc:Float", "Boolean": "sc:Boolean"}


def croissant(d: Description) -> dict[str, Any]:
    """Croissant 1.0 JSON-LD: a FileSet and a RecordSet (`default-train`, ...) per config and split,
    with the scalar columns (nested ones are described in the card's schema section)."""
    context = json.loads((resources.files("rlclimb.pipelines.publish") / "assets" / "croissant_context.json").read_text())
    distribution, record_sets = [], []
    scalar = [c for c in d.frame.columns if c not in ("split", "config") and str(d.frame.schema[c]) in CROISSANT_TYPES]
    for config, splits in d.data_files.items():
        for split, paths in splits.items():
            if not paths:
                continue
            name = f"{config}-{split}"  # one record set per config and split, as the card's configs
            distribution.append({"@type": "cr:FileSet", "@id": f"{name}-files", "name": f"{name}-files",
                                 "encodingFormat": "application/x-parquet",
                                 "includes": f"{Path(paths[0]).parent.as_posix()}/{split}-*.parquet"})
            fields = [{"@type": "cr:Field", "@id": f"{name}/{c}", "name": c,
                       "dataType": CROISSANT_TYPES[str(d.frame.schema[c])],
                       "source": {"fileSet": {"@id": f"{name}-files"}, "extract": {"column": c}}} for c in scalar]
            record_sets.append({"@type": "cr:RecordSet", "@id": name, "name": name, "field": fields})
    lic = license_of(d)
    return {
        "@context": context, "@type": "sc:Dataset", "name": slug(d.name),
        "description": f"{d.records:,} items made by rlclimb ({d.pipeline}); see README.md.",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "license": f"https://spdx.org/licenses/{lic}.html" if lic not in ("unknown", "other") else lic,
        "url": d.path.resolve().as_uri(), "version": package_version(),
        "datePublished": (d.stats.get("finished_at") or d.config.get("created_at") or "")[:10] or None,
        "citeAs": f"{d.name}, a dataset made with rlclimb {package_version()} ({d.pipeline})",
        "keywords": header(d)["tags"], "distribution": distribution, "recordSet": record_sets,
    }


def validate_croissant(path: Path) -> list[str] | None:
    """mlcroissant's errors for the file ([] when valid); None when mlcroissant is not installed."""
    try:
        import mlcroissant as mlc
    except ImportError:
        return None
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)  # recommended-property notes, not errors
    try:
        dataset = mlc.Dataset(jsonld=str(path))
    except Exception as e:  # mlcroissant raises ValidationError listing every issue
        return [str(e)]
    return list(dataset.metadata.issues.errors)


def write_card(target: Path) -> dict[str, Any]:
    """README.md, figures/*.png and croissant.json in `target`; returns what was written."""
    d = describe(target)
    figs = figures(d, target / "figures")
    readme = target / "README.md"
    readme.write_text(render(d, figs, target))
    meta = target / "croissant.json"
    meta.write_text(json.dumps(croissant(d), indent=1, ensure_ascii=False) + "\n")
    errors = validate_croissant(meta)
    return {"readme": readme, "croissant": meta, "figures": figs, "croissant_errors": errors,
            "records": d.records, "counts": Counter(d.splits)}


if __name__ == "__main__":  # python -m rlclimb.pipelines.publish.card DIR
    print(write_card(Path(sys.argv[1])))
