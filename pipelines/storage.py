"""Where run directories and inputs live: a local path (as always) or a URL on any fsspec
filesystem (`s3://`, `gs://`, `file://`, `memory://`, ...; credentials and endpoints come from
the filesystem's usual settings, e.g. AWS_* variables and AWS_ENDPOINT_URL for S3).

Local paths take exactly the code paths they always took: every function here returns at once
for a path that is not in a mirror (one cached lookup per directory).

A run directory at a URL is worked in a local *mirror* (`Mirror`): a scratch directory standing
for the URL, marked by `.rlclimb-mirror.json`. The engine writes its files there as usual and
each write that matters is *pushed* to the store right after, in the commit order of the local
protocol: a shard's data part, then its ledger part, then its done marker; a global segment's
parts and reports, then `_SUCCESS.json`; the dataset, then `stats.json`. An object store has no
rename, but a PUT is all-or-nothing and the marker goes last, so a marker's presence is the
commit: readers only trust parts whose marker exists (`read_parts`), and a part without one is
recomputed and overwritten. A run starts by pulling the store's state into its mirror (the
mirror then holds exactly what the store holds), so it resumes from the store, from any machine.
Row and LLM caches of a run at a URL are objects in the store (`kvstore.ObjectKV`), one per
result, so a kill loses none of them and every node sees them.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

MARKER = ".rlclimb-run"  # the file that makes a directory an rlclimb run (or other kind) directory

MIRROR_FILE = ".rlclimb-mirror.json"
# Never synced: the mirror's own marker, the lock and the lease, scratch, caches (local SQLite, or
# objects the store holds for itself).
LOCAL_ONLY_TOP = {MIRROR_FILE, ".lock", ".lease.json", "tmp", "cache"}


def is_url(path: Any) -> bool:
    """`scheme://...` with a scheme longer than one letter (a Windows drive is a path)."""
    s = str(path)
    scheme, sep, _ = s.partition("://")
    return bool(sep) and len(scheme) > 1 and scheme.replace("+", "").replace("-", "").isalnum()


def filesystem(url: str):
    """(fsspec filesystem, path inside it) of a URL."""
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as e:
        from .readers import InputError

        raise InputError(f"{url}: {str(e).splitlines()[0]} (for s3:// install s3fs, for gs:// gcsfs)") from None


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


# ---- remote input files ------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteFile:
    """An input file at a URL: what readers need of a Path (name, suffix, str) plus reading."""

    url: str
    size: int = 0
    version: str = ""  # ETag or mtime: part of the reader's fingerprint

    def __str__(self) -> str:
        return self.url

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        name = self.name
        return name[name.rfind("."):] if "." in name else ""

    def open(self, mode: str = "rb"):
        fs, path = filesystem(self.url)
        return fs.open(path, mode)

    def sibling(self, name: str) -> RemoteFile:
        return RemoteFile(self.url.rstrip("/").rsplit("/", 1)[0] + "/" + name)

    def exists(self) -> bool:
        fs, path = filesystem(self.url)
        return fs.isfile(path)


def list_inputs(url: str, suffixes: tuple[str, ...]) -> list[RemoteFile]:
    """The files a URL names: itself, or (a "directory" prefix) every file below it with one of
    `suffixes`, sorted. Raises InputError when there is nothing there."""
    from .readers import InputError

    fs, path = filesystem(url)
    fs.invalidate_cache()
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise InputError(f"input not found: {url}") from None
    except Exception as e:  # no credentials, no such bucket, endpoint down: say which
        raise InputError(f"cannot read input {url}: {str(e).splitlines()[0]}") from None
    if info["type"] != "directory":
        if not url.endswith(suffixes):
            raise InputError(f"unsupported input {url}: expected {' or '.join(suffixes)}")
        return [_remote(fs, path, info)]
    found = [_remote(fs, p, i) for p, i in sorted(fs.find(path, detail=True).items())
             if i["type"] == "file" and p.endswith(suffixes)]
    if not found:
        raise InputError(f"no {'/'.join(suffixes)} files under: {url}")
    return found


def _remote(fs, path: str, info: dict) -> RemoteFile:
    version = str(info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified") or info.get("created") or "")
    return RemoteFile(fs.unstrip_protocol(path), int(info.get("size") or 0), version)


def open_input(path: Path | RemoteFile, mode: str = "rb"):
    return path.open(mode) if isinstance(path, RemoteFile) else open(path, mode)


def parquet_file(path: Path | RemoteFile | str):
    """A pq.ParquetFile for a local path or a remote file / URL (read through its filesystem)."""
    import pyarrow.parquet as pq

    if isinstance(path, RemoteFile) or is_url(path):
        fs, inner = filesystem(str(path))
        return pq.ParquetFile(fs.open(inner, "rb"))
    return pq.ParquetFile(path)


def read_parquet(path: Path | str):
    """pq.read_table of a local path or a URL."""
    import pyarrow.parquet as pq

    if is_url(path):
        fs, inner = filesystem(str(path))
        with fs.open(inner, "rb") as f:
            return pq.read_table(f)
    return pq.read_table(path)


# ---- mirrors: a local directory standing for a URL ----------------------------------------------


def mirror_base() -> Path:
    """Where mirrors live: $RLCLIMB_MIRRORS, else the temp dir (a mirror is only a working copy:
    the store holds everything that counts)."""
    return Path(os.environ.get("RLCLIMB_MIRRORS") or Path(tempfile.gettempdir()) / f"rlclimb-mirrors-{os.getuid()}")


class Mirror:
    def __init__(self, url: str, local: Path):
        self.url, self.local = url.rstrip("/"), Path(local)
        self.fs, self.root = filesystem(self.url)

    @classmethod
    def open(cls, url: str, role: str = "") -> Mirror:
        """The mirror of `url` on this machine (made if new): the same directory every time (one
        per `role`: a reader's copy is not the one a run on this machine works in)."""
        url = url.rstrip("/")
        local = mirror_base() / (hashlib.sha256(url.encode()).hexdigest()[:16] + (f"-{role}" if role else ""))
        local.mkdir(parents=True, exist_ok=True)
        marker = local / MIRROR_FILE
        if not marker.is_file():
            tmp = local / f".{MIRROR_FILE}.{os.getpid()}"
            tmp.write_text(json.dumps({"url": url}))
            os.replace(tmp, marker)
        _mirror_root.cache_clear()
        return cls(url, local)

    def remote(self, path: Path) -> str:
        rel = Path(path).relative_to(self.local).as_posix()
        return self.root if rel == "." else join(self.root, rel)

    def url_of(self, path: Path) -> str:
        rel = Path(path).relative_to(self.local).as_posix()
        return self.url if rel == "." else join(self.url, rel)

    # -- writes --
    def push(self, *paths: Path) -> None:
        """Upload local files to their place in the store, in the order given (the commit order)."""
        for p in paths:
            self.fs.put_file(str(p), self.remote(p))

    def delete(self, *paths: Path) -> None:
        for p in paths:
            try:
                self.fs.rm(self.remote(p), recursive=True)
            except FileNotFoundError:
                pass

    def copy(self, src: Path, dest: Path) -> None:
        """A server-side copy (the dataset's files are copies of committed parts)."""
        self.fs.cp_file(self.remote(src), self.remote(dest))

    # -- reads --
    def listing(self, under: str = "") -> dict[str, tuple[int, float]]:
        """Relative name -> (size, modification time) of every object under the mirror's URL (or
        `under` in it), local-only names excluded."""
        base = join(self.root, under) if under else self.root
        self.fs.invalidate_cache()
        try:
            if under:
                found = self.fs.find(base, detail=True)
            else:  # top level first: the caches (one object per result) are never walked
                found = {}
                for info in self.fs.ls(base, detail=True):
                    name = info["name"].rstrip("/")
                    if name.rsplit("/", 1)[-1] in LOCAL_ONLY_TOP:
                        continue
                    found.update(self.fs.find(name, detail=True) if info.get("type") == "directory" else {name: info})
        except FileNotFoundError:
            return {}
        out = {}
        for name, info in found.items():
            if info.get("type") != "file":
                continue
            rel = name[len(self.root.rstrip("/")) + 1:] if name.startswith(self.root.rstrip("/") + "/") else None
            if rel and rel.split("/", 1)[0] not in LOCAL_ONLY_TOP:
                out[rel] = (int(info.get("size") or 0), _mtime(info))
        return out

    def pull(self, stage_parts: bool = True) -> int:
        """Make the mirror hold exactly what the store holds (local-only names aside): download
        what is missing, of another size or newer, remove what the store does not have. Returns
        the files downloaded. `stage_parts=False`: the segments' markers and reports only (what a
        reader of the funnel and the dataset needs), not their data and ledger parts."""
        remote = self.listing()
        if not stage_parts:
            remote = {r: v for r, v in remote.items() if not r.startswith("stages/") or r.endswith(".json")}
        n = 0
        for rel, (size, mtime) in remote.items():
            dest = self.local / rel
            try:
                st = dest.stat()
                if st.st_size == size and st.st_mtime >= mtime:  # ours (pushed after writing) or fetched
                    continue
            except FileNotFoundError:
                pass
            dest.parent.mkdir(parents=True, exist_ok=True)
            self._download(rel, dest)
            n += 1
        for f in sorted(self.local.rglob("*"), reverse=True):
            rel = f.relative_to(self.local).as_posix()
            if rel.split("/", 1)[0] in LOCAL_ONLY_TOP:
                continue
            if f.is_file() and rel not in remote and not f.name.startswith("."):
                f.unlink()
        return n

    def exists(self, path: Path) -> bool:
        self.fs.invalidate_cache()
        return self.fs.isfile(self.remote(path))

    def fetch(self, path: Path) -> bool:
        """Download one file from the store into the mirror; False if the store has none."""
        rel = Path(path).relative_to(self.local).as_posix()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._download(rel, Path(path))
        except FileNotFoundError:
            return False
        return True

    def _download(self, rel: str, dest: Path) -> None:
        tmp = dest.with_name(f".{dest.name}.dl-{os.getpid()}")
        self.fs.get_file(join(self.root, rel), str(tmp))
        os.replace(tmp, dest)

    def is_foreign(self, kind: str) -> str | None:
        """Why the URL must not become an rlclimb `kind` directory (None: it may, or already is)."""
        names = self.listing()
        if not names:
            return None
        if MARKER not in names:
            return f"{self.url} is not empty and is not an rlclimb {kind} directory (no {MARKER}): choose a new --out"
        recorded = json.loads(self.fs.cat_file(join(self.root, MARKER)) or b"{}").get("kind", "run")
        return None if recorded == kind else f"{self.url} is an rlclimb {recorded} directory, not a {kind} directory"


def _mtime(info: dict) -> float:
    """An object's modification time as a POSIX timestamp (S3: LastModified; local: mtime)."""
    for key in ("LastModified", "mtime", "last_modified", "updated", "created"):
        v = info.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return v.timestamp()
        try:
            return float(v)
        except (TypeError, ValueError):
            continue
    return 0.0


@lru_cache(maxsize=4096)
def _mirror_root(directory: str) -> str | None:
    for d in [Path(directory), *Path(directory).parents]:
        if (d / MIRROR_FILE).is_file():
            return str(d)
    return None


def mirror_of(path: Path | str) -> Mirror | None:
    """The mirror `path` lies in, or None (a plain local path: the usual case, one cached walk)."""
    root = _mirror_root(str(Path(path).parent))
    if root is None:
        return None
    return _open_mirror(root)


@lru_cache(maxsize=64)
def _open_mirror(root: str) -> Mirror:
    url = json.loads((Path(root) / MIRROR_FILE).read_text())["url"]
    return Mirror(url, Path(root))


def push(*paths: Path) -> None:
    """Upload these files to the store if they are in a mirror (nothing for local runs)."""
    if paths and (m := mirror_of(paths[0])) is not None:
        m.push(*paths)


def unpush(*paths: Path) -> None:
    """Remove these files (or directories) from the store if they are in a mirror."""
    if paths and (m := mirror_of(paths[0])) is not None:
        m.delete(*paths)


def copy_pushed(src: Path, dest: Path) -> None:
    """`dest` was made locally as a copy of the committed `src`: copy it in the store too."""
    if (m := mirror_of(dest)) is not None:
        m.copy(src, dest)


def url_of(path: Path | str) -> str:
    """The URL a mirrored path stands for, else the path itself (as a string)."""
    m = mirror_of(Path(path) / "x")
    return m.url_of(Path(path)) if m is not None else str(path)


def readable(path_or_url: str | Path) -> Path:
    """A local directory holding what `path_or_url` holds: the path, or a fresh read-only copy of
    a URL's objects (for `rlclimb status` / `export` of a run at a URL)."""
    if not is_url(path_or_url):
        return Path(path_or_url)
    mirror = Mirror.open(str(path_or_url), role="read")
    mirror.pull(stage_parts=False)
    return mirror.local


def local_dir(path_or_url: str) -> Path:
    """A directory to write into for `path_or_url`: the path, or the mirror of a URL."""
    return Mirror.open(path_or_url).local if is_url(path_or_url) else Path(path_or_url)


# ---- the lease: one writer per run directory on a store ----------------------------------------


class LeaseHeld(Exception):
    pass


class Lease:
    """`<url>/.lease.json`: {owner, host, pid, expires}, renewed by a daemon thread every TTL/3.

    What it guarantees: a run refuses to start while another live run holds the lease (the holder
    renews it; a run killed on this host is taken over at once, its pid being gone; one killed on
    another host after `ttl` seconds). The check is write-then-read-back after `settle` seconds,
    which needs the read-after-write consistency S3 and GCS give. What it does not: it is not a
    fencing lock. Two runs starting within `settle` of each other, or a holder paused longer than
    `ttl` (a suspended VM), may both write; the commit protocol still keeps every object whole
    and a shard's content is deterministic, but do not start two runs on one URL on purpose.
    """

    def __init__(self, url: str, ttl: float = 60.0, settle: float = 0.5):
        self.url, self.ttl, self.settle = url.rstrip("/"), ttl, settle
        self.fs, root = filesystem(self.url)
        self.path = join(root, ".lease.json")
        self.owner = uuid.uuid4().hex
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> dict | None:
        try:
            return json.loads(self.fs.cat_file(self.path))
        except (FileNotFoundError, ValueError):
            return None

    def _write(self) -> None:
        body = {"owner": self.owner, "host": socket.gethostname(), "pid": os.getpid(),
                "expires": time.time() + self.ttl}
        self.fs.pipe_file(self.path, json.dumps(body).encode())

    def _stale(self, cur: dict) -> bool:
        if cur.get("expires", 0) < time.time():
            return True
        if cur.get("host") == socket.gethostname():
            try:
                os.kill(int(cur["pid"]), 0)
            except ProcessLookupError:
                return True
            except (PermissionError, ValueError, KeyError):
                return False
        return False

    def acquire(self) -> None:
        cur = self._read()
        if cur and cur.get("owner") != self.owner and not self._stale(cur):
            raise LeaseHeld(self._held_by(cur))
        self._write()
        time.sleep(self.settle)
        cur = self._read()
        if not cur or cur.get("owner") != self.owner:
            raise LeaseHeld(self._held_by(cur or {}))
        self._thread = threading.Thread(target=self._renew, daemon=True, name="rlclimb-lease")
        self._thread.start()

    def _held_by(self, cur: dict) -> str:
        left = max(0, int(cur.get("expires", 0) - time.time()))
        return (f"{self.url} is in use by another rlclimb process (host {cur.get('host')}, pid {cur.get('pid')}; "
                f"its lease runs {left} s more unless renewed: if that process is dead, rerun after that)")

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                cur = self._read()
                if cur and cur.get("owner") != self.owner:  # taken over (we were paused past the TTL)
                    self.lost = True
                    print(f"rlclimb: lost the lease on {self.url} to host {cur.get('host')} pid {cur.get('pid')}; "
                          "stop this run (its commits may now interleave with that one's)", file=sys.stderr, flush=True)
                    return
                self._write()
            except Exception:  # a blip: the next renewal retries, the lease is still valid till then
                pass

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        cur = self._read()
        if cur and cur.get("owner") == self.owner:
            self.fs.rm_file(self.path)


# ---- small files at a path or a URL (the Ray storage probe) --------------------------------------


def read_bytes(path: str | Path) -> bytes:
    """A whole file or object (FileNotFoundError when there is none)."""
    if is_url(path):
        fs, inner = filesystem(str(path))
        return fs.cat_file(inner)
    return Path(path).read_bytes()


def read_text(path: str | Path) -> str:
    return read_bytes(path).decode() if is_url(path) else Path(path).read_text()


def write_text(path: str | Path, text: str) -> None:
    if is_url(path):
        fs, inner = filesystem(str(path))
        fs.pipe_file(inner, text.encode())
    else:
        Path(path).write_text(text)


def exists(path: str | Path) -> bool:
    if is_url(path):
        fs, inner = filesystem(str(path))
        fs.invalidate_cache()
        return fs.isfile(inner)
    return Path(path).exists()


def remove(path: str | Path) -> None:
    if is_url(path):
        fs, inner = filesystem(str(path))
        try:
            fs.rm_file(inner)
        except FileNotFoundError:
            pass
    else:
        Path(path).unlink(missing_ok=True)
