"""The ReAct-style episode loop (think, call a tool, read its output, repeat within budgets), shared by multi-step environments.

Each step the policy (a callable: messages -> text) answers; tool calls in its answer are run
and their observations appended as `tool` messages; control returns to the policy. All earlier
messages stay in context (a strict prefix). The episode stops when the policy emits no tool call,
or when a budget (steps, tokens, wall time) is spent.

Tool-call format (the Hermes / Qwen chat-template convention), any number per answer:

    <tool_call>{"name": "bash", "arguments": {"command": "ls -la"}}</tool_call>

A malformed call becomes an error observation (the policy can fix it), not a crash.

The trajectory records which text spans the policy wrote and which came from tools, so the
trainer can mask tool output out of the loss (`Trajectory.spans`, `trainable`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .sandbox import Result, Session

Message = dict[str, str]
Policy = Callable[[list[Message]], str]

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments

    def __call__(self, **arguments: Any) -> str: ...


def format_result(result: Result, limit: int = 8000) -> str:
    """An observation from a sandbox result: output, then the exit status when not plain OK."""
    text = result.stdout + (
        ("\n" if result.stdout and not result.stdout.endswith("\n") else "") + result.stderr
        if result.stderr
        else ""
    )
    if len(text) > limit:
        text = (
            text[: limit // 2]
            + f"\n[... {len(text) - limit} characters cut ...]\n"
            + text[-limit // 2 :]
        )
    if not result.ok:
        text += f"\n[exit code {result.exit_code}; {result.status}{': ' + result.detail if result.detail else ''}]"
    return text


@dataclass
class BashTool:
    """Runs a shell command in a sandbox session (the episode's working directory)."""

    session: Session
    name: str = "bash"
    description: str = "Run a shell command in the sandbox's working directory; returns its output."
    parameters: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        }
    )
    max_chars: int = 8000

    def __call__(self, command: str) -> str:
        return format_result(self.session.run(command), self.max_chars)


@dataclass
class PythonTool:
    """Runs Python source in a sandbox session (written to a file, run with python3)."""

    session: Session
    name: str = "python"
    description: str = "Run a Python 3 program in the sandbox; returns what it prints."
    parameters: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {"code": {"type": "string"}},
            "required": ["code"],
        }
    )
    max_chars: int = 8000
    _n: int = 0

    def __call__(self, code: str) -> str:
        self._n += 1
        name = f".tool_{self._n}.py"
        self.session.write_files({name: code})
        return format_result(self.session.run(["python3", name]), self.max_chars)


@dataclass
class ToolCallRequest:
    name: str
    arguments: dict[str, Any]
    error: str = ""  # why the call could not be parsed


def parse_tool_calls(text: str) -> list[ToolCallRequest]:
    calls = []
    for raw in _TOOL_CALL.findall(text):
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            calls.append(
                ToolCallRequest("", {}, f"tool call is not valid JSON: {e.msg} at column {e.colno}")
            )
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            calls.append(
                ToolCallRequest("", {}, 'tool call must be {"name": ..., "arguments": {...}}')
            )
            continue
        args = obj.get("arguments", {})
        if isinstance(args, str):  # some templates double-encode the arguments
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        if not isinstance(args, dict):
            calls.append(ToolCallRequest(obj["name"], {}, "arguments must be a JSON object"))
            continue
        calls.append(ToolCallRequest(obj["name"], args))
    return calls


@dataclass
class Budget:
    max_steps: int = 20
    max_tokens: int = 32_768  # policy + tool tokens in context, prompt excluded
    max_wall_s: float = 600.0


@dataclass
class Span:
    source: str  # "prompt" | "policy" | "tool"
    text: str
    step: int

    @property
    def trainable(self) -> bool:
        """Only the policy's own tokens get the advantage; tool output is masked from the loss."""
        return self.source == "policy"


@dataclass
class Trajectory:
    messages: list[Message]
    spans: list[Span] = field(default_factory=list)
    steps: int = 0
    tokens: int = 0
    wall_s: float = 0.0
    stop_reason: str = ""  # no_tool_call | max_steps | max_tokens | max_wall_s
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def final_response(self) -> str:
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "assistant"), "")

    def policy_text(self) -> str:
        return "".join(s.text for s in self.spans if s.trainable)


def approx_tokens(text: str) -> int:
    """About 4 characters a token: a budget guard when no tokenizer is given."""
    return (len(text) + 3) // 4


def run_episode(
    policy: Policy,
    messages: Sequence[Message],
    tools: Sequence[Tool],
    budget: Budget | None = None,
    count_tokens: Callable[[str], int] = approx_tokens,
) -> Trajectory:
    budget = budget or Budget()
    by_name = {t.name: t for t in tools}
    traj = Trajectory(messages=[dict(m) for m in messages])
    traj.spans = [Span("prompt", m["content"], 0) for m in messages]
    t0 = time.monotonic()
    while True:
        if traj.steps >= budget.max_steps:
            traj.stop_reason = "max_steps"
            break
        if time.monotonic() - t0 >= budget.max_wall_s:
            traj.stop_reason = "max_wall_s"
            break
        traj.steps += 1
        response = policy(traj.messages)
        traj.messages.append({"role": "assistant", "content": response})
        traj.spans.append(Span("policy", response, traj.steps))
        traj.tokens += count_tokens(response)
        calls = parse_tool_calls(response)
        if not calls:
            traj.stop_reason = "no_tool_call"
            break
        if traj.tokens >= budget.max_tokens:
            traj.stop_reason = "max_tokens"
            break
        for call in calls:
            observation = _dispatch(call, by_name)
            traj.tool_calls.append(
                {
                    "step": traj.steps,
                    "name": call.name,
                    "arguments": call.arguments,
                    "observation": observation[:2000],
                }
            )
            traj.messages.append(
                {"role": "tool", "name": call.name or "error", "content": observation}
            )
            traj.spans.append(Span("tool", observation, traj.steps))
            traj.tokens += count_tokens(observation)
        if traj.tokens >= budget.max_tokens:
            traj.stop_reason = "max_tokens"
            break
    traj.wall_s = time.monotonic() - t0
    return traj


def _dispatch(call: ToolCallRequest, tools: dict[str, Tool]) -> str:
    if call.error:
        return f"error: {call.error}"
    tool = tools.get(call.name)
    if tool is None:
        return f"error: unknown tool {call.name!r}; available: {', '.join(sorted(tools)) or 'none'}"
    try:
        return tool(**call.arguments)
    except TypeError as e:
        return f"error: bad arguments for {call.name}: {e}"
    except Exception as e:  # a tool failure is an observation, never the end of the episode
        return f"error: {call.name} failed: {type(e).__name__}: {e}"


def tool_schemas(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """OpenAI-style function schemas, for chat templates that render a tool list."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]
