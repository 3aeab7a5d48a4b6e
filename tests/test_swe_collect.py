"""SWE collect without Docker: input records (both formats), the code/test split, the filter's
reasons, history mining, repository lookup, the time-travel copy and the Python language rules,
on the real fixture repository (tests/helpers/swe_repo.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.swe_repo import REPO, build_swe_repo

from rlclimb.environments.swe.lang import PYTHON, language_for
from rlclimb.schemas.swe import RecordError, parse_pr
from rlclimb.stages.swe import repos
from rlclimb.stages.swe.images import host_pip_settings
from rlclimb.stages.swe.stages import CollectPRs


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return build_swe_repo(tmp_path_factory.mktemp("repos"))


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _applies(repo, base, diff, tmp_path):
    """`git apply --check` of `diff` on a checkout of `base`."""
    work = tmp_path / f"wt-{base[:8]}"
    if not work.exists():
        _git(repo, "worktree", "add", "-q", "--detach", str(work), base)
    res = subprocess.run(["git", "-C", str(work), "apply", "--check", "-"], input=diff, text=True, capture_output=True)
    return res.returncode == 0, res.stderr


def test_swebench_records_split_code_and_tests(fx):
    prs = {r["instance_id"]: parse_pr(r, f"prs.jsonl:{i}", PYTHON.is_test_path) for i, r in enumerate(fx.records, 1)}
    one = prs["fixture__minicalc-1"]
    assert one.source_format == "swebench" and one.files_changed == 2
    assert "minicalc/ops.py" in one.patch and "tests/" not in one.patch
    assert "tests/test_ops.py" in one.test_patch and "minicalc/ops.py" not in one.test_patch
    assert prs["fixture__minicalc-2"].test_patch == ""
    assert prs["fixture__minicalc-6"].files_changed == 16


def test_github_export_diffs_apply_at_base(fx, tmp_path):
    for i, obj in enumerate(fx.github_records, 1):
        pr = parse_pr(obj, f"gh.jsonl:{i}", PYTHON.is_test_path)
        assert pr.source_format == "github" and pr.repo == REPO
        for diff in (pr.patch, pr.test_patch):
            if diff:
                ok, err = _applies(fx.repo, pr.base_commit, diff, tmp_path)
                assert ok, (pr.instance_id, err)
    unmerged = parse_pr(fx.github_records[-1], "gh.jsonl:7", PYTHON.is_test_path)
    assert unmerged.merged is False and unmerged.linked_issue is False
    first = parse_pr(fx.github_records[0], "gh.jsonl:1", PYTHON.is_test_path)
    assert first.linked_issue is True and first.problem_statement.startswith("div() floors")


@pytest.mark.parametrize(
    "obj,field",
    [
        ({"instance_id": "x-1", "repo": "a/b", "base_commit": "not-a-sha", "patch": ""}, "base_commit"),
        ({"instance_id": "x-1", "repo": "no-slash", "base_commit": "abcdef12"}, "repo"),
        ({"instance_id": "x-1", "repo": "a/b", "base_commit": "abcdef12", "patch": "just text"}, "patch"),
        ({"number": 3, "files": [], "base": {}}, "base.sha"),
        ({"number": 3, "files": [], "base": {"sha": "abcdef12"}}, "base.repo.full_name"),
        ({"title": "what is this"}, "neither"),
        (["a list"], "JSON object"),
    ],
)
def test_bad_records_name_the_record_and_field(obj, field):
    with pytest.raises(RecordError) as e:
        parse_pr(obj, "prs.jsonl:7", PYTHON.is_test_path)
    assert e.value.reason == "bad_record"
    assert "prs.jsonl:7" in str(e.value) and field in str(e.value)


def test_collect_filter_reasons(fx):
    stage = CollectPRs()
    decisions = {}
    for obj in fx.records + fx.github_records[-1:]:
        pr = parse_pr(obj, "x", PYTHON.is_test_path).model_dump()
        res = stage.process(pr, None)
        decisions[pr["instance_id"]] = "pass" if res is True else res.reason
    for iid, expected in fx.expected.items():
        if expected in ("no_test_changes", "too_many_files", "not_merged"):
            assert decisions[iid] == expected, iid
        else:  # decided later (grading) or kept
            assert decisions[iid] == "pass", iid
    # linked issue: dropped only when the record says there is none
    pr = parse_pr(fx.github_records[0], "x", PYTHON.is_test_path).model_dump()
    assert stage.process({**pr, "linked_issue": False}, None).reason == "no_linked_issue"
    assert stage.process({**pr, "linked_issue": None}, None) is True
    assert CollectPRs(require_linked_issue=False).process({**pr, "linked_issue": False}, None) is True


def test_mine_history_finds_the_merged_prs(fx):
    mined = repos.mine_history(fx.repo)
    by_id = {m["instance_id"]: m for m in mined}
    assert set(by_id) == {r["instance_id"] for r in fx.records}  # the tamper branch was never merged
    for rec in fx.records:
        m = by_id[rec["instance_id"]]
        assert m["repo"] == REPO and m["base_commit"] == rec["base_commit"]
        assert m["patch"] == _git(fx.repo, "diff", "--binary", rec["base_commit"], fx.merges[int(rec["instance_id"].rsplit("-", 1)[1])])
        assert m["linked_issue"] is True  # "(fixes #N)" in the branch commit
        pr = parse_pr(m, "git", PYTHON.is_test_path)
        assert pr.test_patch == rec["test_patch"] and pr.patch == rec["patch"]
    assert [m["instance_id"] for m in repos.mine_history(fx.repo, limit=2)] == ["fixture__minicalc-6", "fixture__minicalc-5"]


def test_find_repo_order(fx, tmp_path):
    root = fx.repo.parent
    assert repos.find_repo(REPO, None, str(root), tmp_path, clone=False) == fx.repo
    assert repos.find_repo("other/name", str(fx.repo), None, tmp_path, clone=False) == fx.repo
    with pytest.raises(repos.RepoError, match="no clone of nobody/nothing"):
        repos.find_repo("nobody/nothing", None, str(root), tmp_path, clone=False)


def test_find_repo_clones_when_no_local_copy(fx, tmp_path, monkeypatch):
    monkeypatch.setenv("RLCLIMB_SWE_CLONE_URL", f"file://{fx.repo.parent}/{{owner}}__{{name}}")
    got = repos.find_repo(REPO, None, str(tmp_path / "empty"), tmp_path / "cache", clone=True)
    assert got == tmp_path / "cache" / "fixture__minicalc"
    assert repos.has_commit(got, fx.records[0]["base_commit"])
    assert repos.find_repo(REPO, None, None, tmp_path / "cache", clone=True) == got  # cloned once
    with pytest.raises(repos.RepoError, match="git clone failed"):
        repos.find_repo("nobody/nothing", None, None, tmp_path / "cache", clone=True)


def test_time_travel_copy_holds_nothing_newer(fx, tmp_path):
    base = fx.records[0]["base_commit"]
    dest = tmp_path / "testbed"
    repos.time_travel_copy(fx.repo, base, dest)
    assert _git(dest, "rev-parse", "HEAD").strip() == base
    assert _git(dest, "for-each-ref") == "" and _git(dest, "remote") == ""
    assert not (dest / ".git" / "logs").exists()
    everything = set(_git(dest, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    reachable = set(_git(dest, "rev-list", "--objects", "--no-object-names", base).split())
    assert everything == reachable
    for merge in fx.merges.values():
        assert subprocess.run(["git", "-C", str(dest), "cat-file", "-e", merge], capture_output=True).returncode != 0
    assert not (dest / "tests" / "test_clamp.py").exists()  # a later PR's file


def test_python_rules_and_install_recipe(fx, tmp_path):
    assert language_for(fx.repo) is PYTHON
    for path, is_test in [("tests/test_ops.py", True), ("src/pkg/tests/helpers.py", True), ("pkg/test_x.py", True),
                          ("pkg/x_test.py", True), ("conftest.py", True), ("pkg/ops.py", False), ("docs/testing.md", False)]:
        assert PYTHON.is_test_path(path) is is_test, path
    steps = PYTHON.install_steps(fx.repo)
    assert any("-e '.[test]'" in s for s in steps), steps
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "setup.cfg").write_text("[options.extras_require]\ntests = pytest\ndocs = sphinx\n")
    (proj / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (proj / "requirements-dev.txt").write_text("hypothesis\n")
    (proj / "tox.ini").write_text("[testenv]\ndeps =\n    pytest-mock\n    -rrequirements.txt\n    {env:X}\n")
    steps = PYTHON.install_steps(proj)
    assert steps[0].endswith("-r requirements-dev.txt")
    assert any("-e '.[tests]'" in s for s in steps) and any(s.endswith("pytest-mock") for s in steps)
    grouped = tmp_path / "grouped"
    grouped.mkdir()
    (grouped / "pyproject.toml").write_text('[build-system]\nrequires = ["hatchling"]\n[project]\nname = "g"\n'
                                            '[dependency-groups]\ntests = ["hypothesis"]\ndocs = ["sphinx"]\n')
    assert "RUN python3 -m pip install --no-input --group tests" in PYTHON.install_steps(grouped)
    from rlclimb.stages.swe.images import build_requires

    assert build_requires(grouped) == ["hatchling", "editables"]
    assert build_requires(fx.repo) == ["setuptools>=61", "wheel"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(LookupError, match="no supported language"):
        language_for(tmp_path / "empty")


def test_parse_results_from_real_pytest_junit(fx, tmp_path):
    """Node ids from pytest's own JUnit XML (xunit1 via test_command) match pytest's node ids."""
    rec = fx.records[0]
    work = tmp_path / "work"
    _git(fx.repo, "worktree", "add", "-q", "--detach", str(work), rec["base_commit"])
    subprocess.run(["git", "-C", str(work), "apply", "-"], input=rec["test_patch"], text=True, check=True)
    junit = tmp_path / "j.xml"
    cmd = PYTHON.test_command(["tests/test_ops.py"], str(junit)).replace("python3", sys.executable, 1)
    subprocess.run(cmd, shell=True, cwd=work, capture_output=True, env={"PYTHONPATH": str(work), "PATH": "/usr/bin:/bin"})
    statuses = PYTHON.parse_results(junit.read_bytes())
    assert statuses == {
        "tests/test_ops.py::test_add": "passed",
        "tests/test_ops.py::test_sub": "passed",
        "tests/test_ops.py::test_mul": "passed",
        "tests/test_ops.py::TestDiv::test_true_division[7-2-3.5]": "failed",
        "tests/test_ops.py::TestDiv::test_true_division[1-4-0.25]": "failed",
        "tests/test_ops.py::TestDiv::test_div_by_one": "passed",
    }


def test_parse_results_refuses_entity_bombs():
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><testsuite><testcase classname="t" name="&b;"/></testsuite>'
    with pytest.raises(Exception, match="(?i)entit"):
        PYTHON.parse_results(bomb)


def test_pip_settings_pass_through():
    s = host_pip_settings({
        "PIP_INDEX_URL": "https://mirror.example/simple",
        "PIP_EXTRA_INDEX_URL": "file:///opt/pypi/simple https://extra.example/simple",
        "PIP_TRUSTED_HOST": "mirror.example",
        "HTTPS_PROXY": "http://proxy:3128",
        "PIP_FIND_LINKS": "/opt/wheels",
    })
    assert s.index_url == "https://mirror.example/simple"
    assert s.extra_index_urls == ["https://extra.example/simple"]
    assert s.proxies == {"HTTPS_PROXY": "http://proxy:3128"}
    assert "file:///opt/pypi/simple" in s.skipped and any("/opt/wheels" in x for x in s.skipped)
    env = "\n".join(s.env_lines())
    assert "PIP_INDEX_URL=https://mirror.example/simple" in env and "PIP_TRUSTED_HOST=mirror.example" in env
    assert "proxy" not in env  # proxies go as Docker's predefined build args, not into the image


@pytest.mark.slow
def test_cli_collect_only_ledgers_bad_lines(fx, tmp_path):
    """import + collect through the real engine (build and later stages off): every drop is in
    the funnel with its reason; a broken line never stops the run."""
    prs = tmp_path / "prs.jsonl"
    lines = [json.dumps(r) for r in fx.records] + ["{not json", json.dumps({"instance_id": "x", "repo": "a/b", "base_commit": "zz"})]
    prs.write_text("\n".join(lines) + "\n")
    off = [a for s in ("swe_build", "swe_grade", "swe_verify", "swe_export") for a in ("--set", f"{s}.enabled=false")]
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "rlclimb.pipelines.cli", "run", "github-prs", "--input", str(prs), "--repos",
         str(fx.repo.parent), "--out", str(out), "-q", *off],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    stats = {s["name"]: s for s in json.loads((out / "stats.json").read_text())["stages"]}
    assert stats["swe_import"]["dropped"] == {"bad_record": 1}
    assert stats["swe_collect"]["dropped"] == {"no_test_changes": 1, "too_many_files": 1}
    assert sum(stats["read"]["dropped"].values()) == 1  # the line that is not JSON
    res = subprocess.run([sys.executable, "-m", "rlclimb.pipelines.cli", "run", "qa-jsonl", "--input", str(prs),
                          "--repos", str(tmp_path), "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert res.returncode != 0 and "github-prs" in res.stderr


def test_problem_quality_scores_and_rewrites_with_the_original_kept(fx, llm_server):
    """The opt-in LLM stage against the scripted server: weak statements are rewritten (the
    original kept), a rewrite that quotes the fix is refused, strong ones pass unchanged."""
    import asyncio

    from rlclimb.pipelines.llm import LLMClient, LLMConfig
    from rlclimb.pipelines.scripted_server import Reply
    from rlclimb.pipelines.stage import Keep, StageContext
    from rlclimb.stages.swe.stages import ProblemQuality

    rec = parse_pr(fx.records[0], "x", PYTHON.is_test_path).model_dump()
    replies = {"weak": 2, "strong": 5}
    rewrite = {"text": "div() should return the true quotient: div(7, 2) is 3.5, not 3."}

    def model(body, n):
        prompt = body["messages"][0]["content"]
        if prompt.startswith("Rewrite"):
            return Reply(json.dumps({"problem_statement": rewrite["text"]}))
        score = replies["weak"] if "WEAK" in prompt else replies["strong"]
        return Reply(json.dumps({"clarity": score, "test_alignment": 4, "leakage": 5, "feasibility": 4, "comment": ""}))

    llm_server.script(model)
    config = LLMConfig.from_dict({"profiles": {"p": {"base_url": llm_server.base_url, "model": "m", "api_key": "k"}},
                                  "roles": {"judge": "p"}})
    stage = ProblemQuality()
    stage.check(config)

    def run(r):
        async def go():
            client = LLMClient(config)
            try:
                return await stage.process(r, StageContext(llm=client))
            finally:
                await client.aclose()

        return asyncio.run(go())

    strong = run(rec)
    assert isinstance(strong, Keep) and strong.record["problem_statement"] == rec["problem_statement"]
    assert "problem_statement_original" not in strong.record
    weak = run({**rec, "problem_statement": "WEAK: div is broken"})
    assert weak.record["problem_statement"] == rewrite["text"]
    assert weak.record["problem_statement_original"] == "WEAK: div is broken"
    rewrite["text"] = "Change it to `return a / b` please"  # quotes the fix's added line
    leaky = run({**rec, "problem_statement": "WEAK: div is broken"})
    assert leaky.record["problem_statement"] == "WEAK: div is broken"
    assert "rewrite_rejected" in leaky.record["quality"]
    with pytest.raises(Exception, match="llm"):
        ProblemQuality().check(None)


@pytest.mark.slow
def test_cli_from_git_history(fx, tmp_path):
    """--from-git-history mines the clone (no --input); the funnel matches the fixture's PRs."""
    off = [a for s in ("swe_build", "swe_grade", "swe_verify", "swe_export") for a in ("--set", f"{s}.enabled=false")]
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "rlclimb.pipelines.cli", "run", "github-prs", "--from-git-history", str(fx.repo),
         "--out", str(out), "-q", "--set", "swe_import.history_limit=50", *off],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    stats = {s["name"]: s for s in json.loads((out / "stats.json").read_text())["stages"]}
    assert stats["swe_import"]["in"] == 6
    assert stats["swe_collect"]["dropped"] == {"no_test_changes": 1, "too_many_files": 1}
    assert stats["swe_collect"]["out"] == 4


