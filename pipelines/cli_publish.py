"""`rlclimb mix`, `rlclimb card`, `rlclimb report` and `rlclimb demo`: from curated runs to a
dataset someone else can use and look at."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .cli import app, apply_sets, console, err_console, fail
from .readers import InputError
from .rundir import check_dir


@app.command()
def mix(
    spec: Annotated[Path, typer.Argument(help="mix spec YAML (sources with weights and selections)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output directory: data/, mix.json, mix_items.parquet")],
    set_: Annotated[list[str], typer.Option("--set", help="override a spec key: total=1000, validation=0.05")] = [],  # noqa: B006
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Materialize a mix spec into a Hugging Face dataset (train/validation split by content id)."""
    from rlclimb.schemas.records import MixSpec

    from .publish.mix import MixError, build_mix, load_spec

    try:  # never write into (or over) a directory rlclimb did not create
        check_dir(out, "mix")
    except InputError as e:
        fail(str(e))
    try:
        parsed = load_spec(spec)
        if set_:
            parsed = MixSpec.model_validate(apply_sets(parsed.model_dump(), set_))
        manifest = build_mix(parsed, spec.parent, out, spec_file=str(spec),
                             log=None if quiet else (lambda m: err_console.print(m, highlight=False)))
    except MixError as e:
        fail(str(e))
    except ValueError as e:  # a --set value the spec refuses
        fail(f"mix spec {spec}: {str(e).splitlines()[0]}")
    splits = ", ".join(f"{k} {v:,}" for k, v in manifest["splits"].items())
    console.print(f"{manifest['rows']:,} rows ({manifest['unique_items']:,} distinct items; {splits}); "
                  f"{manifest['removed']['count']:,} duplicates across sources removed -> {out / 'data'}",
                  highlight=False)
    for s in manifest["sources"]:
        console.print(f"  {s['name']}: share {s['share']:.2f}, {s['rows']:,} rows from {s['available']:,} "
                      f"available{' - ' + s['note'] if s.get('note') else ''}", highlight=False)


@app.command()
def card(
    target: Annotated[Path, typer.Argument(help="a run directory (rlclimb run) or a mix directory (rlclimb mix)")],
) -> None:
    """Write a Hugging Face dataset card (README.md, figures/) and croissant.json into a run or mix."""
    from .publish.card import write_card
    from .publish.describe import DescribeError

    try:
        written = write_card(target)
    except DescribeError as e:
        fail(str(e))
    console.print(f"wrote {written['readme']} ({written['records']:,} records, {len(written['figures'])} figures "
                  f"in {target / 'figures'}) and {written['croissant']}", highlight=False)
    errors = written["croissant_errors"]
    if errors is None:
        console.print("croissant.json not validated: pip install 'rlclimb[card]' (mlcroissant)", highlight=False)
    elif errors:
        fail(f"croissant.json does not validate: {errors[0]}")
    else:
        console.print("croissant.json validated with mlcroissant", highlight=False)


@app.command()
def report(
    target: Annotated[Path, typer.Argument(help="a run, mix or training run directory")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="HTML file (default: TARGET/report.html)")] = None,
) -> None:
    """Write one self-contained HTML page about a run, mix or training run (no server, nothing fetched)."""
    from .publish.describe import DescribeError
    from .publish.report import write_report

    try:
        path = write_report(target, out)
    except DescribeError as e:
        fail(str(e))
    console.print(f"wrote {path} (open it in a browser)", highlight=False)


@app.command()
def demo(out: Annotated[Path, typer.Option("--out", "-o", help="directory for everything the demo makes")] = Path("runs/demo")) -> None:
    """The whole loop on bundled samples, no services: a sample textbook PDF and QA dump -> curate ->
    score (embedded SmolLM2) -> mix -> card -> 2 GRPO steps -> reward figure and HTML reports."""
    from .publish.demo import run_demo

    made = run_demo(out, say=lambda m: console.print(m, highlight=False, markup=False))
    console.print(f"\ndemo finished in {made['elapsed_s']} s; everything is under {out}:", highlight=False)
    rows = [("sample textbook PDF", made["pdf"]), *(("curated run", r) for r in made["runs"]),
            ("mix (Hugging Face dataset)", made["mix"]), ("dataset card", made["card"]),
            ("Croissant metadata", made["croissant"]), *(("figure", f) for f in made["figures"])]
    if "grpo" in made:
        rows += [("GRPO run", made["grpo"]), ("reward curve", made["reward_png"])]
    rows += [("HTML report", r) for r in made["reports"]]
    for what, path in rows:
        console.print(f"  {what:28} {path}", highlight=False, markup=False)
    for skipped in made["skipped"]:
        console.print(f"[yellow]skipped[/yellow] {escape(skipped)}", highlight=False)
