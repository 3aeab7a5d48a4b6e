"""`rlclimb env import|replay|card` for tool-use environments (registered on pipelines/cli_env).

    rlclimb env import tau-bench SRC_DIR --out ENV_DIR [--no-hash]
    rlclimb env replay ENV_DIR --out OUT_DIR
    rlclimb env card ENV_DIR [--no-replay] [--json]

`import` converts a tau-bench v1 domain (or every domain under SRC_DIR, into ENV_DIR/<domain>)
and, unless --no-hash, replays each task's gold actions to record its final-state hash; tasks
that cannot be read are listed with the reason. `replay` writes OUT_DIR/replay.jsonl (id,
task_index, tool outputs in order, our final-state hash, whether it matches the recorded hash)
and OUT_DIR/states/<task>.json (the final state in the source's layout); exit 1 when a replay
failed or a hash differs. `card` summarizes tools, state size, tasks by type and the gold-replay
status.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
err_console = Console(stderr=True)
FORMATS = ("tau-bench",)


def _fail(message: str) -> None:
    err_console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _load(path: Path):
    from rlclimb.environments.tooluse.format import FormatError, load_env

    try:
        return load_env(path)
    except FormatError as e:
        _fail(str(e))


def _progress(label: str):
    def report(done: int, total: int) -> None:
        if done == total or done % 25 == 0:
            err_console.print(f"{label}: {done}/{total}", highlight=False)

    return report


def import_env(
    format: Annotated[str, typer.Argument(help="source format: tau-bench")],
    src: Annotated[
        Path, typer.Argument(help="a tau-bench v1 domain dir, or a dir holding several")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="environment dir to write")],
    no_hash: Annotated[
        bool, typer.Option("--no-hash", help="skip replaying gold actions to record final hashes")
    ] = False,
    backend: Annotated[str | None, typer.Option("--backend", help="sandbox backend")] = None,
) -> None:
    """Import tau-bench style domains into the tool-environment format."""
    from rlclimb.environments.tooluse.batch import record_hashes
    from rlclimb.environments.tooluse.format import load_env
    from rlclimb.environments.tooluse.tau_import import ImportError_, find_domains, import_domain

    if format not in FORMATS:
        _fail(f"unknown format {format!r}; known: {', '.join(FORMATS)}")
    if not src.is_dir():
        _fail(f"source not found: {src}")
    from rlclimb.environments.tooluse.tau2_import import find_tau2_domains, import_tau2_domain

    jobs = [(d.name, lambda t, d=d: import_domain(d, t)) for d in find_domains(src)]
    jobs += [
        (f"tau2_{code.name}", lambda t, c=code, d=data: import_tau2_domain(c, d, t))
        for code, data in find_tau2_domains(src)
    ]
    if not jobs:
        _fail(
            f"no tau-bench domain under {src} (v1: tools/, data/*.json and tasks*.py; tau2: "
            "src/tau2/domains/<d>/tools.py with data/tau2/domains/<d>/tasks.json)"
        )
    for name, run_import in jobs:
        target = out if len(jobs) == 1 else out / name
        try:
            report = run_import(target)
        except ImportError_ as e:
            _fail(str(e))
        tools = f"{report.tools} tools" if report.tools >= 0 else "toolkit tools"
        console.print(
            f"{name}: {report.tasks} tasks, {tools} -> {target}"
            + (f"; {len(report.skipped)} task(s) skipped" if report.skipped else ""),
            highlight=False,
        )
        for where, why in report.skipped[:20]:
            console.print(f"  skipped {where}: {escape(why)}", highlight=False)
        if not no_hash:
            failed = record_hashes(load_env(target), backend=backend)
            console.print(
                f"  gold replays: {report.tasks - len(failed)}/{report.tasks} hashed",
                highlight=False,
            )
            for row in failed[:20]:
                console.print(
                    f"  replay failed {row['id']}: {escape(row['error'])}", highlight=False
                )


def replay_env(
    env_dir: Annotated[Path, typer.Argument(help="environment dir")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output dir")],
    backend: Annotated[str | None, typer.Option("--backend", help="sandbox backend")] = None,
) -> None:
    """Replay every task's gold actions in a fresh state; write replay.jsonl and states/."""
    from rlclimb.environments.tooluse.batch import replay_all

    spec = _load(env_dir)
    rows = replay_all(spec, out=out, backend=backend, progress=_progress(spec.name))
    failed = [r for r in rows if r["error"]]
    differ = [r for r in rows if r["matches_recorded"] is False]
    console.print(
        f"{spec.name}: {len(rows)} tasks replayed, {len(failed)} failed, "
        f"{sum(1 for r in rows if r['matches_recorded'])} match their recorded hash, "
        f"{len(differ)} differ -> {out / 'replay.jsonl'}",
        highlight=False,
    )
    for r in (failed + differ)[:20]:
        console.print(f"  {r['id']}: {escape(r['error'] or 'hash differs')}", highlight=False)
    if failed or differ:
        raise typer.Exit(1)


