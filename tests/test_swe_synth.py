"""swe-synth end to end on a real repository in a real image: mutations and a reverted past fix
become tasks the suite catches; a mutation that breaks import and one no test catches are
ledgered with reasons; every task's gold patch resolves and the empty patch does not, in an
image whose git history does not show the clean code."""

from __future__ import annotations

import json
import subprocess

import pyarrow.parquet as pq
import pytest
from helpers.swe_fixture_image import BASE_IMAGE, build_image
from typer.testing import CliRunner

from rlclimb.environments.sandbox.docker_backend import docker_available
from rlclimb.pipelines.cli import app
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800),  # minutes of containers
              pytest.mark.skipif(not docker_available(BASE_IMAGE), reason="needs the Docker engine and the base image")]

OPS = '''def area(w, h):
    return w * h


def window_sums(seq, k):
    return [sum(seq[i:i + k]) for i in range(len(seq) - k + 1)]


def ratio(a, b):
    return divmod(a, b)
'''
FILES = {
    "pyproject.toml": '[project]\nname = "geom"\nversion = "0.1"\n',
    "geom/__init__.py": "from .ops import area, ratio, window_sums\n",
    "geom/ops.py": OPS,
    "geom/extra.py": "def untested(x):\n    return x * 2\n",  # no test calls it
    # runs at import: `n < 0` -> `n <= 0` raises while importing geom.config
    "geom/config.py": 'def _check(n):\n    if n < 0:\n        raise ValueError("negative")\n    return n\n\n\nDEPTH = _check(0)\n',
    "tests/__init__.py": "",
    "tests/test_ops.py": """\
from geom import area, ratio, window_sums
from geom.config import DEPTH


def test_area():
    assert area(2, 3) == 6


def test_windows():
    assert window_sums([1, 2, 3, 4], 2) == [3, 5, 7]


def test_ratio():
    assert ratio(7, 2) == (3, 1)


def test_depth():
    assert DEPTH == 0
""",
}


def git(repo, *args):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e.com", "HOME": str(repo), "PATH": "/usr/bin:/bin",
           # fixed dates: the same commits every run, as the content-tagged image holds them
           "GIT_AUTHOR_DATE": "2024-03-01T10:00:00Z", "GIT_COMMITTER_DATE": "2024-03-01T10:00:00Z"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def github_run(tmp_path_factory):
    """What a github-prs run hands on: swebench.jsonl whose newest instance's image built."""
    root = tmp_path_factory.mktemp("synth")
    repo = root / "geom"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text.replace("w * h", "w + h"))  # area is still broken at first
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    old_base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "geom/ops.py").write_text(OPS)
    fix = git(repo, "diff")  # the past fix: area adds -> multiplies
    git(repo, "commit", "-qam", "Fix area")
    base = git(repo, "rev-parse", "HEAD").strip()
    image = build_image(repo, f"rlclimb-test/swe-synth-src-{base[:8]}")  # the tag covers no .git
    run = root / "prs"
    run.mkdir()
    common = {"repo": "fixture/geom", "test_patch": "", "problem_statement": "", "image": image,
              "FAIL_TO_PASS": [], "PASS_TO_PASS": [], "version": "0.1"}
    lines = [
        {**common, "instance_id": "fixture__geom-1", "base_commit": old_base, "patch": fix, "created_at": "2024-03-01T10:00:00Z"},
        {**common, "instance_id": "fixture__geom-2", "base_commit": base, "patch": "", "created_at": "2024-03-02T10:00:00Z"},
    ]
    (run / "swebench.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run, base


# The LLM's rewrite (scripted): one function with a plausible boundary bug, in a python block.
REWRITE = "Here it is:\n```python\ndef window_sums(seq, k):\n    return [sum(seq[i:i + k]) for i in range(len(seq) - k)]\n```\n"


def rewrite_reply(body, n):
    prompt = body["messages"][0]["content"]
    return Reply(REWRITE if "def window_sums" in prompt else "I cannot rewrite this one.")


@pytest.fixture(scope="module")
def synth(github_run, tmp_path_factory):
    run, _ = github_run
    out = tmp_path_factory.mktemp("out") / "synth"
    cfg = out.parent / "synth.yaml"
    with ScriptedServer() as server:
        server.script(rewrite_reply)
        cfg.write_text(
            "llm:\n"
            f"  profiles: {{p: {{base_url: '{server.base_url}', model: m, api_key: k, backoff_s: 0.01}}}}\n"
            "  roles: {bugger: p}\n"
            "stages:\n"
            "  synth_candidates: {kinds: [operator, swap_arguments, off_by_one], per_kind: 20,"
            " llm_role: bugger, llm_functions: 5}\n"
            "  synth_validate: {trials: 2}\n"
        )
        result = CliRunner().invoke(app, ["run", "swe-synth", "--input", str(run), "--out", str(out), "-c", str(cfg), "-q"])
        asked = [r["messages"][0]["content"] for r in server.requests]
    assert result.exit_code == 0, result.output
    tasks = [json.loads(x) for x in (out / "swebench.jsonl").read_text().splitlines()]
    ledger = [r for f in sorted((out / "ledger").glob("part-*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert len(asked) == 5 and all("subtle, plausible bug" in a for a in asked)  # 5 functions, one call each
    return out, tasks, ledger


def test_three_kinds_and_a_revert_become_tasks(synth):
    _, tasks, ledger = synth
    kinds = {t["recipe"]["kind"] for t in tasks}
    assert {"operator", "swap_arguments", "off_by_one", "revert", "llm_rewrite"} <= kinds, [(r["reason"], r["detail"]) for r in ledger]
    for t in tasks:
        assert t["synthetic"] is True and t["test_patch"] == "" and t["FAIL_TO_PASS"]
        assert set(t["FAIL_TO_PASS"]).isdisjoint(t["PASS_TO_PASS"])
        assert t["image"].startswith("rlclimb/swe-synth-") and t["source_instance"] == "fixture__geom-2"
        assert "```\nassert" in t["problem_statement"] or "Error" in t["problem_statement"], t["problem_statement"]
    revert = next(t for t in tasks if t["recipe"]["kind"] == "revert")
    assert revert["FAIL_TO_PASS"] == ["tests/test_ops.py::test_area"]
    assert "w * h" in revert["patch"] and revert["recipe"]["reverts"] == "fixture__geom-1"


def test_uncaught_and_import_breaking_mutations_are_ledgered(synth):
    _, _, ledger = synth
    reasons = {(r["stage"], r["reason"]) for r in ledger}
    assert ("synth_validate", "not_caught") in reasons and ("synth_validate", "breaks_import") in reasons, reasons
    untested = next(r for r in ledger if r["reason"] == "not_caught")
    assert "geom/extra.py" in json.dumps(untested, default=str)


def test_gold_resolves_and_empty_does_not_in_the_task_image(synth, github_run):
    from rlclimb.environments.swe.grading import run_tests

    _, tasks, _ = synth
    _, clean_base = github_run
    task = next(t for t in tasks if t["recipe"]["kind"] == "swap_arguments")
    inst = {**task, "test_files": ["tests/test_ops.py"]}
    gold = run_tests(task["image"], inst, patch=task["patch"])
    empty = run_tests(task["image"], inst, patch="")
    assert all(gold.statuses[t] == "passed" for t in task["FAIL_TO_PASS"] + task["PASS_TO_PASS"])
    assert all(empty.statuses[t] != "passed" for t in task["FAIL_TO_PASS"])
    # the history does not reach the clean code
    from rlclimb.stages.swe.synth import history_leak

    assert history_leak(task["image"], clean_base) is None
    assert task["base_commit"] != clean_base
