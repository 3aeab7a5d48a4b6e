"""Import tau2-bench domains (a toolkit class over a pydantic DB) into the tool-environment format.

A tau2 domain is `src/tau2/domains/<d>/{data_model.py, tools.py, utils.py}` (a `DB` subclass and
a `ToolKitBase` subclass whose `@is_tool` methods act on `self.db`) with
`data/tau2/domains/<d>/{db.json, tasks.json, policy.md}`. The import copies those three modules
unchanged under `tau2/domains/<d>/`, writes small shims of the tau2 modules they import
(`tau2.environment.toolkit`, `tau2.environment.db`, `tau2.utils`), and vendors pydantic into the
sandbox (`vendor:` in env.yaml). tools.py builds the toolkit over the DB from state.json
(`load_state`), exports `db.model_dump()` (`export_state`), and answers each call as tau2's
`Environment.get_response` does: `use_tool`, an exception as "Error: <message>", the result
through `to_json_str`. Schemas are derived from the methods' signatures and docstrings.

Tasks: `evaluation_criteria.actions` are the gold actions; `communicate_info` the expected
outputs; the user scenario's instructions become the instruction. Tasks with an `initial_state`
or user-side (`requestor: user`) actions are skipped with that reason (domains with user tools,
like telecom, are not covered).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

from .format import Action, GraderConfig, StateConfig, ToolEnvSpec, ToolTask, save_env
from .tau_import import ImportError_, ImportReport

VENDOR = ["pydantic", "pydantic_core", "typing_extensions", "annotated_types", "typing_inspection"]

SHIM = {
    "tau2/__init__.py": "",
    "tau2/domains/__init__.py": "",
    "tau2/environment/__init__.py": "",
    "tau2/utils/utils.py": '''"""Shim of tau2.utils.utils (rlclimb importer): the data dir and the dict hash."""
import hashlib
import json
from pathlib import Path

DATA_DIR = Path("/nonexistent/tau2-data")  # the state comes from state.json, never from here


def get_dict_hash(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
''',
    "tau2/utils/pydantic_utils.py": '''"""Shim of tau2.utils.pydantic_utils (rlclimb importer)."""
from pydantic import BaseModel, ConfigDict

from .utils import get_dict_hash


class BaseModelNoExtra(BaseModel):
    model_config = ConfigDict(extra="forbid")


def get_pydantic_hash(obj, exclude=None) -> str:
    return get_dict_hash(obj.model_dump(exclude=exclude))
''',
    "tau2/utils/__init__.py": '''"""Shim of tau2.utils (rlclimb importer)."""
import json

from .pydantic_utils import get_pydantic_hash
from .utils import DATA_DIR, get_dict_hash


def load_file(path):
    with open(path) as f:
        return json.load(f)
''',
    "tau2/environment/db.py": '''"""Shim of tau2.environment.db (rlclimb importer)."""
from tau2.utils import get_pydantic_hash, load_file
from tau2.utils.pydantic_utils import BaseModelNoExtra


class DB(BaseModelNoExtra):
    @classmethod
    def load(cls, path):
        return cls.model_validate(load_file(path))

    def get_hash(self) -> str:
        return get_pydantic_hash(self)

    def get_statistics(self):
        return {}
''',
    "tau2/environment/toolkit.py": '''"""Shim of tau2.environment.toolkit (rlclimb importer): the decorator and the base class with
tau2's tool lookup (`use_tool`) and DB hash."""
from enum import Enum

from tau2.utils import get_dict_hash

TOOL_ATTR = "__tool__"
TOOL_TYPE_ATTR = "__tool_type__"
MUTATES_STATE_ATTR = "__mutates_state__"
DISCOVERABLE_ATTR = "__discoverable__"


class ToolType(str, Enum):
    READ = "read"
    WRITE = "write"
    THINK = "think"
    GENERIC = "generic"


def is_tool(tool_type=ToolType.READ, mutates_state=None):
    if mutates_state is None:
        mutates_state = tool_type == ToolType.WRITE

    def decorator(func):
        setattr(func, TOOL_ATTR, True)
        setattr(func, TOOL_TYPE_ATTR, tool_type)
        setattr(func, MUTATES_STATE_ATTR, mutates_state)
        return func

    return decorator


