"""The SWE runtime environment on a real instance image: str_replace_editor inside the container,
episodes with scripted agents (an honest fix resolves; agents that rewrite the tests, plant a
conftest.py or patch pytest in their container do not), single-turn diff grading, the registry,
and `rlclimb env check --kind swe`."""

from __future__ import annotations

import json

import pytest
from helpers.sandboxes import sandbox_or_skip
from helpers.swe_fixture_image import F2P, GOLD, P2P, build_instance
from typer.testing import CliRunner

from rlclimb.environments.base import get_environment, kind_of
from rlclimb.environments.episode import Budget
from rlclimb.environments.swe import grading
from rlclimb.environments.swe.editor import StrReplaceEditor
from rlclimb.environments.swe.env import SWEEnvironment, extract_diff, grade_patch
from rlclimb.pipelines.cli import app

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="session")
def fx(tmp_path_factory):
    sandbox_or_skip("docker")
    fx = build_instance(tmp_path_factory.mktemp("swe-env"))
    # Deterministic grading: the coin-flip tests are verify's business (test_swe_grading).
    sections = fx.instance["test_patch"].split("diff --git ")
    kept = [s for s in sections if s and not s.startswith("a/tests/test_flaky.py")]
    fx.instance["test_patch"] = "".join("diff --git " + s for s in kept)
    return fx


@pytest.fixture
def session(fx):
    s = grading.open_container(fx.image)
    yield s
    s.close()


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class Scripted:
    def __init__(self, answers: list[str]):
        self.answers, self.seen = list(answers), []

    def __call__(self, messages):
        self.seen.append(messages[-1]["content"])
        return self.answers.pop(0) if self.answers else "Done."


# ---- editor ----------------------------------------------------------------------------------
def test_editor_view_create_replace_insert_undo(session, fx):
    ed = StrReplaceEditor(session)
    out = ed(command="view", path="/testbed/calc/__init__.py")
    assert out.startswith("Here's the result of running `cat -n` on /testbed/calc/__init__.py")
    assert "     5\tdef sub(a, b):" in out
    out = ed(command="view", path="/testbed/calc/__init__.py", view_range=[5, -1])
    assert "     5\tdef sub" in out and "def add" not in out
    assert "Invalid `view_range`" in ed(
        command="view", path="/testbed/calc/__init__.py", view_range=[0, 2]
    )
    listing = ed(command="view", path="/testbed")
    assert "/testbed/calc/__init__.py" in listing and "/testbed/.git" not in listing

    # str_replace: a unique match only
    many = ed(
        command="str_replace", path="/testbed/calc/__init__.py", old_str="return a + b", new_str="x"
    )
    assert "Multiple occurrences" in many and "[2, 6]" in many
    none = ed(command="str_replace", path="/testbed/calc/__init__.py", old_str="nope", new_str="x")
    assert "did not appear verbatim" in none
    out = ed(
        command="str_replace",
        path="/testbed/calc/__init__.py",
        old_str="def sub(a, b):\n    return a + b",
        new_str="def sub(a, b):\n    return a - b",
    )
    assert "has been edited" in out and "return a - b" in out
    # The edit is in the container, not on the host's copy of the repo.
    assert session.run("grep -c 'a - b' calc/__init__.py").stdout.strip() == "1"
    assert "a - b" not in (fx.repo / "calc/__init__.py").read_text()

    out = ed(
        command="insert", path="/testbed/calc/__init__.py", insert_line=0, new_str='"""calc."""'
    )
    assert '     1\t"""calc."""' in out
    assert session.run("head -1 calc/__init__.py").stdout == '"""calc."""\n'
    assert "Invalid `insert_line`" in ed(
        command="insert", path="/testbed/calc/__init__.py", insert_line=99, new_str="x"
    )

    # undo: per file, one edit at a time, back to the original
    assert "undone successfully" in ed(command="undo_edit", path="/testbed/calc/__init__.py")
    assert session.run("head -1 calc/__init__.py").stdout == "def add(a, b):\n"
    assert "undone successfully" in ed(command="undo_edit", path="/testbed/calc/__init__.py")
    assert session.run("cat calc/__init__.py").stdout == (fx.repo / "calc/__init__.py").read_text()
    assert "No edit history" in ed(command="undo_edit", path="/testbed/calc/__init__.py")

    # create: new files (and directories) only; undo removes them
    assert "created successfully" in ed(
        command="create", path="/testbed/pkg/new.py", file_text="X = 1\n"
    )
    assert session.run("cat pkg/new.py").stdout == "X = 1\n"
    assert "Cannot overwrite" in ed(command="create", path="/testbed/pkg/new.py", file_text="Y")
    assert "undone" in ed(command="undo_edit", path="/testbed/pkg/new.py")
    assert not session.run("test -e pkg/new.py").ok

    assert "not an absolute path" in ed(command="view", path="calc/__init__.py")
    assert "does not exist" in ed(command="view", path="/testbed/nope.py")
    assert "only the `view` command" in ed(command="str_replace", path="/testbed/calc", old_str="a")
    # Big content goes through the archive API, not argv.
    big = "".join(f"line {i}\n" for i in range(50_000))
    assert "created" in ed(command="create", path="/tmp/big.txt", file_text=big)
    assert session.run("wc -l < /tmp/big.txt").stdout.strip() == "50000"
    assert "<response clipped>" in ed(command="view", path="/tmp/big.txt")


