"""The real LLM client against the real scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from pydantic import BaseModel

from rlclimb.pipelines.llm import (
    LLMClient,
    LLMConfig,
    LLMConfigError,
    LLMError,
    StructuredOutputError,
    Usage,
)
from rlclimb.pipelines.scripted_server import CHAT_PATH, Reply, ScriptedServer

MSG = [{"role": "user", "content": "What is 2+2?"}]


class Answer(BaseModel):
    value: int
    reason: str


def make_client(server: ScriptedServer, cache_path=None, **profile: Any) -> LLMClient:
    base = {
        "base_url": server.base_url,
        "model": "test-model",
        "api_key": "k",
        "backoff_s": 0.01,
        "timeout_s": 5.0,
    }
    config = LLMConfig.from_dict(
        {"profiles": {"local": {**base, **profile}}, "roles": {"solver": "local"}}
    )
    return LLMClient(config, cache_path)


def run(client: LLMClient, coro_fn) -> Any:
    async def main():
        try:
            return await coro_fn()
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_plain_completion_and_accounting(llm_server: ScriptedServer):
    llm_server.queue(Reply("four", usage={"prompt_tokens": 1000, "completion_tokens": 500}))
    client = make_client(
        llm_server,
        price_input_per_mtok=2.0,
        price_output_per_mtok=10.0,
        params={"temperature": 0.3},
    )
    c = run(client, lambda: client.complete("solver", MSG, tag="solve", max_tokens=7))
    assert (c.text, c.finish_reason, c.model, c.cached) == ("four", "stop", "local", False)
    assert (c.prompt_tokens, c.completion_tokens) == (1000, 500)
    assert c.cost == pytest.approx(1000 * 2e-6 + 500 * 10e-6)
    body = llm_server.requests[0]
    assert body["model"] == "test-model" and body["messages"] == MSG
    assert body["temperature"] == 0.3 and body["max_tokens"] == 7
    u = client.usage["solve"]
    assert (u.requests, u.retries, u.failures, u.prompt_tokens, u.completion_tokens) == (
        1,
        0,
        0,
        1000,
        500,
    )
    assert u.cost == pytest.approx(c.cost)
    assert client.usage_by_profile["local"] == u
    snap = client.usage_snapshot()
    assert snap["total"]["requests"] == 1 and snap["by_tag"]["solve"]["cost"] == pytest.approx(
        c.cost
    )
    assert (Usage(requests=1, cost=0.5) + Usage(requests=2, cost=0.25)) == Usage(
        requests=3, cost=0.75
    )


def test_cache_hit_same_client_and_resumed_client(llm_server: ScriptedServer, tmp_path):
    cache = tmp_path / "llm.sqlite"
    client = make_client(llm_server, cache)

    async def twice():
        a = await client.complete("solver", MSG, seed=1)
        b = await client.complete("solver", MSG, seed=1)
        return a, b

    a, b = run(client, twice)
    assert llm_server.chat_count == 1
    assert not a.cached and b.cached and b.text == a.text and b.cost == 0
    assert client.usage["_"].cache_hits == 1 and client.usage["_"].requests == 1

    resumed = make_client(llm_server, cache)  # a new process on the same run directory
    c = run(resumed, lambda: resumed.complete("solver", MSG, seed=1))
    assert c.cached and c.text == "ok" and llm_server.chat_count == 1
    assert resumed.usage["_"].requests == 0 and resumed.usage["_"].cache_hits == 1

    d = run(resumed, lambda: resumed.complete("solver", MSG, seed=2))  # another seed, another key
    assert not d.cached and llm_server.chat_count == 2
    assert [r.get("seed") for r in llm_server.requests] == [1, 2]


def test_failed_calls_are_not_cached(llm_server: ScriptedServer, tmp_path):
    llm_server.queue(Reply(status=400))
    client = make_client(llm_server, tmp_path / "c.sqlite")
    with pytest.raises(LLMError) as e:
        run(client, lambda: client.complete("solver", MSG))
    assert e.value.drop_reason == "llm_bad_request"
    assert llm_server.chat_count == 1  # a 400 is not retried
    assert run(client, lambda: client.complete("solver", MSG)).text == "ok"
    assert llm_server.chat_count == 2


def test_rate_limit_then_success(llm_server: ScriptedServer):
    llm_server.queue(Reply(status=429, headers={"Retry-After": "0"}), Reply("fine"))
    client = make_client(llm_server, backoff_s=5.0)  # Retry-After: 0 must win over backoff
    t0 = time.monotonic()
    c = run(client, lambda: client.complete("solver", MSG, tag="t"))
    assert c.text == "fine" and time.monotonic() - t0 < 2
    u = client.usage["t"]
    assert (u.requests, u.retries, u.failures) == (2, 1, 0)


def test_server_errors_exhaust_retries(llm_server: ScriptedServer):
    llm_server.script(lambda body, n: Reply(status=500))
    client = make_client(llm_server, max_retries=2)
    with pytest.raises(LLMError) as e:
        run(client, lambda: client.complete("solver", MSG))
    assert e.value.drop_reason == "llm_server_error"
    assert llm_server.chat_count == 3
    u = client.usage["_"]
    assert (u.requests, u.retries, u.failures) == (3, 2, 1)


def test_timeout(llm_server: ScriptedServer):
    llm_server.script(lambda body, n: Reply("late", delay_s=1.0))
    client = make_client(llm_server, timeout_s=0.3, max_retries=1)
    with pytest.raises(LLMError) as e:
        run(client, lambda: client.complete("solver", MSG))
    assert e.value.drop_reason == "llm_timeout"
    assert client.usage["_"].requests == 2


def test_malformed_body_is_retried_then_fails(llm_server: ScriptedServer):
    llm_server.queue(Reply(raw=b"not json"), Reply("recovered"))
    client = make_client(llm_server, max_retries=1)
    assert run(client, lambda: client.complete("solver", MSG)).text == "recovered"

    llm_server.script(lambda body, n: Reply(raw=b"not json"))
    with pytest.raises(LLMError) as e:
        run(client, lambda: client.complete("solver", [{"role": "user", "content": "x"}]))
    assert e.value.drop_reason == "llm_server_error"
    assert llm_server.chat_count == 4


def test_refusal(llm_server: ScriptedServer):
    llm_server.queue(
        Reply(None, refusal="I can't help with that."), Reply("", finish_reason="content_filter")
    )
    client = make_client(llm_server)
    for _ in range(2):
        with pytest.raises(LLMError) as e:
            run(client, lambda: client.complete("solver", MSG))
        assert e.value.drop_reason == "llm_refusal"
    assert llm_server.chat_count == 2  # refusals are not retried


def test_structured_valid_first_time(llm_server: ScriptedServer):
    llm_server.queue(Reply('{"value": 4, "reason": "arithmetic"}'))
    client = make_client(llm_server)
    obj, c = run(client, lambda: client.structured("solver", MSG, Answer))
    assert obj == Answer(value=4, reason="arithmetic") and not c.cached
    rf = llm_server.requests[0]["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "Answer"
    assert rf["json_schema"]["schema"] == Answer.model_json_schema()


def test_structured_fenced_json_with_prose(llm_server: ScriptedServer):
    llm_server.queue(Reply('Sure! Here it is:\n```json\n{"value": 4, "reason": "sum"}\n```\nDone.'))
    client = make_client(llm_server)
    obj, _ = run(client, lambda: client.structured("solver", MSG, Answer))
    assert obj.value == 4 and llm_server.chat_count == 1


def test_structured_repaired(llm_server: ScriptedServer, tmp_path):
    llm_server.queue(Reply('{"value": "four"}'), Reply('{"value": 4, "reason": "fixed"}'))
    client = make_client(llm_server, tmp_path / "c.sqlite")
    obj, c = run(client, lambda: client.structured("solver", MSG, Answer, tag="judge"))
    assert obj.reason == "fixed" and llm_server.chat_count == 2
    repair = llm_server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"value": "four"}'}
    assert repair[-1]["role"] == "user" and "value" in repair[-1]["content"]
    assert c.prompt_tokens > 0 and client.usage["judge"].requests == 2
    # Both requests were cached: a resumed run replays the repair without any HTTP call.
    obj2, c2 = run(client, lambda: client.structured("solver", MSG, Answer, tag="judge"))
    assert obj2 == obj and c2.cached and llm_server.chat_count == 2


def test_structured_invalid_twice(llm_server: ScriptedServer):
    llm_server.queue(Reply("no idea"), Reply('{"value": 4}'))
    client = make_client(llm_server)
    with pytest.raises(StructuredOutputError) as e:
        run(client, lambda: client.structured("solver", MSG, Answer, tag="judge"))
    assert isinstance(e.value, LLMError) and e.value.drop_reason == "llm_invalid_output"
    assert llm_server.chat_count == 2 and client.usage["judge"].failures == 1


@pytest.mark.parametrize("mode", ["json_object", "none"])
def test_structured_modes_without_schema_support(llm_server: ScriptedServer, mode):
    llm_server.queue(Reply('{"value": 1, "reason": "r"}'))
    client = make_client(llm_server, structured_mode=mode)
    obj, _ = run(client, lambda: client.structured("solver", MSG, Answer))
    assert obj.value == 1
    body = llm_server.requests[0]
    assert body.get("response_format") == (
        {"type": "json_object"} if mode == "json_object" else None
    )
    assert json.dumps(Answer.model_json_schema()) in body["messages"][-1]["content"]


def test_concurrency_limit(llm_server: ScriptedServer):
    llm_server.script(lambda body, n: Reply(f"r{n}", delay_s=0.2))
    client = make_client(llm_server, concurrency=3)

    async def many():
        msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
        return await asyncio.gather(*(client.complete("solver", m) for m in msgs))

    results = run(client, many)
    assert len(results) == 10 and llm_server.max_in_flight == 3


def test_identical_inflight_requests_share_one_call(llm_server: ScriptedServer):
    llm_server.script(lambda body, n: Reply("shared", delay_s=0.2))
    client = make_client(llm_server)

    async def same():
        return await asyncio.gather(*(client.complete("solver", MSG) for _ in range(4)))

    results = run(client, same)
    assert [r.text for r in results] == ["shared"] * 4
    assert llm_server.chat_count == 1 and sum(r.cached for r in results) == 3


def test_client_survives_several_event_loops(llm_server: ScriptedServer):
    client = make_client(llm_server, concurrency=2)
    for i in range(3):  # the engine may call asyncio.run more than once
        c = asyncio.run(client.complete("solver", [{"role": "user", "content": str(i)}]))
        assert c.text == "ok"
    run(client, lambda: client.complete("solver", MSG))
    assert llm_server.chat_count == 4


def test_config_errors(llm_server: ScriptedServer):
    client = make_client(llm_server)
    with pytest.raises(LLMConfigError, match="'grader'"):
        run(client, lambda: client.complete("grader", MSG))
    with pytest.raises(LLMConfigError, match="'missing'"):
        LLMConfig.from_dict({"profiles": {}, "roles": {"judge": "missing"}})
    with pytest.raises(LLMConfigError, match="base_url"):
        LLMConfig.from_dict({"profiles": {"p": {"model": "m"}}})


def test_from_yaml_and_api_key(tmp_path, monkeypatch):
    path = tmp_path / "llm.yaml"
    path.write_text(
        "llm:\n  profiles:\n    big: {base_url: 'http://h/v1', model: m, api_key_env: MY_KEY}\n"
        "    local: {base_url: 'http://l/v1', model: m, api_key: sk-local}\n"
        "  roles: {judge: big}\n"
    )
    config = LLMConfig.from_yaml(path)
    assert config.resolve("judge").name == "big" and config.resolve("local").model == "m"
    monkeypatch.setenv("MY_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert config.resolve("big").resolve_api_key() == "sk-env"
    assert config.resolve("local").resolve_api_key() == "sk-local"  # explicit literal wins


def test_server_models_and_keepalive(llm_server: ScriptedServer):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", llm_server.port, timeout=5)
    for _ in range(2):  # two requests on one connection
        conn.request("GET", "/v1/models")
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["data"][0]["id"] == "scripted"
    conn.close()
    assert llm_server.count["/v1/models"] == 2 and llm_server.count[CHAT_PATH] == 0
