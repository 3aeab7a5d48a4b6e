"""Graders and their combination, and whole bike_shop episodes graded through the environment:
a scripted policy, a scripted user, and (through the project's scripted OpenAI-compatible server)
the LLM judge and the LLM user simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlclimb.environments.base import get_environment, kind_of
from rlclimb.environments.tooluse.env import STOP, LLMUser, ScriptedUser
from rlclimb.environments.tooluse.format import GraderConfig, ToolTask, load_env
from rlclimb.environments.tooluse.graders import (
    combine,
    outputs_present,
    pattern_issues,
    state_match,
)
from rlclimb.environments.tooluse.runtime import ToolRuntime
from rlclimb.pipelines.llm import LLMClient, LLMConfig
from rlclimb.pipelines.scripted_server import Reply

BIKE = Path(__file__).resolve().parents[1] / "examples" / "tool_envs" / "bike_shop"


@pytest.fixture(scope="module")
def bike():
    return load_env(BIKE)


@pytest.fixture(scope="module")
def tools(bike):
    with ToolRuntime(bike) as rt:
        return rt.tools


def call(step, name, observation="", **arguments):
    return {"step": step, "name": name, "arguments": arguments, "observation": observation}


def test_state_and_outputs(bike):
    task = bike.task("bike-002")
    assert state_match(task.final_hash, task) == 1.0
    assert state_match("0" * 64, task) == 0.0 and state_match(None, task) == 0.0
    assert outputs_present(["The total is 131.00 dollars"], ["131"]) == (1.0, [])
    assert outputs_present(["That's 1,279 in total."], ["1279"])[0] == 1.0
    assert outputs_present(["Total: 13"], ["131", "x"]) == (0.0, ["131", "x"])
    assert outputs_present(["HELLO there"], ["hello", "bye"]) == (0.5, ["bye"])


def test_pattern_checks(bike, tools):
    task = bike.task("bike-002")
    clean = [
        call(1, "find_customer", "c002", email="ben.okafor@example.com"),
        call(2, "search_products", "[]", query="helmet"),  # parallel with the next: fine
        call(2, "search_products", "[]", query="light"),
        call(
            3, "place_order", "{}", customer_id="c002", items=[{"sku": "AC-HELM-M", "quantity": 1}]
        ),
    ]
    assert pattern_issues(clean, tools, task) == []
    repeated = clean + [call(4, "find_customer", "c002", email="ben.okafor@example.com")]
    assert any("repeated" in i for i in pattern_issues(repeated, tools, task))
    bad_type = [call(1, "restock_product", "", sku="PT-TUBE-700", quantity="four")]
    issues = pattern_issues(bad_type, tools, task)
    assert len(issues) == 1 and "bad arguments for restock_product" in issues[0]
    missing = [call(1, "get_order")]
    assert "'order_id' is a required property" in pattern_issues(missing, tools, task)[0]
    assert "unknown tool" in pattern_issues([call(1, "drop_table")], tools, task)[0]
    # two independent reads in separate turns could have been one turn...
    serial = [
        call(1, "get_product", "{...}", sku="PT-CHAIN-11"),
        call(2, "get_product", "{}", sku="PT-TUBE-700"),
    ]
    assert any("could be parallel" in i for i in pattern_issues(serial, tools, task))
    # ... but a read that uses the previous output (the customer id) is a real dependency
    dependent = [
        call(1, "find_customer", "c002", email="b@x"),
        call(2, "get_customer", "{}", customer_id="c002"),
    ]
    assert pattern_issues(dependent, tools, task) == []
    no_tool = bike.task("bike-007")
    assert "needs none" in pattern_issues([call(1, "get_product", "", sku="x")], tools, no_tool)[0]


def test_combine_modes():
    gated = GraderConfig(combine="gated")
    assert combine({"state": 1, "outputs": 1, "patterns": 1}, gated) == 1.0
    assert combine({"state": 0, "outputs": 1, "patterns": 1}, gated) == 0.0
    assert combine({"state": 1, "outputs": 0.5, "patterns": 1}, gated) == 0.0
    assert combine({"state": 1, "outputs": 1, "patterns": 0.5}, gated) == pytest.approx(0.95)
    lex = GraderConfig(combine="lexicographic")
    perfect = combine({"state": 1, "outputs": 1, "patterns": 1}, lex)
    bad_patterns = combine({"state": 1, "outputs": 1, "patterns": 0}, lex)
    partial_outputs = combine({"state": 1, "outputs": 0.99, "patterns": 1}, lex)
    wrong_state = combine({"state": 0, "outputs": 1, "patterns": 1}, lex)
    assert perfect == 1.0 > bad_patterns > partial_outputs > wrong_state == 0.0
    # a lower key never outweighs a higher one, and acts only when the higher ones are perfect
    assert combine({"state": 1, "outputs": 0.5, "patterns": 0}, lex) == combine(
        {"state": 1, "outputs": 0.5, "patterns": 1}, lex
    )
    weighted = GraderConfig(
        combine="weighted", weights={"state": 0.5, "outputs": 0.5, "patterns": 0}
    )
    assert combine({"state": 1, "outputs": 0, "patterns": 1}, weighted) == 0.5


CALL = '<tool_call>{{"name": "{name}", "arguments": {args}}}</tool_call>'


def tc(name, **args):
    return CALL.format(name=name, args=json.dumps(args))


ORDER_LINES = [{"sku": "AC-HELM-M", "quantity": 1}, {"sku": "AC-LIGHT-SET", "quantity": 1}]


def scripted_policy(turns):
    it = iter(turns)
    return lambda messages: next(it)


def test_episode_right_and_wrong(bike):
    task = bike.task("bike-002")
    assert kind_of(task.model_dump()) == "tool"
    env = get_environment("tool", env=BIKE, user=ScriptedUser(["Yes, go ahead."]))
    try:
        right = [
            tc("find_customer", email="ben.okafor@example.com"),
            tc("search_products", query="helmet", category="accessory")
            + tc("search_products", query="light set", category="accessory"),
            "A helmet and the light set: 131 together. Shall I order them?",
            tc("place_order", customer_id="c002", items=ORDER_LINES),
            "Ordered (o0003), 131 in total.",
        ]
        traj = env.rollout(task, scripted_policy(right))
        assert traj.stop_reason == "done"
        assert [m["role"] for m in traj.messages][:4] == ["system", "user", "assistant", "tool"]
        assert "place_order" in traj.messages[0]["content"]  # tools listed in the system prompt
        reward = env.score(task, traj.final_response)
        assert reward.components["task"] == 1.0, reward.detail

        # the order placed twice: a different final state, task reward 0
        twice = right[:3] + [
            tc("place_order", customer_id="c002", items=ORDER_LINES),
            tc("place_order", customer_id="c002", items=ORDER_LINES),
            "Ordered, 131.",
        ]
        traj = env.rollout(task, scripted_policy(twice))
        assert traj.stop_reason == "done" and traj.steps == 6  # the user said yes again
        reward = env.score(task, "Ordered, 131.")
        assert reward.components["task"] == 0.0 and "differs" in reward.detail

        # right state, but the user is never told the total: gated to 0
        silent = right[:2] + ["Shall I order them?", right[3], "Done."]
        traj = env.rollout(task, scripted_policy(silent))
        assert traj.steps == 5
        reward = env.score(task, "Done.")
        assert reward.components["task"] == 0.0 and "missing output '131'" in reward.detail

        # malformed tool call: an error observation, and the format component is 0
        env.reset(task)
        step = env.step('<tool_call>{"name": "find_customer", </tool_call>')
        assert "not valid JSON" in step.observation and not step.done
    finally:
        env.close()


def test_no_tool_task_answered_without_tools(bike):
    task = bike.task("bike-007")
    env = get_environment("tool", env=BIKE)
    try:
        env.rollout(task, scripted_policy(["No: the workshop takes at most two bookings a day."]))
        assert env.score(task, "").components["task"] == 1.0
        env.rollout(task, scripted_policy([tc("get_product", sku="BK-ROAD-54"), "No, two a day."]))
        reward = env.score(task, "")
        assert reward.components["task"] < 1.0 and "needs none" in reward.detail
    finally:
        env.close()


def _client(server, tmp_path):
    config = LLMConfig.from_dict(
        {
            "profiles": {
                "local": {
                    "base_url": server.base_url,
                    "model": "m",
                    "api_key": "k",
                    "backoff_s": 0.01,
                    "timeout_s": 10,
                    "max_retries": 0,
                }
            },
            "roles": {"judge": "local", "user_sim": "local"},
        }
    )
    return LLMClient(config, tmp_path / "llm.sqlite")


def test_llm_judge_and_llm_user(llm_server, tmp_path, bike):
    task = bike.task("bike-006")

    def handler(body, n):
        prompt = body["messages"][0]["content"]
        if prompt.startswith("You grade"):
            assert "get_product" not in prompt and "search_products" in prompt  # the transcript
            return Reply(
                json.dumps(
                    {
                        "subtasks": [
                            {"subtask": "look up tube stock", "done": True, "evidence": "searched"},
                            {
                                "subtask": "tell the user the count",
                                "done": False,
                                "evidence": "said 14",
                            },
                        ]
                    }
                )
            )
        assert "Your goal" in prompt and task.instruction in prompt
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply("How many 700x25c tubes do you have?" if turns == 0 else STOP)

    llm_server.script(handler)
    client = _client(llm_server, tmp_path)
    spec = load_env(BIKE)
    spec.grader.judge = True
    spec.grader.combine = "weighted"
    spec.grader.weights = {"state": 1.0, "outputs": 1.0, "patterns": 0.0, "judge": 1.0}
    env = get_environment("tool", env=spec, user=LLMUser(client), llm=client)
    try:
        traj = env.rollout(
            task,
            scripted_policy([tc("search_products", query="inner tube 700x25c"), "We have 40."]),
        )
        assert traj.messages[1]["content"] == "How many 700x25c tubes do you have?"
        reward = env.score(task, traj.final_response)
        assert "judge=0.50" in reward.detail and "tell the user the count" in reward.detail
        assert reward.components["task"] == pytest.approx(2.5 / 3)  # state 1, outputs 1, judge 0.5
    finally:
        env.close()


def test_task_from_record_dict_routes_to_tool(bike):
    row = json.loads((BIKE / "tasks.jsonl").read_text().splitlines()[0])
    assert kind_of(row) == "tool"
    assert ToolTask.model_validate(row).id == "bike-001"
