"""Synthetic SWE tasks from an environment that built: inject a bug, keep it when the tests catch
it deterministically, and bake it into an image whose history does not show it.

Everything runs in the same sandbox as real tasks (`environments.swe.grading`: a fresh container
per run from the instance image, results from JUnit XML only):
- `read_sources`: the repository's tracked files, read in a container of the image.
- `revert_candidate`: the inverse of a past fix's code diff, as a forward diff at this commit.
- `import_error`: does the mutated module still import (a mutation that breaks import makes
  every test error, a task about nothing)?
- `catch`: run the whole suite with the bug `trials` times; FAIL_TO_PASS are the tests that pass
  on the clean code every time and fail with the bug every time; a test that fails only
  sometimes makes the candidate flaky (dropped when no deterministic failure is left).
- `bake`: an image FROM the instance image with the bug applied and the repository reduced to
  one parentless commit (no diff, reflog, stash or object shows the clean code), then checked
  by `history_leak`.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shlex
import tarfile
from dataclasses import dataclass

from rlclimb.environments.sandbox import Limits
from rlclimb.environments.swe.grading import (
    HOST_DIR,
    GradingError,
    TestRun,
    language_of,
    open_container,
    put_files,
    run_tests,
)

READ_LIMITS = Limits(wall_s=120.0, output_bytes=64 << 20, memory_mb=1024)
MAX_SOURCE_BYTES = 256 << 10  # a module larger than this is generated code, not a task
# Words in added lines that tell the agent where the bug is.
_TELLTALE = re.compile(r"\b(bug|bugs|buggy|fix|fixme|mutat\w*|wrong|broken|typo|hack|xxx|todo)\b", re.I)

_LIST = r"""
import json, os, subprocess, sys
files = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout.split(b"\0")
out = {}
for raw in files:
    path = raw.decode("utf-8", "replace")
    if not path.endswith(".py") or not os.path.isfile(path) or os.path.islink(path):
        continue
    if os.path.getsize(path) > int(sys.argv[1]):
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        out[path] = f.read()
head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
sys.stdout.write(json.dumps({"head": head, "files": out}))
"""


@dataclass
class Sources:
    code: dict[str, str]  # path -> text of non-test Python files
    tests: list[str]  # test files (the suite the synthetic task runs)
    head: str  # the commit /testbed is at


def read_sources(image: str, instance: dict) -> Sources:
    """The tracked Python files of /testbed in `image`, split by the language's test-path rule."""
    lang = language_of(instance)
    session = open_container(image, READ_LIMITS)
    try:
        put_files(session, {"list.py": _LIST.encode()})
        r = session.run(f"cd /testbed && python3 {HOST_DIR}/list.py {MAX_SOURCE_BYTES}", limits=READ_LIMITS)
    finally:
        session.close()
    if not r.ok:
        raise GradingError(f"cannot list the sources of {image}: {r.summary()} {r.stderr[-300:]}")
    listing = json.loads(r.stdout)
    files = listing["files"]
    tests = sorted(p for p in files if lang.is_test_path(p) and not p.endswith("conftest.py")
                   and p.rsplit("/", 1)[-1].startswith("test"))
    code = {p: t for p, t in files.items() if not lang.is_test_path(p) and not _is_tooling(p)}
    return Sources(code, tests, listing["head"])


def _is_tooling(path: str) -> bool:
    """Build scripts, docs and examples: bugs there are not the library's."""
    top = path.split("/", 1)[0]
    return path in ("setup.py", "conftest.py", "noxfile.py", "tasks.py") or top in {
        "docs", "doc", "examples", "benchmarks", "bench", "scripts", "tools", ".github"}


def _in_container(image: str, files: dict[str, bytes], script: str) -> tuple[bool, str]:
    session = open_container(image, READ_LIMITS)
    try:
        put_files(session, files)
        r = session.run(f"cd /testbed && export HOME=/root GIT_CONFIG_NOSYSTEM=1; {script}", limits=READ_LIMITS)
    finally:
        session.close()
    return r.ok, r.stdout + r.stderr


def revert_candidate(image: str, code_patch: str) -> str | None:
    """The inverse of a past fix's code diff applied at this image's commit, as the forward diff
    it makes (None when it no longer applies: the code moved on)."""
    ok, out = _in_container(
        image, {"fix.diff": code_patch.encode()},
        f"git apply -R --whitespace=nowarn {HOST_DIR}/fix.diff >/dev/null 2>&1 || exit 3; git diff",
    )
    return out if ok and out.strip() else None


