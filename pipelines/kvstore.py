"""A small durable key-value store for the stage cache and the LLM request cache: SQLite (WAL)
for a local run directory, objects in the store for one at a URL (`ObjectKV`).

SQLite is used because every committed write survives `kill -9` of the process (the WAL is in the
OS page cache) and many readers/writers in one run need no server.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path


class KVStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL)")

    def get(self, key: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT v FROM kv WHERE k = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                marks = ",".join("?" * len(chunk))
                out.update(self._db.execute(f"SELECT k, v FROM kv WHERE k IN ({marks})", chunk))
        return out

    def put(self, key: str, value: bytes) -> None:
        """Committed on return (autocommit): a killed process keeps everything put so far."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", (key, value))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM kv").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class ObjectKV:
    """The same interface over an object store (a run directory at a URL): one object per key,
    named by the key's hash, under `url`. Every node reads and writes it without locks (a key's
    value is a pure function of the key: two writers write the same thing), and each put is
    durable on return, as with SQLite. An LLM call costs far more than the PUT that keeps it."""

    def __init__(self, url: str):
        from .storage import filesystem

        self.url = url.rstrip("/")
        self.fs, self.root = filesystem(self.url)

    def _path(self, key: str) -> str:
        h = hashlib.sha256(key.encode()).hexdigest()
        return f"{self.root}/{h[:2]}/{h}"

    def get(self, key: str) -> bytes | None:
        try:
            return self.fs.cat_file(self._path(key))
        except FileNotFoundError:
            return None

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        paths = {self._path(k): k for k in keys}
        found = self.fs.cat(list(paths), on_error="omit")  # concurrent GETs where the filesystem can
        return {paths[self.fs._strip_protocol(p)]: v for p, v in found.items()}

    def put(self, key: str, value: bytes) -> None:
        self.fs.pipe_file(self._path(key), value)

    def __bool__(self) -> bool:  # a store is there even when empty (`kv or fallback`; len lists it all)
        return True

    def __len__(self) -> int:
        self.fs.invalidate_cache()
        try:
            return len(self.fs.find(self.root))
        except FileNotFoundError:
            return 0

    def close(self) -> None:
        pass


def open_kv(location: str | Path) -> KVStore | ObjectKV:
    """SQLite for a local path, objects for a URL."""
    from .storage import is_url

    return ObjectKV(str(location)) if is_url(location) else KVStore(location)
