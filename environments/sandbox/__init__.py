"""Sandboxes: run untrusted programs with limits (DESIGN.md "Sandboxes").

    from rlclimb.environments.sandbox import get_sandbox, Limits
    sb = get_sandbox()                      # auto: docker, else bwrap, else process
    r = sb.run("python3 main.py", files={"main.py": src}, stdin="1 2\\n", limits=Limits(wall_s=6))
    r.status, r.stdout                      # Status.OK / RE / TLE / MLE / OLE / BLOCKED / ERROR
    with sb.session() as s:                 # many commands, one scratch dir (one live container)
        s.run("g++ -O2 -o main main.cpp"); s.run("./main", stdin="3\\n")

Backend choice: `backend=` argument, else `RLCLIMB_SANDBOX` (docker | bwrap | process | auto).
"""

from __future__ import annotations

import os

from .base import Limits, Result, Sandbox, Session, Status

BACKENDS = ("docker", "bwrap", "process")

__all__ = [
    "BACKENDS",
    "Limits",
    "Result",
    "Sandbox",
    "Session",
    "Status",
    "available_backends",
    "get_sandbox",
]


def available_backends(image: str | None = None) -> list[str]:
    from .bwrap import bwrap_works
    from .docker_backend import docker_available

    found = ["docker"] if docker_available(image) else []
    if bwrap_works():
        found.append("bwrap")
    return found + ["process"]


def get_sandbox(
    backend: str | None = None, *, limits: Limits | None = None, image: str | None = None
) -> Sandbox:
    """A sandbox by name, or the best available one ("auto": docker if the engine is reachable
    and the image present, else bwrap if namespaces work, else process)."""
    backend = backend or os.environ.get("RLCLIMB_SANDBOX", "auto")
    if backend == "auto":
        backend = available_backends(image)[0]
    if backend == "docker":
        from .docker_backend import DockerSandbox

        return DockerSandbox(limits, image=image)
    if backend == "bwrap":
        from .bwrap import BwrapSandbox

        return BwrapSandbox(limits)
    if backend == "process":
        from .process import ProcessSandbox

        return ProcessSandbox(limits)
    raise ValueError(f"unknown sandbox backend {backend!r}; known: auto, {', '.join(BACKENDS)}")
