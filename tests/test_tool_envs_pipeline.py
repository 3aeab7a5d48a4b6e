"""`rlclimb run tool-envs` end to end: the real pipeline (parsing, sandboxed smoke tests, repair,
chain sampling, gold replay, dedup) against the real scripted OpenAI-compatible server answering
like a capable model (tests/helpers/tool_env_script.py, with planted faults); a run killed with
SIGKILL resumes without repeating an answered LLM request; bad input entries are ledgered."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.sandboxes import fast_backend
from helpers.tool_env_script import STATE, ToolEnvScript
from typer.testing import CliRunner

from rlclimb.environments.tooluse.format import load_env
from rlclimb.environments.tooluse.runtime import replay
from rlclimb.pipelines.cli import app
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer
from rlclimb.stages.tooluse import code_reply
from rlclimb.stages.tooluse.graph import ToolGraph, observed_fields

DESCRIPTIONS = """\
- name: bike_shop
  description: An inventory and order system for a small bike shop with customers, bikes and orders.
  n_tasks: 14
  personas: [A hurried commuter whose old bike was stolen, A parent buying a first bike for a child]
- name: garage
  description: A booking system for a parking garage with spaces, cars and reservations.
- name: tiny
  description: too short
- just a string
- name: bike_shop
  description: The same name again, which would share a directory with the first one.
