"""`ToolUseEnvironment` (kind "tool"): a multi-turn episode against a sandboxed tool runtime.

An episode: the system prompt (the environment's policy and its tools, in the Hermes tool-call
format of `environments/episode.py`), then the user's first message (the task instruction, or a
user simulator's opening line). Each `step(action)` takes the policy's text: tool calls in it run
in the runtime and their outputs come back as the observation; text with no tool call is a reply
to the user, which ends the episode, or, with a user simulator, gets the user's answer (the user
ends with "###STOP###" or when `max_user_turns` is spent). `grade` then hashes the final state and
applies the graders (`graders.grade_episode`) with the environment's grader settings.

    env = get_environment("tool", env="bike_shop")              # or a directory path
    traj = env.rollout(task, policy)                             # the whole episode
    env.score(task, traj.final_response)                         # Reward with components

User simulators: `ScriptedUser` (fixed lines, for tests) or `LLMUser` (an LLM through
pipelines/llm.py, tau-bench's prompt): anything with `opening(task)` and `reply(task, history)`
(and optionally `reset()`, called at each episode start).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import Environment, Grade, Step
from ..episode import Budget, Span, Trajectory, approx_tokens, parse_tool_calls
from .format import ToolEnvSpec, ToolTask, load_env
from .graders import grade_episode, judge_subtasks
from .runtime import ToolRuntime

STOP = "###STOP###"
OBSERVATION_CHARS = 8000


def system_prompt(spec: ToolEnvSpec, schemas: Sequence[dict[str, Any]]) -> str:
    tools = "\n".join(json.dumps(s, ensure_ascii=False) for s in schemas)
    return (
        f"{spec.policy.strip()}\n\n"
        "You may call tools. The tools, as JSON function schemas:\n"
        f"<tools>\n{tools}\n</tools>\n\n"
        "To call tools, write one or more calls, each as\n"
        '<tool_call>{"name": <tool name>, "arguments": {<arguments>}}</tool_call>\n'
        "Calls that do not depend on each other can go in the same message. A message without a "
        "tool call is your reply to the user."
    )


def _strip_calls(text: str) -> str:
    import re

    return re.sub(r"<tool_call>.*?</tool_call>", " ", text, flags=re.S).strip()


class ScriptedUser:
    """The user's lines in order; after the last one the user stops."""

    def __init__(self, lines: Sequence[str], opening: str | None = None) -> None:
        self.lines, self._opening, self._i = list(lines), opening, 0

    def reset(self) -> None:
        self._i = 0

    def opening(self, task: ToolTask) -> str:
        return self._opening if self._opening is not None else task.instruction

    def reply(self, task: ToolTask, history: list[dict[str, str]]) -> str:
        if self._i >= len(self.lines):
            return STOP
        self._i += 1
        return self.lines[self._i - 1]


USER_PROMPT = """You are a user talking to a customer-service agent. Your goal and what you know:

{instruction}
{persona}
Rules:
- Write only the user's next message, one or two sentences, as the user would.
- Reveal information only when the agent needs it; never invent details beyond the goal.
- Do not repeat the instruction verbatim.
- When the goal is done (or cannot be done), reply with exactly {stop}."""


class _Loop:
    """One background event loop for the async LLM client, shared by sync callers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def run(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


_loop: _Loop | None = None


def run_sync(coro) -> Any:
    global _loop
    if _loop is None:
        _loop = _Loop()
    return _loop.run(coro)


class LLMUser:
    """A user simulator played by an LLM (`role` in the LLM config), tau-bench style: it sees
    the conversation with roles swapped (the agent's replies are its input)."""

    def __init__(self, llm: Any, role: str = "user_sim", personas: dict[str, str] | None = None):
        self.llm, self.role, self.personas = llm, role, personas or {}

    def _ask(self, task: ToolTask, history: list[dict[str, str]]) -> str:
        persona = self.personas.get(task.persona, task.persona)
        system = USER_PROMPT.format(
            instruction=task.instruction,
            persona=f"Your manner: {persona}\n" if persona else "",
            stop=STOP,
        )
        flipped = [
            {"role": "user" if m["role"] == "assistant" else "assistant", "content": m["content"]}
            for m in history
        ]
        messages = [{"role": "system", "content": system}, *flipped]
        if not flipped:
            messages.append({"role": "user", "content": "Hi! How can I help you today?"})
        return run_sync(self.llm.complete(self.role, messages, tag="user_sim", seed=0)).text.strip()

    def opening(self, task: ToolTask) -> str:
        return self._ask(task, [])

    def reply(self, task: ToolTask, history: list[dict[str, str]]) -> str:
        return self._ask(task, history)


@dataclass
class _Episode:
    task: ToolTask
    runtime: ToolRuntime
    step: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)  # the agent's messages to the user
    history: list[dict[str, str]] = field(default_factory=list)  # user <-> agent, no tool turns
    user_turns: int = 0
    malformed: int = 0
    done: bool = False
    log: list[str] = field(default_factory=list)  # the transcript, in order, for the judge


