"""The sandbox base system: a Debian minbase root filesystem with python3 and g++.

No registry is reachable on some machines, so the image is bootstrapped locally with
`debootstrap` and cached twice: as a directory (the `bwrap` backend's root) and as a Docker
image imported from it (`docker import`), tagged `rlclimb/base:bookworm`. Users with a registry
can point `RLCLIMB_SANDBOX_IMAGE` at any image that has python3 (and g++ for C++), e.g.
`python:3.11-slim`.

    python -m rlclimb.environments.sandbox.image ensure   # idempotent; used by .ci/run
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_TAG = "rlclimb/base:bookworm"
SUITE = "bookworm"
MIRROR = os.environ.get("RLCLIMB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# python3 and g++ run the code problems; coreutils `timeout` bounds session commands; git for SWE.
PACKAGES = ["python3", "g++", "git", "ca-certificates"]


def image_tag() -> str:
    return os.environ.get("RLCLIMB_SANDBOX_IMAGE", DEFAULT_TAG)


def rootfs_dir() -> Path:
    """Where the bootstrapped root filesystem lives (the bwrap backend's `/`)."""
    # As root, a system path: sandboxed programs run as other users and cannot traverse /root.
    base = (
        Path("/var/cache")
        if os.geteuid() == 0
        else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    )
    default = base / "rlclimb" / f"rootfs-{SUITE}"
    return Path(os.environ.get("RLCLIMB_SANDBOX_ROOTFS", default))


def rootfs_ready(path: Path | None = None) -> bool:
    path = path or rootfs_dir()
    return (path / ".rlclimb-complete").exists()


def bootstrap_rootfs(path: Path | None = None, log=print) -> Path:
    """debootstrap minbase + PACKAGES into `path` (about a minute and ~450 MB with g++)."""
    path = path or rootfs_dir()
    if rootfs_ready(path):
        return path
    if not shutil.which("debootstrap"):
        raise RuntimeError("debootstrap not found: apt-get install -y debootstrap")
    tmp = path.with_name(path.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log(f"debootstrap {SUITE} minbase + {' '.join(PACKAGES)} -> {path}")
    subprocess.run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(tmp),
            MIRROR,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    # The apt cache is not part of the system the programs need.
    shutil.rmtree(tmp / "var/cache/apt/archives", ignore_errors=True)
    (tmp / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    (tmp / "work").mkdir(exist_ok=True)
    (tmp / ".rlclimb-complete").write_text(f"{SUITE} {' '.join(PACKAGES)}\n")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    log(f"rootfs ready in {time.monotonic() - t0:.0f} s")
    return path


def docker_image_present(tag: str | None = None) -> bool:
    try:
        import docker

        docker.from_env(timeout=5).images.get(tag or image_tag())
        return True
    except Exception:
        return False


def import_docker_image(path: Path | None = None, tag: str = DEFAULT_TAG, log=print) -> str:
    """`docker import` the rootfs directory as `tag` (streams a tar, nothing on disk)."""
    import docker

    path = path or rootfs_dir()
    client = docker.from_env(timeout=600)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ["tar", "-C", str(path), "--exclude=./.rlclimb-complete", "-c", "."], stdout=subprocess.PIPE
    )
    try:
        repo, _, tag_part = tag.partition(":")
        client.api.import_image_from_stream(proc.stdout, repository=repo, tag=tag_part or "latest")
    finally:
        proc.stdout.close()
        proc.wait()
    log(f"docker import {tag} in {time.monotonic() - t0:.0f} s")
    return tag


def ensure(docker_too: bool = True, log=print) -> None:
    """Bootstrap what is missing: the rootfs, then the Docker image when an engine is reachable."""
    tag = image_tag()
    need_docker = docker_too and tag == DEFAULT_TAG and not docker_image_present(tag)
    if rootfs_ready() and not need_docker:
        log(f"sandbox base ready: {rootfs_dir()}" + (f", image {tag}" if docker_too else ""))
        return
    path = bootstrap_rootfs(log=log)
    if need_docker:
        import_docker_image(path, tag, log=log)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "ensure"
    if cmd != "ensure":
        sys.exit("usage: python -m rlclimb.environments.sandbox.image ensure")
    ensure(docker_too=os.environ.get("RLCLIMB_SANDBOX_NO_DOCKER") != "1")
