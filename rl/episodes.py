"""Multi-turn episodes in training: environments/episode.py's loop (`run_episode`: tool calls,
observations, step/token/time budgets) driven by a policy that keeps the context as token ids.

Every token the model has seen stays a strict prefix: the policy's tokens are appended exactly as
sampled (never decoded and re-tokenized), and each tool turn adds only the tokens of the new
text the chat template renders after them (the rest of the assistant turn's end, the tool
messages, the next generation prompt). Tool-turn tokens get loss mask 0 (and log-prob 0, a
nucleus of one); the whole episode is one Sample whose completion is everything after the
prompt, so its one advantage reaches every policy token of every turn.

An environment is multi-turn when it has `episode(task)`: a context manager yielding its tools
for one episode (a sandbox created on entry, torn down on exit), or runs its own loop with
`rollout(task, policy, budget, count_tokens)` (the tool-use environment, kind "tool": tools in a
sandboxed runtime, a simulated user; one episode at a time per environment instance, graded
right after). The code environment becomes
one with `environments: {code: {tools: [python]}}` (a `python` and/or `bash` tool in a sandbox
session per episode; the final answer's fenced block is graded as before). Budgets come from the
environment's options (`max_steps`, `max_tokens`, `max_wall_s`); at most `episode_concurrency`
episodes (so sandboxes) run at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import torch

from rlclimb.environments.base import Environment
from rlclimb.environments.episode import (
    BashTool,
    Budget,
    PythonTool,
    Tool,
    Trajectory,
    run_episode,
)

from .rollout import Sample

TOOL_INSTRUCTIONS = (
    "You can call tools. To call one, write\n"
    '<tool_call>{{"name": NAME, "arguments": {{...}}}}</tool_call>\n'
    "and wait for its output. Answer without a tool call when you are done. Tools:\n{tools}"
)


def episode_tools(env: Environment, task: Any) -> AbstractContextManager[list[Tool]] | None:
    """The tools of one episode of `task`, or None for a single-turn environment."""
    if hasattr(env, "episode"):
        return env.episode(task)
    names = env.options.get("tools")
    if env.kind == "code" and names:
        return _sandbox_tools(env, list(names))
    return None


@contextmanager
def _sandbox_tools(env, names: list[str]) -> Iterator[list[Tool]]:
    kinds = {"python": PythonTool, "bash": BashTool}
    unknown = set(names) - set(kinds)
    if unknown:
        raise ValueError(f"code environment tools: unknown {sorted(unknown)}; known: python, bash")
    with env.sandbox.session() as session:  # one sandbox per episode, closed when it ends
        yield [kinds[n](session) for n in names]


def budget_of(env: Environment) -> Budget:
    o = env.options
    return Budget(
        max_steps=int(o.get("max_steps", 4)),
        max_tokens=int(o.get("max_tokens", 2048)),
        max_wall_s=float(o.get("max_wall_s", 300.0)),
    )


def with_tools(messages: list[dict[str, str]], tools: list[Tool]) -> list[dict[str, str]]:
    """The prompt with the tool list in the system message (templates differ in how they render
    tool schemas; this works with any)."""
    listing = "\n".join(
        f"- {t.name}: {t.description} Arguments: {json.dumps(t.parameters.get('properties', {}))}"
        for t in tools
    )
    note = TOOL_INSTRUCTIONS.format(tools=listing)
    messages = [dict(m) for m in messages]
    if messages and messages[0]["role"] == "system":
        messages[0]["content"] += "\n\n" + note
    else:
        messages.insert(0, {"role": "system", "content": note})
    return messages


class TokenPolicy:
    """The policy for `run_episode`: messages in, text out, with the context kept as token ids."""

    def __init__(self, tokenizer, generate: Callable[[list[int], int], Sample], eos_ids,
                 prompt_messages, prompt_ids, max_new_tokens: int, max_tokens: int):
        self.tok, self.generate, self.eos_ids = tokenizer, generate, list(eos_ids)
        self.messages = [dict(m) for m in prompt_messages]  # what is in context, as messages
        self.prompt_ids = list(prompt_ids)
        self.ids: list[int] = []  # completion: policy and tool tokens after the prompt
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.sizes: list[int] = []
        self.kept: list[list[int]] = []
        self.kept_ok = True  # every policy turn recorded its nucleus ids
        self.max_new_tokens, self.max_tokens = max_new_tokens, max_tokens
        self.truncated = False
        self.policy_tokens = 0

    def _append_tool_turn(self, new: list[dict[str, str]]) -> None:
        before = self.tok.apply_chat_template(self.messages, tokenize=False)
        after = self.tok.apply_chat_template(
            self.messages + new, tokenize=False, add_generation_prompt=True
        )
        if not after.startswith(before):
            raise ValueError("chat template does not render the conversation as a growing prefix")
        # what the template writes after the assistant's last token: the end of its turn (the
        # rest after the end-of-turn token, or that token too if the turn was cut off)
        eos_text = self.tok.decode([self.ids[-1]]) if self.ids else ""
        cut = before.rfind(eos_text) if eos_text and self.ids[-1] in self.eos_ids else -1
        tail = before[cut + len(eos_text) :] if cut >= 0 else self.tok.eos_token + "\n"
        ids = self.tok(tail + after[len(before) :], add_special_tokens=False)["input_ids"]
        self.ids += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.sizes += [1] * len(ids)
        self.kept += [[t] for t in ids]
        self.messages += new

    def __call__(self, messages: list[dict[str, str]]) -> str:
        if len(messages) > len(self.messages):
            self._append_tool_turn([dict(m) for m in messages[len(self.messages) :]])
        room = self.max_tokens - len(self.ids)
        s = self.generate(self.prompt_ids + self.ids, max(1, min(self.max_new_tokens, room)))
        self.ids += s.completion_ids
        self.mask += [1] * len(s.completion_ids)
        self.logprobs += s.logprobs
        self.sizes += s.nucleus_sizes
        if len(s.nucleus_ids) == len(s.completion_ids):
            self.kept += s.nucleus_ids
        else:
            self.kept += [[] for _ in s.completion_ids]
            self.kept_ok = False
        self.truncated = s.truncated
        self.policy_tokens += len(s.completion_ids)
        text = self.tok.decode(s.completion_ids, skip_special_tokens=True)
        self.messages.append({"role": "assistant", "content": text})
        return text


_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_of(env) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(id(env), threading.Lock())


def run_token_episode(
    env: Environment,
    task: Any,
    messages: list[dict[str, str]],
    tokenizer,
    generate: Callable[[list[int], int], Sample],
    *,
    eos_ids: list[int],
    max_new_tokens: int,
    policy_version: int,
) -> Sample:
    budget = budget_of(env)
    if hasattr(env, "rollout"):
        return _own_loop(env, task, messages, tokenizer, generate, budget, eos_ids=eos_ids,
                         max_new_tokens=max_new_tokens, policy_version=policy_version)
    with episode_tools(env, task) as tools:
        prompt = with_tools(messages, tools)
        text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]  # as Trainer.prompt_ids
        policy = TokenPolicy(tokenizer, generate, eos_ids, prompt, prompt_ids, max_new_tokens,
                             budget.max_tokens)
        traj = run_episode(policy, prompt, tools, budget, count_tokens=_counter(tokenizer))
    return Sample(
        prompt_ids=list(prompt_ids),
        completion_ids=policy.ids,
        logprobs=policy.logprobs,
        nucleus_sizes=policy.sizes,
        loss_mask=policy.mask,
        truncated=policy.truncated or traj.stop_reason != "no_tool_call",
        policy_version=policy_version,
        nucleus_ids=policy.kept if policy.kept_ok else [],
        episode=_summary(traj, policy),
    )


def _own_loop(env, task, messages, tokenizer, generate, budget, *, eos_ids, max_new_tokens,
              policy_version) -> Sample:
    """An environment that runs its own episode loop (`rollout(task, policy, budget,
    count_tokens)`, e.g. tooluse.ToolUseEnvironment, whose state lives on the instance): one
    episode at a time per environment, graded at once, before the next resets the state."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    with _lock_of(env):
        policy = TokenPolicy(tokenizer, generate, eos_ids, messages, prompt_ids, max_new_tokens,
                             budget.max_tokens)
        traj = env.rollout(task, policy, budget, count_tokens=_counter(tokenizer))
        grade = env.grade(task, traj.final_response)
    sample = Sample(
        prompt_ids=list(prompt_ids),
        completion_ids=policy.ids,
        logprobs=policy.logprobs,
        nucleus_sizes=policy.sizes,
        loss_mask=policy.mask,
        truncated=policy.truncated or traj.stop_reason not in ("done", "no_tool_call"),
        policy_version=policy_version,
        nucleus_ids=policy.kept if policy.kept_ok else [],
        episode=_summary(traj, policy),
    )
    sample.grade = grade
    return sample