"""


def write_inputs(tmp: Path, base_url: str, concurrency: int = 4) -> tuple[Path, Path]:
    src = tmp / "services.yaml"
    src.write_text(DESCRIPTIONS)
    cfg = tmp / "config.yaml"
    cfg.write_text(
        "llm:\n  profiles:\n    scripted: {base_url: '" + base_url + "', model: gen, api_key: k, timeout_s: 60, "
        "backoff_s: 0.01, concurrency: " + str(concurrency) + "}\n  roles: {generator: scripted}\n"
        "stages:\n  bootstrap: {critique_rounds: 2, backend: " + fast_backend() + "}\n"
        "  tasks: {no_tool_share: 0.3}\n  verify: {backend: " + fast_backend() + "}\n")
    return src, cfg


def ledger(run: Path) -> list[dict]:
    return pq.read_table(run / "ledger").to_pylist()


def reasons(run: Path) -> Counter:
    return Counter((r["stage"], r["reason"]) for r in ledger(run))


def cli(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tool_envs")
    script = ToolEnvScript()
    with ScriptedServer(script) as server:
        src, cfg = write_inputs(tmp, server.base_url)
        result = cli("run", "tool-envs", "--input", src, "--out", tmp / "run", "--config", cfg, "--quiet")
        assert result.exit_code == 0, result.output
        assert server.errors == []
        calls = server.chat_count
        again = cli("run", "tool-envs", "--input", src, "--out", tmp / "run", "--config", cfg, "--quiet")
        assert again.exit_code == 0, again.output
        calls_again = server.chat_count - calls
    return {"run": tmp / "run", "script": script, "calls": calls, "calls_again": calls_again, "src": src, "cfg": cfg,
            "tmp": tmp}


@pytest.mark.slow
@pytest.mark.timeout(900)  # sandboxed replays on a loaded machine
def test_bootstrap_critiques_smoke_tests_and_repairs(scripted_run):
    run, script = scripted_run["run"], scripted_run["script"]
    env = load_env(run / "envs" / "bike_shop")
    tools = (env.root / "tools.py").read_text()
    assert 'bike["stock"] -= quantity' in tools  # the critique round's fix
    assert 'state["orders"][order_id]' in tools and 'state["order"][' not in tools  # the repair's fix
    assert script.kinds["Review the"] == 2 and script.kinds["Revise the"] == 1  # revise, then ok
    assert script.kinds["Fix the"] == 1  # one repair round fixed the smoke-test failure
    report = env.source["synthesis"]
    assert [c["verdict"] for c in report["critique"]] == ["revise", "ok"]
    assert [r["failures"] for r in report["repairs"]][0].keys() == {"get_order"}
    assert "KeyError" in report["repairs"][0]["failures"]["get_order"]
    assert report["removed"] == {} and report["tools"] == 6
    kinds = {t["name"]: t["kind"] for t in env.source["tools"]}
    assert kinds == {"find_customer": "read", "list_bikes": "read", "get_bike": "read", "place_order": "write",
                     "get_order": "read", "cancel_order": "write"}
    assert [p["id"] for p in env.personas] == ["a_hurried_commuter", "a_parent_buying"]


@pytest.mark.slow
@pytest.mark.timeout(900)  # sandboxed replays on a loaded machine
def test_tasks_are_verified_and_bad_ones_ledgered(scripted_run):
    run = scripted_run["run"]
    got = reasons(run)
    assert got[("import", "bad_description")] == 1  # tiny
    assert got[("read", "not_a_mapping")] == 1 and got[("read", "duplicate_name")] == 1
    assert got[("bootstrap", "llm_invalid_output")] == 1  # the garage design was prose twice
    for reason in ("llm_invalid_output", "gold_failed", "noop_write", "duplicate_actions", "near_duplicate"):
        assert got[("verify", reason)] >= 1, (reason, got)
    details = {r["reason"]: r["detail"] for r in ledger(run) if r["stage"] == "verify"}
    assert "B-1" in details["gold_failed"] and "list_bikes" in details["llm_invalid_output"]

    env = load_env(run / "envs" / "bike_shop")
    assert not (run / "envs" / "garage").exists()
    stats = json.loads((run / "stats.json").read_text())
    verify = next(s for s in stats["stages"] if s["name"] == "verify")
    assert verify["in"] == 14 and verify["out"] == len(env.tasks) == 14 - sum(verify["dropped"].values())
    by_type = Counter(t.type for t in env.tasks)
    assert by_type["no-tool"] >= 1 and by_type["write"] >= 1 and by_type["read"] >= 1
    assert all(not t.requires_tools and not t.actions for t in env.tasks if t.type == "no-tool")
    state = json.loads((env.root / "state.json").read_text())
    assert state["customers"]["c3"]["email"] == "lee@example.com"  # an entity a task needed, merged
    assert set(state["customers"]) == set(STATE["customers"]) | {"c3"}
    # every kept task's recorded hash is what a fresh, independent replay gives
    hashes = set()
    for task in env.tasks:
        res = replay(env, task, backend=fast_backend())
        assert res.error == "" and res.final_hash == task.final_hash, (task.id, res.error)
        for out in task.outputs if task.actions else []:
            assert any(out.lower() in o.lower() for o in res.outputs)
        hashes.add(task.final_hash)
    assert len(hashes) >= 3  # the writes leave different states
    rows = pq.read_table(run / "data").to_pylist()
    assert [(r["name"], r["tasks"], r["tools"]) for r in rows] == [("bike_shop", len(env.tasks), 6)]


@pytest.mark.slow
@pytest.mark.timeout(900)  # sandboxed replays on a loaded machine
def test_rerun_of_a_finished_run_calls_nothing(scripted_run):
    assert scripted_run["calls"] > 20 and scripted_run["calls_again"] == 0


def _command(src: Path, out: Path, cfg: Path) -> list[str]:
    return [sys.executable, "-m", "rlclimb.pipelines.cli", "run", "tool-envs", "--input", str(src), "--out", str(out),
            "--config", str(cfg), "--quiet"]


@pytest.mark.slow
@pytest.mark.timeout(900)  # sandboxed replays on a loaded machine
def test_killed_run_resumes_without_repeating_llm_calls(tmp_path, scripted_run):
    """SIGKILL while the tasks stage waits on a request, after bootstrap and some task calls were
    answered; the resumed run sends every answered request at most once and ends with the same
    environment as the uninterrupted run."""
    script = ToolEnvScript()
    held, release = threading.Event(), threading.Event()
    answered_at_kill: list[int] = []

    def handler(body: dict, n: int) -> Reply:
        first = body.get("messages", [{}])[0].get("content", "")
        if first.startswith("Write a task") and not held.is_set() and script.kinds["Write a"] >= 4:
            held.set()
            release.wait(60)  # the run is killed meanwhile: this reply never reaches it
            return Reply(status=503, content="gone")
        return script(body, n)

    with ScriptedServer(handler) as server:
        # one request at a time: every answer the run received is in its cache when the held one is sent
        src, cfg = write_inputs(tmp_path, server.base_url, concurrency=1)
        proc = subprocess.Popen(_command(src, tmp_path / "run", cfg), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if not held.wait(240):
                proc.kill()
                pytest.fail(f"the run never reached the tasks stage: {proc.communicate()[1].decode()[-2000:]}")
            answered_at_kill.append(sum(script.answered.values()))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            release.set()
            proc.stdout.close()
            proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        assert answered_at_kill[0] >= 10  # bootstrap's calls and some task calls were answered
        done = subprocess.run(_command(src, tmp_path / "run", cfg), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    assert max(script.answered.values()) == 1  # no answered request was sent again
    resumed = load_env(tmp_path / "run" / "envs" / "bike_shop")
    baseline = load_env(scripted_run["run"] / "envs" / "bike_shop")
    assert [t.model_dump() for t in resumed.tasks] == [t.model_dump() for t in baseline.tasks]
    assert reasons(tmp_path / "run") == reasons(scripted_run["run"])


def test_bad_descriptions_file_fails_with_one_line(tmp_path):
    src = tmp_path / "d.yaml"
    src.write_text("name: x\ndescription: a mapping, not a list\n")
    result = cli("run", "tool-envs", "--input", src, "--out", tmp_path / "r", "--quiet")
    assert result.exit_code == 2 and "expected a YAML list" in result.output and not (tmp_path / "r").exists()
    src.write_text("- name: x\n  description: [unclosed\n")
    result = cli("run", "tool-envs", "--input", src, "--out", tmp_path / "r", "--quiet")
    assert result.exit_code == 2 and "d.yaml line 3 is not valid YAML" in result.output and "expected ','" in result.output


# ---- parts ------------------------------------------------------------------------------------


def test_graph_edges_come_from_declared_and_observed_fields():
    bundle = {"tools": [
        {"name": "find_user", "kind": "read", "parameters": {"email": "string"}, "returns": ["user_id"]},
        {"name": "list_items", "kind": "read", "parameters": {}, "returns": []},
        {"name": "buy", "kind": "write", "parameters": {"user_id": "string", "sku": "string", "qty": "integer"}},
        {"name": "refund", "kind": "write", "parameters": {"receipt": "string"}},
    ], "observed": {"list_items": json.dumps({"items": [{"sku": "a1", "qty": 3}]}), "buy": "not json"}}
    g = ToolGraph.from_bundle(bundle)
    assert g.edges["find_user"] == {"buy": ["user_id"]}
    assert g.edges["list_items"] == {"buy": ["sku", "qty"]}  # seen in its real output, a level down
    assert g.edges["buy"] == {} and g.successors("refund") == []
    for chain in g.sample_chains(20, random.Random(1), max_len=3):
        for i, tool in enumerate(chain[1:], 1):  # every later tool takes something an earlier one produced
            assert any(tool in g.edges[c] for c in chain[:i]), chain
    assert observed_fields('{"a": 1, "b": [{"c": "x"}]}') == {"a": "integer", "b": None, "c": "string"}


def test_code_reply_checks_before_anything_runs():
    ok = "```python\nfrom rlclimb_tools import tool\n\n@tool(kind=\"write\")\ndef a(state, x: str) -> dict:\n    return {}\n\n" \
         "@tool(kind=\"read\")\ndef b(state) -> dict:\n    return {}\n```\n```json\n{\"state\": {\"t\": {\"1\": {}}}, \"examples\": {\"a\": {\"x\": \"1\"}}}\n```"
    impl = code_reply.parse_implementation(ok)
    assert code_reply.defined_tools(impl.source) == {"a": "write", "b": "read"}
    assert impl.state == {"t": {"1": {}}} and impl.examples == {"a": {"x": "1"}}
    cut = code_reply.remove_functions(impl.source, {"a"})
    assert code_reply.defined_tools(cut) == {"b": "read"} and "@tool(kind=\"write\")" not in cut
    for bad, words in [("no code here", "no ```python block"),
                       ("```python\nfrom rlclimb_tools import tool\n@tool()\ndef a(state:\n```", "does not parse: line 3"),
                       ("```python\ndef a(state):\n    return 1\n```", "must import `tool`"),
                       (ok.replace('"state": {"t": {"1": {}}}', '"state": {"t": [1]}'), "state.t must be an object")]:
        with pytest.raises(code_reply.ReplyError, match=None) as e:
            code_reply.parse_implementation(bad)
        assert words in str(e.value)


@pytest.mark.slow
@pytest.mark.timeout(900)  # sandboxed replays on a loaded machine
def test_a_tool_that_never_passes_is_cut_and_the_rest_kept(tmp_path):
    """No repair round and a generated tool that loops forever: the sandbox's deadline stops it,
    the smoke test names the timeout, the tool is cut from tools.py and the environment is made
    from the five that work (no task uses the cut tool)."""
    script = ToolEnvScript(hang=True)
    with ScriptedServer(script) as server:
        src, cfg = write_inputs(tmp_path, server.base_url)
        result = cli("run", "tool-envs", "--input", src, "--out", tmp_path / "run", "--config", cfg, "--quiet",
                     "--set", "bootstrap.repair_rounds=0", "--set", "bootstrap.call_timeout_s=2")
        assert result.exit_code == 0, result.output
    assert script.kinds["Fix the"] == 0
    env = load_env(tmp_path / "run" / "envs" / "bike_shop")
    removed = env.source["synthesis"]["removed"]
    assert list(removed) == ["get_order"] and "timeout" in removed["get_order"]
    tools = (env.root / "tools.py").read_text()
    assert "def get_order" not in tools and "def cancel_order" in tools
    assert {t["name"] for t in env.source["tools"]} == {"find_customer", "list_bikes", "get_bike", "place_order", "cancel_order"}
    assert env.tasks and all(a.name != "get_order" for t in env.tasks for a in t.actions)


def test_new_entities_merge_all_or_nothing():
    from rlclimb.stages.tooluse.tasks import _merge

    state = {"users": {"u1": {"name": "Ana"}}, "orders": {}}
    assert _merge(state, {"users": {"u2": {"name": "Ben"}}, "orders": {"o1": {"user": "u2"}}}) is None
    assert set(state["users"]) == {"u1", "u2"} and state["orders"] == {"o1": {"user": "u2"}}
    assert _merge(state, {"users": {"u1": {"name": "Ana"}}}) is None  # the same entity again is no clash
    before = json.dumps(state, sort_keys=True)
    for new, reason in [({"users": {"u3": {"name": "Cy"}}, "orders": {"o1": {"user": "u3"}}}, "entity_conflict"),
                        ({"carts": {"c1": {}}}, "unknown_collection"), ({"users": {"u4": "Dee"}}, "bad_entity")]:
        assert _merge(state, new)[0] == reason
        assert json.dumps(state, sort_keys=True) == before  # nothing of a refused draft is merged
