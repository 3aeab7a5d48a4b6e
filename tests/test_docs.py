"""The repository's docs stand on their own and match the CLI."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tracked(*suffixes: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if f.endswith(suffixes)]


def test_no_references_to_a_spec_outside_the_repository():
    """"SPEC §2.3", "SPEC.md section 6": a document a reader of this repository does not have."""
    pattern = re.compile(r"SPEC(\.md| §|\s+\d|:|\s+section)")
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in tracked(".py", ".md", ".yaml", ".yml", ".toml")
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if pattern.search(line)]
    assert hits == []
