"""The cluster-wide LLM endpoint limit on a real Ray: slots are leases, a worker process killed
while holding slots gives them back once its leases lapse, a live holder keeps its by renewing."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from rlclimb.pipelines.engine.limiter import ClusterSemaphore, limiter

pytestmark = pytest.mark.slow

TTL_S = 3.0


class Holder:
    """A Ray actor whose requests take endpoint slots and never finish."""

    async def hold(self, key: str, limit: int, n: int) -> int:
        self.sem = ClusterSemaphore(limiter(), key, limit, TTL_S)

        async def request() -> None:
            async with self.sem:
                await asyncio.sleep(3600)

        self.tasks = [asyncio.get_running_loop().create_task(request()) for _ in range(n)]
        while len(self.sem._held) < n:
            await asyncio.sleep(0.05)
        return os.getpid()


def stats(ray) -> dict:
    return ray.get(limiter().stats.remote())


def until(predicate, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_killed_holder_gives_its_slots_back(ray_local):
    ray = ray_local
    holder = ray.remote(Holder).options(max_restarts=0).remote()
    pid = ray.get(holder.hold.remote("killed", 2, 2))
    assert stats(ray)["held"]["killed"] == 2
    os.kill(pid, signal.SIGKILL)
    # the endpoint is full until the dead worker's leases lapse; then a new request gets a slot
    lease = ray.get(limiter().acquire.remote("killed", 2, "driver", 30.0), timeout=120)
    s = stats(ray)
    assert s["expired"]["killed"] == 2 and s["held"]["killed"] == 1 and s["owners"]["killed"] == ["driver"]
    ray.get(limiter().release.remote(lease))
    assert stats(ray)["held"]["killed"] == 0


def test_a_live_holder_keeps_its_slots_past_the_ttl(ray_local):
    ray = ray_local
    holder = ray.remote(Holder).remote()
    ray.get(holder.hold.remote("alive", 1, 1))
    start = time.monotonic()
    until(lambda: time.monotonic() - start > 3 * TTL_S, "never")
    s = stats(ray)
    assert s["held"]["alive"] == 1 and s["expired"].get("alive", 0) == 0
    ray.kill(holder)


def test_the_limit_holds_across_processes(ray_local):
    """Two actors, four requests each, limit 3: never more than 3 at once (peak), all served."""
    ray = ray_local

    class Caller:
        async def run(self, n: int) -> int:
            sem = ClusterSemaphore(limiter(), "shared", 3, TTL_S)

            async def request() -> None:
                async with sem:
                    await asyncio.sleep(0.2)

            await asyncio.gather(*(request() for _ in range(n)))
            return n

    callers = [ray.remote(Caller).remote() for _ in range(2)]
    assert sum(ray.get([c.run.remote(4) for c in callers])) == 8
    s = stats(ray)
    assert s["peak"]["shared"] == 3 and s["held"]["shared"] == 0