# ---- episodes --------------------------------------------------------------------------------
def _fix_calls() -> list[str]:
    return [
        "Look first. " + call("bash", command="ls && python3 -m pytest -q tests 2>&1 | tail -3"),
        call(
            "str_replace_editor",
            command="str_replace",
            path="/testbed/calc/__init__.py",
            old_str="def sub(a, b):\n    return a + b\n",
            new_str="def sub(a, b):\n    return a - b\n\n\ndef scale(x, k):\n    return x * k\n",
        ),
        # An agent that commits its work: the diff against the base commit still has it.
        call(
            "bash",
            command="git -c user.name=a -c user.email=a@b commit -qam fix && git log --oneline | wc -l",
        ),
        "The issue is fixed.",
    ]


def test_episode_honest_fix_resolves(fx):
    env = get_environment("swe")
    policy = Scripted(_fix_calls())
    traj, grade = env.run(fx.instance, policy, Budget(max_steps=10))
    assert traj.stop_reason == "no_tool_call" and traj.steps == 4
    assert "1 passed" in policy.seen[1] or "passed" in policy.seen[1]  # pytest ran in there
    assert policy.seen[3].strip().endswith("2")  # two commits: base + the agent's
    assert grade.task == 1.0, grade.detail
    assert "resolved: 4/4 tests pass" in grade.detail
    assert env.session is None  # the episode container is gone


def test_episode_agent_rewriting_tests_does_not_resolve(fx):
    """The agent makes the tests trivially pass (rewrites the test file, adds tests it likes)
    without fixing the code: the grader puts every test file back and applies the test diff."""
    fake = (
        "def test_add():\n    pass\n\n\ndef test_sub():\n    pass\n\n\nclass TestScale:\n"
        "    import pytest\n\n    @pytest.mark.parametrize('k,out', [(2, 6), (3, 9)])\n"
        "    def test_scale(self, k, out):\n        pass\n"
    )
    env = SWEEnvironment()
    policy = Scripted(
        [
            call(
                "str_replace_editor",
                command="create",
                path="/testbed/tests/test_more.py",
                file_text=fake,
            )
            + call("bash", command=f"cat > tests/test_calc.py <<'EOF'\n{fake}EOF"),
            "done",
        ]
    )
    traj, grade = env.run(fx.instance, policy)
    assert grade.task == 0.0
    assert "reset tests/test_calc.py, tests/test_more.py" in grade.detail
    assert '"tests/test_calc.py::test_sub": "failed"' in grade.detail


CONFTEST = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    rep = outcome.get_result()\n"
    "    rep.outcome, rep.longrepr = 'passed', None\n"
)


def test_conftest_that_forces_passes_is_reset(fx):
    patch = fx.patch({"conftest.py": CONFTEST})
    # The attack is real: run as is, the hook turns every failure into a pass.
    raw = grading.run_tests(fx.image, fx.instance, patch=patch)
    assert all(raw.statuses[t] == "passed" for t in F2P)
    # The grader puts conftest.py back (removes it: the base has none) and flags the patch.
    g = grade_patch(fx.instance, patch)
    assert not g.resolved and g.reset == ["conftest.py"] and g.flags
    assert all(g.statuses[t] == "failed" for t in F2P)
    # A fix that also carries such a hook still resolves on its own merits.
    both = fx.patch({"conftest.py": CONFTEST, **GOLD})
    assert grade_patch(fx.instance, both).resolved


def test_plugin_loaded_from_pytest_config_is_reset_and_flagged(fx):
    """No fix, a plugin module that forces passes, and pyproject.toml's addopts loading it."""
    plugin = {
        "calc/_plugin.py": CONFTEST,
        "pyproject.toml": (fx.repo / "pyproject.toml").read_text()
        + '\n[tool.pytest.ini_options]\naddopts = "-p calc._plugin"\n',
    }
    patch = fx.patch(plugin)
    raw = grading.run_tests(fx.image, fx.instance, patch=patch)
    assert all(raw.statuses[t] == "passed" for t in F2P)  # the attack works as is
    g = grade_patch(fx.instance, patch)
    assert not g.resolved and g.reset == ["pyproject.toml"]
    assert any("pytest internals" in f for f in g.flags)
    # The gold fix carrying the (now unloaded) plugin module: tests pass, the code is flagged.
    both = fx.patch({**GOLD, "calc/_plugin.py": CONFTEST})
    assert not grade_patch(fx.instance, both).resolved
    assert grade_patch(fx.instance, both, reject_flagged=False).resolved


