"""The sandboxed tool runtime: bike_shop gold replays, determinism across processes, state
hashing, and hostile tools (network, writes outside the state, loops, floods, forged replies)
contained without corrupting the state."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rlclimb.environments.sandbox.bwrap import bwrap_works
from rlclimb.environments.tooluse.format import (
    Action,
    FormatError,
    ToolEnvSpec,
    ToolTask,
    load_env,
    save_env,
)
from rlclimb.environments.tooluse.runtime import ToolRuntime, replay
from rlclimb.environments.tooluse.state import canonical, canonical_hash

BIKE = Path(__file__).resolve().parents[1] / "examples" / "tool_envs" / "bike_shop"
BACKENDS = [
    "process",
    pytest.param("bwrap", marks=pytest.mark.skipif(not bwrap_works(), reason="bwrap unusable")),
    pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow]),
]


def test_canonical_hash_is_order_free_where_order_means_nothing():
    a = {"b": 1.0, "a": [3, 1], "t": [{"x": 1}, {"x": 2}]}
    b = {"t": [{"x": 1}, {"x": 2}], "a": [3, 1], "b": 1}
    assert canonical_hash(a) == canonical_hash(b)  # key order, 1.0 vs 1
    assert canonical_hash({"a": [3, 1]}) != canonical_hash({"a": [1, 3]})  # sequences keep order
    assert canonical_hash({"a": [3, 1]}, ["a"]) == canonical_hash({"a": [1, 3]}, ["a"])
    rows = {"users": {"u1": {"tags": ["x", "y"]}}}
    flipped = {"users": {"u1": {"tags": ["y", "x"]}}}
    assert canonical_hash(rows, ["users.*.tags"]) == canonical_hash(flipped, ["users.*.tags"])
    assert canonical(0.1 + 0.2) == 0.3 and canonical(-0.0) == 0
    assert canonical_hash({"x": float("nan")}) == canonical_hash({"x": float("nan")})


def test_bike_shop_loads_with_tools_tagged_and_schemas_derived():
    spec = load_env(BIKE)
    assert spec.name == "bike_shop" and len(spec.tasks) >= 10
    with ToolRuntime(spec) as rt:
        kinds = {t["name"]: t["kind"] for t in rt.tools}
        assert len(kinds) >= 10
        assert kinds["place_order"] == "write" and kinds["get_order"] == "read"
        schema = next(t["schema"] for t in rt.tools if t["name"] == "place_order")["function"]
        params = schema["parameters"]
        assert params["required"] == ["customer_id", "items"]
        assert params["properties"]["items"]["type"] == "array"
        assert params["properties"]["use_store_credit"]["type"] == "boolean"
        assert "store credit" in params["properties"]["use_store_credit"]["description"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_bike_task_replays_to_its_recorded_hash(backend):
    spec = load_env(BIKE)
    with ToolRuntime(spec, backend=backend) as rt:
        initial = rt.state_hash()
        for task in spec.tasks:
            result = replay(spec, task, runtime=rt)
            assert result.error == "", (task.id, result.error)
            assert result.final_hash == task.final_hash, task.id
            assert len(result.outputs) == len(task.actions)
            changed = result.final_hash != initial
            assert changed == (task.type == "write"), task.id  # read/no-tool tasks change nothing


def test_same_actions_same_hash_in_another_process():
    spec = load_env(BIKE)
    task = spec.task("bike-011")
    here = replay(spec, task)
    code = textwrap.dedent(f"""
        from rlclimb.environments.tooluse.format import load_env
        from rlclimb.environments.tooluse.runtime import replay
        spec = load_env({str(BIKE)!r})
        r = replay(spec, spec.task("bike-011"))
        print(r.final_hash)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == here.final_hash == task.final_hash
    # ... and a different action sequence gives a different state
    other = task.model_copy(update={"actions": task.actions[:-1]})
    assert replay(spec, other).final_hash != here.final_hash


def test_failing_gold_action_is_reported():
    spec = load_env(BIKE)
    bad = ToolTask(id="x", instruction="-", actions=[Action(name="no_such_tool", arguments={})])
    result = replay(spec, bad)
    assert "no_such_tool" in result.error and "rejected" in result.error
    missing = ToolTask(id="y", instruction="-", actions=[Action(name="get_order", arguments={})])
    assert "bad arguments" in replay(spec, missing).outputs[0]


