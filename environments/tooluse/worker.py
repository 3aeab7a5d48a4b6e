"""The sandboxed tool worker: loads tools.py and the state once, then answers calls over pipes.

Standard library only: copied into the sandbox as `.worker.py` and run there with python3. It
reads one JSON request per line on stdin and writes one JSON reply per line on the protocol
stream (a duplicate of the original stdout; fd 1 and `print` go to stderr, so a tool's prints
cannot forge replies). Requests:

    {"op": "call", "name": ..., "arguments": {...}} -> {"ok": true, "output": "..."}
                                                       {"ok": false, "error": "..."}  (no such tool, bad arguments)
    {"op": "state"}                                 -> {"state": {...}}

The first line it writes is {"ready": true, "tools": [{"name", "kind", "schema"}]} (or
{"ready": false, "error": ...}). A tool that raises returns "Error: <Type>: <message>" as its
output (an observation for the policy); on SQLite state its transaction is rolled back.
"""

import importlib
import inspect
import json
import os
import random
import sqlite3
import sys
import traceback


def _jsonable(value):
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def load_state(cfg):
    if cfg["state_kind"] == "sqlite":
        db = sqlite3.connect(":memory:", isolation_level="DEFERRED")
        db.row_factory = sqlite3.Row
        for key in ("schema_file", "seed_file"):
            if cfg.get(key):
                with open(cfg[key], encoding="utf-8") as f:
                    db.executescript(f.read())
        db.commit()
        return db
    if not cfg.get("state_file"):
        return {}
    with open(cfg["state_file"], encoding="utf-8") as f:
        return json.load(f)


def export_state(cfg, state):
    if cfg["state_kind"] != "sqlite":
        return state
    tables = [
        r[0]
        for r in state.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    return {t: [dict(row) for row in state.execute(f'SELECT * FROM "{t}"')] for t in tables}


def as_text(result):
    if isinstance(result, str):
        return result
    if isinstance(result, sqlite3.Row):
        result = dict(result)
    elif isinstance(result, list) and result and isinstance(result[0], sqlite3.Row):
        result = [dict(r) for r in result]
    return json.dumps(result, ensure_ascii=False, default=_jsonable)


def call(cfg, state, tools, name, arguments):
    if name not in tools:
        return {"ok": False, "error": f"unknown tool {name!r}; available: {', '.join(tools)}"}
    fn, _kind = tools[name]
    if not isinstance(arguments, dict):
        return {"ok": False, "error": "arguments must be a JSON object"}
    try:
        inspect.signature(fn).bind(state, **arguments)
    except TypeError as e:
        return {"ok": False, "error": f"bad arguments for {name}: {e}"}
    sql = cfg["state_kind"] == "sqlite"
    try:
        output = as_text(fn(state, **arguments))
    except Exception as e:
        if sql:
            state.rollback()
        return {"ok": True, "output": f"Error: {type(e).__name__}: {e}", "raised": True}
    if sql:
        state.commit()
    return {"ok": True, "output": output}


def main():
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj):
        proto.write(json.dumps(obj, ensure_ascii=False, default=_jsonable) + "\n")
        proto.flush()

    random.seed(0)
    try:
        with open(".worker.json", encoding="utf-8") as f:
            cfg = json.load(f)
        sys.path.insert(0, os.getcwd())
        if os.path.isdir(".vendor"):
            sys.path.insert(1, os.path.join(os.getcwd(), ".vendor"))
        import rlclimb_tools

        module = importlib.import_module(cfg["tools_module"])
        state = load_state(cfg)
        # tools.py may wrap the loaded documents in its own objects (tau2: a pydantic DB inside
        # a toolkit) and say how to export them back to JSON
        if callable(getattr(module, "load_state", None)):
            state = module.load_state(state)
        exporter = getattr(module, "export_state", None)
        tools = rlclimb_tools.collect(module)
        listing = [
            {"name": n, "kind": k, "schema": rlclimb_tools.schema_of(fn)}
            for n, (fn, k) in tools.items()
        ]
    except BaseException:
        send({"ready": False, "error": traceback.format_exc(limit=-4)[-4000:]})
        return
    send({"ready": True, "tools": listing})
    for line in sys.stdin:
        try:
            req = json.loads(line)
            op = req.get("op")
        except (ValueError, AttributeError):
            send({"ok": False, "error": "bad request"})
            continue
        if op == "call":
            send(call(cfg, state, tools, req.get("name"), req.get("arguments", {})))
        elif op == "state":
            send({"state": exporter(state) if callable(exporter) else export_state(cfg, state)})
        else:
            send({"ok": False, "error": f"unknown op {op!r}"})


if __name__ == "__main__":
    main()
