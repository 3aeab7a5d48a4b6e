"""The sandbox interface: run untrusted commands with limits, files in and out, and a verdict.

A `Sandbox` runs one command in a fresh sandbox (`run`) or opens a `Session` (many commands
sharing one scratch directory, and for Docker one live container) for multi-step episodes.
Every run returns a `Result` whose `status` says what happened:

    OK       exited 0                        RE    exited non-zero (or died of a signal)
    TLE      wall or CPU time limit hit      MLE   memory limit hit (OOM kill, MemoryError, bad_alloc)
    OLE      stdout/stderr (or a file) over the output limit: output truncated, program killed;
             or the scratch quota (`disk_bytes`, `disk_files`) full when the program failed
    BLOCKED  failed on a denied operation (network unreachable, permission denied, read-only fs,
             process limit): the sandbox refused something the program tried
    ERROR    the sandbox itself failed (engine down, bad setup): says nothing about the program
"""

from __future__ import annotations

import re
import signal
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "OK"
    RE = "RE"
    TLE = "TLE"
    MLE = "MLE"
    OLE = "OLE"
    BLOCKED = "BLOCKED"
    ERROR = "ERROR"


@dataclass(frozen=True)
class Limits:
    wall_s: float = 10.0
    cpu_s: float | None = None  # None: same as wall_s
    memory_mb: int = 512
    processes: int = 64  # tasks (processes + threads) alive at once
    output_bytes: int = 1 << 20  # per stream (stdout, stderr); more is truncated -> OLE
    file_bytes: int = 64 << 20  # largest file a program may write in its scratch dir
    disk_bytes: int = 256 << 20  # all it may write: scratch dir, /tmp, /dev/shm together (OLE)
    disk_files: int = 10_000  # files and directories there, at most
    cpus: float = 1.0  # CPU share (docker nano_cpus)

    def with_(self, **changes: Any) -> Limits:
        return replace(self, **changes)

    @property
    def cpu_limit_s(self) -> float:
        return self.cpu_s if self.cpu_s is not None else self.wall_s


@dataclass
class Result:
    status: Status
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    cpu_s: float | None = None
    files_out: dict[str, bytes] = field(default_factory=dict)
    detail: str = ""  # why the status is what it is, in a few words

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def summary(self) -> str:
        return f"{self.status} exit={self.exit_code} {self.wall_s:.2f}s {self.detail}".strip()


Files = Mapping[str, str | bytes]

# Messages that mean the program tried something the sandbox denies (checked on failed runs only).
_BLOCKED = re.compile(
    r"Network is unreachable|Connection refused|Temporary failure in name resolution|Name or service not known|"
    r"Permission denied|Operation not permitted|Read-only file system|"
    r"Resource temporarily unavailable|Cannot fork|can't fork|fork: retry",
    re.I,
)
_SHELL_SIGNALS = {
    -signal.SIGXCPU,
    -signal.SIGXFSZ,
    -signal.SIGKILL,
    -signal.SIGSEGV,
    -signal.SIGABRT,
}
_MEMORY = re.compile(r"MemoryError|std::bad_alloc|Cannot allocate memory|out of memory", re.I)


def classify(
    exit_code: int | None,
    *,
    timed_out: bool = False,
    output_exceeded: bool = False,
    oom: bool = False,
    disk_full: bool = False,
    stderr: str = "",
) -> tuple[Status, str]:
    """The status of a finished run. `exit_code` < 0 means killed by signal -exit_code.

    Kernel facts decide first: output caps (counted by the host), the wall clock (host), the
    signal the process died of, `oom` (the kernel's OOM kill, where the backend can see it: the
    Docker container's memory cgroup) and `disk_full` (the scratch quota's statvfs). Error text
    is a fallback only where the kernel reports nothing: an allocation refused under an
    address-space rlimit (MemoryError, bad_alloc -> MLE) and denied operations (-> BLOCKED). A
    program can fake those two by printing the message, which changes only its status, never
    whether it passes a test."""
    if output_exceeded:
        return Status.OLE, "output limit exceeded"
    if timed_out:
        return Status.TLE, "wall time limit"
    if exit_code is not None and 128 < exit_code < 160 and -(exit_code - 128) in _SHELL_SIGNALS:
        exit_code = -(exit_code - 128)  # `sh -c` reports a child's death by signal N as 128 + N
    if exit_code == -signal.SIGXCPU:
        return Status.TLE, "CPU time limit"
    if exit_code == -signal.SIGXFSZ:
        return Status.OLE, "file size limit"
    if exit_code == 0:
        return Status.OK, ""
    if disk_full:
        return Status.OLE, "disk quota exhausted"
    if oom or _MEMORY.search(stderr[-4000:]):
        return Status.MLE, "memory limit"
    if (m := _BLOCKED.search(stderr[-4000:])) is not None:
        return Status.BLOCKED, m.group(0)
    if exit_code is not None and exit_code < 0:
        return (
            Status.RE,
            f"killed by {signal.Signals(-exit_code).name}"
            if -exit_code in signal.valid_signals()
            else "killed",
        )
    return Status.RE, f"exit code {exit_code}"


class Session(ABC):
    """Many commands sharing one scratch dir (`/work`, the working directory)."""

    def __init__(self, limits: Limits, network: bool) -> None:
        self.limits = limits
        self.network = network

    @abstractmethod
    def run(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | bytes | None = None,
        limits: Limits | None = None,
    ) -> Result:
        """Run `command` (a shell string for `sh -c`, or an argv list) in the scratch dir."""

    @abstractmethod
    def write_files(self, files: Files) -> None: ...

    @abstractmethod
    def read_files(self, patterns: Sequence[str]) -> dict[str, bytes]: ...

    @abstractmethod
    def close(self) -> None:
        """Kill everything the session started and delete its scratch dir."""

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sandbox(ABC):
    name: str = ""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    @abstractmethod
    def session(
        self, *, files: Files | None = None, limits: Limits | None = None, network: bool = False
    ) -> Session: ...

    def run(
        self,
        command: str | Sequence[str],
        *,
        files: Files | None = None,
        limits: Limits | None = None,
        network: bool = False,
        stdin: str | bytes | None = None,
        outputs: Sequence[str] = (),
    ) -> Result:
        """One command in a fresh sandbox; `outputs` are glob patterns of files to bring back."""
        try:
            session = self.session(files=files, limits=limits, network=network)
        except Exception as e:  # engine down, image missing, scratch dir unusable
            return Result(Status.ERROR, None, detail=f"{self.name}: {type(e).__name__}: {e}"[:500])
        with session:
            result = session.run(command, stdin=stdin)
            if outputs:
                result.files_out = session.read_files(outputs)
            return result

    def describe(self) -> str:
        return self.name
