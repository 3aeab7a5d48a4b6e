"""A small durable key-value store (SQLite, WAL) for the stage cache and the LLM request cache.

SQLite is used because every committed write survives `kill -9` of the process (the WAL is in the
OS page cache) and many readers/writers in one run need no server.
"""

from __future__ import annotations

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
