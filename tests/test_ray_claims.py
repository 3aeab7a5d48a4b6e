"""Requests in flight are claimed cluster-wide: when two Ray processes make the same LLM request
at once, one asks the endpoint and the other gets its result (the scripted server counts the
requests); a failed call lets a waiter make it; a claim whose holder stops renewing lapses."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from rlclimb.pipelines.engine.limiter import limiter
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

pytestmark = pytest.mark.slow


class Asker:
    """A Ray actor with the LLM client of a Ray worker (ClusterLLMClient, no cache)."""

    def __init__(self, llm: LLMConfig):
        from rlclimb.pipelines.engine.limiter import ClusterLLMClient

        self.client = ClusterLLMClient(llm)

    async def ask(self, prompts: list[str]) -> list[tuple[str, bool] | str]:
        async def one(p: str):
            try:
                c = await self.client.complete("judge", [{"role": "user", "content": p}], tag="t")
                return c.text, c.cached
            except Exception as e:  # noqa: BLE001 (the test looks at it)
                return type(e).__name__

        return await asyncio.gather(*(one(p) for p in prompts))

    def pid(self) -> int:
        return os.getpid()


def config(server: ScriptedServer, retries: int = 4) -> LLMConfig:
    return LLMConfig.from_dict({
        "profiles": {"local": {"base_url": server.base_url, "model": "m", "api_key": "k", "concurrency": 8,
                               "timeout_s": 60, "backoff_s": 0.01, "max_retries": retries}},
        "roles": {"judge": "local"}})


def two_askers(ray, llm: LLMConfig):
    askers = [ray.remote(Asker).remote(llm) for _ in range(2)]
    assert len({ray.get(a.pid.remote()) for a in askers}) == 2  # two processes
    return askers


def test_the_same_request_from_two_processes_is_asked_once(ray_local):
    ray = ray_local
    with ScriptedServer(lambda body, n: Reply(f"answer to {body['messages'][-1]['content']}", delay_s=1.5)) as server:
        a, b = two_askers(ray, config(server))
        shared = [f"shared {i}" for i in range(3)]
        got_a, got_b = ray.get([a.ask.remote([*shared, "only a"]), b.ask.remote([*shared, "only b"])])
        assert server.chat_count == 3 + 2  # not 8: each shared request asked by one process
    assert [t for t, _ in got_a[:3]] == [t for t, _ in got_b[:3]] == [f"answer to {p}" for p in shared]
    # each shared request: one process paid for it, the other's answer is a hit (as in-process sharing)
    assert sorted(ca + cb for (_, ca), (_, cb) in zip(got_a[:3], got_b[:3], strict=True)) == [1, 1, 1]
    assert got_a[3] == ("answer to only a", False) and got_b[3] == ("answer to only b", False)
    s = ray.get(limiter().stats.remote())
    assert s["shared_results"] >= 3 and s["claims"] == 0  # nothing left held once everyone has it


def test_a_failed_call_lets_the_waiting_process_make_it(ray_local):
    ray = ray_local

    def reply(body, n):  # the first request fails (no retries), the second one succeeds
        return Reply("boom", status=500, delay_s=1.5) if n == 0 else Reply("fine", delay_s=0.2)

    with ScriptedServer(reply) as server:
        a, b = two_askers(ray, config(server, retries=0))
        got = ray.get([a.ask.remote(["same"]), b.ask.remote(["same"])])
        assert server.chat_count == 2
    results = [got[0][0], got[1][0]]
    assert ("fine", False) in results and any(isinstance(r, str) and "Error" in r for r in results), results


def test_a_claim_whose_holder_stops_renewing_is_taken_over(ray_local):
    ray = ray_local
    actor = limiter()
    first = ray.get(actor.claim.remote("lapsing", "dead holder", 1.0))
    assert "lease" in first
    start = time.monotonic()
    second = ray.get(actor.claim.remote("lapsing", "driver", 30.0), timeout=60)  # waits for the lapse
    assert "lease" in second and second["lease"] != first["lease"] and time.monotonic() - start >= 0.9
    ray.get(actor.finish.remote(first["lease"], b"too late"))  # the dead holder's late finish is ignored
    ray.get(actor.finish.remote(second["lease"], None))
    assert ray.get(actor.stats.remote())["lapsed_claims"] >= 1
