"""One cluster-wide limit per LLM endpoint: a named Ray actor holding a semaphore per endpoint.

A per-process semaphore would let N actors put N x `concurrency` requests on one vLLM server.
Every LLM client of a Ray run asks this one actor for a slot instead (two small RPCs per
request: about a millisecond, against an LLM call's hundreds). The actor is detached and found
by name, so concurrent runs on one cluster share an endpoint's limit too.
Known limit: a worker killed while holding slots does not give them back until the limiter is
restarted (`ray.kill(ray.get_actor(LIMITER, namespace=NAMESPACE))`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..llm import LLMClient

LIMITER = "rlclimb-llm-limiter"
NAMESPACE = "rlclimb"


class _Limiter:
    def __init__(self) -> None:
        self.sems: dict[str, asyncio.Semaphore] = {}
        self.held: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    async def acquire(self, key: str, limit: int) -> None:
        sem = self.sems.setdefault(key, asyncio.Semaphore(limit))
        await sem.acquire()
        self.held[key] = self.held.get(key, 0) + 1
        self.peak[key] = max(self.peak.get(key, 0), self.held[key])

    async def release(self, key: str) -> None:
        self.held[key] -= 1
        self.sems[key].release()

    async def stats(self) -> dict[str, Any]:
        return {"held": dict(self.held), "peak": dict(self.peak)}


def limiter():
    """The cluster's limiter actor (created on first use)."""
    import ray

    actor = ray.remote(_Limiter).options(
        name=LIMITER, namespace=NAMESPACE, get_if_exists=True, lifetime="detached", num_cpus=0, max_concurrency=100_000
    )
    return actor.remote()


class ClusterSemaphore:
    """`async with` a slot of the cluster-wide limit of one endpoint."""

    def __init__(self, actor, key: str, limit: int):
        self.actor, self.key, self.limit = actor, key, limit

    async def __aenter__(self) -> None:
        await self.actor.acquire.remote(self.key, self.limit)

    async def __aexit__(self, *exc) -> None:
        await self.actor.release.remote(self.key)


def endpoint_key(profile: Any) -> str:
    """Profiles naming the same server and model share its limit (and the smallest one set first wins)."""
    return f"{profile.base_url}|{profile.model}|{profile.concurrency}"


class ClusterLLMClient(LLMClient):
    """The LLM client of a Ray worker: per-profile limits come from the cluster's limiter."""

    def __init__(self, *args, actor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._actor = actor if actor is not None else limiter()

    def _state(self):
        state = super()._state()
        for name, profile in self.config.profiles.items():
            if profile.backend != "local" and name not in state.sems:
                state.sems[name] = ClusterSemaphore(self._actor, endpoint_key(profile), profile.concurrency)
        return state
