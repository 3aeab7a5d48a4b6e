"""One cluster-wide limit per LLM endpoint: a named Ray actor leasing each endpoint's slots.

A per-process semaphore would let N actors put N x `concurrency` requests on one vLLM server.
Every LLM client of a Ray run asks this one actor for a slot instead (two small RPCs per
request: about a millisecond, against an LLM call's hundreds). The actor is detached and found
by name, so concurrent runs on one cluster share an endpoint's limit too.

A slot is a lease: its holder renews it every `ttl/3` while its request runs, and a lease not
renewed for `ttl` seconds expires and frees the slot. So a worker killed while holding slots
(SIGKILL, a lost node) gives them back after at most `ttl` (LEASE_TTL_S), instead of shrinking
the endpoint's limit for the rest of the cluster's life.

The same actor keeps the cluster's LLM requests in flight, by request key (the cache key): a
process about to make a request claims its key first, and if another process is making the same
request it waits for that one's result instead of asking again (what each process's own
in-flight map does for its tasks; the request cache alone cannot, as both processes miss it
before either has an answer). A claim is a lease too: if its holder dies, a waiter takes it
over after `ttl`. A result is held only until the processes waiting for it have it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..llm import LLMClient, _cached_completion

LIMITER = "rlclimb-llm-limiter-3"  # leases and claims (older limiters, detached, are other actors)
NAMESPACE = "rlclimb"
LEASE_TTL_S = 30.0


@dataclass
class _Claim:
    lease: int
    expiry: float
    owner: str
    done: asyncio.Event = field(default_factory=asyncio.Event)
    result: bytes | None = None
    waiters: int = 0


class _Limiter:
    def __init__(self) -> None:
        self.leases: dict[str, dict[int, tuple[float, str]]] = {}  # key -> lease -> (expiry, owner)
        self.lease_key: dict[int, str] = {}
        self.changed: dict[str, asyncio.Condition] = {}
        self.peak: dict[str, int] = {}
        self.expired: dict[str, int] = {}
        self.ids = itertools.count(1)
        self.claims: dict[str, _Claim] = {}  # request key -> the claim of the process making it
        self.claim_key: dict[int, str] = {}
        self.shared_results = 0  # requests answered by another process's call
        self.lapsed_claims = 0  # claims whose holder stopped renewing (died): taken over

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

    # ---- requests in flight ----------------------------------------------------------------------
    async def claim(self, key: str, owner: str, ttl_s: float) -> dict[str, Any]:
        """{"lease": n}: make request `key` (nobody else is), then `finish`; {"result": bytes}:
        another process just made it. Waits while another holder's claim is live."""
        while True:
            c = self.claims.get(key)
            if c is not None and c.done.is_set() and c.result is not None:
                return {"result": c.result}
            if c is None or c.done.is_set() or c.expiry <= time.monotonic():  # free, failed or lapsed
                if c is not None and not c.done.is_set():
                    self.lapsed_claims += 1
                lease = next(self.ids)
                self.claims[key] = _Claim(lease, time.monotonic() + ttl_s, owner)
                self.claim_key[lease] = key
                return {"lease": lease}
            c.waiters += 1
            try:
                await asyncio.wait_for(c.done.wait(), timeout=max(c.expiry - time.monotonic(), 0.01))
            except TimeoutError:
                pass
            finally:
                c.waiters -= 1
            if c.done.is_set() and c.result is not None:
                self.shared_results += 1
                if c.waiters == 0 and self.claims.get(key) is c:
                    del self.claims[key]
                return {"result": c.result}

    async def renew_claim(self, lease: int, ttl_s: float) -> None:
        key = self.claim_key.get(lease)
        c = self.claims.get(key) if key is not None else None
        if c is not None and c.lease == lease:
            c.expiry = time.monotonic() + ttl_s

    async def finish(self, lease: int, result: bytes | None) -> None:
        """The claim's request is done: its result (None: it failed; a waiter makes it then)."""
        key = self.claim_key.pop(lease, None)
        c = self.claims.get(key) if key is not None else None
        if c is None or c.lease != lease:  # lapsed and taken over meanwhile
            return
        c.result = result
        c.done.set()
        if c.waiters == 0 or result is None:
            del self.claims[key]

    async def stats(self) -> dict[str, Any]:
        for key in list(self.leases):
            self._expire(key)
        return {"held": {k: len(v) for k, v in self.leases.items()}, "peak": dict(self.peak),
                "expired": dict(self.expired), "owners": {k: sorted({o for _, o in v.values()}) for k, v in self.leases.items()},
                "claims": len(self.claims), "shared_results": self.shared_results, "lapsed_claims": self.lapsed_claims}


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
        self.owner = f"{socket.gethostname()} pid {os.getpid()}"

    async def _call_once(self, key, profile, body, tag, state):
        """Claim the request cluster-wide first: another process making it answers us too."""
        if profile.backend == "local":  # an in-process model: nothing to share across processes
            return await super()._call_once(key, profile, body, tag, state)
        claim = await self._actor.claim.remote(key, self.owner, LEASE_TTL_S)
        if "result" in claim and (done := _cached_completion(claim["result"])) is not None:
            return self._hit(tag, profile, done)
        lease = claim.get("lease")
        renewing = asyncio.get_running_loop().create_task(self._renew_claim(lease)) if lease is not None else None
        result = None
        try:
            result = await super()._call_once(key, profile, body, tag, state)
            return result
        finally:
            if renewing is not None:
                renewing.cancel()
                answer = json.dumps(asdict(result)).encode() if result is not None and result.text else None
                await self._actor.finish.remote(lease, answer)

    async def _renew_claim(self, lease: int) -> None:
        try:
            while True:
                await asyncio.sleep(LEASE_TTL_S / 3)
                await self._actor.renew_claim.remote(lease, LEASE_TTL_S)
        except Exception:  # the limiter is gone (cluster shutting down): nothing left to renew
            return

    def _state(self):
        state = super()._state()
        for name, profile in self.config.profiles.items():
            if profile.backend != "local" and name not in state.sems:
                state.sems[name] = ClusterSemaphore(self._actor, endpoint_key(profile), profile.concurrency)
        return state
