"""`process` backend: a host subprocess with rlimits, a throwaway uid and no network.

The weakest backend, for machines with neither Docker nor bubblewrap: it sees the host's
filesystem (a throwaway uid cannot read private files such as /root, but can read world-readable
ones) and its memory bound is the address-space rlimit.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Files, Limits, Sandbox, Session
from .hostproc import HostSession, limit_wrapper, shell_argv

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class ProcessSession(HostSession):
    backend = "process"

    def argv(
        self, command: str | Sequence[str], limits: Limits
    ) -> tuple[list[str], dict[str, str]]:
        env = {
            "PATH": SYSTEM_PATH,
            "HOME": str(self.dir),
            "TMPDIR": str(self.dir),
            "LANG": "C.UTF-8",
        }
        return limit_wrapper(limits, self.uid, self.network) + shell_argv(command), env


class ProcessSandbox(Sandbox):
    name = "process"

    def session(
        self, *, files: Files | None = None, limits: Limits | None = None, network: bool = False
    ) -> Session:
        return ProcessSession(files, limits or self.limits, network)
