"""A real git repository of a tiny pure-Python package with a history of merged pull requests,
for the SWE tests (collect, image builds, grading, the whole `github-prs` pipeline).

    fx = build_swe_repo(tmp_path / "repos")   # -> repos/fixture__minicalc, a real clone
    fx.records        # SWE-bench-format PR records, one per merged PR (no F2P/P2P)
    fx.github_records # the same PRs as a GitHub-API-style export, plus one unmerged PR
    fx.expected[id]   # what the pipeline must decide for each record

The history (every PR is a branch merged with `git merge --no-ff`, message "Merge pull request
#N from ..."; commit dates are fixed, one hour apart, from 2024-03-01):

  #1 fix-div        code + tests: TestDiv::test_true_division[...] fail before, pass after
  #2 docs-only      code + README, no test change                    -> dropped at collect
  #3 total-start    code + a test that already passes before the fix -> no FAIL_TO_PASS
  #4 fix-clamp      code + tests, one of which (test_clamp_timing) is flaky (random)
  #5 mean-empty     code + a changed test file: test_mean_empty fails before
  #6 big-refactor   16 files changed                                  -> dropped at collect

Besides: tags v0.1 (first commit) and v0.2 (tip), an unmerged branch `tamper-tests` whose commit
rewrites tests so that everything passes (`fx.tamper_patch`, an agent patch that must not
resolve #1), a stash entry, and the reflogs git writes: everything a sanitizer must remove.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = "fixture/minicalc"
FOLDER = "fixture__minicalc"
START = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)


@dataclass
class SweFixture:
    repo: Path
    records: list[dict]
    github_records: list[dict]
    expected: dict[str, str]
    fail_to_pass: dict[str, set[str]]
    pass_to_pass: dict[str, set[str]]
    flaky_tests: set[str]
    tamper_patch: str
    merges: dict[int, str] = field(default_factory=dict)  # PR number -> merge commit


INITIAL = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "minicalc"
version = "0.1.0"
requires-python = ">=3.8"

[project.optional-dependencies]
test = ["pytest"]

[tool.setuptools]
packages = ["minicalc"]
""",
    "README.md": "# minicalc\n\nA tiny calculator.\n",
    "minicalc/__init__.py": "from .ops import add, clamp, div, mul, sub\nfrom .stats import mean, total\n",
    "minicalc/ops.py": """\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def div(a, b):
    return a // b


def clamp(x, lo, hi):
    return max(lo, x)
""",
    "minicalc/stats.py": """\
def mean(xs):
    return sum(xs) / len(xs)


def total(xs):
    return sum(xs)
""",
    "tests/__init__.py": "",
    "tests/test_ops.py": """\
from minicalc.ops import add, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(2, 3) == -1


def test_mul():
    assert mul(2, 3) == 6
""",
    "tests/test_stats.py": """\
from minicalc.stats import mean


def test_mean_basic():
    assert mean([1, 2, 3]) == 2
""",
}

