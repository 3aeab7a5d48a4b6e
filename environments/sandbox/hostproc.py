"""Running a sandboxed command as a host process: shared by the `process` and `bwrap` backends.

Limits come from util-linux wrappers exec'd in front of the command (no `preexec_fn`, which is
unsafe with the threads that checking many solutions concurrently uses):
`unshare -n` (new network namespace), `setpriv` (drop to a throwaway uid, when root) and
`prlimit` (CPU, address space, processes, file size). Each run gets its own uid from a high
range, so RLIMIT_NPROC bounds a fork bomb to this run alone, and every leftover process can be
found and killed by uid afterwards. The scratch space is a `Scratch` (scratch.py): the host
reads and writes it only through directory fds, never through a path the program could change.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .base import Files, Limits, Result, Session, Status, classify
from .scratch import Scratch

UID_BASE, UID_SPAN = 3_000_000, 1_000_000  # outside any real user's range
IS_ROOT = os.geteuid() == 0
_lock = threading.Lock()
_uids_in_use: set[int] = set()


def new_uid() -> int | None:
    if not IS_ROOT:
        return None
    with _lock:
        while True:
            uid = UID_BASE + random.randrange(UID_SPAN)
            if uid not in _uids_in_use:
                _uids_in_use.add(uid)
                return uid


def release_uid(uid: int | None) -> None:
    with _lock:
        _uids_in_use.discard(uid)


def pids_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid != uid:
                    continue
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2][1:2]
            except OSError:
                continue
            if state != b"Z":  # zombies wait for their reaper (not us), and hold nothing
                pids.append(int(entry.name))
    return pids


def kill_uid(uid: int | None, rounds: int = 50) -> int:
    """SIGKILL every process of `uid` until none is left (a fork bomb keeps forking meanwhile)."""
    if uid is None:
        return 0
    killed = 0
    for _ in range(rounds):
        pids = pids_of_uid(uid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    return killed


def limit_wrapper(
    limits: Limits, uid: int | None, network: bool, address_space: bool = True
) -> list[str]:
    """The argv prefix that applies limits, network isolation and the uid drop."""
    argv: list[str] = []
    if not network and IS_ROOT and shutil.which("unshare"):
        argv += ["unshare", "--net"]
    if uid is not None:
        # no_new_privs: the host's setuid binaries (mount, passwd, ...) give the uid nothing.
        argv += [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--no-new-privs",
            "--",
        ]
    cpu = math.ceil(limits.cpu_limit_s)
    argv += ["prlimit", f"--cpu={cpu}:{cpu + 1}", f"--fsize={limits.file_bytes}", "--core=0"]
    if address_space:
        # Address space is a rough memory bound (no cgroup needed); a runtime's reservations count
        # too, so allow a little headroom over the stated limit.
        argv.append(f"--as={(limits.memory_mb + 64) << 20}")
    if uid is not None:
        argv.append(f"--nproc={limits.processes}")
    return argv + ["--"]


class _Capped:
    """Drains a pipe, keeping at most `cap` bytes; calls `on_exceed` once when more arrives."""

    def __init__(self, stream, cap: int, on_exceed) -> None:
        self.data = bytearray()
        self.exceeded = False
        self._stream, self._cap, self._on_exceed = stream, cap, on_exceed
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while chunk := self._stream.read1(65536):
            room = self._cap - len(self.data)
            if len(chunk) > room:
                self.data += chunk[:room]
                if not self.exceeded:
                    self.exceeded = True
                    self._on_exceed()
                break
            self.data += chunk
        self._stream.close()

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def run_host(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    limits: Limits,
    uid: int | None,
    stdin: str | bytes | None,
    scratch: Scratch | None = None,
) -> Result:
    """Run argv (already wrapped), enforcing wall time and output size; kill leftovers."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        return Result(Status.ERROR, None, detail=f"cannot start {argv[0]}: {e}")

    def kill() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        kill_uid(uid, rounds=3)

    out = _Capped(proc.stdout, limits.output_bytes, kill)
    err = _Capped(proc.stderr, limits.output_bytes, kill)
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else stdin

        def feed() -> None:
            try:
                proc.stdin.write(data)
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

        threading.Thread(target=feed, daemon=True).start()

    # wait4 in a thread: it gives the CPU time of the run alone (getrusage(CHILDREN) would mix
    # concurrent runs), and the main thread can time out on it.
    waited: dict[str, object] = {}

    def wait() -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        waited["status"], waited["usage"] = status, usage

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(limits.wall_s)
    timed_out = waiter.is_alive()
    if timed_out:
        kill()
        waiter.join()
    wall = time.monotonic() - t0
    proc.returncode = exit_code = os.waitstatus_to_exitcode(waited["status"])
    # Leftover background processes (same uid), then the pipes they may still hold open.
    kill_uid(uid)
    out.thread.join(2)
    err.thread.join(2)
    usage = waited["usage"]
    cpu = usage.ru_utime + usage.ru_stime
    stderr = err.text()
    status, detail = classify(
        exit_code,
        timed_out=timed_out,
        output_exceeded=out.exceeded or err.exceeded,
        disk_full=scratch is not None and exit_code != 0 and scratch.full(),
        stderr=stderr,
    )
    # SIGKILL after using up the CPU limit: the hard RLIMIT_CPU (soft + 1 s) fired.
    if status == Status.RE and exit_code == -signal.SIGKILL and cpu >= limits.cpu_limit_s:
        status, detail = Status.TLE, "CPU time limit"
    return Result(status, exit_code, out.text(), stderr, wall, cpu, detail=detail)


class HostSession(Session):
    """A scratch dir on the host; each command is a fresh process tree, killed when it ends."""

    backend = "process"

    def __init__(self, files: Files | None, limits: Limits, network: bool) -> None:
        super().__init__(limits, network)
        self.uid = new_uid()
        try:
            self.scratch = Scratch(self.uid, limits.disk_bytes, limits.disk_files)
        except Exception:
            release_uid(self.uid)
            raise
        self.dir = self.scratch.path  # the working dir (Popen cwd, bind source); root-owned way in
        try:
            self.write_files(files or {})
        except Exception:  # a bad file name: nothing stays behind
            self.close()
            raise

    def write_files(self, files: Files) -> None:
        self.scratch.write(files)

    def read_files(self, patterns: Sequence[str]) -> dict[str, bytes]:
        return self.scratch.read(patterns, self.limits.file_bytes)

    def argv(
        self, command: str | Sequence[str], limits: Limits
    ) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def run(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | bytes | None = None,
        limits: Limits | None = None,
    ) -> Result:
        limits = limits or self.limits
        argv, env = self.argv(command, limits)
        return run_host(
            argv,
            cwd=self.dir,
            env=env,
            limits=limits,
            uid=self.uid,
            stdin=stdin,
            scratch=self.scratch,
        )

    def close(self) -> None:
        kill_uid(self.uid)
        release_uid(self.uid)
        self.scratch.close()


def shell_argv(command: str | Sequence[str]) -> list[str]:
    return ["sh", "-c", command] if isinstance(command, str) else list(command)