class ToolUseEnvironment(Environment):
    kind = "tool"

    def __init__(
        self,
        env: str | Path | ToolEnvSpec | None = None,
        *,
        backend: str | None = None,
        user: Any = None,
        llm: Any = None,
        judge_role: str = "judge",
        max_user_turns: int = 10,
        call_timeout_s: float = 10.0,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.default_env = env
        self.backend = backend
        self.user = user
        self.llm = llm
        self.judge_role = judge_role
        self.max_user_turns = max_user_turns
        self.call_timeout_s = call_timeout_s
        self._specs: dict[str, ToolEnvSpec] = {}
        self._runtimes: dict[str, ToolRuntime] = {}
        self._episode: _Episode | None = None
        self._openings: dict[str, str] = {}

    # environments and runtimes ----------------------------------------------------------------
    def task_of(self, task: Any) -> ToolTask:
        return task if isinstance(task, ToolTask) else ToolTask.model_validate(task)

    def spec_for(self, task: ToolTask) -> ToolEnvSpec:
        ref = task.env or self.default_env
        if isinstance(ref, ToolEnvSpec):
            return ref
        if ref is None:
            raise ValueError(f"task {task.id} names no environment and none was configured")
        key = str(ref)
        if key not in self._specs:
            self._specs[key] = load_env(ref)
        return self._specs[key]

    def runtime_for(self, task: ToolTask) -> ToolRuntime:
        spec = self.spec_for(task)
        key = str(spec.root)
        if key not in self._runtimes:
            self._runtimes[key] = ToolRuntime(
                spec, backend=self.backend, call_timeout_s=self.call_timeout_s
            )
            self._runtimes[key].start()
        return self._runtimes[key]

    # the Environment interface ----------------------------------------------------------------
    def messages(self, task: Any) -> list[dict[str, str]]:
        task = self.task_of(task)
        runtime = self.runtime_for(task)
        # one opening per task: the trainer's prompt and rollout()'s must be the same text
        if task.id not in self._openings:
            self._openings[task.id] = (
                self.user.opening(task) if self.user is not None else task.instruction
            )
        first = self._openings[task.id]
        return [
            {"role": "system", "content": system_prompt(self.spec_for(task), runtime.schemas())},
            {"role": "user", "content": first},
        ]

    def reset(self, task: Any) -> str:
        """A fresh state; returns the user's first message (`messages` gives the whole prompt)."""
        task = self.task_of(task)
        runtime = self.runtime_for(task)
        runtime.reset()
        if callable(getattr(self.user, "reset", None)):  # a new conversation (scripted lines)
            self.user.reset()
        self._task = task
        prompt = self.messages(task)
        self._episode = _Episode(task, runtime, history=[dict(prompt[-1])])
        self._episode.log.append(f"user: {prompt[-1]['content']}")
        self._prompt = prompt
        return prompt[-1]["content"]

    def step(self, action: str) -> Step:
        ep = self._episode
        if ep is None or ep.done:
            raise RuntimeError("step() before reset() or after the episode ended")
        ep.step += 1
        calls = parse_tool_calls(action)
        if calls:
            observations = []
            for call in calls:
                if call.error:
                    ep.malformed += 1
                    out = f"Error: {call.error}"
                else:
                    out = ep.runtime.call(call.name, call.arguments)
                    ep.log.append(
                        f"tool call {call.name}({json.dumps(call.arguments)}) -> {out[:500]}"
                    )
                    ep.calls.append(
                        {
                            "step": ep.step,
                            "name": call.name,
                            "arguments": call.arguments,
                            "observation": out[:2000],
                        }
                    )
                if len(out) > OBSERVATION_CHARS:
                    out = (
                        out[:OBSERVATION_CHARS]
                        + f"\n[... {len(out) - OBSERVATION_CHARS} characters cut]"
                    )
                observations.append(f"<tool_response>\n{out}\n</tool_response>")
            return Step("\n".join(observations), done=False)
        reply = action.strip()
        ep.replies.append(reply)
        ep.history.append({"role": "assistant", "content": reply})
        ep.log.append(f"assistant: {reply}")
        if self.user is None or ep.user_turns >= self.max_user_turns:
            ep.done = True
            return Step("", done=True)
        ep.user_turns += 1
        answer = self.user.reply(ep.task, ep.history)
        if STOP in answer:
            ep.done = True
            return Step("", done=True)
        ep.history.append({"role": "user", "content": answer})
        ep.log.append(f"user: {answer}")
        return Step(answer, done=False)

    def rollout(
        self,
        task: Any,
        policy: Callable[[list[dict[str, str]]], str],
        budget: Budget | None = None,
        count_tokens: Callable[[str], int] = approx_tokens,
    ) -> Trajectory:
        """The whole episode: reset, then policy/step until done or a budget is spent. Tool
        results come back as `tool` messages and user answers as `user` messages."""
        budget = budget or Budget()
        self.reset(task)
        traj = Trajectory(messages=[dict(m) for m in self._prompt])
        traj.spans = [Span("prompt", m["content"], 0) for m in traj.messages]
        import time

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
            step = self.step(response)
            if step.done:
                traj.stop_reason = "done"
                break
            role = "tool" if parse_tool_calls(response) else "user"
            traj.messages.append({"role": role, "content": step.observation})
            traj.spans.append(Span("tool", step.observation, traj.steps))  # never trained on
            traj.tokens += count_tokens(step.observation)
            if traj.tokens >= budget.max_tokens:
                traj.stop_reason = "max_tokens"
                break
        traj.tool_calls = list(self._episode.calls)
        traj.wall_s = time.monotonic() - t0
        return traj

    def grade(self, task: Any, completion: str) -> Grade:
        """Grade the episode that just ran for `task` (its final state, replies and calls). A
        `completion` with no episode behind it (single-turn use) is its only reply, graded
        against the untouched state."""
        task = self.task_of(task)
        ep = self._episode
        if ep is None or ep.task.id != task.id:
            self.reset(task)
            self.step(completion)
            ep = self._episode
        spec = self.spec_for(task)
        final_hash = ep.runtime.state_hash()
        replies = [_strip_calls(r) for r in ep.replies] or [_strip_calls(completion)]
        judge = None
        if spec.grader.judge and self.llm is not None:
            judge = run_sync(
                judge_subtasks(
                    self.llm,
                    task,
                    self.transcript(),
                    policy=spec.policy,
                    role=self.judge_role,
                )
            )
        verdict = grade_episode(
            task,
            final_hash=final_hash,
            replies=replies,
            calls=ep.calls,
            tools=ep.runtime.tools,
            config=spec.grader,
            judge_score=judge,
        )
        return Grade(task=verdict.task, formatted=ep.malformed == 0, detail=verdict.detail)

    def transcript(self) -> str:
        return "\n".join(self._episode.log) if self._episode else ""

    def close(self) -> None:
        for rt in self._runtimes.values():
            rt.close()
        self._runtimes.clear()
        # LLM clients keep per-event-loop HTTP state: close it on the loop that made it.
        clients = {id(c): c for c in (self.llm, getattr(self.user, "llm", None)) if c is not None}
        if _loop is not None:
            for client in clients.values():
                if hasattr(client, "aclose"):
                    run_sync(client.aclose())
