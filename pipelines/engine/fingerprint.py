"""Stage fingerprints: everything a stage's results depend on, in one hash.

A stage's fingerprint keys its committed segment and its row-cache entries, so it must change
whenever the results could: the stage's name, version and config; the content of every file its
config names (benchmarks, taxonomy, prompt files); its code (the package version and a hash of the
stage's module and the project modules it imports: in an editable install code changes without a
version bump); the model behind every LLM role it calls (endpoint, model, sampling params); and
the run seed, for stages that use it (those that call a model, or say `seeded = True`).

The roles: `Stage.llm_models()` when the stage declares them, else the roles its `check()`
resolved (the engine hands `check` a config that records what is looked up).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from ..stage import Stage

_PROJECT = "rlclimb"


@cache
def _recording_config() -> type:
    from pydantic import PrivateAttr

    from ..llm import LLMConfig

    class RecordingLLMConfig(LLMConfig):
        """The run's LLM config, noting every profile `resolve` hands out (what a stage calls)."""

        _seen: dict = PrivateAttr(default_factory=dict)

        def resolve(self, role_or_profile: str):
            profile = super().resolve(role_or_profile)
            self._seen.setdefault(role_or_profile, profile)
            return profile

        def __reduce__(self):  # a stage that keeps it pickles a plain config
            return (_plain_config, (self.profiles, self.roles))

    return RecordingLLMConfig


def _plain_config(profiles: dict, roles: dict) -> Any:
    from ..llm import LLMConfig

    return LLMConfig(profiles=profiles, roles=roles)


def check_and_bind(stage: Stage, llm: Any, seed: int) -> None:
    """`stage.check(llm)`, then bind what the fingerprint takes from the run: the models behind
    the roles the stage uses, and the seed."""
    recorder = _recording_config()(profiles=llm.profiles, roles=llm.roles) if llm is not None else None
    stage.check(recorder)
    models = stage.llm_models()
    if models is None:
        models = dict(recorder._seen) if recorder is not None else {}
    stage.bind_run({"models": {role: model_identity(p) for role, p in sorted(models.items())}, "seed": seed})


def model_identity(profile: Any) -> dict[str, Any]:
    """What makes a model's answers what they are: never keys, limits or prices."""
    if isinstance(profile, dict):
        return profile
    return {"backend": profile.backend, "endpoint": profile.endpoint, "model": profile.model,
            "params": profile.params, "structured_mode": profile.structured_mode}


def compute(stage: Stage) -> str:
    identity = stage.identity()
    run = stage.run_binding
    models = run.get("models") or {}
    seeded = stage.seeded if stage.seeded is not None else bool(models)
    payload = {
        "stage": identity,
        "files": config_files(identity, stage.config_paths, stage.config_outputs),
        "code": {"version": package_version(), "modules": code_hash(tuple(stage.code_modules()))},
        "models": models,
        "seed": run.get("seed", 0) if seeded else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


# ---- files named by the config -------------------------------------------------------------------


def config_files(identity: dict, dir_fields: tuple[str, ...], skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Content hashes of the files named anywhere in the config, and of everything under the
    directories named by `dir_fields` (a directory elsewhere, e.g. a spill dir, is not input);
    `skip` fields name outputs."""
    out: dict[str, str] = {}

    def walk(value: Any, key: str | None) -> None:
        if key in skip:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k if isinstance(k, str) else key)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and value and len(value) < 4096 and "\n" not in value:
            p = Path(value)
            try:
                if p.is_file():
                    out[value] = file_hash(p)
                elif key in dir_fields and p.is_dir():
                    for f in sorted(q for q in p.rglob("*") if q.is_file()):
                        out[f"{value}/{f.relative_to(p)}"] = file_hash(f)
            except OSError:  # unreadable: the stage itself reports it
                pass

    walk(identity, None)
    return out


_FILE_HASHES: dict[tuple, str] = {}


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (remembered per (path, size, mtime) within a process)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _FILE_HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        _FILE_HASHES[key] = h.hexdigest()
    return _FILE_HASHES[key]


# ---- code ----------------------------------------------------------------------------------------


@cache
def package_version() -> str:
    try:
        return importlib.metadata.version(_PROJECT)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def code_hash(modules: tuple[str, ...]) -> str:
    return hashlib.sha256(json.dumps(sorted(code_closure(modules).items())).encode()).hexdigest()[:16]


def code_closure(modules: tuple[str, ...]) -> dict[str, str]:
    """Source hashes of `modules` and of the project modules they import (transitively); a
    module outside the project also brings the modules of its own top-level package."""
    seen: dict[str, str] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        source = _source_hash(name)
        if source is None:
            continue
        seen[name] = source
        todo.extend(_imports(name))
    return seen


def _module_file(name: str) -> str | None:
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None) if mod is not None else None
    if path is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec is not None and spec.has_location else None
    return path if path and path.endswith(".py") and os.path.exists(path) else None


def _source_hash(name: str) -> str | None:
    path = _module_file(name)
    return file_hash(Path(path)) if path else None


@cache
def _imports_of(path: str, st_key: tuple) -> tuple[str, ...]:
    tree = ast.parse(Path(path).read_bytes())
    return tuple({n for node in ast.walk(tree) for n in _names(node)})


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [f"\0{node.level}\0{node.module or ''}\0{a.name}" for a in node.names]
    return []


def _imports(name: str) -> list[str]:
    """The modules `name` imports that belong to the project (or to its own top-level package)."""
    path = _module_file(name)
    if path is None:
        return []
    st = os.stat(path)
    is_pkg = os.path.basename(path) == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    tops = {_PROJECT, name.split(".")[0]}
    out = []
    for raw in _imports_of(path, (st.st_size, st.st_mtime_ns)):
        if raw.startswith("\0"):
            _, level, module, attr = raw.split("\0")
            if int(level):
                base = package.split(".")
                base = base[: len(base) - int(level) + 1] if int(level) > 1 else base
                module = ".".join([*base, module] if module else base)
            candidates = [f"{module}.{attr}", module]  # `from pkg import submodule` or a name
        else:
            candidates = [raw]
        for c in candidates:
            if c.split(".")[0] in tops:
                out.append(c)
    return out
