"""A sandbox's scratch space, which the host touches only through directory fds.

The sandboxed program owns what is inside its scratch dir and may have planted symlinks, fifos,
hard links or directories where the host is about to write or read. So the host never resolves a
path inside it: every write walks from a directory fd opened before the program first ran, one
component at a time with `O_NOFOLLOW`, replaces whatever non-directory is in the way of a parent,
unlinks the target and creates it with `O_EXCL` (a planted symlink or fifo is removed, never
followed or opened); every read walks with `os.fwalk` (which does not follow symlinks) and opens
with `O_NOFOLLOW | O_NONBLOCK`, keeping only regular files with a single link. Nothing of the
program runs while the host does this (each command's processes are killed when it ends), and
`O_EXCL` would refuse a race anyway.

Layout, as root: `<base>/rlclimb-sbx-<owner>-XXXX/` (root, 0711: the program cannot rename or
replace anything on the way in) holding `fs/`, a tmpfs of `Limits.disk_bytes` and
`Limits.disk_files` inodes (nosuid, nodev) with `work/` (the program's working dir, owned by
the run's uid), `tmp/` and `shm/` (its /tmp and /dev/shm, which every backend binds there; root's,
mode 1777 like a system's /tmp). One
quota bounds everything the program can write; a full filesystem after a failed run is a kernel
fact (statvfs), reported as OLE; unmounting removes everything at once. Without root (no mount)
the scratch is a plain directory with no total quota (the documented fallback).

The dir name holds the creating process (pid namespace, pid, start time) and the run's uid, so
the scratch of a process that died without cleaning up (kill -9), and anything still running as
its uid, are found and removed by the next process that makes a scratch (`reap_orphans`).
"""

from __future__ import annotations

import ctypes
import errno
import fnmatch
import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

IS_ROOT = os.geteuid() == 0
_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)


def scratch_base() -> str:
    # /tmp, not $HOME: sandboxed uids must traverse to their scratch dir.
    return os.environ.get("RLCLIMB_SANDBOX_TMP", tempfile.gettempdir())


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks after boot); None when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return None if fields[0] in (b"Z", b"X") else fields[19].decode()
    except (OSError, IndexError):
        return None


def _pid_ns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").strip("pid:[]")
    except OSError:
        return "0"


def owner_id(pid: int | None = None) -> str:
    """`<pid namespace>.<pid>.<start time>`: names one process, even after its pid is reused."""
    pid = pid if pid is not None else os.getpid()
    return f"{_pid_ns()}.{pid}.{_start_time(pid) if pid > 0 else None}"


def owner_alive(owner: str) -> bool:
    """False only when `owner` is a process of this pid namespace that no longer exists."""
    try:
        ns, pid, start = owner.split(".")
    except ValueError:
        return True  # not ours to judge
    if ns != _pid_ns():
        return True
    return _start_time(int(pid)) == start


def mount_tmpfs(target: str, options: str) -> bool:
    if not IS_ROOT:
        return False
    rc = _libc.mount(
        b"tmpfs", os.fsencode(target), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()
    )
    return rc == 0


def unmount(target: str) -> None:
    _libc.umount2(os.fsencode(target), _MNT_DETACH)


_OWNER_DIR = re.compile(r"^rlclimb-sbx-(\d+\.\d+\.\d+)-u(\d*)-")
_reaped: set[str] = set()
_reap_lock = threading.Lock()


def reap_orphans(base: str | None = None) -> int:
    """Remove scratch dirs (and their mounts) whose owner process is gone, after killing what
    still runs as their uid; once per process and base dir. Returns how many were removed."""
    from .hostproc import UID_BASE, UID_SPAN, kill_uid

    base = base or scratch_base()
    with _reap_lock:
        if (os.getpid(), base) in _reaped:
            return 0
        _reaped.add((os.getpid(), base))
    removed = 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    for entry in entries:
        m = _OWNER_DIR.match(entry.name)
        if m is None or owner_alive(m.group(1)):
            continue
        try:  # ours only: anyone may create a dir by that name in a shared /tmp
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            continue
        if m.group(2) and UID_BASE <= int(m.group(2)) < UID_BASE + UID_SPAN:
            kill_uid(int(m.group(2)))
        remove_tree(entry.path)
        removed += 1
    return removed


def remove_tree(top: str) -> None:
    fs = os.path.join(top, "fs")
    if os.path.ismount(fs):
        unmount(fs)
    shutil.rmtree(top, ignore_errors=True)  # fd-based: does not follow symlinks