def card_env(
    env_dir: Annotated[Path, typer.Argument(help="environment dir")],
    no_replay: Annotated[
        bool, typer.Option("--no-replay", help="do not replay gold actions")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the card as JSON")] = False,
    backend: Annotated[str | None, typer.Option("--backend", help="sandbox backend")] = None,
) -> None:
    """Summarize an environment: tools, state size, tasks by type, gold-replay status."""
    from rlclimb.environments.tooluse.batch import replay_all
    from rlclimb.environments.tooluse.runtime import ToolRuntime

    spec = _load(env_dir)
    try:
        with ToolRuntime(spec, backend=backend) as rt:
            tools = [{"name": t["name"], "kind": t["kind"]} for t in rt.tools]
            state = rt.state()
    except RuntimeError as e:
        _fail(str(e))
    if isinstance(state, dict):
        sizes = {k: len(v) if isinstance(v, (dict, list)) else 1 for k, v in state.items()}
    else:
        sizes = {"state": 1}
    card = {
        "name": spec.name,
        "description": spec.description,
        "source": spec.source,
        "tools": tools,
        "tools_by_kind": dict(Counter(t["kind"] for t in tools)),
        "state": {
            "kind": spec.state.kind,
            "bytes": len(json.dumps(state)),
            "collections": sizes,
        },
        "tasks": len(spec.tasks),
        "tasks_by_type": dict(Counter(t.type or "untyped" for t in spec.tasks)),
        "tasks_without_tools": sum(1 for t in spec.tasks if not t.requires_tools),
        "tasks_with_hash": sum(1 for t in spec.tasks if t.final_hash),
    }
    if not no_replay:
        progress = None if as_json else _progress(spec.name)  # --json: stdout is the card alone
        rows = replay_all(spec, backend=backend, progress=progress)
        card["gold_replay"] = {
            "replayed": len(rows),
            "failed": sum(1 for r in rows if r["error"]),
            "match_recorded": sum(1 for r in rows if r["matches_recorded"]),
            "differ": sum(1 for r in rows if r["matches_recorded"] is False),
        }
    if as_json:
        print(json.dumps(card, indent=1, ensure_ascii=False))
        return
    console.print(f"[bold]{escape(spec.name)}[/bold]: {escape(spec.description)}", highlight=False)
    table = Table(title="tools", title_justify="left")
    table.add_column("tool")
    table.add_column("kind")
    for t in tools:
        table.add_row(t["name"], t["kind"])
    console.print(table)
    console.print(
        f"state ({spec.state.kind}, {card['state']['bytes']} bytes): "
        + ", ".join(f"{k} {v}" for k, v in sizes.items()),
        highlight=False,
    )
    console.print(
        f"tasks: {card['tasks']} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(card["tasks_by_type"].items()))
        + f"); {card['tasks_with_hash']} with a recorded final hash",
        highlight=False,
    )
    if "gold_replay" in card:
        g = card["gold_replay"]
        console.print(
            f"gold replay: {g['replayed']} replayed, {g['failed']} failed, "
            f"{g['match_recorded']} match the recorded hash, {g['differ']} differ",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("import")(import_env)
    app.command("replay")(replay_env)
    app.command("card")(card_env)
