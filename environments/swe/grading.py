"""Grading SWE instances: run an instance's tests in a fresh container with a patch applied, and
turn the results into the grading signal (FAIL_TO_PASS / PASS_TO_PASS) and its verification.

Every run is a fresh container from the instance image through the Docker backend (no network,
memory/CPU/pids caps, no capabilities, owner labels, removal afterwards). The host's own steps
run first, before any code under test: the patch files go in through the Docker API
(`put_archive`), every test file is reset to the base commit, the patch is applied with
`git apply`, the test files are reset again (a patch never decides what the tests are), and the
test diff is applied. The container's writable layer has no quota on overlay2 over ext4, so a
host thread measures it (lstat only, no symlink followed) and kills the container past
LAYER_MAX_BYTES / LAYER_MAX_FILES. Then the tests run; their results come only from the JUnit XML the test
command writes, read back with `get_archive` of a path the host chose, after every process of
the run was killed. The archive's own header says what is there: anything but a regular file
under the size cap (a planted symlink, a fifo, a directory, a huge file) is an error, and so is
a missing or unparsable file. Stdout is kept as a log for people, never parsed for statuses.
"""

from __future__ import annotations

import io
import os
import re
import secrets
import shlex
import tarfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rlclimb.environments.sandbox import Limits, Status

from .lang import LANGUAGES, Language

# Generous: a real project's test files under pytest on a loaded machine.
SWE_LIMITS = Limits(
    wall_s=900.0,
    memory_mb=4096,
    processes=512,
    output_bytes=2 << 20,
    file_bytes=1 << 30,
    disk_bytes=1 << 30,  # the quota'd /tmp (and /dev/shm) of the container
    disk_files=200_000,
    cpus=2.0,
)
SETUP_LIMITS = Limits(wall_s=300.0, output_bytes=1 << 20)
# The container's writable layer (/testbed edits, /root, site-packages) has no quota on overlay2
# over ext4: a host thread measures it and kills the container past these.
LAYER_MAX_BYTES = 2 << 30
LAYER_MAX_FILES = 200_000
LAYER_POLL_S = 0.5
JUNIT_MAX_BYTES = 32 << 20
HOST_DIR = "/.rlclimb"  # where the host puts patches (the container's own layer, fresh per run)
EXIT_PATCH, EXIT_TEST_PATCH = 81, 82  # the setup script's exits when a diff does not apply
# Test framework hooks a patch could use to make failing tests report passes.
FRAMEWORK_FILES = ("conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini")
_S_IFMT, _S_IFREG = 0o170000, 0o100000
_GO_MODE_TYPE = 0x8F280000  # Go fs.FileMode type bits (dir, symlink, pipe, socket, device, ...)


class GradingError(RuntimeError):
    """No grading signal: the sandbox failed or a diff does not apply (says nothing of tests)."""


@dataclass
class TestRun:
    __test__ = False  # not a pytest class

    statuses: dict[str, str]  # node id -> passed | failed | error | skipped
    log: str  # setup and test output, for people (never parsed)
    error: str = ""  # why there are no statuses ("" when the JUnit file was read)
    setup_error: str = ""  # a diff that does not apply / the sandbox failed before tests ran
    wall_s: float = 0.0

    @property
    def ran(self) -> bool:
        return not self.setup_error


@dataclass
class Verification:
    ok: bool
    reason: str
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)


# ---- diffs ---------------------------------------------------------------------------------
def diff_files(diff: str) -> list[str]:
    """Paths a unified git diff touches (both sides of renames), in order."""
    files: list[str] = []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            continue
        for prefix in ("--- a/", "+++ b/", "rename from ", "rename to "):
            if line.startswith(prefix):
                path = line[len(prefix) :].split("\t")[0]
                if path not in files:
                    files.append(path)
    return files


def language_of(instance: dict) -> Language:
    return LANGUAGES[instance.get("language") or "python"]


