"""Import tau-bench (v1) domains into the tool-environment format, without installing tau-bench.

A v1 domain directory (tau_bench/envs/<domain>/) holds `data/*.json` (the state: one top-level
key per file, as its `data/__init__.py` loads them), `tools/*.py` (classes with
`invoke(data, **kwargs) -> str` and `get_info()`, listed in `tools/__init__.py`'s ALL_TOOLS),
`tasks_<split>.py` (`TASKS = [Task(user_id, instruction, actions=[Action(name, kwargs)],
outputs)]`) and `wiki.md` / `rules.py` (the policy). The import:

- copies tools/ as the package `tau_tools/` and writes the `tau_bench` modules they import
  (`tau_bench.envs.tool.Tool`, `tau_bench.types`) as small shims, so their code runs unchanged in
  the sandbox; tools.py wraps each class as a tool with its declared schema, turning an exception
  into "Error: <message>" as tau-bench's `Env.step` does;
- reads the task files with `ast` (never executing them on the host): a task that is not plain
  literals is skipped with its reason;
- merges data/*.json into state.json ({file stem: content}, tau-bench's data dict);
- tags tools read or write by name (get_/find_/list_/search_/calculate/think/transfer_: read).

Task ids are `<split>-<index>`; `meta.task_index` is the index within the split, as tau-bench
numbers them. `respond` actions (messages to the user, not tools) move to `meta.respond`.
"""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .format import Action, GraderConfig, StateConfig, ToolEnvSpec, ToolTask, save_env

READ_PREFIXES = ("get_", "find_", "list_", "search_", "calculate", "think", "transfer_")

SHIM = {
    "tau_bench/__init__.py": "",
    "tau_bench/envs/__init__.py": "",
    "tau_bench/envs/tool.py": '''"""Shim of tau_bench.envs.tool (written by rlclimb's importer)."""
import abc
from typing import Any


class Tool(abc.ABC):
    @staticmethod
    def invoke(*args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def get_info() -> dict[str, Any]:
        raise NotImplementedError
''',
    "tau_bench/types.py": '''"""Shim of tau_bench.types (written by rlclimb's importer): plain classes, no pydantic."""
RESPOND_ACTION_NAME = "respond"
RESPOND_ACTION_FIELD_NAME = "content"


class _Record:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class Action(_Record):
    pass


class Task(_Record):
    pass
''',
}

TOOLS_PY = '''"""Tools of the imported tau-bench domain {domain!r} (written by rlclimb's importer).

Each tau-bench tool class runs unchanged (tau_tools/); an exception becomes "Error: <message>"
as in tau-bench's Env.step.
"""

from rlclimb_tools import tool
from tau_tools import ALL_TOOLS

KINDS = {kinds!r}


def _wrap(cls):
    info = cls.get_info()
    name = info["function"]["name"]

    def run(data, **kwargs):
        try:
            return cls.invoke(data=data, **kwargs)
        except Exception as e:
            return f"Error: {{e}}"

    run.__name__ = name
    run.__doc__ = info["function"].get("description", "")
    return tool(kind=KINDS.get(cls.__module__.rsplit(".", 1)[-1], "write"), name=name, schema=info)(run)


for _cls in ALL_TOOLS:
    _fn = _wrap(_cls)
    globals()[_fn.__tool__["name"]] = _fn
'''


class ImportError_(ValueError):
    pass


@dataclass
class ImportReport:
    domain: str
    out: Path
    tasks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)
    tools: int = 0


def tool_kind(name: str) -> str:
    return "read" if name.startswith(READ_PREFIXES) else "write"


