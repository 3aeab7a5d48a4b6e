"""`rlclimb env check|run`: put one task through its environment and print the reward breakdown.

    rlclimb env check --kind code --input examples/code_problems.jsonl --index 0
    rlclimb env check --kind math --input runs/qa/data --id qa-...
    rlclimb env run --kind code --input problems.jsonl --index 0 --response answer.md
    rlclimb env check --kind swe --input runs/prs/swebench.jsonl [--id ID]
    rlclimb env import tau-bench SRC_DIR --out ENV_DIR; rlclimb env replay ENV_DIR --out OUT_DIR; rlclimb env card ENV_DIR

`check` grades the task's own reference (each reference solution of a code problem, or a math
item's answer as `\\boxed{answer}`): a task whose reference does not earn the task reward is
broken (swe: the gold patch must resolve the instance and the empty patch must not, every
instance unless --index/--id picks one). `run` grades a response you give (swe: a unified diff). Inputs: JSONL (raw rows as the import stages accept
them, or records), Parquet files, or a run directory (its `data/`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

env_app = typer.Typer(no_args_is_help=True, help="Run or verify one environment task.")
console = Console()
err_console = Console(stderr=True)
KINDS = ("code", "math", "swe")


def _fail(message: str) -> None:
    err_console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _rows(path: Path) -> list[dict]:
    from rlclimb.schemas.io import JsonlError, read_jsonl, read_rows

    if not path.exists():
        _fail(f"input not found: {path}")
    if path.is_dir():
        parts = sorted((path / "data" if (path / "data").is_dir() else path).glob("*.parquet"))
        if not parts:
            _fail(f"no Parquet files in {path} (expected a run directory or a data folder)")
        return [r for p in parts for r in read_rows(p)]
    if path.suffix == ".parquet":
        return read_rows(path)
    rows = []
    for _, row in read_jsonl(path):
        if not isinstance(row, JsonlError):
            rows.append(row)
    return rows


def _as_task(kind: str, row: dict) -> Any:
    """A record as is, or a raw input row through the kind's import parser."""
    from pydantic import ValidationError

    from rlclimb.schemas.records import CodeProblem, QAItem, Source

    if kind == "swe":  # SWE-bench instances are plain dicts (swebench.jsonl lines)
        return row

    model = CodeProblem if kind == "code" else QAItem
    try:
        return model.model_validate(row)
    except ValidationError:
        pass
    if kind == "code":
        from rlclimb.stages.code.importer import BadRecord, parse_problem

        try:
            return parse_problem(row)
        except BadRecord as e:
            _fail(f"not a usable code problem ({e.reason}): {e}")
    from rlclimb.stages.qa.importer import ImportQA

    res = ImportQA().process({"file": "", "line": 0, "data": row}, None)
    if not isinstance(res, dict):
        _fail(f"not a usable QA item ({res.reason}): {res.detail}")
    res["source"] = Source().model_dump()
    return QAItem.model_validate(res)


def _select(kind: str, path: Path, index: int | None, id_: str | None) -> Any:
    rows = _rows(path)
    if not rows:
        _fail(f"no readable rows in {path}")
    if id_ is not None:
        for row in rows:
            if str(row.get("id", row.get("instance_id"))) == id_:
                return _as_task(kind, row)
        _fail(f"no task with id {id_!r} in {path} (ids are the rows' `id` fields)")
    i = index or 0
    if not 0 <= i < len(rows):
        _fail(f"--index {i} out of range: {path} has {len(rows)} rows")
    return _as_task(kind, rows[i])


