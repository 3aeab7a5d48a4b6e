"""`process` backend: a host subprocess with rlimits, a throwaway uid and no network.

The weakest backend, for machines with neither Docker nor bubblewrap: it sees the host's
filesystem (a throwaway uid cannot read private files such as /root, but can read world-readable
ones: keep datasets with expected outputs unreadable to others, or use bwrap/docker) and its
memory bound is the address-space rlimit. As root it runs in new mount and IPC namespaces; /tmp
and /dev/shm are the scratch quota's `tmp/` and `shm/` (private, bounded, removed with the
session), with the scratch dir bound back at its own path inside that /tmp.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from .base import Files, Limits, Sandbox, Session
from .hostproc import IS_ROOT, HostSession, limit_wrapper, shell_argv

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class ProcessSession(HostSession):
    backend = "process"

    def __init__(self, files: Files | None, limits: Limits, network: bool) -> None:
        super().__init__(files, limits, network)
        self.private_tmp = IS_ROOT and shutil.which("unshare") is not None
        if self.private_tmp and self.dir.is_relative_to("/tmp"):
            self.scratch.mountpoint_in_tmp(self.dir.relative_to("/tmp").parts)

    def argv(
        self, command: str | Sequence[str], limits: Limits
    ) -> tuple[list[str], dict[str, str]]:
        if not self.private_tmp:
            env = {"PATH": SYSTEM_PATH, "HOME": str(self.dir), "TMPDIR": str(self.dir)}
            return limit_wrapper(limits, self.uid, self.network) + shell_argv(command), env
        # As root in a new mount namespace, before the uid drop: /dev/shm first (binding over /tmp
        # hides the scratch paths), then /tmp, then the working dir back at its own path onto the
        # root-owned mountpoint made for it (from the cwd the mount inherited; -c: as is).
        private = [
            "unshare",
            "--mount",
            "--ipc",  # SysV shm and message queues die with the command, not with the host
            *([] if self.network else ["--net"]),
            "--",
            "sh",
            "-c",
            'mount -n --bind "$1" /dev/shm && mount -n --bind "$2" /tmp && '
            'mount -n -c --bind /proc/self/cwd "$3" && shift 3 && exec "$@"',
            "sh",
            str(self.scratch.shm_path),
            str(self.scratch.tmp_path),
            str(self.dir),
        ]
        env = {"PATH": SYSTEM_PATH, "HOME": str(self.dir), "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
        wrapper = limit_wrapper(limits, self.uid, network=True)  # the network is unshared above
        return private + wrapper + shell_argv(command), env


class ProcessSandbox(Sandbox):
    name = "process"

    def session(
        self, *, files: Files | None = None, limits: Limits | None = None, network: bool = False
    ) -> Session:
        return ProcessSession(files, limits or self.limits, network)