def _literal(node: ast.AST) -> Any:
    """A literal, with `Task(...)`/`Action(...)` calls as dicts of their keyword arguments."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.args:
            raise ValueError(f"{node.func.id}(...) with positional arguments")
        return {"__call__": node.func.id, **{k.arg: _literal(k.value) for k in node.keywords}}
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(
            f"not a plain literal (line {node.lineno}): {ast.unparse(node)[:80]}"
        ) from None


def _assigned_list(path: Path, name: str) -> list[ast.AST] | None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for stmt in tree.body:
        targets = (
            stmt.targets
            if isinstance(stmt, ast.Assign)
            else ([stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if isinstance(stmt.value, ast.List):
                return stmt.value.elts
    return None


def read_tasks(path: Path, split: str) -> tuple[list[ToolTask], list[tuple[str, str]]]:
    elts = _assigned_list(path, "TASKS")
    if elts is None:
        for candidate in ("tasks", "TASKS_TEST", "TASKS_TRAIN", "TASKS_DEV"):
            if (elts := _assigned_list(path, candidate)) is not None:
                break
    if elts is None:
        return [], [(path.name, "no TASKS = [...] list")]
    tasks, skipped = [], []
    for i, node in enumerate(elts):
        where = f"{path.name}[{i}]"
        try:
            raw = _literal(node)
            # Task(...) calls, or the older plain dicts (airline's tasks.py)
            if not isinstance(raw, dict) or raw.get("__call__", "Task") != "Task":
                raise ValueError("not a Task(...)")
            if "instruction" not in raw:
                raise ValueError("task has no instruction")
            actions, respond = [], []
            for a in raw.get("actions", []):
                if not isinstance(a, dict) or not isinstance(a.get("name"), str):
                    raise ValueError("an action is not Action(name=..., kwargs=...)")
                if a["name"] == "respond":
                    respond.append(a.get("kwargs", {}).get("content", ""))
                    continue
                arguments = a.get("kwargs", a.get("arguments")) or {}
                actions.append(Action(name=a["name"], arguments=arguments))
            meta = {"task_index": i, "split": split}
            if raw.get("annotator") is not None:
                meta["annotator"] = raw["annotator"]
            if respond:
                meta["respond"] = respond
            writes = [a for a in actions if tool_kind(a.name) == "write"]
            tasks.append(
                ToolTask(
                    id=f"{split}-{i}",
                    instruction=raw["instruction"],
                    user_id=raw.get("user_id"),
                    actions=actions,
                    outputs=[str(o) for o in raw.get("outputs", [])],
                    requires_tools=bool(actions),
                    type="write" if writes else ("read" if actions else "no-tool"),
                    meta=meta,
                )
            )
        except (ValueError, SyntaxError, KeyError, TypeError) as e:
            skipped.append((where, str(e)[:200]))
    return tasks, skipped


def find_domains(src: Path) -> list[Path]:
    """`src` itself when it is a v1 domain dir, else the domain dirs below it."""
    if (src / "tools").is_dir() and (src / "data").is_dir():
        return [src]
    return sorted(
        p.parent.parent
        for p in src.rglob("tools/__init__.py")
        if (p.parent.parent / "data").is_dir() and any(p.parent.parent.glob("tasks*.py"))
    )


def _policy(domain_dir: Path) -> str:
    parts = []
    if (domain_dir / "wiki.md").is_file():
        parts.append((domain_dir / "wiki.md").read_text(encoding="utf-8").strip())
    if (domain_dir / "rules.py").is_file():
        try:
            rules = [_literal(e) for e in (_assigned_list(domain_dir / "rules.py", "RULES") or [])]
            if rules:
                parts.append("Rules:\n" + "\n".join(f"- {r}" for r in rules))
        except (ValueError, SyntaxError):
            pass
    return "\n\n".join(parts)


def import_domain(domain_dir: Path, out: Path) -> ImportReport:
    domain = domain_dir.name
    report = ImportReport(domain, out)
    data_files = sorted((domain_dir / "data").glob("*.json"))
    if not data_files:
        raise ImportError_(f"{domain_dir}/data: no *.json files (the domain's state)")
    state = {}
    for f in data_files:
        try:
            state[f.stem] = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ImportError_(f"{f}: not JSON ({e.msg} at line {e.lineno})") from e
    tool_files = sorted(p for p in (domain_dir / "tools").glob("*.py") if p.name != "__init__.py")
    kinds = {p.stem: tool_kind(p.stem) for p in tool_files}
    report.tools = len(tool_files)
    tasks: list[ToolTask] = []
    task_files = sorted(domain_dir.glob("tasks_*.py")) or sorted(domain_dir.glob("tasks.py"))
    for path in task_files:  # tasks.py beside tasks_<split>.py files is an older copy
        split = path.stem.removeprefix("tasks").lstrip("_") or "all"
        found, skipped = read_tasks(path, split)
        tasks += found
        report.skipped += skipped
    report.tasks = len(tasks)
    spec = ToolEnvSpec(
        name=domain,
        description=f"tau-bench (v1) domain {domain!r}, imported from {domain_dir}",
        policy=_policy(domain_dir),
        state=StateConfig(kind="json", file="state.json"),
        files=["tau_tools", "tau_bench"],
        grader=GraderConfig(combine="gated"),
        source={
            "format": "tau-bench",
            "version": 1,
            "domain": domain,
            "data_files": [f.name for f in data_files],
        },
        tasks=tasks,
    )
    if out.exists():
        shutil.rmtree(out / "tau_tools", ignore_errors=True)
    save_env(
        spec,
        out,
        tools_source=TOOLS_PY.format(domain=domain, kinds=kinds),
        state=state,
        files=SHIM,
    )
    shutil.copytree(
        domain_dir / "tools", out / "tau_tools", ignore=shutil.ignore_patterns("__pycache__")
    )
    return report