def _counter(tokenizer) -> Callable[[str], int]:
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _summary(traj: Trajectory, policy: TokenPolicy) -> dict[str, Any]:
    return {
        "final": traj.final_response,
        "steps": traj.steps,
        "stop_reason": traj.stop_reason,
        "tool_calls": traj.tool_calls,
        "policy_tokens": policy.policy_tokens,
        "wall_s": traj.wall_s,
    }


def run_episodes(
    jobs: list[tuple[Environment, Any, list[dict[str, str]]]],
    n: int,
    tokenizer,
    engine,
    *,
    eos_ids: list[int],
    max_new_tokens: int,
    concurrency: int,
    seed: int,
    device: torch.device,
    greedy: bool = False,
) -> list[list[Sample]]:
    """n episodes per job (environment, task, prompt messages), at most `concurrency` at once.
    Each episode samples with its own generator (seed + its index), so thread order does not
    change what is drawn."""

    def one(index: int) -> Sample:
        env, task, messages = jobs[index // n]
        generator = torch.Generator(device).manual_seed(seed + index)

        def generate(ids: list[int], max_new: int) -> Sample:
            (group,) = engine.generate([ids], n=1, max_new_tokens=max_new, greedy=greedy,
                                       generator=generator, seed=seed + index)
            return group[0]

        return run_token_episode(env, task, messages, tokenizer, generate, eos_ids=eos_ids,
                                 max_new_tokens=max_new_tokens, policy_version=engine.version)

    with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="rl-episode") as pool:
        samples = list(pool.map(one, range(len(jobs) * n)))
    return [samples[i * n : (i + 1) * n] for i in range(len(jobs))]
