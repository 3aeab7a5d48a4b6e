"""What an environment's tools.py imports: the `@tool` decorator and schema derivation.

Standard library only: this file is copied into the sandbox as `rlclimb_tools.py` and imported
there by the worker and by tools.py (`from rlclimb_tools import tool`). The host never imports
an environment's tools.py; it asks the sandboxed worker for the schemas.

    @tool(kind="write")
    def add_order(state, customer_id: str, items: list[dict], note: str = "") -> dict:
        '''Create an order for a customer.

        Args:
            customer_id: The customer's id, such as 'c1'.
            items: Line items, each {"sku": ..., "qty": ...}.
        '''

The first parameter receives the state (a dict of JSON documents, or a sqlite3 connection).
The OpenAI function schema comes from the other parameters' annotations and defaults and the
docstring (first paragraph: description; Google-style `Args:` lines: parameter descriptions),
unless `schema=` declares it.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any

KINDS = ("read", "write")
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def tool(kind: str = "read", *, name: str | None = None, schema: dict | None = None):
    if kind not in KINDS:
        raise ValueError(f"tool kind must be one of {KINDS}, not {kind!r}")

    def mark(fn):
        fn.__tool__ = {"kind": kind, "name": name or fn.__name__, "schema": schema}
        return fn

    return mark


def json_type(annotation: Any) -> dict:
    """A JSON schema fragment for a Python annotation (unknown ones: no constraint)."""
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        if len(args) == 1:
            return json_type(args[0])
        return {"anyOf": [json_type(a) for a in args]}
    if annotation is list or origin in (list, tuple, set, frozenset):
        out: dict = {"type": "array"}
        if args and origin is not tuple:
            out["items"] = json_type(args[0])
        return out
    if annotation is dict or origin is dict:
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(annotation))}
    return {}


def _doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(doc or "")
    head, _, rest = doc.partition("\nArgs:")
    description = " ".join(head.split("\n\n")[0].split())
    params: dict[str, str] = {}
    current = None
    for line in rest.splitlines():
        if re.match(r"^\S", line):  # the next section (Returns:, Raises:) ends Args
            break
        m = re.match(r"^\s+(\w+)\s*(?:\([^)]*\))?:\s*(.*)$", line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return description, params


def schema_of(fn) -> dict:
    """The OpenAI function schema of a tool function (declared, or derived)."""
    meta = getattr(fn, "__tool__", None)
    if not isinstance(meta, dict):  # unmarked, or another framework's marker (tau2 sets True)
        meta = {}
    if meta.get("schema"):
        return meta["schema"]
    description, param_docs = _doc_parts(fn.__doc__ or "")
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: no constraint rather than no tool
        hints = {}
    properties, required = {}, []
    params = list(inspect.signature(fn).parameters.values())[1:]  # the first one is the state
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        prop = json_type(hints.get(p.name, Any))
        if p.name in param_docs:
            prop["description"] = param_docs[p.name]
        properties[p.name] = prop
        if p.default is p.empty:
            required.append(p.name)
    return {
        "type": "function",
        "function": {
            "name": meta.get("name", fn.__name__),
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def collect(module) -> dict[str, tuple[Any, str]]:
    """name -> (function, kind) for every @tool in a module, in definition order."""
    found = {}
    for value in vars(module).values():
        meta = getattr(value, "__tool__", None)
        if callable(value) and isinstance(meta, dict):
            found[meta["name"]] = (value, meta["kind"])
    return found