def files_to_run(instance: dict) -> list[str]:
    """The test files the instance's tests run from: its `test_files`, else the test diff's
    test-path Python files (conftest.py configures, it holds no tests)."""
    if instance.get("test_files"):
        return list(instance["test_files"])
    lang = language_of(instance)
    test_patch = instance.get("test_patch") or ""
    # Files the test diff deletes (`+++ /dev/null`) are not there to run.
    deleted = set(re.findall(r"(?m)^--- a/(\S+)\n\+\+\+ /dev/null", test_patch))
    return [
        f
        for f in diff_files(test_patch)
        if lang.is_test_path(f)
        and f.endswith(".py")
        and not f.endswith("conftest.py")
        and f not in deleted
    ]


def is_framework_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name in FRAMEWORK_FILES or name.endswith(".pth")


# ---- scripts -------------------------------------------------------------------------------
def _reset_lines(base: str, files: Iterable[str]) -> list[str]:
    """Each file back to its base-commit content; files the base lacks removed."""
    lines = []
    for f in files:
        q, spec = shlex.quote(f), shlex.quote(f"{base}:{f}")
        lines.append(
            f"if git cat-file -e {spec} 2>/dev/null; then git checkout -q {shlex.quote(base)} -- {q};"
            f" else rm -rf -- {q}; fi"
        )
    return lines


_GIT_ENV = [
    # The image's own git state only: no replace refs, hooks or attribute drivers of a patch.
    "export GIT_NO_REPLACE_OBJECTS=1 GIT_CONFIG_NOSYSTEM=1 HOME=/root",
    "git config --global --add safe.directory '*' 2>/dev/null || true",
]


def setup_script(
    instance: dict,
    reset: list[str],
    patch_file: str | None,
    test_patch_file: str | None,
    header: bool = True,
) -> str:
    """Reset `reset` to base, apply the patch, reset again, apply the test diff (in /testbed)."""
    base = instance["base_commit"]
    lines = ["set -u", "cd /testbed"] if header else []
    lines += [*_GIT_ENV, *_reset_lines(base, reset)]
    if patch_file:
        lines.append(
            f"git apply --whitespace=nowarn --verbose {shlex.quote(patch_file)} || exit {EXIT_PATCH}"
        )
        lines += _reset_lines(base, reset)
    if test_patch_file:
        lines.append(
            f"git apply --whitespace=nowarn --verbose {shlex.quote(test_patch_file)}"
            f" || exit {EXIT_TEST_PATCH}"
        )
    return "\n".join(lines) + "\n"


def _reset_set(instance: dict, test_files: list[str], extra: Iterable[str] = ()) -> list[str]:
    out: list[str] = []
    for f in [*diff_files(instance.get("test_patch") or ""), *test_files, *extra]:
        if f not in out:
            out.append(f)
    return out


def eval_script(instance: dict) -> str:
    """The grading steps as one bash script (stored in swebench.jsonl; run in the instance
    image after the candidate patch was applied to /testbed): reset the test files, apply the
    test diff, run the test files with JUnit XML to /tmp/junit.xml, put the test files back."""
    test_files = files_to_run(instance)
    reset = _reset_set(instance, test_files)
    test_patch = instance.get("test_patch") or ""
    delimiter = "EOF_" + secrets.token_hex(8)
    while delimiter in test_patch:
        delimiter = "EOF_" + secrets.token_hex(8)
    diff_file = "/tmp/rlclimb-test.diff"
    command = language_of(instance).test_command(test_files, "/tmp/junit.xml")
    return (
        "#!/bin/bash\nset -u\ncd /testbed\n"
        + (
            f"cat > {diff_file} <<'{delimiter}'\n{_with_newline(test_patch)}{delimiter}\n"
            if test_patch
            else ""
        )
        + setup_script(instance, reset, None, diff_file if test_patch else None, header=False)
        + f"{command}\nrc=$?\n"
        + "\n".join(_reset_lines(instance["base_commit"], reset))
        + "\nexit $rc\n"
    )