def _open_dir(name: str, dir_fd: int) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _match(parts: Sequence[str], pattern: Sequence[str]) -> bool:
    """Path.glob semantics on components: `*` stays within one, `**` spans any number."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return (
        bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _match(parts[1:], pattern[1:])
    )


def safe_relpath(name: str) -> PurePosixPath:
    """A path inside the scratch dir; refuses absolute paths and `..` escapes."""
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\0" in name:
        raise ValueError(
            f"sandbox file path must be relative and stay inside the scratch dir: {name!r}"
        )
    return p


class Scratch:
    """The scratch tree of one sandbox (see the module doc). `path` is the program's working
    dir for backends that need a path (bind mounts, cwd); the host itself uses only fds."""

    def __init__(self, uid: int | None, disk_bytes: int, disk_files: int) -> None:
        reap_orphans()
        self.uid = uid
        prefix = f"rlclimb-sbx-{owner_id()}-u{uid if uid is not None else ''}-"
        self.top = tempfile.mkdtemp(prefix=prefix, dir=scratch_base())
        try:
            os.chmod(self.top, 0o711)
            fs = os.path.join(self.top, "fs")
            os.mkdir(fs, 0o711)
            self.quota = mount_tmpfs(fs, f"size={disk_bytes},nr_inodes={disk_files},mode=0711")
            self.root_fd = _open_dir(fs, -1)
            self.fds: dict[str, int] = {}
            for sub in ("work", "tmp", "shm"):
                os.mkdir(sub, 0o700, dir_fd=self.root_fd)
                self.fds[sub] = _open_dir(sub, self.root_fd)
                if sub != "work":  # like a system's /tmp: root's, sticky, for everyone
                    os.fchmod(self.fds[sub], 0o1777)
                elif uid is not None:
                    os.fchown(self.fds[sub], uid, uid)
        except BaseException:
            remove_tree(self.top)
            raise
        self.fd = self.fds["work"]
        self.path = Path(fs) / "work"
        self.tmp_path, self.shm_path = Path(fs) / "tmp", Path(fs) / "shm"

    def mountpoint_in_tmp(self, parts: Sequence[str]) -> None:
        """Root-owned directories `parts` inside tmp/ (made before the program runs; the sticky
        bit keeps it from renaming them): where a backend that binds tmp/ over /tmp binds the
        working dir back at its own path, without resolving anything the program controls."""
        dfd = os.dup(self.fds["tmp"])
        try:
            for part in parts:
                os.mkdir(part, 0o755, dir_fd=dfd)
                nfd = _open_dir(part, dfd)
                os.close(dfd)
                dfd = nfd
        finally:
            os.close(dfd)

    def write(self, files: Mapping[str, str | bytes]) -> None:
        for name, content in files.items():
            self._write_one(safe_relpath(name).parts, content)

    def _write_one(self, parts: Sequence[str], content: str | bytes) -> None:
        data = content.encode() if isinstance(content, str) else content
        dfd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                nfd = self._subdir(part, dfd)
                os.close(dfd)
                dfd = nfd
            try:
                os.unlink(parts[-1], dir_fd=dfd)  # whatever the program left there: a symlink too
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                raise ValueError(
                    f"cannot write {'/'.join(parts)!r}: a directory is in the way"
                ) from None
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(parts[-1], flags, 0o644, dir_fd=dfd)
            try:
                if self.uid is not None:
                    os.fchown(fd, self.uid, self.uid)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        finally:
            os.close(dfd)

    def _subdir(self, part: str, dfd: int) -> int:
        """Open (or make) directory `part` under `dfd`; a symlink or file in its place is replaced."""
        try:
            return _open_dir(part, dfd)
        except FileNotFoundError:
            pass
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(part, dir_fd=dfd)
        os.mkdir(part, 0o755, dir_fd=dfd)
        fd = _open_dir(part, dfd)
        if self.uid is not None:
            os.fchown(fd, self.uid, self.uid)
        return fd

    def read(
        self, patterns: Sequence[str], max_bytes: int, max_files: int = 1000
    ) -> dict[str, bytes]:
        """Regular files matching glob `patterns` (relative, Path.glob syntax), at most
        `max_bytes` each. Symlinks, fifos, devices and hard links are skipped, never opened.
        Iterative, and each directory is reached again from the root fd, one O_NOFOLLOW step at
        a time: no recursion limit or fd limit for a hostile tree to hit."""
        pats = [safe_relpath(p).parts for p in patterns]
        if not pats:
            return {}
        depth = None if any("**" in p for p in pats) else max(len(p) for p in pats)
        out: dict[str, bytes] = {}
        pending: list[tuple[str, ...]] = [()]
        while pending and len(out) < max_files:
            rel = pending.pop()
            try:
                dfd = self._reach(rel)
            except OSError:
                continue  # replaced meanwhile (nothing of the program runs now, but be safe)
            try:
                with os.scandir(dfd) as it:
                    entries = sorted(it, key=lambda e: e.name, reverse=True)
                for e in entries:
                    parts = (*rel, e.name)
                    if e.is_dir(follow_symlinks=False):
                        if depth is None or len(parts) < depth:
                            pending.append(parts)
                    elif any(_match(parts, p) for p in pats):
                        data = self._read_one(e.name, dfd, max_bytes)
                        if data is not None:
                            out["/".join(parts)] = data
            finally:
                os.close(dfd)
        return dict(sorted(out.items())[:max_files])

    def _reach(self, rel: Sequence[str]) -> int:
        dfd = os.dup(self.fd)
        for part in rel:
            try:
                nfd = _open_dir(part, dfd)
            finally:
                os.close(dfd)
            dfd = nfd
        return dfd

    @staticmethod
    def _read_one(name: str, dir_fd: int, max_bytes: int) -> bytes | None:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError:  # a symlink (ELOOP), or gone
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                return None
            chunks, left = [], max_bytes
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def full(self) -> bool:
        """The quota is used up (no free block or inode): a kernel fact, not program output."""
        if not self.quota:
            return False
        st = os.fstatvfs(self.root_fd)
        return st.f_bavail == 0 or st.f_favail == 0

    def close(self) -> None:
        for fd in [*getattr(self, "fds", {}).values(), getattr(self, "root_fd", None)]:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.fds = {}
        self.root_fd = None
        remove_tree(self.top)
