"""`bwrap` backend (bubblewrap): new user, pid, network, ipc and uts namespaces; a read-only
system; the scratch quota's dirs bound read-write at /work, /tmp and /dev/shm. Fast (a few tens of ms).

The system is the bootstrapped base rootfs when present (`image.py`: the same python3 and g++
as the Docker image), else the host's /usr, read-only. The host's /root, /home, /tmp and /etc
are not visible either way.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .base import Files, Limits, Sandbox, Session
from .hostproc import HostSession, limit_wrapper, shell_argv
from .image import rootfs_dir, rootfs_ready

ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/work",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}
# Host files a compiler or interpreter needs when the host's /usr is the system.
HOST_ETC = [
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/localtime",
]


def system_args(root: Path | None) -> list[str]:
    if root is not None:
        return ["--ro-bind", str(root), "/"]
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in HOST_ETC:
        args += ["--ro-bind-try", path, path]
    return args


@functools.cache
def bwrap_works() -> bool:
    """bwrap is installed and may create namespaces here (as a throwaway uid when root)."""
    if not shutil.which("bwrap"):
        return False
    from .hostproc import new_uid, release_uid

    uid = new_uid()
    prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"] if uid else []
    try:
        r = subprocess.run(
            [*prefix, "bwrap", "--unshare-all", *system_args(None), "--", "true"],
            capture_output=True,
            timeout=10,
        )
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        release_uid(uid)


class BwrapSession(HostSession):
    backend = "bwrap"

    def __init__(
        self, files: Files | None, limits: Limits, network: bool, root: Path | None
    ) -> None:
        super().__init__(files, limits, network)
        self.root = root

    def argv(
        self, command: str | Sequence[str], limits: Limits
    ) -> tuple[list[str], dict[str, str]]:
        argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
        if self.network:
            argv.append("--share-net")
        argv += system_args(self.root)
        # /work, /tmp and /dev/shm: the scratch quota's work/, tmp/ and shm/ (one bound for all).
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--bind", str(self.scratch.shm_path), "/dev/shm"]
        argv += ["--bind", str(self.scratch.tmp_path), "/tmp"]
        argv += ["--bind", str(self.dir), "/work", "--chdir", "/work", "--clearenv"]
        for key, value in ENV.items():
            argv += ["--setenv", key, value]
        # bwrap makes its own network namespace: `unshare -n` in front would only cost time.
        wrapper = limit_wrapper(limits, self.uid, network=True)
        return wrapper + argv + ["--", *shell_argv(command)], {"PATH": ENV["PATH"]}


class BwrapSandbox(Sandbox):
    name = "bwrap"

    def __init__(self, limits: Limits | None = None, root: str | Path | None = "auto") -> None:
        """`root`: a rootfs directory, "auto" (the bootstrapped base when present) or None (host /usr)."""
        super().__init__(limits)
        if root == "auto":
            root = rootfs_dir() if rootfs_ready() else None
        self.root = Path(root) if root else None

    def session(
        self, *, files: Files | None = None, limits: Limits | None = None, network: bool = False
    ) -> Session:
        return BwrapSession(files, limits or self.limits, network, self.root)

    def describe(self) -> str:
        return f"bwrap (root: {self.root or 'host /usr'})"