# ---- containers ----------------------------------------------------------------------------
def open_container(image: str, limits: Limits | None = None):
    """A fresh container from the instance image for grading or an episode: commands run as the
    container's root (the image's /testbed is root's) without capabilities, from /testbed; its
    main process is another user, so `kill -9 -1` after each command reaches only what the
    commands started. No network; the root filesystem is the container's own layer."""
    from rlclimb.environments.sandbox.docker_backend import DockerSession, _Warm

    limits = limits or SWE_LIMITS
    warm = _Warm.start(
        limits,
        False,
        image,
        user="65534:65534",
        read_only=False,
        working_dir="/testbed",
        environment={"HOME": "/root"},
    )
    session = DockerSession(None, limits, False, image, warm, exec_user="0:0", workdir="/testbed")
    session.layer_exceeded = ""
    _guard_layer(session)
    return session


def layer_usage(root: str, max_files: int) -> tuple[int, int]:
    """(bytes allocated, entries) under `root`, not following symlinks; stops counting entries
    past `max_files` (the caller only needs to know it is over)."""
    total, files, stack = 0, 0, [root]
    while stack and files <= max_files:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    files += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512  # allocated: a sparse file costs what it holds
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total, files


def _guard_layer(session) -> None:
    """Kill the container when its writable layer grows past the caps (checked every
    LAYER_POLL_S while the session lives; overshoot is what it writes in one interval). Where
    the engine's layer is not visible from here (a remote engine) there is no guard."""
    from rlclimb.environments.sandbox.docker_backend import client

    try:
        upper = client().api.inspect_container(session.cid)["GraphDriver"]["Data"]["UpperDir"]
    except Exception:
        return
    if not upper or not os.path.isdir(upper):
        return
    cid, max_bytes, max_files = session.cid, LAYER_MAX_BYTES, LAYER_MAX_FILES

    def watch() -> None:
        while session.cid == cid:
            used, files = layer_usage(upper, max_files)
            if used > max_bytes or files > max_files:
                session.layer_exceeded = (
                    f"container layer over its cap ({used >> 20} MB, {files} files; "
                    f"caps {max_bytes >> 20} MB, {max_files} files)"
                )
                session._kill()
                return
            time.sleep(LAYER_POLL_S)

    threading.Thread(target=watch, daemon=True, name=f"swe-layer-{cid[:12]}").start()


def put_files(session, files: dict[str, bytes]) -> None:
    """Files into the container's HOST_DIR through the engine (before anything untrusted runs)."""
    from rlclimb.environments.sandbox.docker_backend import client

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        d = tarfile.TarInfo(HOST_DIR.strip("/"))
        d.type, d.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(d)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{HOST_DIR.strip('/')}/{name}")
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
    if not client().api.put_archive(session.cid, "/", buf.getvalue()):
        raise GradingError("docker put_archive refused the patch files")


def read_file(session, path: str, max_bytes: int = JUNIT_MAX_BYTES) -> bytes:
    """A regular file out of the container through the engine, at most `max_bytes`.

    The engine resolves the path inside the container's root; what is at the path is judged
    from the archive's headers before any content is read: a symlink, directory, fifo or device
    there, or a file over the cap, raises GradingError (and nothing beyond the cap is read)."""
    from docker.errors import NotFound

    from rlclimb.environments.sandbox.docker_backend import client

    try:
        stream, stat = client().api.get_archive(session.cid, path, chunk_size=1 << 16)
    except NotFound:
        raise GradingError(f"{path}: not written") from None
    try:
        mode, size = int(stat.get("mode", 0)), int(stat.get("size", 0))
        if mode & _GO_MODE_TYPE or stat.get("linkTarget"):
            raise GradingError(f"{path}: not a regular file (mode {mode:#x})")
        if size > max_bytes:
            raise GradingError(f"{path}: {size} bytes, over the {max_bytes}-byte cap")
        data = bytearray()
        limit = max_bytes + (64 << 10)  # the content, tar headers and padding
        for chunk in stream:
            data += chunk
            if len(data) > limit:
                raise GradingError(f"{path}: archive over the {max_bytes}-byte cap")
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    with tarfile.open(fileobj=io.BytesIO(bytes(data)), mode="r:") as tar:
        members = tar.getmembers()
        if len(members) != 1 or not members[0].isreg() or members[0].size > max_bytes:
            raise GradingError(f"{path}: archive is not one regular file")
        f = tar.extractfile(members[0])
        return f.read(max_bytes + 1) if f else b""


