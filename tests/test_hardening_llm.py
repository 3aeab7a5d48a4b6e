"""Replies from a broken or hostile endpoint: never cached, never booked as is, never unbounded.
The real LLM client against the real scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import time

import pytest
from test_llm_client import MSG, make_client, run

from rlclimb.pipelines.kvstore import KVStore
from rlclimb.pipelines.llm import LLMError
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

MALFORMED = {
    "list content": Reply(["four"]),
    "number content": Reply(4),
    "string message": Reply(message="four"),
    "no choices": Reply(raw=json.dumps({"choices": [], "usage": {}}).encode()),
    "choices not a list": Reply(raw=json.dumps({"choices": {"message": {}}}).encode()),
    "number finish_reason": Reply(raw=json.dumps(
        {"choices": [{"message": {"content": "four"}, "finish_reason": 1}]}).encode()),
    "negative usage": Reply("four", usage={"prompt_tokens": -8_000_000_000, "completion_tokens": 5}),
    "absurd usage": Reply("four", usage={"prompt_tokens": 10, "completion_tokens": 10**15}),
    "string usage": Reply("four", usage={"prompt_tokens": "10", "completion_tokens": 5}),
}


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_reply_is_transient_and_never_cached(llm_server: ScriptedServer, tmp_path, reply):
    cache = tmp_path / "llm.sqlite"
    llm_server.queue(reply)
    client = make_client(llm_server, cache, max_retries=0, price_input_per_mtok=1.0)
    with pytest.raises(LLMError) as e:
        run(client, lambda: client.complete("solver", MSG, tag="t"))
    assert e.value.drop_reason == "llm_server_error"  # transient: --retry-transient asks again
    assert "malformed" in str(e.value)
    u = client.usage["t"]
    assert (u.failures, u.prompt_tokens, u.completion_tokens, u.cost) == (1, 0, 0, 0.0)
    assert len(KVStore(cache)) == 0

    # the (fixed) server is asked again, by a resumed client too
    resumed = make_client(llm_server, cache, max_retries=0)
    assert run(resumed, lambda: resumed.complete("solver", MSG)).text == "ok"
    assert llm_server.chat_count == 2


def test_malformed_reply_is_retried_within_the_call(llm_server: ScriptedServer):
    llm_server.queue(Reply(message="four"), Reply("four"))
    client = make_client(llm_server, max_retries=1)
    assert run(client, lambda: client.complete("solver", MSG)).text == "four"
    assert llm_server.chat_count == 2


def test_a_poisoned_cache_entry_is_asked_again(llm_server: ScriptedServer, tmp_path):
    """A cache written by a version that stored malformed replies does not replay them."""
    cache = tmp_path / "llm.sqlite"
    client = make_client(llm_server, cache)
    assert run(client, lambda: client.complete("solver", MSG)).text == "ok"
    store = KVStore(cache)
    [key] = [k for (k,) in store._db.execute("SELECT k FROM kv")]
    entry = json.loads(store.get(key))
    store.put(key, json.dumps({**entry, "text": ["four"]}).encode())
    store.close()

    llm_server.queue(Reply("four"))
    again = make_client(llm_server, cache)
    c = run(again, lambda: again.complete("solver", MSG))
    assert (c.text, c.cached, llm_server.chat_count) == ("four", False, 2)
    c = run(again, lambda: again.complete("solver", MSG))  # and the good reply replaced it
    assert (c.text, c.cached, llm_server.chat_count) == ("four", True, 2)


def test_null_content_and_missing_usage_are_valid(llm_server: ScriptedServer):
    llm_server.queue(Reply(raw=json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "length"}]}
    ).encode()))
    client = make_client(llm_server)
    c = run(client, lambda: client.complete("solver", MSG))
    assert (c.text, c.finish_reason, c.prompt_tokens, c.completion_tokens) == ("", "length", 0, 0)


def test_lone_surrogate_in_a_reply_is_made_safe(llm_server: ScriptedServer, tmp_path):
    llm_server.queue(Reply(raw=b'{"choices": [{"message": {"content": "x\\ud800y"}}]}'))
    client = make_client(llm_server, tmp_path / "llm.sqlite")
    c = run(client, lambda: client.complete("solver", MSG))
    assert c.text == "x\ufffdy"
    c.text.encode("utf-8")


def test_timeout_bounds_the_whole_call_against_a_dripping_server(llm_server: ScriptedServer):
    """httpx's read timeout restarts on every byte: a server dripping one byte every 0.2 s would
    hold a 1 s timeout for the whole body (about a minute here)."""
    llm_server.queue(Reply("x" * 100, drip_s=0.2))
    client = make_client(llm_server, timeout_s=1.0, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(LLMError) as e:
        run(client, lambda: client.complete("solver", MSG))
    elapsed = time.monotonic() - t0
    assert e.value.drop_reason == "llm_timeout"
    assert elapsed < 20  # generous: the drip alone lasts over 60 s


def test_drip_mode_delivers_a_reply_slowly(llm_server: ScriptedServer):
    """The scripted server's drip mode itself: a slow but complete reply within the timeout."""
    llm_server.queue(Reply("hi", drip_s=0.002))
    client = make_client(llm_server, timeout_s=30.0, max_retries=0)
    assert run(client, lambda: client.complete("solver", MSG)).text == "hi"


BROKEN_SAMPLES = {
    "list content": lambda: Reply(["So the answer is \\boxed{10}"]),
    "string message": lambda: Reply(message="So the answer is \\boxed{10}"),
    "negative usage": lambda: Reply("So the answer is \\boxed{10}",
                                    usage={"prompt_tokens": -8_000_000_000, "completion_tokens": 1}),
}


@pytest.mark.slow
@pytest.mark.parametrize("broken", BROKEN_SAMPLES.values(), ids=BROKEN_SAMPLES.keys())
def test_stem_score_retries_malformed_samples_once_the_server_is_fixed(llm_server, tmp_path, broken):
    """A malformed sample is a transient drop, not a wrong answer nor a cached error:
    `--retry-transient` asks the fixed server again and gets the true pass rates."""
    from helpers.score import handler, tier_config
    from test_score_pipeline import SCRIPT, data, items, ledger, run

    from rlclimb.pipelines.definitions.stem_score import build
    from rlclimb.pipelines.engine import RunOptions, run_pipeline
    from rlclimb.schemas.records import pass_rate_map

    state = {"broken": True}
    base = handler(SCRIPT)

    def server(body, n):
        text = body["messages"][-1]["content"]
        if state["broken"] and "[mid]" in text and body["model"] == "m2" and body["seed"] >= 2:
            return broken()
        return base(body, n)

    llm_server.script(server)
    src, out, llm = items(tmp_path), tmp_path / "run", tier_config(llm_server)
    first = run(src, out, llm)
    assert ledger(out)["mid"]["reason"] == "llm_server_error" and "mid" not in data(out)
    solve = {s["name"]: s for s in first.stats["stages"]}["solve"]["llm"]
    assert all(v >= 0 for v in solve.values())  # nothing negative booked

    state["broken"] = False
    before = len(llm_server.requests)
    options = RunOptions(progress=False, llm=llm, retry_transient=True)
    run_pipeline(build([str(src)], {"solve": {"k": 4, "k_early": 2}}, 100), out, options)
    again = {(b["model"], b["seed"]) for b in llm_server.requests[before:] if "[mid]" in str(b)}
    assert ("m2", 2) in again
    assert pass_rate_map(data(out)["mid"]["pass_rates"]) == {"tier-0": 0.25, "tier-1": 0.75, "tier-2": 1.0}