def test_export_writes_swebench_lines_once_per_instance(fx, tmp_path):
    from rlclimb.pipelines.stage import Drop, StageContext
    from rlclimb.stages.swe.stages import ExportSwebench

    pr = parse_pr(fx.records[0], "x", PYTHON.is_test_path).model_dump()
    rec = {**pr, "FAIL_TO_PASS": sorted(fx.fail_to_pass["fixture__minicalc-1"]), "PASS_TO_PASS": ["tests/test_ops.py::test_add"],
           "image": "rlclimb/swe:fixture__minicalc-1", "version": "b8e55dcb2388", "flaky_tests": []}
    out = list(ExportSwebench().run([rec, dict(rec)], StageContext(run_dir=tmp_path)))
    assert isinstance(out[0], dict) and isinstance(out[1], tuple) and isinstance(out[1][1], Drop)
    assert out[1][1].reason == "duplicate_instance"
    (line,) = [json.loads(x) for x in (tmp_path / "swebench.jsonl").read_text().splitlines()]
    assert line["FAIL_TO_PASS"] == rec["FAIL_TO_PASS"] and line["test_files"] == ["tests/test_ops.py"]
    assert "git apply" in line["eval_script"] and line["base_commit"] in line["eval_script"]
    assert json.loads((tmp_path / "swe_tests.json").read_text())["fail_to_pass"] == 2
