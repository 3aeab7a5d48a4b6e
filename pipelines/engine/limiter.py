"""One cluster-wide limit per LLM endpoint: a named Ray actor leasing each endpoint's slots.

A per-process semaphore would let N actors put N x `concurrency` requests on one vLLM server.
Every LLM client of a Ray run asks this one actor for a slot instead (two small RPCs per
request: about a millisecond, against an LLM call's hundreds). The actor is detached and found
by name, so concurrent runs on one cluster share an endpoint's limit too.

A slot is a lease: its holder renews it every `ttl/3` while its request runs, and a lease not
renewed for `ttl` seconds expires and frees the slot. So a worker killed while holding slots
(SIGKILL, a lost node) gives them back after at most `ttl` (LEASE_TTL_S), instead of shrinking
the endpoint's limit for the rest of the cluster's life.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import time
from typing import Any

from ..llm import LLMClient

LIMITER = "rlclimb-llm-limiter-2"  # leases (the first limiter's semaphores are another actor)
NAMESPACE = "rlclimb"
LEASE_TTL_S = 30.0


class _Limiter:
    def __init__(self) -> None:
        self.leases: dict[str, dict[int, tuple[float, str]]] = {}  # key -> lease -> (expiry, owner)
        self.lease_key: dict[int, str] = {}
        self.changed: dict[str, asyncio.Condition] = {}
        self.peak: dict[str, int] = {}
        self.expired: dict[str, int] = {}
        self.ids = itertools.count(1)

    def _expire(self, key: str) -> float | None:
        """Drop the key's lapsed leases; seconds until the next one lapses (None: no lease)."""
        now, held = time.monotonic(), self.leases.setdefault(key, {})
        for lease in [k for k, (t, _) in held.items() if t <= now]:
            del held[lease]
            self.lease_key.pop(lease, None)
            self.expired[key] = self.expired.get(key, 0) + 1
        return min((t for t, _ in held.values()), default=now) - now if held else None

    async def acquire(self, key: str, limit: int, owner: str, ttl_s: float) -> int:
        cond = self.changed.setdefault(key, asyncio.Condition())
        async with cond:
            while True:
                wait = self._expire(key)
                held = self.leases[key]
                if len(held) < limit:
                    lease = next(self.ids)
                    held[lease] = (time.monotonic() + ttl_s, owner)
                    self.lease_key[lease] = key
                    self.peak[key] = max(self.peak.get(key, 0), len(held))
                    return lease
                try:  # until a release, or the next lease lapses
                    await asyncio.wait_for(cond.wait(), timeout=max(wait or ttl_s, 0.01))
                except TimeoutError:
                    pass

    async def renew(self, lease: int, ttl_s: float) -> bool:
        """False: the lease had lapsed (its holder was too slow to renew); the request goes on."""
        key = self.lease_key.get(lease)
        if key is None:
            return False
        _, owner = self.leases[key][lease]
        self.leases[key][lease] = (time.monotonic() + ttl_s, owner)
        return True

    async def release(self, lease: int) -> None:
        key = self.lease_key.pop(lease, None)
        if key is None:
            return
        self.leases[key].pop(lease, None)
        async with self.changed[key]:
            self.changed[key].notify()

    async def stats(self) -> dict[str, Any]:
        for key in list(self.leases):
            self._expire(key)
        return {"held": {k: len(v) for k, v in self.leases.items()}, "peak": dict(self.peak),
                "expired": dict(self.expired), "owners": {k: sorted({o for _, o in v.values()}) for k, v in self.leases.items()}}


def limiter():
    """The cluster's limiter actor (created on first use)."""
    import ray

    actor = ray.remote(_Limiter).options(
        name=LIMITER, namespace=NAMESPACE, get_if_exists=True, lifetime="detached", num_cpus=0, max_concurrency=100_000
    )
    return actor.remote()


class ClusterSemaphore:
    """`async with` a leased slot of the cluster-wide limit of one endpoint; the lease is renewed
    while the block runs. Shared by a process's concurrent requests, like an asyncio.Semaphore:
    each asyncio task's lease is kept under that task."""

    def __init__(self, actor, key: str, limit: int, ttl_s: float = LEASE_TTL_S):
        self.actor, self.key, self.limit, self.ttl_s = actor, key, limit, ttl_s
        self.owner = f"{socket.gethostname()} pid {os.getpid()}"
        self._held: dict[asyncio.Task, tuple[int, asyncio.Task]] = {}

    async def __aenter__(self) -> None:
        lease = await self.actor.acquire.remote(self.key, self.limit, self.owner, self.ttl_s)
        self._held[asyncio.current_task()] = (lease, asyncio.get_running_loop().create_task(self._renew(lease)))

    async def _renew(self, lease: int) -> None:
        try:
            while True:
                await asyncio.sleep(self.ttl_s / 3)
                await self.actor.renew.remote(lease, self.ttl_s)
        except Exception:  # the limiter is gone (cluster shutting down): nothing left to renew
            return

    async def __aexit__(self, *exc) -> None:
        lease, renewing = self._held.pop(asyncio.current_task())
        renewing.cancel()
        await self.actor.release.remote(lease)


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