def _table(title: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("response", "task", "format", "lang", "length", "total", "detail"):
        table.add_column(
            col, justify="right" if col in ("task", "format", "lang", "length", "total") else "left"
        )
    for label, reward in rows:
        c = reward.components
        table.add_row(
            label,
            *(f"{c.get(k, 0.0):.3f}" for k in ("task", "format", "lang", "length")),
            f"{reward.total:.3f}",
            escape(reward.detail[:160]),
        )
    return table


def _env(kind: str, backend: str | None):
    from rlclimb.environments.base import get_environment

    if kind not in KINDS:
        _fail(f"unknown kind {kind!r}; available: {', '.join(KINDS)}")
    return get_environment(kind, backend=backend) if kind == "code" else get_environment(kind)


KindOpt = Annotated[str, typer.Option("--kind", "-k", help="code | math | swe")]
InputOpt = Annotated[Path, typer.Option("--input", "-i", help="JSONL, Parquet or run directory")]
IndexOpt = Annotated[
    int | None, typer.Option("--index", "-n", help="row number (0-based; default 0)")
]
IdOpt = Annotated[str | None, typer.Option("--id", help="task id")]
BackendOpt = Annotated[
    str | None, typer.Option("--backend", help="sandbox: auto | docker | bwrap | process")
]


@env_app.command()
def check(
    kind: KindOpt,
    input: InputOpt,
    index: IndexOpt = None,
    id: IdOpt = None,
    backend: BackendOpt = None,
) -> None:
    """Grade the task's reference answer / solutions; exit 1 if any misses the task reward.
    swe: every instance (or --index/--id) with its gold patch (must resolve) and the empty
    patch (must not)."""
    if kind == "swe":
        return _check_swe(input, index, id)
    env = _env(kind, backend)
    task = _select(kind, input, index, id)
    if kind == "code":
        if not task.solutions:
            _fail(f"code problem {task.id} has no reference solution")
        responses = [
            (f"reference {j} ({s.language})", f"```{s.language}\n{s.code}\n```")
            for j, s in enumerate(task.solutions)
        ]
    else:
        responses = [("answer", f"The answer is \\boxed{{{task.answer}}}.")]
    results = [(label, env.score(task, text)) for label, text in responses]
    if kind == "code":
        console.print(f"sandbox: {env.sandbox.describe()}", highlight=False)
    console.print(_table(f"{kind} task {task.id}", results))
    env.close()
    if any(r.components["task"] < 1.0 for _, r in results):
        raise typer.Exit(1)


def _check_swe(path: Path, index: int | None, id_: str | None) -> None:
    from rlclimb.environments.swe.env import grade_patch

    rows = [r for r in _rows(path) if isinstance(r, dict)]
    if id_ is not None:
        rows = [r for r in rows if id_ in (r.get("instance_id"), r.get("id"))]
        if not rows:
            _fail(f"no instance with instance_id {id_!r} in {path}")
    elif index is not None:
        if not 0 <= index < len(rows):
            _fail(f"--index {index} out of range: {path} has {len(rows)} rows")
        rows = [rows[index]]
    if not rows:
        _fail(f"no readable rows in {path}")
    table = Table(title=f"swe: gold and empty patches ({path})", title_justify="left")
    for col in ("instance", "patch", "resolved", "expected", "tests passed", "s", "detail"):
        table.add_column(
            col,
            justify="right" if col in ("tests passed", "s") else "left",
            overflow="fold",  # instance ids are the point of the table: never cut
        )
    failed = 0
    for row in rows:
        name = str(row.get("instance_id") or row.get("id") or "?")
        keys = ("base_commit", "patch", "test_patch", "image", "FAIL_TO_PASS")
        missing = [k for k in keys if not row.get(k) or row.get(k) == "[]"]
        if missing:
            table.add_row(escape(name), "-", "-", "-", "-", "-", f"missing {', '.join(missing)}")
            failed += 1
            continue
        for label, patch, want in (("gold", row["patch"], True), ("empty", "", False)):
            g = grade_patch(row, patch)
            ok = g.resolved == want
            failed += not ok
            passed = sum(s == "passed" for s in g.statuses.values())
            table.add_row(
                escape(name),
                label,
                "yes" if g.resolved else "no",
                "[green]ok[/green]" if ok else "[red]WRONG[/red]",
                f"{passed}/{len(g.statuses)}",
                f"{g.wall_s:.1f}",
                escape(g.error[:120]),
            )
    console.print(table)
    if failed:
        err_console.print(f"{failed} check(s) failed", highlight=False)
        raise typer.Exit(1)


@env_app.command("run")
def run_response(
    kind: KindOpt,
    input: InputOpt,
    response: Annotated[
        str, typer.Option("--response", "-r", help="file with the response text, or - for stdin")
    ],
    index: IndexOpt = None,
    id: IdOpt = None,
    backend: BackendOpt = None,
) -> None:
    """Grade a given response to one task and print the reward breakdown."""
    env = _env(kind, backend)
    task = _select(kind, input, index, id)
    if response == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(response).read_text()
        except OSError as e:
            _fail(f"cannot read response {response}: {e.strerror}")
    name = task["instance_id"] if kind == "swe" else task.id
    console.print(_table(f"{kind} task {name}", [("response", env.score(task, text))]))
    env.close()


# Tool-use environments: import (tau-bench), replay, card (environments/tooluse/cli.py).
from rlclimb.environments.tooluse.cli import register as _register_tool_commands  # noqa: E402

_register_tool_commands(env_app)