def is_discoverable_tool(tool_type=ToolType.READ, mutates_state=None):
    inner = is_tool(tool_type, mutates_state)

    def decorator(func):
        func = inner(func)
        setattr(func, DISCOVERABLE_ATTR, True)
        return func

    return decorator


def tool_methods(cls):
    """name -> function for every @is_tool method of cls and its bases (subclass wins)."""
    found = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            fn = member.fget if isinstance(member, property) else member
            if getattr(fn, TOOL_ATTR, None) is True:
                found[name] = fn
    return found


class ToolKitBase:
    def __init__(self, db=None):
        self.db = db

    @property
    def tools(self):
        return {name: getattr(self, name) for name in tool_methods(type(self))}

    def use_tool(self, tool_name: str, **kwargs):
        if tool_name not in self.tools:
            raise ValueError(f"Tool '{tool_name}' not found.")
        return self.tools[tool_name](**kwargs)

    def has_tool(self, tool_name: str) -> bool:
        return tool_name in self.tools

    def tool_type(self, tool_name: str):
        return getattr(self.tools[tool_name], TOOL_TYPE_ATTR)

    def tool_mutates_state(self, tool_name: str) -> bool:
        return getattr(self.tools[tool_name], MUTATES_STATE_ATTR, True)

    def get_db_hash(self) -> str:
        return get_dict_hash(self.db.model_dump())


class GenericToolKit(ToolKitBase):
    @is_tool(ToolType.THINK)
    def think(self, thought: str) -> str:
        """Use the tool to think about something.

        Args:
            thought: A thought to think about.
        """
        return ""

    @is_tool(ToolType.GENERIC)
    def calculate(self, expression: str) -> str:
        """Calculate the result of a mathematical expression.

        Args:
            expression: The mathematical expression to calculate, such as '2 + 2'.
        """
        if not all(char in "0123456789+-*/(). " for char in expression):
            raise ValueError("Invalid characters in expression")
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))
''',
}

TOOLS_PY = '''"""Tools of the imported tau2 domain {domain!r} (written by rlclimb's importer).

The domain's toolkit ({kit}) runs unchanged over its pydantic DB ({db}); a call is answered as
tau2's Environment.get_response does.
"""

import json
from datetime import date, datetime

from pydantic import BaseModel
from rlclimb_tools import schema_of, tool
from tau2.domains.{domain}.data_model import {db}
from tau2.domains.{domain}.tools import {kit}
from tau2.environment.toolkit import MUTATES_STATE_ATTR, tool_methods


def load_state(data):
    return {kit}({db}.model_validate(data))


def export_state(kit):
    return kit.db.model_dump()


def _process(resp):
    if isinstance(resp, BaseModel):
        return resp.model_dump()
    if isinstance(resp, str) or resp is None:
        return resp
    if isinstance(resp, (int, float, bool)):
        return str(resp)
    if isinstance(resp, list):
        return [_process(item) for item in resp]
    if isinstance(resp, tuple):
        return tuple(_process(item) for item in resp)
    if isinstance(resp, dict):
        return {{k: _process(v) for k, v in resp.items()}}
    if isinstance(resp, (datetime, date)):
        return resp.isoformat()
    raise ValueError(f"Unsupported type: {{type(resp)}}")


def to_json_str(resp):
    if not isinstance(resp, str):
        return json.dumps(_process(resp), default=str)
    return resp


def _wrap(name, method):
    def run(kit, **kwargs):
        try:
            resp = kit.use_tool(tool_name=name, **kwargs)
        except Exception as e:
            resp = f"Error: {{e}}"
        return to_json_str(resp)

    kind = "write" if getattr(method, MUTATES_STATE_ATTR, True) else "read"
    return tool(kind=kind, name=name, schema=schema_of(method))(run)


for _name, _method in tool_methods({kit}).items():
    globals()[_name] = _wrap(_name, _method)
