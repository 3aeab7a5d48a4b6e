"""The tool-use environment format: one directory per environment, readable and versionable.

    ENV_DIR/
      env.yaml      name, description, policy (the agent's rules), personas, state, grader settings
      tools.py      tool functions over the state, each `@tool(kind="read"|"write")`
                    (`from rlclimb_tools import tool`; standard library only: it runs sandboxed)
      state.json    the state as JSON documents            (state.kind: json)
      schema.sql    or a SQLite schema + seed.sql          (state.kind: sqlite)
      tasks.jsonl   one task a line (`ToolTask`)
      ...           `files:` in env.yaml names further files/dirs shipped into the sandbox

env.yaml:

    name: bike_shop
    description: Inventory, customers and orders of a small bike shop.
    policy: |
      You are the shop's assistant. Confirm stock before ordering. ...
    personas: [{id: regular, description: A returning customer, terse.}]
    state: {kind: json, file: state.json, unordered: ["orders.*.tags"]}
    files: []
    grader: {combine: gated, outputs: true, patterns: true, judge: false}
    source: {format: tau-bench, domain: airline}   # importers only: how to export states back

A task's `final_hash` is `state.canonical_hash` of the state its gold `actions` leave, computed
by replaying them in the sandboxed runtime (`runtime.replay`); `requires_tools: false` marks
tasks answered from the policy text alone (their gold actions are empty, the state unchanged).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

TOOLKIT_FILE = Path(__file__).with_name("toolkit.py")


class Action(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolTask(BaseModel):
    id: str
    instruction: str  # what the (simulated) user wants, written to the user
    persona: str = ""  # a persona id from env.yaml, or a free-text persona
    user_id: str | None = None
    actions: list[Action] = Field(default_factory=list)  # the gold action sequence
    outputs: list[str] = Field(default_factory=list)  # strings the replies must contain
    final_hash: str | None = None  # canonical hash of the state after the gold actions
    requires_tools: bool = True
    type: str = ""  # free label for cards (e.g. "write", "read", "no-tool", "chain-3")
    env: str | None = None  # the environment's name or directory, for task files mixing several
    meta: dict[str, Any] = Field(default_factory=dict)


class StateConfig(BaseModel):
    kind: Literal["json", "sqlite"] = "json"
    file: str = "state.json"  # json
    schema_file: str = Field("schema.sql", alias="schema")  # sqlite
    seed: str = "seed.sql"  # sqlite
    unordered: list[str] = Field(default_factory=list)  # list paths whose order has no meaning

    model_config = {"populate_by_name": True}


class GraderConfig(BaseModel):
    combine: Literal["gated", "lexicographic", "weighted"] = "gated"
    state: bool = True  # final state must equal the gold replay's
    outputs: bool = True  # expected outputs must appear in the replies
    patterns: bool = True  # tool-use pattern checks
    judge: bool = False  # LLM judge over subtasks (needs an LLM client)
    weights: dict[str, float] = Field(
        default_factory=lambda: {"state": 0.6, "outputs": 0.3, "patterns": 0.1, "judge": 0.0}
    )


class ToolEnvSpec(BaseModel):
    name: str
    description: str = ""
    policy: str = ""
    personas: list[dict[str, Any]] = Field(default_factory=list)
    state: StateConfig = Field(default_factory=StateConfig)
    files: list[str] = Field(default_factory=list)
    # Installed pure or binary Python packages copied from the host into the sandbox's path
    # (`.vendor/`), for tools that need more than the standard library (tau2's pydantic models).
    vendor: list[str] = Field(default_factory=list)
    grader: GraderConfig = Field(default_factory=GraderConfig)
    source: dict[str, Any] = Field(default_factory=dict)
    tools_file: str = "tools.py"
    tasks: list[ToolTask] = Field(default_factory=list, exclude=True)
    root: Path | None = Field(default=None, exclude=True)

    def task(self, key: str | int) -> ToolTask:
        if isinstance(key, int):
            return self.tasks[key]
        for t in self.tasks:
            if t.id == key:
                return t
        raise KeyError(f"no task {key!r} in environment {self.name}")

    def sandbox_files(self) -> dict[str, bytes]:
        """Everything the worker needs, read from the environment dir (the toolkit included)."""
        if self.root is None:
            raise ValueError("environment has no directory (save_env it first)")
        files: dict[str, bytes] = {"rlclimb_tools.py": TOOLKIT_FILE.read_bytes()}
        names = [self.tools_file]
        if self.state.kind == "json":
            names.append(self.state.file)
        else:
            names += [self.state.schema_file, self.state.seed]
        for name in names + self.files:
            path = self.root / name
            if path.is_dir():
                for p in sorted(path.rglob("*")):
                    if p.is_file() and "__pycache__" not in p.parts:
                        files[p.relative_to(self.root).as_posix()] = p.read_bytes()
            elif path.is_file():
                files[name] = path.read_bytes()
            elif name in (self.state.seed,) and self.state.kind == "sqlite":
                continue  # a seed is optional
            else:
                raise FormatError(self.root, f"{name} is missing")
        for package in self.vendor:
            files.update(vendored(package))
        return files


def vendored(package: str) -> dict[str, bytes]:
    """An installed package's files (no caches) as `.vendor/<package>/...`."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None:
        raise ValueError(f"vendor: package {package!r} is not installed on the host")
    if not spec.submodule_search_locations:
        origin = Path(spec.origin)
        return {f".vendor/{origin.name}": origin.read_bytes()}
    root = Path(next(iter(spec.submodule_search_locations)))
    return {
        f".vendor/{package}/{p.relative_to(root).as_posix()}": p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the policy) as `|` blocks, so env.yaml stays readable and diffable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


