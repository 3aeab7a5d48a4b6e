"""Sandbox backends for tests: each available backend, or a clear skip reason."""

from __future__ import annotations

import os

import pytest

from rlclimb.environments.sandbox import get_sandbox
from rlclimb.environments.sandbox.bwrap import bwrap_works
from rlclimb.environments.sandbox.docker_backend import docker_available
from rlclimb.environments.sandbox.image import image_tag


def skip_reason(backend: str) -> str | None:
    if backend == "docker" and not docker_available():
        return f"no Docker engine reachable with image {image_tag()} (CI starts one: .ci/run)"
    if backend == "bwrap" and not bwrap_works():
        return "bubblewrap missing or cannot create namespaces here (apt-get install bubblewrap)"
    if backend in ("process", "bwrap", "docker") and os.geteuid() != 0:
        return "the containment tests expect root (throwaway uids per run)"
    return None


def sandbox_or_skip(backend: str):
    if (reason := skip_reason(backend)) is not None:
        if os.environ.get("CI", "").lower() in ("1", "true"):  # .ci/run provides every backend
            pytest.fail(f"CI must provide this sandbox backend: {reason}")
        pytest.skip(reason)
    return get_sandbox(backend)


BACKENDS = [
    pytest.param("process", id="process"),
    pytest.param("bwrap", id="bwrap"),
    pytest.param("docker", id="docker", marks=pytest.mark.docker),
]


def fast_backend() -> str:
    """The quickest working backend for tests about what runs, not how it is contained."""
    return "bwrap" if bwrap_works() else "process"
