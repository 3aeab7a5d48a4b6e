"""The `rlclimb` command line."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlclimb.schemas.io import load_yaml

from .bookkeeping import READ_STAGE, dataset_summary
from .cli_env import env_app
from .definitions import PIPELINES, ConfigError, catalog, config_keys, did_you_mean, resolve
from .engine import RunOptions, run_pipeline
from .readers import InputError
from .readers_head import HeadReader
from .rundir import RunDir
from .storage import is_url, join, readable

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,  # plain help: flags show as flags
                  help="rlclimb: verified RL data and environments.")
app.add_typer(env_app, name="env")
console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    """Bad invocation: one line on stderr, exit code 2, nothing written."""
    err_console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def read_yaml_mapping(path: Path | None) -> dict[str, Any]:
    """A config file as a mapping ({} without one); unreadable or malformed -> one-line exit 2."""
    config: dict[str, Any] = {}
    if path is not None:
        try:
            config = load_yaml(path.read_text()) or {}
        except OSError as e:
            fail(f"cannot read config {path}: {e.strerror}")
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark else ""
            fail(f"config {path}{where} is not valid YAML: {getattr(e, 'problem', e)}")
        if not isinstance(config, dict):
            fail(f"config {path} must be a YAML mapping, got {type(config).__name__}")
    return config


def apply_sets(config: dict[str, Any], sets: list[str], top_level: tuple[str, ...] | None = None) -> dict[str, Any]:
    """`--set a.b=value` overrides (values parsed as YAML). With `top_level`, keys outside it go
    under `stages` (`--set import.question_field=x` is a stage key)."""
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            fail(f"--set expects KEY=VALUE, got {item!r}")
        try:
            value = load_yaml(raw) if raw else ""
        except yaml.YAMLError as e:
            fail(f"--set {key}: not a valid YAML value: {getattr(e, 'problem', None) or e}")
        parts = key.split(".")
        target = config
        if top_level is not None and parts[0] not in top_level:
            target = config.setdefault("stages", {})
        for p in parts[:-1]:
            target = target.setdefault(p, {})
            if not isinstance(target, dict):
                fail(f"--set {key}: {p} is not a section")
        target[parts[-1]] = value
    return config


RUN_CONFIG_KEYS = ("shard_size", "workers", "seed", "llm", "stages")


def load_config(path: Path | None, sets: list[str]) -> dict[str, Any]:
    config = apply_sets(read_yaml_mapping(path), sets, RUN_CONFIG_KEYS)
    known = set(RUN_CONFIG_KEYS)
    if unknown := set(config) - known:
        key = sorted(unknown)[0]
        fail(f"unknown config key '{key}'{did_you_mean(key, known)}top-level keys: {', '.join(RUN_CONFIG_KEYS)}")
    return config


@app.command()
def run(
    pipeline: Annotated[str, typer.Argument(help=f"one of: {', '.join(PIPELINES)} (rlclimb pipelines); or your own package.module:function")],
    out: Annotated[str, typer.Option("--out", "-o", help="run directory, e.g. runs/NAME, or a URL (s3://bucket/runs/NAME)")],
    inputs: Annotated[list[str], typer.Option("--input", "-i", help="input file or directory (repeatable), or a URL")] = [],  # noqa: B006
    config: Annotated[Path | None, typer.Option("--config", "-c", help="YAML config file")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="override a config key: stage.key=value")] = [],  # noqa: B006
    engine: Annotated[str, typer.Option(help="executor: local (processes) or ray")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="ray: the cluster to join (default: RAY_ADDRESS, else a local Ray)")] = None,
    workers: Annotated[int | None, typer.Option(help="processes (local) / CPUs (ray) for CPU-bound stages")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bars")] = False,
    limit: Annotated[int | None, typer.Option(
        "--limit", "--head", min=1, help="only the first N input items (JSONL lines, Parquet rows, PDF pages): a quick try")] = None,
    license_: Annotated[str | None, typer.Option(
        "--license", help="license of the inputs (e.g. cc-by-4.0), recorded in every record's source.license; "
                          "a document's sidecar FILE.license wins")] = None,
    retry_transient: Annotated[bool, typer.Option(
        "--retry-transient", help="redo what a finished run dropped for transient reasons (timeouts, rate limits, budget)")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="replace the run in --out even if it is of another pipeline or other inputs")] = False,
    repos: Annotated[Path | None, typer.Option(
        "--repos", help="github-prs: directory of local clones named owner__name")] = None,
    from_git_history: Annotated[Path | None, typer.Option(
        "--from-git-history", help="github-prs: mine a local clone's merged PRs instead of (or besides) --input")] = None,
) -> None:
    """Run a pipeline over inputs into a run directory (resumes if the directory exists)."""
    try:
        build = resolve(pipeline)
    except ConfigError as e:
        fail(str(e))
    if engine not in ("local", "ray"):
        fail(f"unknown engine {engine!r}; available: local, ray")
    cfg = load_config(config, set_)
    if repos is not None or from_git_history is not None:  # github-prs' own inputs, as stage keys
        if pipeline != "github-prs":
            fail("--repos and --from-git-history are options of the github-prs pipeline")
        stages = cfg.setdefault("stages", {})
        if repos is not None:
            stages.setdefault("swe_build", {})["repos"] = str(repos.resolve())
        if from_git_history is not None:
            stages.setdefault("swe_import", {})["git_history"] = str(from_git_history.resolve())
    if not inputs and from_git_history is None:
        fail("no input given: pass --input FILE (repeatable)")
    llm = None
    if cfg.get("llm"):
        from .llm import LLMConfig

        try:
            llm = LLMConfig.from_dict(cfg["llm"])
        except Exception as e:  # pydantic's error (wrapped), or a role naming no profile
            cause = e if isinstance(e, ValidationError) else e.__cause__
            if not isinstance(cause, ValidationError):
                fail(f"config llm: {str(e).splitlines()[0]}")
            err = cause.errors()[0]
            where = ".".join(str(x) for x in ("llm", *err["loc"]))
            if err["type"] == "extra_forbidden" and err["loc"][0] == "profiles":
                from .llm import ModelProfile

                fields = list(ModelProfile.model_fields)
                fail(f"unknown key '{where}'{did_you_mean(str(err['loc'][-1]), fields)}valid keys: {', '.join(fields)}")
            fail(f"config {where}: {err['msg']}")
    try:
        built = build(inputs, cfg.get("stages") or {}, int(cfg.get("shard_size", 10_000)))
        if limit is not None:
            built.reader = HeadReader(built.reader, limit)
        if license_ is not None:  # the stages that make records (import, pair) carry a license key
            for stage in built.stages:
                if "license" in type(stage.config).model_fields and stage.config.license is None:
                    stage.config.license = license_
            built = dataclasses.replace(built, config=None)  # the resolved config (config.json) says so too
    except (InputError, ConfigError) as e:
        fail(str(e))
    except Exception as e:  # bad numbers (shard_size), a user's build() failing
        fail(f"invalid config: {str(e).splitlines()[0]}")
    options = RunOptions(
        engine=engine,
        workers=workers or int(cfg.get("workers", 1)),
        ray_address=ray_address,
        progress=not quiet,  # bars on a terminal, periodic log lines otherwise
        seed=int(cfg.get("seed", 0)),
        llm=llm,
        retry_transient=retry_transient,
        force=force,
    )
    try:
        result = run_pipeline(built, out, options)
    except (InputError, ConfigError) as e:
        fail(str(e))
    if not quiet:
        print_status(out)
    else:
        print(f"{result.records} records -> {join(out, 'data') if is_url(out) else Path(out) / 'data'}")
    if result.records == 0 and (why := nothing_read(result.stats)):
        err_console.print(f"[red]error:[/red] {escape(why)}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def nothing_read(stats: dict[str, Any]) -> str | None:
    """Why a run that wrote no records read nothing at all (every input unreadable or empty), or
    None when items were read (and later stages dropped them: a normal, ledgered outcome)."""
    first = (stats.get("stages") or [None])[0]
    if first is None or (first["out"] if first["name"] == READ_STAGE else first["in"]) > 0:
        return None
    if first["name"] != READ_STAGE or not first["dropped"]:
        return "the inputs hold no items (empty files?): nothing to do"
    reasons = ", ".join(f"{r} {n:,}" for r, n in first["dropped"].items())
    return f"nothing could be read from the inputs ({reasons}); each is in the ledger with its file and reason"


def print_status(run_dir: Path) -> None:
    run = RunDir(run_dir)
    config = json.loads(run.config_path.read_text())
    stages, complete = run.collect_stats(config)
    notes = {s["name"]: s["note"] for s in config["stages"] if s.get("note")}
    table = Table(title=f"{config['pipeline']} · {run_dir} · {'complete' if complete else 'in progress / interrupted'}")
    use_llm = any(s.llm for _, s in stages)
    use_cache = any(s.cached for _, s in stages)
    use_created = any(s.created for _, s in stages)
    use_merged = any(s.merged for _, s in stages)
    cols = ["stage", "in", "out", "dropped"]
    cols += ["created"] if use_created else []
    cols += ["merged"] if use_merged else []
    cols += ["top drop reasons", "time"]
    cols += ["cached"] if use_cache else []
    cols += ["LLM tokens", "cost $"] if use_llm else []
    for col in cols:
        left = col in ("stage", "top drop reasons")
        table.add_column(col, justify="left" if left else "right", no_wrap=col != "top drop reasons")
    for name, s in stages:
        why = ", ".join(f"{r} {n:,}" for r, n in s.dropped.most_common(3))
        row = [name, f"{s.seen:,}", f"{s.out:,}", f"{sum(s.dropped.values()):,}"]
        row += [f"{s.created:,}"] if use_created else []
        row += [f"{s.merged:,}"] if use_merged else []
        row += [why, f"{s.time_s:.2f}s"]
        row += [f"{s.cached:,}"] if use_cache else []
        if use_llm:
            tokens = int(s.llm.get("prompt_tokens", 0) + s.llm.get("completion_tokens", 0))
            row += [f"{tokens:,}", f"{s.llm.get('cost', 0):.4f}"]
        table.add_row(*row)
    console.print(table)
    for name, note in notes.items():  # what a stage skipped, and why
        console.print(f"  {name}: {note}", highlight=False, soft_wrap=True)
    if use_created or use_merged:
        console.print("  created: extra records an expand stage made (one item split in parts); "
                      "merged: records folded into others (an answer into its question), not dropped", highlight=False)
    for _, s in stages:  # stages that book usage under several tags (e.g. one per model tier)
        for tag in sorted({k.rpartition("/")[0] for k in s.llm if "/" in k}):
            tokens = int(s.llm.get(f"{tag}/prompt_tokens", 0) + s.llm.get(f"{tag}/completion_tokens", 0))
            console.print(f"  {tag}: {int(s.llm.get(f'{tag}/requests', 0)):,} requests, {tokens:,} tokens, "
                          f"${s.llm.get(f'{tag}/cost', 0):.4f}")
    if complete:
        stats = json.loads(run.stats_path.read_text())
        summary = dataset_summary(run.data_dir)
        unanswered = summary.get("unanswered", 0)
        what = f"{stats['records']:,} records" + (f" ({unanswered:,} without an answer)" if unanswered else "")
        console.print(f"{what} in {run.data_dir}  ·  {stats['drops']:,} drops in {run.ledger_dir}", highlight=False)
        if "difficulty" in summary:
            console.print("difficulty: " + ", ".join(f"{k} {v:,}" for k, v in summary["difficulty"].items()), highlight=False)
        for tier, bins in summary.get("pass_rates", {}).items():
            console.print(f"pass rate {tier}: " + ", ".join(f"{b} {n:,}" for b, n in bins.items()), highlight=False)


@app.command()
def gc(
    run_dir: Annotated[str, typer.Argument(help="a run directory (or its URL)")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be removed")] = False,
) -> None:
    """Remove a run's segments that its current configuration no longer uses (kept so that
    switching back to an earlier setting is free), and scratch left by a killed run."""
    from .engine.housekeeping import collect_garbage

    try:
        result = collect_garbage(run_dir, dry_run=dry_run)
    except InputError as e:
        fail(str(e))
    verb = "would remove" if dry_run else "removed"
    console.print(f"{verb} {len(result['removed'])} unused segments ({result['bytes'] / 1e6:,.1f} MB); "
                  f"kept {len(result['kept'])}", highlight=False)
    for name in result["removed"]:
        console.print(f"  {name}", highlight=False)


@app.command()
def status(
    run_dir: Annotated[str, typer.Argument(help="a run directory (or its URL)")],
    as_json: Annotated[bool, typer.Option("--json", help="print stats as JSON")] = False,
) -> None:
    """Print a run's funnel (per stage in, out, dropped by reason, created, merged, notes, time,
    cost) and what the dataset holds (unanswered items, difficulty and pass-rate distributions)."""
    run_dir = readable(run_dir)  # a URL: a fresh copy of what the store holds
    run = RunDir(run_dir)
    if not run.config_path.exists():
        fail(f"not a run directory (no config.json): {run_dir}")
    if as_json:
        config = json.loads(run.config_path.read_text())
        stages, complete = run.collect_stats(config)
        notes = {s["name"]: s["note"] for s in config["stages"] if s.get("note")}
        out = {"complete": complete,
               "stages": [{"name": n, **s.to_dict(), **({"note": notes[n]} if n in notes else {})} for n, s in stages],
               "dataset": dataset_summary(run.data_dir) if complete else {}}
        print(json.dumps(out, indent=1))
        return
    print_status(run_dir)


@app.command()
def export(
    run_dir: Annotated[str, typer.Argument(help="a finished run directory (or its URL)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="FILE.jsonl, FILE.jsonl.gz, FILE.parquet, or a new FOLDER (data/ + dataset card)")],
) -> None:
    """Export a run's dataset: JSONL, JSONL.gz or Parquet by the file's extension, or a
    Hub-ready folder (data/train-*.parquet, README.md dataset card, croissant.json)."""
    from .publish.export import ExportError, export_run

    try:
        written = export_run(readable(run_dir), out)
    except ExportError as e:
        fail(str(e))
    console.print(f"wrote {written['path']}" + (" (data/ and the dataset card README.md)" if written["kind"] == "folder" else ""),
                  highlight=False)


def version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"rlclimb {version('rlclimb')}")
        raise typer.Exit()


@app.callback()
def global_options(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    """rlclimb: verified RL data and environments."""


@app.command("pipelines")
def list_pipelines() -> None:
    """List the pipelines and their stages (rlclimb config show PIPELINE: each stage's keys)."""
    for name in PIPELINES:
        doc = (importlib.import_module(f"rlclimb.pipelines.definitions.{name.replace('-', '_')}").__doc__ or "").strip()
        console.print(f"[bold]{name}[/bold]: {escape(doc.splitlines()[0].split(': ', 1)[-1]) if doc else ''}", highlight=False)
        for cls, when in catalog(name):
            console.print(f"  {cls.name:<15} {cls.kind:<7} {escape(when)}", highlight=False)


config_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Show what a pipeline can be configured with.")
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(pipeline: Annotated[str, typer.Argument(help=f"one of: {', '.join(PIPELINES)}")]) -> None:
    """Every stage of PIPELINE with its config keys, types, defaults and what they do."""
    if pipeline not in PIPELINES:
        fail(f"unknown pipeline {pipeline!r}{did_you_mean(pipeline, PIPELINES)}available: {', '.join(PIPELINES)}")
    console.print(f"{pipeline}: set keys as `stages: {{STAGE: {{KEY: VALUE}}}}` in --config YAML or "
                  "--set STAGE.KEY=VALUE; top-level keys: " + ", ".join(RUN_CONFIG_KEYS), highlight=False)
    for cls, when in catalog(pipeline):
        table = Table(title=f"{cls.name} ({cls.kind}, v{cls.version}){' · ' + when if when else ''}", title_justify="left")
        for col in ("key", "type", "default", "description"):
            table.add_column(col, overflow="fold")
        for key, kind, default, text in config_keys(cls):
            table.add_row(key, kind, default if len(default) <= 40 else default[:37] + "...", text)
        console.print(table)


@app.command()
def decontam(
    benchmarks: Annotated[list[str], typer.Option("--benchmark", "-b", help="benchmark file (JSONL/Parquet/Arrow) or HF-layout directory (repeatable)")],
    inputs: Annotated[list[str], typer.Option("--input", "-i", help="input .jsonl[.gz] / .parquet file or directory (repeatable)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output directory: matches.jsonl, clean/, report.json")],
    field: Annotated[str | None, typer.Option(help="question field of the inputs (default: auto-detect)")] = None,
    benchmark_field: Annotated[str | None, typer.Option(help="question field of the benchmarks (default: auto-detect)")] = None,
    matchers: Annotated[str, typer.Option(help="comma-separated: exact,minhash,vector")] = "exact,minhash,vector",
    backend: Annotated[str, typer.Option(help="embedding backend: minilm, minilm-int8, static")] = "minilm",
    minhash_threshold: Annotated[float | None, typer.Option(help="estimated Jaccard (default 0.5)")] = None,
    vector_threshold: Annotated[float | None, typer.Option(help="cosine (default: the backend's)")] = None,
    numbers: Annotated[str | None, typer.Option(help="number invariants: quantities (default), subset, exact, ignore")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Find benchmark items in inputs; write matches.jsonl and a clean copy of the inputs."""
    from .decontam import run_decontam

    settings: dict[str, Any] = {"matchers": [m.strip() for m in matchers.split(",") if m.strip()],
                                "vector_backend": backend, "benchmark_field": benchmark_field}
    for key, value in (("minhash_threshold", minhash_threshold), ("vector_threshold", vector_threshold), ("numbers", numbers)):
        if value is not None:
            settings[key] = value
    log = None if quiet else (lambda msg: err_console.print(msg, highlight=False))
    try:
        report = run_decontam(benchmarks, inputs, out, field_name=field, log=log, **settings)
    except InputError as e:
        fail(str(e))
    by = ", ".join(f"{k} {v:,}" for k, v in report["by_matcher"].items()) or "none"
    console.print(f"{report['flagged']:,} of {report['records']:,} items match a benchmark ({by}); "
                  f"matches in {out / 'matches.jsonl'}, clean copy in {out / 'clean'}", highlight=False)
    if report["unreadable_count"]:
        console.print(f"{report['unreadable_count']:,} unreadable lines left out of the clean copy (listed in {out / 'report.json'})")


from . import cli_publish  # noqa: E402,F401,I001  (registers `mix`, `card`, `report`, `demo`)
from . import cli_train  # noqa: E402,F401  (registers `rlclimb train`; torch loads only when it runs)


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # transformers prints a load report (e.g. "BertModel LOAD REPORT ... UNEXPECTED" for MiniLM's
    # unused position ids) and a weights bar on every model load: noise for a CLI user.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    app()


if __name__ == "__main__":
    main()
