"""The ReAct episode loop with a scripted policy: tool calls into a sandbox session, observations
appended, budgets (steps, tokens, wall time), malformed calls, and the policy/tool span mask."""

from __future__ import annotations

import json
import time

import pytest
from helpers.sandboxes import fast_backend, sandbox_or_skip

from rlclimb.environments.episode import (
    BashTool,
    Budget,
    PythonTool,
    parse_tool_calls,
    run_episode,
    tool_schemas,
)


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class Scripted:
    """Answers from a list, recording what it saw each turn."""

    def __init__(self, answers: list[str], delay: float = 0.0):
        self.answers, self.delay, self.seen = list(answers), delay, []

    def __call__(self, messages):
        self.seen.append([dict(m) for m in messages])
        time.sleep(self.delay)
        return self.answers.pop(0) if self.answers else "done"


@pytest.fixture
def session():
    sb = sandbox_or_skip(fast_backend())
    with sb.session() as s:
        yield s


def test_tools_run_in_the_sandbox_and_observations_return(session):
    policy = Scripted(
        [
            "Let me write a file. " + call("bash", command="echo 41 > n.txt && ls"),
            call("python", code="print(int(open('n.txt').read()) + 1)")
            + call("bash", command="exit 3"),
            "The answer is 42.",
        ]
    )
    tools = [BashTool(session), PythonTool(session)]
    traj = run_episode(policy, [{"role": "user", "content": "Compute."}], tools)
    assert traj.stop_reason == "no_tool_call" and traj.steps == 3
    assert [m["role"] for m in traj.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert traj.messages[2]["content"] == "n.txt\n"
    assert traj.messages[4]["content"] == "42\n"
    assert "[exit code 3; RE" in traj.messages[5]["content"]
    assert traj.final_response == "The answer is 42."
    # Strict prefix: every turn sees all earlier messages unchanged.
    for earlier, later in zip(policy.seen, policy.seen[1:], strict=False):
        assert later[: len(earlier)] == earlier
    # Loss mask: only the policy's spans are trainable.
    assert [s.source for s in traj.spans] == [
        "prompt",
        "policy",
        "tool",
        "policy",
        "tool",
        "tool",
        "policy",
    ]
    assert traj.policy_text().endswith("The answer is 42.") and "n.txt\n" not in traj.policy_text()
    assert [c["name"] for c in traj.tool_calls] == ["bash", "python", "bash"]


def test_bad_calls_become_observations(session):
    policy = Scripted(
        ["<tool_call>{not json</tool_call>", call("nope", x=1), call("bash", cmd="ls"), "ok"]
    )
    traj = run_episode(policy, [{"role": "user", "content": "go"}], [BashTool(session)])
    obs = [m["content"] for m in traj.messages if m["role"] == "tool"]
    assert obs[0].startswith("error: tool call is not valid JSON")
    assert obs[1] == "error: unknown tool 'nope'; available: bash"
    assert obs[2].startswith("error: bad arguments for bash")
    assert traj.stop_reason == "no_tool_call"


def test_budgets(session):
    loop = call("bash", command="echo again")
    traj = run_episode(
        Scripted([loop] * 50),
        [{"role": "user", "content": "go"}],
        [BashTool(session)],
        Budget(max_steps=3),
    )
    assert (traj.stop_reason, traj.steps) == ("max_steps", 3)
    traj = run_episode(
        Scripted([loop] * 50),
        [{"role": "user", "content": "go"}],
        [BashTool(session)],
        Budget(max_tokens=40),
    )
    assert traj.stop_reason == "max_tokens" and traj.tokens >= 40 and traj.steps < 10
    traj = run_episode(
        Scripted([loop] * 50, delay=0.2),
        [{"role": "user", "content": "go"}],
        [BashTool(session)],
        Budget(max_wall_s=0.5),
    )
    assert traj.stop_reason == "max_wall_s" and traj.steps <= 4


def test_parse_tool_calls_and_schemas(session):
    calls = parse_tool_calls(
        'a <tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call> b'
    )
    assert [(c.name, c.arguments, c.error) for c in calls] == [("bash", {"command": "ls"}, "")]
    assert parse_tool_calls("no calls") == []
    schema = tool_schemas([BashTool(session)])[0]
    assert schema["function"]["name"] == "bash" and schema["function"]["parameters"][
        "required"
    ] == ["command"]
