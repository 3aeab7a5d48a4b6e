"""The input of `run tool-envs`: a YAML list of service descriptions, one environment each.

    - name: bike_shop
      description: An inventory and order system for a small bike shop ...
      n_tasks: 12                      # optional (default: tasks.n_tasks)
      personas: [A hurried commuter whose chain broke, The shop's owner doing stock-taking]
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from rlclimb.pipelines.readers import InputError, Rejected, check_inputs, document_name
from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.io import load_yaml

NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
KEYS = ("name", "description", "n_tasks", "personas")


class DescriptionsReader:
    """Items {"file", "line", "data"} from YAML lists of descriptions (the line of each entry)."""

    schema = None

    def __init__(self, paths: list[str | Path]):
        self.paths = check_inputs(paths, (".yaml", ".yml"))
        self.inputs = list(paths)
        self._items: list[dict | Rejected] = []
        names: dict[str, str] = {}
        for p in self.paths:
            for item in self._read(p):
                name = item["data"].get("name") if isinstance(item, dict) else None
                if isinstance(name, str) and name in names:  # two environments cannot share a directory
                    item = Rejected(Drop("duplicate_name", f"name {name!r} is already used at {names[name]}; names "
                                                           "must be unique (each is a directory)"), item["file"], item["line"])
                elif isinstance(name, str):
                    names[name] = f"{item['file']}:{item['line']}"
                self._items.append(item)

    def _read(self, path: Path) -> list[dict | Rejected]:
        name = document_name(path, self.inputs)
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            entries = load_yaml(text)
            nodes = yaml.compose(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise InputError(f"{path}{f' line {mark.line + 1}' if mark else ''} is not valid YAML: "
                             f"{getattr(e, 'problem', e)}") from None
        if not isinstance(entries, list):
            raise InputError(f"{path}: expected a YAML list of {{name, description, [n_tasks], [personas]}}, "
                             f"got {type(entries).__name__}")
        lines = [n.start_mark.line + 1 for n in nodes.value] if isinstance(nodes, yaml.SequenceNode) else []
        items: list[dict | Rejected] = []
        for i, entry in enumerate(entries):
            line = lines[i] if i < len(lines) else None
            if not isinstance(entry, dict):
                items.append(Rejected(Drop("not_a_mapping", f"entry {i + 1} is a {type(entry).__name__}, expected "
                                                            "{name, description, ...}"), name, line, str(entry)[:500]))
                continue
            items.append({"file": name, "line": line, "data": entry})
        return items

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for p in self.paths:
            h.update(str(p.resolve()).encode() + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()[:16]

    def estimate_total(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[dict | Rejected]:
        return iter(self._items)

    def shards(self, size: int) -> Iterator[list[dict | Rejected]]:
        it = iter(self._items)
        while chunk := list(islice(it, size)):
            yield chunk

    def describe(self) -> dict:
        return {"reader": "tool-env-descriptions", "files": [str(p) for p in self.paths]}


class ImportConfig(StageConfig):
    min_description_chars: int = Field(20, ge=1)  # shorter descriptions say too little to build from
    max_tasks: int = Field(500, ge=1)  # cap on an entry's n_tasks


class ImportDescription(Stage):
    """One input entry -> {name, description, n_tasks, personas}; a bad entry is ledgered with
    its file, line and the fix."""

    name = "import"
    version = "1"
    kind = "map"
    Config = ImportConfig

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        data: dict[str, Any] = record["data"]
        unknown = sorted(set(map(str, data)) - set(KEYS))
        if unknown:
            return Drop("unknown_key", f"key {unknown[0]!r}; an entry has: {', '.join(KEYS)}")
        name, desc = data.get("name"), data.get("description")
        if not isinstance(name, str) or not NAME.match(name):
            return Drop("bad_name", f"name {name!r}: give lower-case letters, digits, _ or - (it names the "
                                    "directory RUN/envs/<name>/)")
        if not isinstance(desc, str) or len(desc.strip()) < self.config.min_description_chars:
            return Drop("bad_description", f"{name}: description must be text of at least "
                                           f"{self.config.min_description_chars} characters")
        n_tasks = data.get("n_tasks")
        if n_tasks is not None and (type(n_tasks) is not int or not 1 <= n_tasks <= self.config.max_tasks):
            return Drop("bad_n_tasks", f"{name}: n_tasks {n_tasks!r} must be a whole number 1..{self.config.max_tasks}")
        personas = data.get("personas") or []
        if not isinstance(personas, list) or not all(isinstance(p, str) and p.strip() for p in personas):
            return Drop("bad_personas", f"{name}: personas must be a list of one-line descriptions")
        return {"name": name, "description": " ".join(desc.split()), "n_tasks": n_tasks or 0,  # 0: tasks.n_tasks
                "personas": [" ".join(p.split()) for p in personas],
                "source": {"document": record["file"], "line": record["line"]}}