def fix_of(image: str, bug_diff: str) -> str:
    """The diff that undoes `bug_diff` at this image's commit, as exact `git diff` output ("" when
    the bug does not apply)."""
    ok, out = _in_container(
        image, {"bug.diff": bug_diff.encode()},
        "git update-index -q --refresh; "
        f"git apply --index --whitespace=nowarn {HOST_DIR}/bug.diff && git diff --cached -R",
    )
    return out if ok else ""


def module_name(path: str) -> str:
    """`src/pkg/mod.py` -> `pkg.mod`; `pkg/__init__.py` -> `pkg` (the src layout's prefix dropped)."""
    parts = path.removesuffix(".py").split("/")
    if parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def import_error(image: str, bug_diff: str, path: str) -> str | None:
    """Why the mutated module does not import (None: it does)."""
    mod = module_name(path)
    if not mod:
        return None
    ok, out = _in_container(
        image, {"bug.diff": bug_diff.encode()},
        f"git apply --whitespace=nowarn {HOST_DIR}/bug.diff || exit 3; "
        f"PYTHONDONTWRITEBYTECODE=1 python3 -c {shlex.quote(f'import importlib; importlib.import_module({mod!r})')}",
    )
    return None if ok else (out.strip().splitlines() or ["import failed"])[-1][:300]


def telltale(bug_diff: str, max_lines: int) -> str | None:
    """Why the bug is trivially visible in its diff (None: it is not)."""
    changed = [x for x in bug_diff.splitlines() if x[:1] in "+-" and not x.startswith(("+++", "---"))]
    if len(changed) > max_lines:
        return f"diff changes {len(changed)} lines (> {max_lines})"
    added = [x[1:] for x in changed if x.startswith("+")]
    for line in added:
        if (m := _TELLTALE.search(line)) and "#" in line[: m.end()]:
            return f"an added comment says {m.group(0)!r}"
    return None


def suite_instance(instance: dict, tests: list[str]) -> dict:
    """The instance as the synthetic task sees it: no test diff, the whole suite as its tests."""
    return {**instance, "test_patch": "", "test_files": tests, "FAIL_TO_PASS": None, "PASS_TO_PASS": None}


def baseline(image: str, instance: dict, trials: int) -> tuple[set[str], list[str]]:
    """Tests that pass on the clean code in every trial (flaky ones are never a task's signal),
    and the test files they come from. A file that fails to collect on the clean code (a
    benchmark needing a plugin the image lacks) would interrupt the whole session: it is left
    out and the suite run again once without it."""
    tests = list(instance.get("test_files") or [])
    runs = [run_tests(image, instance, patch="")]
    broken = _uncollectable(runs[0], tests)
    if broken:
        tests = [t for t in tests if t not in broken]
        instance = {**instance, "test_files": tests}
        runs = [run_tests(image, instance, patch="")]
    runs += [run_tests(image, instance, patch="") for _ in range(max(1, trials) - 1)]
    if runs[0].error or not runs[0].ran:
        raise GradingError(f"the clean suite gives no results: {runs[0].error or runs[0].setup_error}")
    if not any(s == "passed" for s in runs[0].statuses.values()):
        raise GradingError(f"no test passes on the clean code ({len(runs[0].statuses)} ran)")
    passing = {t for t, s in runs[0].statuses.items() if all(r.statuses.get(t) == "passed" for r in runs)}
    return passing, tests


def _uncollectable(run: TestRun, tests: list[str]) -> set[str]:
    """Test files whose only result is a collection error (pytest's JUnit names those by module)."""
    by_file: dict[str, set[str]] = {}
    for node, status in run.statuses.items():
        by_file.setdefault(node.split("::", 1)[0], set()).add(status)
    return {f for f in tests if by_file.get(f) == {"error"} and all(
        n.count("::") <= 1 and "." in n.split("::")[-1] for n in run.statuses if n.startswith(f + "::"))}


@dataclass
class Caught:
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    log: str  # a bugged run's output (the statement quotes its failures)
    reason: str = ""  # why not a task ("" when it is one)