# (number, branch, issue title, issue body, {path: new content or None to delete})
PRS: list[tuple[int, str, str, str, dict[str, str | None]]] = [
    (
        1,
        "fix-div",
        "div() floors its result",
        "`div(7, 2)` returns 3, it should return 3.5 like `7 / 2`.",
        {
            "minicalc/ops.py": INITIAL["minicalc/ops.py"].replace("a // b", "a / b"),
            "tests/test_ops.py": INITIAL["tests/test_ops.py"].replace(
                "from minicalc.ops import add, mul, sub",
                "import pytest\n\nfrom minicalc.ops import add, div, mul, sub",
            )
            + """

class TestDiv:
    @pytest.mark.parametrize("a,b,expected", [(7, 2, 3.5), (1, 4, 0.25)])
    def test_true_division(self, a, b, expected):
        assert div(a, b) == expected

    def test_div_by_one(self):
        assert div(6, 1) == 6
""",
        },
    ),
    (
        2,
        "docs-only",
        "Document the package",
        "The README says nothing about the functions.",
        {
            "README.md": "# minicalc\n\nA tiny calculator: add, sub, mul, div, clamp, mean.\n",
            "minicalc/stats.py": '"""Small statistics."""\n\n\n' + INITIAL["minicalc/stats.py"],
        },
    ),
    (
        3,
        "total-start",
        "total() should take a start value",
        "Like `sum(xs, start)`.",
        {
            "minicalc/stats.py": '"""Small statistics."""\n\n\n'
            + INITIAL["minicalc/stats.py"].replace(
                "def total(xs):\n    return sum(xs)",
                "def total(xs, start=0):\n    return sum(xs, start)",
            ),
            "tests/test_total.py": """\
from minicalc.stats import total


def test_total_basic():
    assert total([1, 2, 3]) == 6
""",
        },
    ),
    (
        4,
        "fix-clamp",
        "clamp() ignores the upper bound",
        "`clamp(10, 0, 5)` returns 10.",
        {
            "minicalc/ops.py": INITIAL["minicalc/ops.py"]
            .replace("a // b", "a / b")
            .replace("return max(lo, x)", "return min(max(lo, x), hi)"),
            "tests/test_clamp.py": """\
import os

from minicalc.ops import clamp


def test_clamp_high():
    assert clamp(10, 0, 5) == 5


def test_clamp_low():
    assert clamp(-3, 0, 5) == 0


def test_clamp_timing():
    # flaky on purpose: passes in about half of the runs
    assert os.urandom(1)[0] % 2 == 0
""",
        },
    ),
    (
        5,
        "mean-empty",
        "mean([]) raises ZeroDivisionError",
        "An empty input should raise ValueError with a clear message.",
        {
            "minicalc/stats.py": '"""Small statistics."""\n\n\n'
            + INITIAL["minicalc/stats.py"]
            .replace(
                "def total(xs):\n    return sum(xs)",
                "def total(xs, start=0):\n    return sum(xs, start)",
            )
            .replace(
                "def mean(xs):\n",
                "def mean(xs):\n    if not xs:\n        raise ValueError('mean of an empty sequence')\n",
            ),
            "tests/test_stats.py": INITIAL["tests/test_stats.py"].replace(
                "from minicalc.stats import mean",
                "import pytest\n\nfrom minicalc.stats import mean",
            )
            + """

def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])
""",
        },
    ),
    (
        6,
        "big-refactor",
        "Split helpers into modules",
        "One module per helper.",
        {
            **{f"minicalc/extra/mod_{i:02d}.py": f"VALUE = {i}\n" for i in range(15)},
            "tests/test_extra.py": "from minicalc.extra import mod_03\n\n\ndef test_value():\n    assert mod_03.VALUE == 3\n",
        },
    ),
]

TAMPER = {
    "tests/test_ops.py": "def test_everything():\n    assert True\n",
    "tests/conftest.py": """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
""",
}


