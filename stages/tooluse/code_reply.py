"""Reading an implementation reply: a ```python block (tools.py) and a ```json block (seed state
and example arguments), each checked before anything runs."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

_BLOCK = re.compile(r"```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


class ReplyError(ValueError):
    """The reply cannot be used; the message says what to fix (it goes back to the model)."""


@dataclass
class Implementation:
    source: str
    state: dict[str, dict[str, Any]] | None
    examples: dict[str, dict[str, Any]] | None


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1).lower(), m.group(2)) for m in _BLOCK.finditer(text)]


def parse_source(text: str) -> str:
    found = [body for lang, body in blocks(text) if lang in ("python", "py")]
    if not found:
        raise ReplyError("no ```python block with the module tools.py")
    source = max(found, key=len).strip() + "\n"
    try:
        ast.parse(source)
    except SyntaxError as e:
        raise ReplyError(f"tools.py does not parse: line {e.lineno}: {e.msg}") from None
    if "rlclimb_tools" not in source or "@tool" not in source:
        raise ReplyError("tools.py must import `tool` from rlclimb_tools and decorate each tool with @tool(kind=...)")
    return source


def parse_data(text: str, required: bool) -> tuple[dict | None, dict | None]:
    found = [body for lang, body in blocks(text) if lang == "json"]
    if not found:
        if required:
            raise ReplyError('no ```json block with {"state": ..., "examples": ...}')
        return None, None
    try:
        data = json.loads(found[-1])
    except ValueError as e:
        raise ReplyError(f"the json block is not JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("state"), dict):
        raise ReplyError('the json block must be an object with "state": {collection: {id: entity}}')
    state = data["state"]
    for name, coll in state.items():
        if not isinstance(coll, dict) or not all(isinstance(e, dict) for e in coll.values()):
            raise ReplyError(f"state.{name} must be an object of entities keyed by id")
    examples = data.get("examples") or {}
    if not isinstance(examples, dict) or not all(isinstance(v, dict) for v in examples.values()):
        raise ReplyError('"examples" must map each tool name to an object of arguments')
    return state, examples


def parse_implementation(text: str, data_required: bool = True) -> Implementation:
    source = parse_source(text)
    state, examples = parse_data(text, data_required)
    return Implementation(source, state, examples)


def defined_tools(source: str) -> dict[str, str]:
    """name -> kind of the @tool functions in a module's source (read statically, never run)."""
    out: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            func = call.func if call else dec
            if isinstance(func, ast.Name) and func.id == "tool":
                kind = "read"
                for kw in call.keywords if call else []:
                    if kw.arg == "kind" and isinstance(kw.value, ast.Constant):
                        kind = str(kw.value.value)
                if call and call.args and isinstance(call.args[0], ast.Constant):
                    kind = str(call.args[0].value)
                out[node.name] = kind
    return out


def remove_functions(source: str, names: set[str]) -> str:
    """The module without the named top-level functions (tools that never passed their smoke test)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cut: list[tuple[int, int]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            cut.append((start - 1, node.end_lineno or node.lineno))
    for start, end in sorted(cut, reverse=True):
        del lines[start:end]
    return "".join(lines)