def test_sqlite_state_is_hashed_as_unordered_tables(tmp_path):
    spec = ToolEnvSpec(name="kv", state={"kind": "sqlite"})
    tools = textwrap.dedent('''
        from rlclimb_tools import tool

        @tool(kind="write")
        def put(db, key: str, value: int) -> str:
            """Store a value."""
            db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, value))
            return "ok"

        @tool(kind="write")
        def put_then_fail(db, key: str) -> str:
            """Writes, then raises: the write is rolled back."""
            db.execute("INSERT INTO kv VALUES (?, 1)", (key,))
            raise ValueError("boom")

        @tool()
        def get(db, key: str):
            """Read a value."""
            return db.execute("SELECT * FROM kv WHERE key = ?", (key,)).fetchone()
    ''')
    schema = {"schema": "CREATE TABLE kv (key TEXT PRIMARY KEY, value INTEGER);", "seed": ""}
    save_env(spec, tmp_path / "kv", tools_source=tools, state=schema)
    with ToolRuntime(tmp_path / "kv") as rt:
        rt.call("put", {"key": "a", "value": 1})
        rt.call("put", {"key": "b", "value": 2})
        ab = rt.state_hash()
        assert rt.call("put_then_fail", {"key": "c"}).startswith("Error: ValueError: boom")
        assert rt.state_hash() == ab
        assert json.loads(rt.call("get", {"key": "b"})) == {"key": "b", "value": 2}
        assert rt.state() == {"kv": [{"key": "a", "value": 1}, {"key": "b", "value": 2}]}
    with ToolRuntime(tmp_path / "kv") as rt:
        rt.call("put", {"key": "b", "value": 2})
        rt.call("put", {"key": "a", "value": 1})
        assert rt.state_hash() == ab  # row order of a table means nothing


def test_a_bad_environment_fails_with_a_clear_error(tmp_path):
    with pytest.raises(FormatError, match="env.yaml"):
        load_env(tmp_path)
    save_env(
        ToolEnvSpec(name="broken"),
        tmp_path / "b",
        tools_source="import nonexistent_mod\n",
        state={},
    )
    with pytest.raises(RuntimeError, match="nonexistent_mod"):
        ToolRuntime(tmp_path / "b").start()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "env.yaml").write_text("name: t\n")
    (tmp_path / "t" / "tools.py").write_text("")
    (tmp_path / "t" / "tasks.jsonl").write_text('{"id": "1"}\n')
    with pytest.raises(FormatError, match="tasks.jsonl: line 1"):
        load_env(tmp_path / "t")


# hostile tools ---------------------------------------------------------------------------------
HOSTILE = '''
import os, socket, sys, time
from rlclimb_tools import tool

@tool(kind="write")
def add(state, n: int) -> int:
    """Add n to the counter."""
    state["counter"] += n
    return state["counter"]

@tool()
def connect(state, port: int) -> str:
    """Open a TCP connection to the host."""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"hello from the sandbox")
    return "connected"

@tool()
def write_file(state, path: str) -> str:
    """Write a file anywhere."""
    with open(path, "w") as f:
        f.write("pwned")
    return "written"

@tool(kind="write")
def loop(state) -> str:
    """Changes the state, then never returns."""
    state["counter"] = -999
    while True:
        pass

@tool()
def flood(state) -> str:
    """A huge output."""
    return "x" * (8 << 20)

@tool()
def forge(state) -> str:
    """Writes a fake reply on the protocol stream and prints a lot."""
    os.write(1, b'{"ok": true, "output": "forged"}\\n')
    print("noise " * 100000)
    return "real"

@tool(kind="write")
def die(state) -> str:
    """Kills the worker."""
    state["counter"] = 12345
    os._exit(3)

@tool()
def garbage(state) -> str:
    """Writes raw garbage on the original stdout (a dup of fd 1 is fd 3 or so)."""
    for fd in range(3, 10):
        try:
            os.write(fd, b"not json at all\\n")
        except OSError:
            pass
    return "after garbage"

@tool()
def read_file(state, path: str) -> str:
    """Read a file."""
    with open(path) as f:
        return f.read()
'''


@pytest.fixture
def hostile(tmp_path):
    return save_env(
        ToolEnvSpec(name="hostile"),
        tmp_path / "hostile",
        tools_source=HOSTILE,
        state={"counter": 0},
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_tools_are_contained(hostile, tmp_path, backend):
    got = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]

    def accept():
        try:
            conn, _ = server.accept()
            got.append(conn.recv(100))
        except OSError:
            pass

    listener = threading.Thread(target=accept)
    listener.start()
    outside = tmp_path / "outside.txt"
    with ToolRuntime(hostile, backend=backend, call_timeout_s=3) as rt:
        assert rt.call("add", {"n": 1}) == "1"
        base = rt.state_hash()

        net = rt.call_record("connect", {"port": port})
        assert net.status == "raised" and "connected" not in net.output

        wrote = rt.call("write_file", {"path": str(outside)})
        assert wrote.startswith("Error:") and not outside.exists()
        secret = BIKE / "tasks.jsonl"  # expected outputs must stay out of reach under bwrap
        if backend != "process":  # the process backend sees the host's world-readable files
            assert rt.call("read_file", {"path": str(secret)}).startswith("Error:")

        looped = rt.call_record("loop", {})
        assert looped.status == "timeout"
        flooded = rt.call_record("flood", {})
        assert flooded.status == "overflow"
        died = rt.call_record("die", {})
        assert died.status == "crashed"
        assert rt.restarts == 3
        # the failed calls left nothing behind: the state is what the completed calls made
        assert rt.state_hash() == base and rt.state() == {"counter": 1}

        forged = rt.call_record("forge", {})
        assert forged.status == "ok" and forged.output == "real"
        after = rt.call_record("garbage", {})
        # garbage on the protocol stream is a broken reply: killed and recovered, never parsed
        assert after.status in ("ok", "crashed")
        assert rt.call("add", {"n": 2}) == "3"
    listener.join()
    server.close()
    assert got == []
