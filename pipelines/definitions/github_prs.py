"""github-prs: merged pull requests (SWE-bench JSONL, a GitHub PR export, or a local clone's
history with --from-git-history) -> SWE instances with verified FAIL_TO_PASS / PASS_TO_PASS,
one Docker image each, exported as swebench.jsonl."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from rlclimb.stages.swe.stages import STAGES

from ..engine import Pipeline
from ..readers import InputError, JsonlReader, Rejected
from . import configure


class GitHistoryReader:
    """Merged PRs mined from a local clone's first-parent history (newest first), then any
    JSONL inputs. Items are {"file", "line", "data"} like JsonlReader's."""

    schema = None

    def __init__(self, clone: str | Path, limit: int, jsonl: list[str]):
        from rlclimb.stages.swe import repos

        self.clone = Path(clone)
        if not ((self.clone / ".git").exists() or (self.clone / "HEAD").is_file()):
            raise InputError(f"--from-git-history {clone}: not a git repository")
        self.limit = limit
        self.jsonl = JsonlReader(jsonl) if jsonl else None
        self.head = repos.git(self.clone, "rev-parse", "HEAD").strip()

    def fingerprint(self) -> str:
        h = hashlib.sha256(f"{self.clone.resolve()}|{self.head}|{self.limit}".encode())
        if self.jsonl:
            h.update(self.jsonl.fingerprint().encode())
        return h.hexdigest()[:16]

    def estimate_total(self) -> int | None:
        return None

    def __iter__(self) -> Iterator[dict | Rejected]:
        from rlclimb.stages.swe import repos

        name = f"git:{self.clone.name}"
        for i, rec in enumerate(repos.mine_history(self.clone, self.limit, self.head), 1):
            yield {"file": name, "line": i, "data": rec}
        if self.jsonl:
            yield from self.jsonl

    def shards(self, size: int) -> Iterator[list[dict | Rejected]]:
        it = iter(self)
        while chunk := list(islice(it, size)):
            yield chunk

    def describe(self) -> dict:
        return {"reader": "git-history", "clone": str(self.clone), "head": self.head, "limit": self.limit}


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 1_000) -> Pipeline:
    sections = dict(sections)
    history = (sections.get("swe_import") or {}).get("git_history")
    if history:
        limit = int((sections.get("swe_import") or {}).get("history_limit", 20))
        reader = GitHistoryReader(history, limit, inputs)
    else:
        reader = JsonlReader(inputs)
    return Pipeline(
        name="github-prs",
        reader=reader,
        stages=configure(STAGES, sections),
        shard_size=min(shard_size, 20),  # a shard is minutes of Docker work: commit often
    )