def catch(image: str, instance: dict, bug_diff: str, passing: set[str], trials: int) -> Caught:
    runs = [run_tests(image, instance, patch=bug_diff) for _ in range(max(1, trials))]
    if not runs[0].ran:
        return Caught([], [], runs[0].log, f"bug_does_not_apply: {runs[0].setup_error}")
    if runs[0].error:
        return Caught([], [], runs[0].log, f"no_results: {runs[0].error}")
    failing = [{t for t in passing if r.statuses.get(t) != "passed"} for r in runs]
    always, ever = set.intersection(*failing), set.union(*failing)
    p2p = sorted(t for t in passing if t not in ever)
    if not ever:
        return Caught([], p2p, runs[0].log, "not_caught: every test still passes")
    if not always:
        return Caught([], p2p, runs[0].log, f"flaky: {len(ever)} tests fail in some trials only")
    return Caught(sorted(always), p2p, runs[0].log)


def synthetic_tag(instance: dict, bug_diff: str) -> str:
    repo = re.sub(r"[^a-z0-9_.-]+", "_", str(instance.get("repo", "repo")).lower().replace("/", "__"))
    digest = hashlib.sha256(f"{instance['image']}|{bug_diff}".encode()).hexdigest()[:12]
    return f"rlclimb/swe-synth-{repo}:{digest}"


def _dockerfile(image: str) -> str:
    # The bug is applied, caches that could hold the clean code are removed, and the history
    # becomes one parentless commit of the tracked files: no `git diff`, log, reflog, stash or
    # loose object reaches the clean code.
    steps = " && ".join([
        "cd /testbed",
        "git apply --whitespace=nowarn /tmp/bug.diff",
        "rm -f /tmp/bug.diff",
        "find . -name __pycache__ -type d -prune -exec rm -rf {} +",
        "git checkout -q --orphan rlclimb-synth",
        "git add -u",
        "git -c user.name=rlclimb -c user.email=rlclimb@localhost -c commit.gpgsign=false commit -q --no-verify -m 'Initial commit'",
        "for r in $(git for-each-ref --format='%(refname)'); do "
        "[ \"$r\" = refs/heads/rlclimb-synth ] || git update-ref -d \"$r\"; done",
        "git branch -m rlclimb-synth main",
        "git stash clear",
        "git reflog expire --expire=now --all",
        "git gc -q --prune=now",
    ])
    return f"FROM {image}\nCOPY bug.diff /tmp/bug.diff\nRUN {steps}\n"


def bake(instance: dict, bug_diff: str) -> tuple[str, str]:
    """Build (or find) the synthetic image; returns (tag, its HEAD commit)."""
    from rlclimb.environments.sandbox.docker_backend import client

    tag = synthetic_tag(instance, bug_diff)
    engine = client()
    try:
        engine.images.get(tag)
    except Exception:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in (("Dockerfile", _dockerfile(instance["image"]).encode()), ("bug.diff", bug_diff.encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        buf.seek(0)
        try:
            engine.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True, forcerm=True,
                                network_mode="none", labels={"rlclimb.synthetic": "1"})
        except Exception as e:  # docker.errors.BuildError carries the log
            raise GradingError(f"building {tag} failed: {e}"[:500]) from e
    ok, out = _in_container(tag, {}, "git rev-parse HEAD")
    if not ok:
        raise GradingError(f"{tag}: no git HEAD in /testbed: {out[-200:]}")
    return tag, out.strip().splitlines()[-1]


def history_leak(tag: str, clean_commit: str) -> str | None:
    """What in the synthetic image still reaches the clean code (None: nothing): more than one
    commit, any ref but main, a reflog or stash, the clean base commit's object, a dirty tree."""
    script = " ; ".join([
        "echo commits=$(git rev-list --all | wc -l)",
        "echo refs=$(git for-each-ref --format='%(refname)' | grep -vc '^refs/heads/main$')",
        "echo reflog=$(git reflog --all 2>/dev/null | wc -l)",
        f"git cat-file -e {shlex.quote(clean_commit)} 2>/dev/null && echo clean=1 || echo clean=0",
        "echo dirty=$(git status --porcelain --untracked-files=no | wc -l)",
    ])
    ok, out = _in_container(tag, {}, script)
    facts = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    expected = {"commits": "1", "refs": "0", "reflog": "0", "clean": "0", "dirty": "0"}
    bad = [f"{k}={facts.get(k)}" for k, v in expected.items() if facts.get(k, "").strip() != v]
    return ", ".join(bad) if bad or not ok else None
