"""A tiny SWE instance in a real image, for the grading and runtime-environment tests.

`build_instance(tmp)` makes a real git repo of a small pure-Python package (`calc`) at its base
commit, the instance's gold code diff and test diff (made with git, not written by hand), and
builds the image the way instance images look (FROM the local base image, the repo at base in
/testbed, pytest importable, the test diff absent). pytest and its requirements are copied from
the host's own installation (the files their RECORDs list): no index is needed, so this works on
a fresh CI machine with no network and on machines with no registry.

The test diff adds, to tests/test_calc.py:
  test_sub                      FAIL_TO_PASS (base `sub` adds)
  TestScale::test_scale[2-6], [3-9]  FAIL_TO_PASS (no `scale` at base)
  test_add                      PASS_TO_PASS (already at base)
and tests/test_flaky.py, eight tests that pass or fail at random each run (os.urandom):
FAIL_TO_PASS candidates that `verify` must find flaky.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import io
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

BASE = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1"\n',
    "calc/__init__.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
GOLD = {
    "calc/__init__.py": (
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
        "def scale(x, k):\n    return x * k\n"
    ),
}
TESTS = {
    "tests/test_calc.py": (
        "import pytest\n\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    from calc import sub\n\n    assert sub(5, 3) == 2\n\n\n"
        "class TestScale:\n    @pytest.mark.parametrize('k,out', [(2, 6), (3, 9)])\n"
        "    def test_scale(self, k, out):\n        from calc import scale\n\n"
        "        assert scale(3, k) == out\n"
    ),
    "tests/test_flaky.py": "import os\n\nimport calc\n\n"
    + "".join(
        f"\n\ndef test_coin_{i}():\n    assert calc.sub(1, 1) == 0 and os.urandom(1)[0] < 128\n"
        for i in range(8)
    ),
}
F2P = [
    "tests/test_calc.py::TestScale::test_scale[2-6]",
    "tests/test_calc.py::TestScale::test_scale[3-9]",
    "tests/test_calc.py::test_sub",
]
P2P = ["tests/test_calc.py::test_add"]
FLAKY = {f"tests/test_flaky.py::test_coin_{i}" for i in range(8)}
BASE_IMAGE = "rlclimb/base:bookworm"


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": "2024-03-01T10:00:00Z",
        "GIT_COMMITTER_DATE": "2024-03-01T10:00:00Z",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def _write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)


def make_repo(repo: Path) -> dict:
    """The repo at its base commit, and the instance record (SWE-bench keys) for it."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, BASE)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    _write(repo, GOLD)
    patch = _git(repo, "diff")
    _git(repo, "checkout", "-q", "--", ".")
    _write(repo, TESTS)
    _git(repo, "add", "-A")
    test_patch = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q", "--hard")
    return {
        "instance_id": "fixture__calc-1",
        "repo": "fixture/calc",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": "`calc.sub` adds instead of subtracting, and there is no `scale(x, k)`.",
        "FAIL_TO_PASS": list(F2P),
        "PASS_TO_PASS": list(P2P),
        "version": "0.1",
        "created_at": "2024-03-01T10:00:00Z",
    }


def _distribution_files(names: list[str]) -> dict[str, Path]:
    """Installed files of `names` and their requirements (under this interpreter's markers),
    relative to site-packages: what `pip install` put there."""
    env = default_environment()
    seen: set[str] = set()
    files: dict[str, Path] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        dist = md.distribution(name)
        for f in dist.files or []:
            if ".." in f.parts or f.suffix == ".pyc":
                continue
            files[f.as_posix()] = Path(dist.locate_file(f))
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
                todo.append(req.name)
    return files


def build_image(repo: Path, tag_prefix: str = "rlclimb-test/swe-calc") -> str:
    """The instance image (FROM the local base): repo at /testbed, pytest in dist-packages.
    Tagged by content, so a second call (another test module) finds it built."""
    import docker

    pkgs = _distribution_files(["pytest"])
    ctx = io.BytesIO()
    digest = hashlib.sha256()
    py = "python3.11"  # the base image's Debian bookworm python
    dockerfile = (
        f"FROM {BASE_IMAGE}\n"
        f"COPY site/ /usr/local/lib/{py}/dist-packages/\n"
        "COPY testbed/ /testbed/\n"
        "WORKDIR /testbed\n"
        "RUN python3 -m pytest --version\n"
    )
    with tarfile.open(fileobj=ctx, mode="w") as tar:
        for rel, path in sorted(pkgs.items()):
            tar.add(path, f"site/{rel}", recursive=False)
            digest.update(rel.encode() + path.read_bytes())
        for path in sorted(repo.rglob("*")):
            rel = path.relative_to(repo).as_posix()
            tar.add(path, f"testbed/{rel}", recursive=False)
            if ".git/" not in rel + "/" and path.is_file():
                digest.update(rel.encode() + path.read_bytes())
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        digest.update(data)
    tag = f"{tag_prefix}:{digest.hexdigest()[:12]}"
    client = docker.from_env(timeout=600)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    ctx.seek(0)
    client.images.build(fileobj=ctx, custom_context=True, tag=tag, rm=True, network_mode="none")
    return tag


@dataclass
class FixtureInstance:
    image: str
    instance: dict
    repo: Path  # the repo at its base commit (for making more patches)

    def patch(self, files: dict[str, str]) -> str:
        """A real git diff of `files` (path -> new content) against the base commit."""
        _write(self.repo, files)
        _git(self.repo, "add", "-A")
        diff = _git(self.repo, "diff", "--cached")
        _git(self.repo, "reset", "-q", "--hard")
        _git(self.repo, "clean", "-qfd")
        return diff


def build_instance(tmp: Path) -> FixtureInstance:
    """The fixture instance, its image and its repo."""
    repo = tmp / "calc"
    if repo.exists():
        shutil.rmtree(repo)
    instance = make_repo(repo)
    image = build_image(repo)
    instance["image"] = image
    return FixtureInstance(image, instance, repo)


if __name__ == "__main__":  # python tests/helpers/swe_fixture_image.py /tmp/x
    print(build_instance(Path(sys.argv[1])))