class FormatError(ValueError):
    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(f"{path}: {message}")


def load_tasks(path: Path) -> list[ToolTask]:
    tasks = []
    if not path.exists():
        return tasks
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(ToolTask.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as e:
            raise FormatError(path, f"line {n}: not a task ({str(e).splitlines()[0]})") from e
    return tasks


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tool_envs"


def resolve_env(name_or_path: str | Path) -> Path:
    """An environment directory from a path, or a name looked up in `RLCLIMB_TOOL_ENVS`
    (os.pathsep-separated directories) and then the repository's examples/tool_envs."""
    path = Path(name_or_path)
    if (path / "env.yaml").is_file():
        return path
    roots = [Path(p) for p in os.environ.get("RLCLIMB_TOOL_ENVS", "").split(os.pathsep) if p]
    for root in [*roots, EXAMPLES]:
        if (root / str(name_or_path) / "env.yaml").is_file():
            return root / str(name_or_path)
    raise FormatError(
        path, "no env.yaml here (not an environment directory), nor a known environment name"
    )


def load_env(path: str | Path) -> ToolEnvSpec:
    """Read an environment directory (env.yaml + tasks.jsonl; tools and state stay files)."""
    root = resolve_env(path)
    meta_path = root / "env.yaml"
    if not meta_path.is_file():
        raise FormatError(root, "no env.yaml (is this an environment directory?)")
    try:
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8")) or {}
        spec = ToolEnvSpec.model_validate(meta)
    except (yaml.YAMLError, ValidationError) as e:
        raise FormatError(meta_path, str(e)) from e
    if not (root / spec.tools_file).is_file():
        raise FormatError(root, f"{spec.tools_file} is missing")
    spec.root = root
    spec.tasks = load_tasks(root / "tasks.jsonl")
    return spec


def save_env(
    spec: ToolEnvSpec,
    path: str | Path,
    *,
    tools_source: str | None = None,
    state: Any = None,
    files: dict[str, str | bytes] | None = None,
) -> Path:
    """Write env.yaml and tasks.jsonl (and, when given, tools.py, the JSON state or the SQL
    schema/seed pair as {"schema": ..., "seed": ...}, and extra files) under `path`."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    meta = spec.model_dump(mode="json", by_alias=True, exclude={"tasks", "root"})
    (root / "env.yaml").write_text(
        yaml.dump(meta, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100),
        encoding="utf-8",
    )
    with open(root / "tasks.jsonl", "w", encoding="utf-8") as f:
        for t in spec.tasks:
            f.write(json.dumps(t.model_dump(mode="json"), ensure_ascii=False) + "\n")
    if tools_source is not None:
        (root / spec.tools_file).write_text(tools_source, encoding="utf-8")
    if state is not None:
        if spec.state.kind == "json":
            (root / spec.state.file).write_text(
                json.dumps(state, ensure_ascii=False, indent=1), encoding="utf-8"
            )
        else:
            (root / spec.state.schema_file).write_text(state["schema"], encoding="utf-8")
            (root / spec.state.seed).write_text(state.get("seed", ""), encoding="utf-8")
    for name, data in (files or {}).items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data, encoding="utf-8")
    spec.root = root
    return root