# ---- runs ----------------------------------------------------------------------------------
def run_tests(
    image: str,
    instance: dict,
    *,
    patch: str,
    test_files: list[str] | None = None,
    reset_files: Iterable[str] = (),
    limits: Limits | None = None,
) -> TestRun:
    """`instance`'s test files in a fresh container from `image` with `patch` (may be "") and the
    test diff applied. `reset_files`: more files put back to base after the patch (the agent's
    edits to tests or test framework hooks). Sandbox failures raise GradingError; a diff that
    does not apply comes back as `setup_error`, missing/garbled results as `error`."""
    limits = limits or SWE_LIMITS
    test_files = list(test_files) if test_files is not None else files_to_run(instance)
    if not test_files:  # an empty list would run the whole suite
        raise GradingError(f"{instance.get('instance_id', '?')}: no test files to run")
    reset = _reset_set(instance, test_files, reset_files)
    lang = language_of(instance)
    junit = f"/tmp/rlclimb-junit-{secrets.token_hex(8)}.xml"
    test_patch = instance.get("test_patch") or ""
    t0 = time.monotonic()
    try:
        session = open_container(image, limits)
    except Exception as e:
        raise GradingError(f"cannot start a container from {image}: {e}"[:500]) from e
    try:
        files = {}
        if patch.strip():
            files["patch.diff"] = _with_newline(patch).encode()
        if test_patch.strip():
            files["test.diff"] = _with_newline(test_patch).encode()
        files["setup.sh"] = setup_script(
            instance,
            reset,
            f"{HOST_DIR}/patch.diff" if "patch.diff" in files else None,
            f"{HOST_DIR}/test.diff" if "test.diff" in files else None,
        ).encode()
        put_files(session, files)
        setup = session.run(f"bash {HOST_DIR}/setup.sh", limits=SETUP_LIMITS)
        log = f"$ setup\n{setup.stdout}{setup.stderr}"
        if setup.status == Status.ERROR:
            raise GradingError(f"sandbox failed during setup: {setup.detail}")
        if not setup.ok:
            what = {EXIT_PATCH: "patch", EXIT_TEST_PATCH: "test patch"}.get(setup.exit_code or 0)
            reason = f"{what} does not apply" if what else f"setup failed: {setup.summary()}"
            return TestRun({}, log, reason, reason, time.monotonic() - t0)
        command = lang.test_command(test_files, junit)
        result = session.run(
            f"export HOME=/root PYTHONDONTWRITEBYTECODE=1; {command}", limits=limits
        )
        log += f"\n$ {command}\n{result.stdout}{result.stderr}\n[{result.summary()}]"
        if session.layer_exceeded:  # the code under test filled the disk: its failure
            return TestRun({}, log, session.layer_exceeded, "", time.monotonic() - t0)
        if result.status == Status.ERROR:
            raise GradingError(f"sandbox failed during the tests: {result.detail}")
        try:
            statuses = lang.parse_results(read_file(session, junit))
        except GradingError as e:
            return TestRun({}, log, f"no test results: {e}", "", time.monotonic() - t0)
        except Exception as e:  # garbled XML, entity bombs (defusedxml), bad encodings
            return TestRun(
                {},
                log,
                f"unreadable JUnit XML: {type(e).__name__}: {e}"[:300],
                "",
                time.monotonic() - t0,
            )
        return TestRun(statuses, log, "", "", time.monotonic() - t0)
    finally:
        session.close()


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def signal_from(before: TestRun, after: TestRun) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS: failed/errored (or absent: not collected) before, passed after;
    PASS_TO_PASS: passed in both. `after` must have results."""
    f2p = [
        t for t, s in after.statuses.items() if s == "passed" and before.statuses.get(t) != "passed"
    ]
    p2p = [
        t for t, s in after.statuses.items() if s == "passed" and before.statuses.get(t) == "passed"
    ]
    return sorted(f2p), sorted(p2p)


def _check_reference(before: TestRun, after: TestRun) -> None:
    if not before.ran:
        raise GradingError(f"test diff alone: {before.setup_error}")
    if not after.ran:
        raise GradingError(f"test diff + code diff: {after.setup_error}")
    if after.error:
        raise GradingError(f"test diff + code diff: {after.error}")


def reference_signal(image: str, instance: dict) -> tuple[list[str], list[str]]:
    """(FAIL_TO_PASS, PASS_TO_PASS) at the base commit: (a) the test diff only, (b) test diff +
    the code diff. Without results in (a) (a conftest that cannot import the missing code) every
    test counts as failing there; without results in (b) there is no signal: GradingError."""
    before = run_tests(image, instance, patch="")
    after = run_tests(image, instance, patch=instance.get("patch") or "")
    _check_reference(before, after)
    return signal_from(before, after)


def verify(image: str, instance: dict, trials: int = 3) -> Verification:
    """Empty patch and gold patch, `trials` times each, each in a fresh container. A test whose
    status varies across the trials of either is flaky and dropped; F2P tests must fail with the
    empty patch and pass with the gold one every time, P2P tests pass with the gold one every
    time (others are dropped). Not ok when F2P ends up empty. Without FAIL_TO_PASS in the
    instance the candidates come from every trial's pair of runs."""
    empty_runs: list[TestRun] = []
    gold_runs: list[TestRun] = []
    try:
        for _ in range(max(1, trials)):
            empty_runs.append(run_tests(image, instance, patch=""))
            gold_runs.append(run_tests(image, instance, patch=instance.get("patch") or ""))
        if "FAIL_TO_PASS" in instance and instance["FAIL_TO_PASS"] is not None:
            f2p, p2p = _as_list(instance["FAIL_TO_PASS"]), _as_list(instance.get("PASS_TO_PASS"))
        else:  # every trial's signal: a test that passed with the gold patch in any trial is a candidate, so
            # one that passed only sometimes is found flaky below instead of missed by the first trial
            _check_reference(empty_runs[0], gold_runs[0])  # (the later trials' failures are reported below)
            f2p, p2p = [], []
            for before, after in zip(empty_runs, gold_runs, strict=True):
                f, p = signal_from(before, after)
                f2p += [t for t in f if t not in f2p]
                p2p += [t for t in p if t not in p2p]
    except GradingError as e:
        return Verification(False, str(e))
    for label, runs in (("empty patch", empty_runs), ("gold patch", gold_runs)):
        if bad := next((r for r in runs if not r.ran), None):
            return Verification(False, f"{label}: {bad.setup_error}")
    if bad := next((r for r in gold_runs if r.error), None):
        return Verification(False, f"gold patch: {bad.error}")
    flaky = sorted(
        t
        for t in set(f2p) | set(p2p)
        if len({r.statuses.get(t) for r in empty_runs}) > 1
        or len({r.statuses.get(t) for r in gold_runs}) > 1
    )
    kept_f2p = [
        t
        for t in f2p
        if t not in flaky
        and all(r.statuses.get(t) == "passed" for r in gold_runs)
        and all(r.statuses.get(t) != "passed" for r in empty_runs)
    ]
    kept_p2p = [
        t for t in p2p if t not in flaky and all(r.statuses.get(t) == "passed" for r in gold_runs)
    ]
    dropped = len(f2p) - len(kept_f2p)
    parts = [f"{len(kept_f2p)} F2P, {len(kept_p2p)} P2P over {len(gold_runs)} trials"]
    if flaky:
        parts.append(f"{len(flaky)} flaky dropped")
    if dropped - len([t for t in f2p if t in flaky]):
        parts.append(
            f"{dropped - len([t for t in f2p if t in flaky])} F2P not failing/passing as claimed"
        )
    if not kept_f2p:
        return Verification(
            False, "no FAIL_TO_PASS test left: " + "; ".join(parts), [], kept_p2p, flaky
        )
    return Verification(True, "; ".join(parts), kept_f2p, kept_p2p, flaky)


def _as_list(value: Any) -> list[str]:
    """FAIL_TO_PASS as SWE-bench stores it: a list, or a JSON string of one."""
    if value is None:
        return []
    if isinstance(value, str):
        import json

        value = json.loads(value) if value.strip() else []
    return [str(v) for v in value]
