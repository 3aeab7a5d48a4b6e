"""SWE environment: fix an issue in a repository inside a container, graded by its tests.

An episode gets a container from the instance image (no network, limits; `/testbed` at the base
commit), the tools `bash` and `str_replace_editor` bound to it, and the shared episode loop.
Grading takes the agent's final diff (`git diff` of /testbed against the base commit, new files
included), drops what it must not decide (every test file it touched and the test framework's
hooks: conftest.py, sitecustomize/usercustomize, *.pth, pytest.ini, and pyproject.toml /
setup.cfg / tox.ini when the change is to pytest's configuration, are put back to base), and
runs FAIL_TO_PASS and PASS_TO_PASS in a FRESH container with the test diff applied (the
episode's container, where the agent could have changed anything, is not used for grading).
Reward 1 iff every F2P and P2P test passes and the remaining code does not reach into pytest's
reporting (`_pytest`, report hooks, `pytest_plugins`: flagged, and unresolved unless
`reject_flagged=False`). Code under test runs inside the pytest process, so an obfuscated
monkey-patch can still evade the pattern: this is a cheap check, not a proof.

Multi-turn in training: `rollout(task, policy, budget, count_tokens)` (the own-loop protocol of
rl/episodes.py) runs the episode and keeps its final diff for the `grade` call that follows;
`run(task, policy)` does both. The prompt lists the tools and the call format. Single-turn
(`grade(task, completion)` with no rollout before it): the completion's unified diff (a ```diff
block or a bare `diff --git` text) is the patch.

Options: `image` (overrides the record's), `budget` (episode.Budget), `limits` (episode
container), `system` (prompt), `reject_flagged` (default True: a patch whose code reaches into
pytest's reporting earns 0 even when the tests pass; False for repositories that are pytest
plugins).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlclimb.environments.base import Environment, Grade
from rlclimb.environments.episode import (
    BashTool,
    Budget,
    Policy,
    Trajectory,
    approx_tokens,
    run_episode,
    tool_schemas,
)

from . import grading
from .editor import StrReplaceEditor

SYSTEM = (
    "You are a software engineer working in a repository. Use the tools to explore the code, "
    "reproduce the issue, and edit the source so that the issue is resolved. Do not change the "
    "tests. When you are done, answer without a tool call."
)
TOOL_NOTE = (
    "Call a tool by writing\n"
    '<tool_call>{{"name": NAME, "arguments": {{...}}}}</tool_call>\n'
    "and wait for its output (`bash` runs in /testbed). Tools:\n{tools}"
)
_TOOL_LISTING = json.dumps(
    [t["function"] for t in tool_schemas([BashTool(None), StrReplaceEditor(None)])], indent=1
)
EPISODE_LIMITS = grading.SWE_LIMITS.with_(wall_s=180.0, output_bytes=1 << 20)
_FENCED_DIFF = re.compile(r"```(?:diff|patch)[^\n]*\n(.*?)```", re.S)
# Code that reaches into the test framework's reporting to turn failures into passes.
_PYTEST_CODE = re.compile(
    r"^\+.*(\b_pytest\b|pytest_runtest_makereport|pytest_runtest_logreport|TestReport|"
    r"junitxml|pytest_collection_modifyitems|pytest_plugins|sys\.modules\[['\"]_?pytest)",
    re.M,
)
# pytest configuration a patch could use to load a plugin of its own (`addopts = -p mod`).
CONFIG_FILES = ("pyproject.toml", "setup.cfg", "tox.ini")
_PYTEST_CONFIG = re.compile(
    r"^[+-].*(\[tool[.:]pytest|\[pytest\]|addopts|pytest_plugins|\s-p\s)", re.M
)


def as_instance(task: Any) -> dict:
    if isinstance(task, dict):
        inst = dict(task)
    elif hasattr(task, "model_dump"):
        inst = task.model_dump()
    else:
        raise TypeError(f"not a SWE instance: {type(task).__name__}")
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        inst[key] = grading._as_list(inst.get(key))
    return inst


def extract_diff(completion: str) -> str:
    """The unified diff in a response: the last ```diff block, else from the first `diff --git`."""
    blocks = _FENCED_DIFF.findall(completion)
    if blocks:
        return blocks[-1]
    i = completion.find("diff --git ")
    return completion[i:] if i >= 0 else ""


def split_diff(diff: str) -> list[tuple[str, str]]:
    """(path, section) per file of a git diff."""
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    out = []
    for part in parts:
        if part.startswith("diff --git "):
            files = grading.diff_files(part)
            m = re.match(r"diff --git a/(\S+) b/(\S+)", part)
            out.append((files[-1] if files else (m.group(2) if m else ""), part))
    return out


@dataclass
class PatchGrade:
    resolved: bool
    statuses: dict[str, str]  # F2P + P2P node id -> status ("missing" when not reported)
    reset: list[str] = field(default_factory=list)  # the agent's files put back to base
    flags: list[str] = field(default_factory=list)
    error: str = ""
    wall_s: float = 0.0

    def detail(self) -> str:
        passed = sum(s == "passed" for s in self.statuses.values())
        bits = [
            f"{'resolved' if self.resolved else 'unresolved'}: {passed}/{len(self.statuses)} tests pass"
        ]
        if self.reset:
            bits.append(f"reset {', '.join(self.reset[:5])}")
        if self.flags:
            bits.append("flagged: " + "; ".join(self.flags))
        if self.error:
            bits.append(self.error)
        return "; ".join(bits)


def grade_patch(
    instance: dict, patch: str, image: str | None = None, *, reject_flagged: bool = True
) -> PatchGrade:
    """Grade a candidate code patch: test files, test framework hooks and pytest configuration
    it touches go back to base, the test diff is applied, F2P and P2P run in a fresh container.
    `reject_flagged`: a patch whose remaining code reaches into pytest's reporting does not
    resolve (set False for repositories that are pytest plugins themselves)."""
    instance = as_instance(instance)
    image = image or instance["image"]
    lang = grading.language_of(instance)
    sections = split_diff(patch)
    reset = [
        f for f in grading.diff_files(patch) if lang.is_test_path(f) or grading.is_framework_file(f)
    ]
    reset += [
        path
        for path, sec in sections
        if path.rsplit("/", 1)[-1] in CONFIG_FILES
        and _PYTEST_CONFIG.search(sec)
        and path not in reset
    ]
    flags = []
    if reset:
        flags.append(f"patch edits tests or test hooks ({len(reset)} files, put back to base)")
    kept = "".join(sec for path, sec in sections if path not in reset)
    reaches = bool(_PYTEST_CODE.search(kept))
    if reaches:
        flags.append("patch code reaches into pytest internals")
    wanted = instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]
    t0 = time.monotonic()
    try:
        run = grading.run_tests(image, instance, patch=kept, reset_files=reset)
    except grading.GradingError as e:
        return PatchGrade(False, {t: "missing" for t in wanted}, reset, flags, str(e))
    statuses = {t: run.statuses.get(t, "missing") for t in wanted}
    resolved = bool(wanted) and not run.error and all(s == "passed" for s in statuses.values())
    if resolved and reject_flagged and reaches:
        resolved = False
    return PatchGrade(
        resolved, statuses, reset, flags, run.setup_error or run.error, time.monotonic() - t0
    )


def container_diff(session, base_commit: str) -> str:
    """The agent's change in /testbed against the base commit (commits, staged, unstaged and new
    files), without replace refs, external diff drivers or textconv filters the agent set up."""
    script = (
        "export GIT_NO_REPLACE_OBJECTS=1 GIT_CONFIG_NOSYSTEM=1 HOME=/root "
        f"GIT_INDEX_FILE=/tmp/.rlclimb-index-{secrets.token_hex(6)}; "
        f"cd /testbed && git read-tree {base_commit} && git add -A . >/dev/null 2>&1; "
        "git diff --cached --no-ext-diff --no-textconv --no-color --binary "
        f'--src-prefix=a/ --dst-prefix=b/ {base_commit}; rc=$?; rm -f "$GIT_INDEX_FILE"; exit $rc'
    )
    r = session.run(script, limits=grading.SETUP_LIMITS.with_(output_bytes=8 << 20))
    if not r.ok:
        raise grading.GradingError(
            f"git diff in the episode container: {r.summary()} {r.stderr[-300:]}"
        )
    return r.stdout


class SWEEnvironment(Environment):
    kind = "swe"

    def __init__(self, reward=None, **options: Any) -> None:
        super().__init__(reward, **options)
        self.session = None
        self._instance: dict | None = None
        self._pending: dict[Any, str | Exception] = {}  # instance id -> final diff of a rollout

    def messages(self, task: Any) -> list[dict[str, str]]:
        inst = as_instance(task)
        user = (
            f"<uploaded_files>\n/testbed\n</uploaded_files>\nThe repository {inst.get('repo', '')} is "
            f"checked out in /testbed. Resolve this issue:\n\n<issue>\n{inst['problem_statement']}\n"
            "</issue>\n\nMake the minimal changes to non-test files in /testbed so that the issue "
            "is resolved.\n\n" + TOOL_NOTE.format(tools=_TOOL_LISTING)
        )
        return [
            {"role": "system", "content": self.options.get("system", SYSTEM)},
            {"role": "user", "content": user},
        ]

    # ---- episodes ----------------------------------------------------------------------------
    def reset(self, task: Any) -> str:
        """A fresh container for the task (closing any earlier one); the first user message."""
        self.close()
        self._instance = as_instance(task)
        image = self.options.get("image") or self._instance["image"]
        self.session = grading.open_container(image, self.options.get("limits") or EPISODE_LIMITS)
        return self.messages(task)[-1]["content"]

    @property
    def tools(self) -> list:
        if self.session is None:
            raise RuntimeError("no episode container: call reset(task) first")
        return [BashTool(self.session), StrReplaceEditor(self.session)]

    def rollout(
        self,
        task: Any,
        policy: Policy,
        budget: Budget | None = None,
        count_tokens: Callable[[str], int] = approx_tokens,
    ) -> Trajectory:
        """One whole episode in a container of its own (the trainer's own-loop protocol, see
        rl/episodes.py): the tool loop, then the final diff is kept for the `grade` call that
        follows and the container goes. One episode at a time per environment instance."""
        inst = as_instance(task)
        self.reset(inst)
        try:
            traj = run_episode(
                policy,
                self.messages(inst),
                self.tools,
                budget or self.options.get("budget"),
                count_tokens=count_tokens,
            )
            try:
                self._pending[inst.get("instance_id")] = self.final_diff()
            except grading.GradingError as e:
                self._pending[inst.get("instance_id")] = e
        finally:
            self.close()
        return traj

    def run(
        self, task: Any, policy: Policy, budget: Budget | None = None
    ) -> tuple[Trajectory, Grade]:
        """`rollout` then `grade`: the trajectory and the grade of its final diff."""
        traj = self.rollout(task, policy, budget)
        return traj, self.grade(task, traj.final_response)

    def final_diff(self) -> str:
        if self.session is None or self._instance is None:
            return ""
        return container_diff(self.session, self._instance["base_commit"])

    def grade(self, task: Any, completion: str) -> Grade:
        """After `rollout` (or with a live episode container): the episode's final diff.
        Otherwise single-turn: the unified diff in `completion`."""
        inst = as_instance(task)
        key = inst.get("instance_id")
        live = self.session is not None and self._instance is not None
        live = live and self._instance.get("instance_id") == key
        episodic = key in self._pending or live
        try:
            if key in self._pending:
                patch = self._pending.pop(key)
                if isinstance(patch, Exception):
                    raise patch
            else:
                patch = self.final_diff() if live else extract_diff(completion)
        except grading.GradingError as e:
            return Grade(0.0, True, f"no diff: {e}")
        if not episodic and not patch.strip():
            return Grade(0.0, False, "no unified diff in the response")
        result = grade_patch(
            inst,
            patch,
            self.options.get("image"),
            reject_flagged=bool(self.options.get("reject_flagged", True)),
        )
        detail = result.detail() + " " + json.dumps(result.statuses, sort_keys=True)[:1500]
        return Grade(1.0 if result.resolved else 0.0, True, detail)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
