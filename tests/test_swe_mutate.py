"""Bug candidates for synthetic SWE tasks: every mutation kind, exact text elsewhere, git-appliable
diffs whose inverse (the gold patch) restores the original."""

from __future__ import annotations

import subprocess

import pytest

from rlclimb.stages.swe.mutate import KINDS, candidates

SOURCE = '''"""Small helpers."""
LIMIT = 10  # module level: never mutated


def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    if x < lo:  # below
        return lo
    if x > hi:
        return hi
    return x


class Window:
    def __init__(self):
        self.items = []
        self.size = 0

    def push(self, item):
        self.items.append(item)
        self.size += 1

    def sums(self, seq, k):
        return [sum(seq[i:i + k]) for i in range(len(seq) - k)]

    def ratio(self, a, b):
        return divmod(a, b) if a and b else None
'''


def test_every_kind_is_found_only_inside_functions():
    found = list(candidates(SOURCE, "pkg/util.py"))
    assert {m.kind for m in found} == set(KINDS)
    assert all(m.function for m in found)
    assert not any(m.line == 2 for m in found)  # LIMIT = 10 stays
    assert not any(m.kind == "remove_statement" and m.before.startswith('"""') for m in found)
    for m in found:
        compile(m.mutated, m.path, "exec")
        assert m.mutated != SOURCE
        # one site changed: every other line is byte-identical (comments, spacing)
        changed = [x for x in m.bug_diff.splitlines()[3:] if x[:1] in "+-"]
        assert len(changed) <= 3, (m.kind, changed)
        assert "# below" in m.mutated or m.kind == "remove_condition"


def test_a_kind_filter_and_the_recipe():
    swaps = list(candidates(SOURCE, "pkg/util.py", kinds=("swap_arguments",)))
    assert [m.before for m in swaps] == ["divmod(a, b)"] and swaps[0].after == "divmod(b, a)"
    assert swaps[0].recipe() == {"kind": "swap_arguments", "path": "pkg/util.py", "line": 27,
                                 "function": "Window.ratio", "before": "divmod(a, b)", "after": "divmod(b, a)"}


def _git(repo, *args, stdin=None):
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, text=True, capture_output=True, check=True)


@pytest.mark.parametrize("kind", KINDS)
def test_bug_and_fix_diffs_apply_with_git(tmp_path, kind):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "util.py").write_text(SOURCE)
    _git(repo, "init", "-q")
    m = next(candidates(SOURCE, "pkg/util.py", kinds=(kind,)))
    _git(repo, "apply", "-", stdin=m.bug_diff)
    assert (repo / "pkg" / "util.py").read_text() == m.mutated
    _git(repo, "apply", "-", stdin=m.fix_diff)
    assert (repo / "pkg" / "util.py").read_text() == SOURCE


def test_a_file_without_final_newline_round_trips(tmp_path):
    src = "def f(a, b):\n    return a - b"
    m = next(candidates(src, "f.py", kinds=("operator",)))
    assert m.mutated == "def f(a, b):\n    return a + b"
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "f.py").write_text(src)
    _git(repo, "init", "-q")
    _git(repo, "apply", "-", stdin=m.bug_diff)
    assert (repo / "f.py").read_text() == m.mutated


def test_no_string_arithmetic_and_no_chained_comparisons():
    src = 'def f(a, b):\n    return ("x" + a, 0 < a < b)\n'
    kinds = [(m.kind, m.before) for m in candidates(src, "f.py")]
    assert ("operator", '"x" + a') not in kinds and not any("<" in before for _, before in kinds)


def test_an_elif_is_not_flattened():
    src = "def f(x):\n    if x > 1:\n        return 2\n    elif x > 0:\n        return 1\n    return 0\n"
    found = list(candidates(src, "f.py", kinds=("remove_condition",)))
    assert found == []  # the `if` has an else branch (the elif); the elif sits where no statement may