'''


def _subclass_of(path: Path, base: str) -> str | None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            (isinstance(b, ast.Name) and b.id == base)
            or (isinstance(b, ast.Attribute) and b.attr == base)
            for b in node.bases
        ):
            return node.name
    return None


def find_tau2_domains(src: Path) -> list[tuple[Path, Path]]:
    """(code dir, data dir) of every tau2 domain under a tau2-bench checkout."""
    code_root, data_root = src / "src" / "tau2" / "domains", src / "data" / "tau2" / "domains"
    if not code_root.is_dir():
        return []
    return [
        (code, data_root / code.name)
        for code in sorted(p for p in code_root.iterdir() if (p / "tools.py").is_file())
        if (data_root / code.name / "tasks.json").is_file()
    ]


def _instruction(scenario: dict[str, Any]) -> str:
    ins = scenario.get("instructions")
    if isinstance(ins, str):
        return ins
    if not isinstance(ins, dict):
        return ""
    labels = [("reason_for_call", "Reason for the call"), ("known_info", "Known info"),
              ("unknown_info", "Unknown info"), ("task_instructions", "Task instructions")]  # fmt: skip
    return "\n".join(f"{label}: {ins[k]}" for k, label in labels if ins.get(k))


def read_tau2_tasks(path: Path) -> tuple[list[ToolTask], list[tuple[str, str]]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ImportError_(f"{path}: not JSON ({e.msg} at line {e.lineno})") from e
    tasks, skipped = [], []
    for i, t in enumerate(raw if isinstance(raw, list) else []):
        where = f"{path.name}[{i}]"
        try:
            if t.get("initial_state"):
                raise ValueError("initial_state is not supported")
            criteria = t.get("evaluation_criteria") or {}
            gold = criteria.get("actions") or []
            if any(a.get("requestor", "assistant") != "assistant" for a in gold):
                raise ValueError("user-side (requestor: user) actions are not supported")
            actions = [Action(name=a["name"], arguments=a.get("arguments") or {}) for a in gold]
            scenario = t.get("user_scenario") or {}
            tasks.append(
                ToolTask(
                    id=str(t["id"]),
                    instruction=_instruction(scenario),
                    persona=str(scenario.get("persona") or ""),
                    actions=actions,
                    outputs=[str(o) for o in criteria.get("communicate_info") or []],
                    requires_tools=bool(actions),
                    meta={"task_index": i, "tau2_id": t["id"]},
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            skipped.append((where, str(e)[:200]))
    return tasks, skipped


def import_tau2_domain(code: Path, data: Path, out: Path) -> ImportReport:
    domain = code.name
    report = ImportReport(domain, out)
    db_class = (
        _subclass_of(code / "data_model.py", "DB") if (code / "data_model.py").is_file() else None
    )
    kit_class = _subclass_of(code / "tools.py", "ToolKitBase")
    if db_class is None or kit_class is None:
        raise ImportError_(
            f"{code}: no DB subclass in data_model.py or ToolKitBase subclass in tools.py"
        )
    db_path = data / "db.json"
    if not db_path.is_file():
        raise ImportError_(f"{db_path}: missing (the domain's state)")
    try:
        state = json.loads(db_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ImportError_(f"{db_path}: not JSON ({e.msg} at line {e.lineno})") from e
    tasks, report.skipped = read_tau2_tasks(data / "tasks.json")
    report.tasks = len(tasks)
    for t in tasks:
        t.type = "write" if t.actions else "no-tool"  # refined by the card's replay, not here
    policy = (
        (data / "policy.md").read_text(encoding="utf-8") if (data / "policy.md").is_file() else ""
    )
    spec = ToolEnvSpec(
        name=f"tau2_{domain}",
        description=f"tau2-bench domain {domain!r}, imported from {code.parent.parent.parent.parent}",
        policy=policy,
        state=StateConfig(kind="json", file="state.json"),
        files=["tau2"],
        vendor=VENDOR,
        grader=GraderConfig(combine="gated"),
        source={
            "format": "tau2-bench",
            "domain": domain,
            "db_class": db_class,
            "toolkit": kit_class,
        },
        tasks=tasks,
    )
    if out.exists():
        shutil.rmtree(out / "tau2", ignore_errors=True)
    files = dict(SHIM)
    files[f"tau2/domains/{domain}/__init__.py"] = ""
    for name in ("data_model.py", "tools.py", "utils.py"):
        if (code / name).is_file():
            files[f"tau2/domains/{domain}/{name}"] = (code / name).read_bytes()
    save_env(
        spec,
        out,
        tools_source=TOOLS_PY.format(domain=domain, db=db_class, kit=kit_class),
        state=state,
        files=files,
    )
    report.tools = -1  # known after loading (the toolkit's @is_tool methods)
    return report