def test_episode_tampering_outside_testbed_does_not_carry(fx):
    """Patching pytest itself and dropping a sitecustomize into the episode container: grading
    runs in a fresh container, where only the /testbed diff arrives (and none is made)."""
    hook = "import _pytest.reports as r\nr.TestReport.outcome = property(lambda s: 'passed', lambda s, v: None)\n"
    env = SWEEnvironment()
    policy = Scripted(
        [
            call(
                "bash",
                command=f"cat > /usr/local/lib/python3.11/dist-packages/sitecustomize.py <<'EOF'\n{hook}EOF\n"
                "python3 -m pytest -q tests 2>&1 | tail -1",
            ),
            "done",
        ]
    )
    traj, grade = env.run(fx.instance, policy)
    assert grade.task == 0.0, grade.detail
    assert "0/4" in grade.detail or "1/4" in grade.detail


def test_single_turn_diff_grading(fx):
    env = get_environment("swe")
    assert (
        env.grade(fx.instance, f"Here is my fix:\n```diff\n{fx.instance['patch']}```\n").task == 1.0
    )
    bare = env.grade(fx.instance, "Answer:\n" + fx.instance["patch"])
    assert bare.task == 1.0 and bare.formatted
    none = env.grade(fx.instance, "I could not do it.")
    assert none.task == 0.0 and not none.formatted
    assert extract_diff("no diff here") == ""


def test_registry_and_kind_of(fx):
    assert kind_of(fx.instance) == "swe"
    assert isinstance(get_environment("swe"), SWEEnvironment)
    msgs = SWEEnvironment().messages(fx.instance)
    assert (
        "/testbed" in msgs[-1]["content"]
        and fx.instance["problem_statement"] in msgs[-1]["content"]
    )
    assert F2P[0] not in msgs[-1]["content"]  # the tests are not shown to the agent
    # The tools and the call format are in the prompt (the trainer's own-loop protocol passes
    # env.messages(task) as is).
    assert "<tool_call>" in msgs[-1]["content"] and '"str_replace_editor"' in msgs[-1]["content"]
    assert hasattr(SWEEnvironment, "rollout")


def test_rollout_then_grade_like_the_trainer(fx):
    """rl/episodes.py's own loop: rollout(task, policy, budget, count_tokens), then
    grade(task, final_response) with the container already gone."""
    env = SWEEnvironment()
    traj = env.rollout(fx.instance, Scripted(_fix_calls()), Budget(max_steps=10), len)
    assert env.session is None and traj.tokens > 0
    assert env.grade(fx.instance, traj.final_response).task == 1.0
    # Nothing pending any more: the next grade is single-turn and finds no diff in the text.
    assert env.grade(fx.instance, traj.final_response).formatted is False


# ---- env check -------------------------------------------------------------------------------
def test_env_check_swe(fx, tmp_path):
    runner = CliRunner()
    good = tmp_path / "swebench.jsonl"
    broken = {
        **fx.instance,
        "instance_id": "fixture__calc-broken",
        "patch": fx.patch({"README": "x\n"}),
    }
    good.write_text(json.dumps(fx.instance) + "\n")
    r = runner.invoke(
        app, ["env", "check", "--kind", "swe", "--input", str(good)], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    assert "gold" in r.output and "empty" in r.output and "WRONG" not in r.output
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps(fx.instance) + "\n" + json.dumps(broken) + "\n")
    r = runner.invoke(
        app,
        ["env", "check", "--kind", "swe", "--input", str(both), "--id", "fixture__calc-broken"],
        env={"COLUMNS": "200"},
    )
    assert r.exit_code == 1 and "WRONG" in r.output and "fixture__calc-1" not in r.output
    # A line without its signal is reported, not graded as unresolvable.
    unsignalled = tmp_path / "nosignal.jsonl"
    unsignalled.write_text(json.dumps({**fx.instance, "FAIL_TO_PASS": []}) + "\n")
    r = runner.invoke(
        app, ["env", "check", "--kind", "swe", "--input", str(unsignalled)], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 1 and "missing FAIL_TO_PASS" in r.output
    # env run: a response holding a diff is graded like a single-turn completion.
    response = tmp_path / "response.md"
    response.write_text(f"Fix:\n```diff\n{fx.instance['patch']}```\n")
    r = runner.invoke(
        app,
        [
            "env",
            "run",
            "--kind",
            "swe",
            "--input",
            str(good),
            "--id",
            "fixture__calc-1",
            "--response",
            str(response),
        ],
        env={"COLUMNS": "200"},
    )
    assert r.exit_code == 0 and "1.000" in r.output, r.output
    assert F2P and P2P