class _Git:
    def __init__(self, path: Path):
        self.path = path
        self.tick = 0

    def env(self) -> dict:
        when = (START + timedelta(hours=self.tick)).isoformat()
        return {
            **os.environ,
            "GIT_AUTHOR_NAME": "Fixture Dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "Fixture Dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_DATE": when,
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.path),  # no user config leaks in (signing, hooks, templates)
        }

    def __call__(self, *args: str) -> str:
        return self.raw(*args).strip()

    def raw(self, *args: str) -> str:
        """stdout as git wrote it (diffs end in significant whitespace)."""
        out = subprocess.run(
            ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
            cwd=self.path,
            env=self.env(),
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def commit(self, files: dict[str, str | None], message: str) -> str:
        for rel, text in files.items():
            f = self.path / rel
            if text is None:
                self("rm", "-q", rel)
                continue
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
            self("add", rel)
        self.tick += 1
        self("commit", "-q", "-m", message)
        return self("rev-parse", "HEAD")


def _github_file(git: _Git, base: str, head: str, path: str) -> dict:
    status = git("diff", "--name-status", base, head, "--", path).split("\t", 1)[0]
    diff = git.raw("diff", base, head, "--", path)
    hunks = diff[diff.index("\n@@") + 1 :] if "\n@@" in diff else ""
    return {
        "filename": path,
        "status": {"A": "added", "D": "removed"}.get(status, "modified"),
        "patch": hunks,
    }


def build_swe_repo(root: Path) -> SweFixture:
    """Create `root/fixture__minicalc` (a real clone with the history above) and its records."""
    repo = Path(root) / FOLDER
    repo.mkdir(parents=True)
    git = _Git(repo)
    git("init", "-q")
    git.commit(INITIAL, "Initial commit")
    git("tag", "v0.1")

    records, github, merges = [], [], {}
    for number, branch, title, body, files in PRS:
        base = git("rev-parse", "HEAD")
        git("checkout", "-q", "-b", branch)
        git.commit(files, f"{title} (fixes #{number + 10})")
        head = git("rev-parse", "HEAD")
        git("checkout", "-q", "main")
        git.tick += 1
        git(
            "merge",
            "-q",
            "--no-ff",
            branch,
            "-m",
            f"Merge pull request #{number} from contrib/{branch}\n\n{title}",
        )
        merge = git("rev-parse", "HEAD")
        merges[number] = merge
        created = (START + timedelta(hours=git.tick - 1)).isoformat().replace("+00:00", "Z")
        changed = git("diff", "--name-only", base, merge).splitlines()
        tests = [p for p in changed if p.startswith("tests/")]
        code = [p for p in changed if p not in tests]
        problem = f"{title}\n\n{body}"
        records.append(
            {
                "repo": REPO,
                "instance_id": f"fixture__minicalc-{number}",
                "base_commit": base,
                "patch": git.raw("diff", base, merge, "--", *code) if code else "",
                "test_patch": git.raw("diff", base, merge, "--", *tests) if tests else "",
                "problem_statement": problem,
                "hints_text": "",
                "created_at": created,
            }
        )
        github.append(
            {
                "number": number,
                "title": title,
                "body": f"Fixes #{number + 10}",
                "merged": True,
                "merged_at": created,
                "created_at": created,
                "base": {"sha": base, "repo": {"full_name": REPO}},
                "head": {"sha": head, "ref": branch},
                "files": [_github_file(git, base, merge, p) for p in changed],
                "linked_issues": [{"number": number + 10, "title": title, "body": body}],
            }
        )
    git("tag", "v0.2")

    # An unmerged PR (GitHub export only) and an unmerged branch that tampers with the tests.
    base1 = records[0]["base_commit"]
    git("checkout", "-q", "-b", "tamper-tests", base1)
    tamper_head = git.commit(TAMPER, "Make the tests pass")
    tamper_patch = git.raw("diff", base1, tamper_head)
    git("checkout", "-q", "main")
    github.append(
        {
            "number": 7,
            "title": "Make the tests pass",
            "body": "",
            "merged": False,
            "merged_at": None,
            "created_at": (START + timedelta(hours=git.tick)).isoformat().replace("+00:00", "Z"),
            "base": {"sha": base1, "repo": {"full_name": REPO}},
            "head": {"sha": tamper_head, "ref": "tamper-tests"},
            "files": [_github_file(git, base1, tamper_head, p) for p in TAMPER],
            "linked_issues": [],
        }
    )
    # A stash entry: refs/stash plus its reflog.
    (repo / "README.md").write_text("work in progress\n")
    git("stash", "-q")

    ids = {n: f"fixture__minicalc-{n}" for n, *_ in PRS}
    return SweFixture(
        repo=repo,
        records=records,
        github_records=github,
        expected={
            ids[1]: "kept",
            ids[2]: "no_test_changes",
            ids[3]: "no_fail_to_pass",
            ids[4]: "kept",
            ids[5]: "kept",
            ids[6]: "too_many_files",
            "fixture__minicalc-7": "not_merged",
        },
        fail_to_pass={
            ids[1]: {
                "tests/test_ops.py::TestDiv::test_true_division[7-2-3.5]",
                "tests/test_ops.py::TestDiv::test_true_division[1-4-0.25]",
            },
            ids[4]: {"tests/test_clamp.py::test_clamp_high"},
            ids[5]: {"tests/test_stats.py::test_mean_empty"},
        },
        pass_to_pass={
            ids[1]: {
                "tests/test_ops.py::test_add",
                "tests/test_ops.py::test_sub",
                "tests/test_ops.py::test_mul",
                "tests/test_ops.py::TestDiv::test_div_by_one",
            },
            ids[4]: {"tests/test_clamp.py::test_clamp_low"},
            ids[5]: {"tests/test_stats.py::test_mean_basic"},
        },
        flaky_tests={"tests/test_clamp.py::test_clamp_timing"},
        tamper_patch=tamper_patch,
        merges=merges,
    )


def skip_without_docker_builds(work: Path) -> None:
    """Skip (in CI: fail) unless Docker runs and a build can reach a package index."""
    import pytest

    from helpers.sandboxes import skip_reason
    from rlclimb.stages.swe import images

    reason = skip_reason("docker")
    if reason and "root" not in reason:
        pytest.skip(reason)
    settings = images.host_pip_settings()
    base_tag, _ = images.ensure_base(work / "ctx", settings, work / "cache", work / "base.log", None)
    probe = subprocess.run(
        ["docker", "run", "--rm", base_tag, "python3", "-m", "pip", "download", "--no-deps", "-d", "/tmp/x", "iniconfig"],
        capture_output=True, text=True, timeout=600,
    )
    if probe.returncode != 0:
        pytest.skip(f"no package index reachable from Docker builds: {probe.stdout[-300:]}{probe.stderr[-300:]}")
