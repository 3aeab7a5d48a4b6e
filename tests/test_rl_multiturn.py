"""Multi-turn episodes in training (rl/episodes.py): the context grows as a strict token prefix,
tool-output tokens are masked from the loss, one advantage per episode, a sandbox per episode
under a concurrency limit, a climb with a tiny model on a hand-written tool environment, and a
code-environment episode whose tool calls run in a real sandbox inside a training step.

A random tiny model never writes a well-formed tool call, so the tests that need tool calls use
`ScriptedTurns`: an engine whose policy turns are fixed texts (tool call first, then an answer)
and whose log-probs come from the real tiny model; everything else (episode loop, tools,
sandbox, grading, learner) is the real thing. The climb uses the model's own samples (tools
offered, rarely called)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.rl_agentic import CounterEnv, config, items, tiny, tokenizer_or_skip  # noqa: E402
from helpers.sandboxes import fast_backend, sandbox_or_skip  # noqa: E402

from rlclimb.environments.base import get_environment  # noqa: E402
from rlclimb.rl.data import Item  # noqa: E402
from rlclimb.rl.engines.base import Engine  # noqa: E402
from rlclimb.rl.rollout import Sample  # noqa: E402
from rlclimb.rl.trainer import Trainer  # noqa: E402
from rlclimb.schemas.records import CodeProblem, Solution, TestCase  # noqa: E402

TOOL_TAG = "<|im_start|>tool"


@pytest.fixture(scope="module")
def tokenizer():
    return tokenizer_or_skip()


class ScriptedTurns(Engine):
    """Policy turns from a script (the first turn of an episode, then the next after each tool
    turn), ended by <|im_end|>; log-probs are the tiny model's own, at temperature 1."""

    name = "scripted"

    def __init__(self, model, tokenizer, turns):
        super().__init__()
        self.model, self.tok, self.turns = model, tokenizer, turns
        self.contexts: list[list[int]] = []

    def generate(self, prompts, *, n, max_new_tokens, greedy=False, generator=None, seed=0):
        out = []
        for prompt in prompts:
            self.contexts.append(list(prompt))
            turn = self.tok.decode(prompt).count(TOOL_TAG)
            text = self.turns[min(turn, len(self.turns) - 1)]
            ids = self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
            with torch.no_grad():
                logits = self.model(torch.tensor([list(prompt) + ids])).logits[0].float()
            logp = logits[len(prompt) - 1 : -1].log_softmax(-1)
            lps = logp.gather(-1, torch.tensor(ids)[:, None]).squeeze(-1).tolist()
            out.append([Sample(list(prompt), ids, lps, [len(self.tok)] * len(ids), [1] * len(ids),
                               False, self.version) for _ in range(n)])
        return out

    def _load(self, model, version):
        pass


def trainer_with(tokenizer, tmp_path, env, records, kind, turns=None, **overrides):
    opts = dict(top_p=1.0, max_new_tokens=48, max_new_tokens_cap=48, prompts_per_step=1,
                group_size=2, lr=1e-3)
    opts.update(overrides)
    trainer = Trainer(config(**opts), tiny(tokenizer), tokenizer,
                      [Item(r, kind) for r in records], tmp_path, environments={kind: env})
    if turns is not None:
        trainer.engine = ScriptedTurns(trainer.model, tokenizer, turns)
    return trainer


CALL = '<tool_call>{"name": "add", "arguments": {"n": 5}}</tool_call>'


def test_tool_tokens_are_masked_and_the_context_is_a_token_prefix(tokenizer, tmp_path):
    env = CounterEnv(max_steps=4)
    records = [r.record for r in items(2, "tool")]
    trainer = trainer_with(tokenizer, tmp_path, env, records, "tool", turns=[CALL, "Done: 5."])
    (group,) = trainer.rollout(trainer.train_items[:1], 2)
    s = group[0]
    assert s.episode["steps"] == 2 and s.episode["stop_reason"] == "no_tool_call"
    assert [c["observation"] for c in s.episode["tool_calls"]] == ["counter = 5"]
    # the second turn's context is the first context plus exactly the tokens recorded since
    first, second = trainer.engine.contexts[:2]
    assert second[: len(first)] == first and second == s.prompt_ids + s.completion_ids[: len(second) - len(s.prompt_ids)]
    # mask: 1 on both policy turns, 0 on the tool turn between them
    call_ids = tokenizer(CALL, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    answer_ids = tokenizer("Done: 5.", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    c, a = len(call_ids), len(answer_ids)
    assert s.completion_ids[:c] == call_ids and s.completion_ids[-a:] == answer_ids
    tool_part = s.completion_ids[c:-a]
    assert s.loss_mask == [1] * c + [0] * len(tool_part) + [1] * a
    assert tokenizer.decode(tool_part) == "\n<|im_start|>tool\ncounter = 5<|im_end|>\n<|im_start|>assistant\n"
    # the whole context reads as the chat template renders the conversation
    conversation = [{"role": "assistant", "content": CALL}, {"role": "tool", "content": "counter = 5"},
                    {"role": "assistant", "content": "Done: 5."}]
    text = tokenizer.decode(s.prompt_ids + s.completion_ids)
    assert text.endswith(
        # (the episode ends at the last end-of-turn token; the template adds a newline)
        tokenizer.apply_chat_template(conversation, tokenize=False)
        .split("<|im_start|>assistant\n", 1)[1]
        .removesuffix("\n")
    )
    assert env.opened == env.closed == 2  # one episode context per sample, all torn down


def test_the_loss_sees_policy_tokens_only(tokenizer, tmp_path):
    env = CounterEnv(max_steps=4)
    trainer = trainer_with(tokenizer, tmp_path, env, [r.record for r in items(2, "tool")], "tool",
                           turns=[CALL, "Done."])
    seen = []
    loss = trainer.loss

    def spy(batch, logp, old, weights, advantages):
        seen.append(([w.clone() for w in weights], advantages.clone()))
        return loss(batch, logp, old, weights, advantages)

    trainer.loss = spy
    row = trainer.step()
    (weights, advantages), = seen
    masks = [w != 0 for w in weights]
    assert all(m.sum() > 0 and (~m).sum() > 0 for m in masks)  # both kinds of token present
    tool_tokens = sum(int((~m).sum()) for m in masks)
    assert tool_tokens == 2 * len(tokenizer("\n<|im_start|>tool\ncounter = 5<|im_end|>\n<|im_start|>assistant\n",
                                            add_special_tokens=False)["input_ids"])
    assert advantages.shape == (2,)  # one advantage per episode, broadcast over its tokens
    assert row["episode/tool_calls"] == 1.0 and row["episode/steps"] == 2.0
    assert row["len/mean"] > row["episode/policy_tokens"]


def test_budgets_stop_episodes(tokenizer, tmp_path):
    env = CounterEnv(max_steps=3)
    trainer = trainer_with(tokenizer, tmp_path, env, [r.record for r in items(2, "tool")], "tool",
                           turns=[CALL])  # never stops calling
    (group,) = trainer.rollout(trainer.train_items[:1], 2)
    assert all(s.episode["stop_reason"] == "max_steps" and s.episode["steps"] == 3 for s in group)
    assert all(s.truncated for s in group)
    env = CounterEnv(max_steps=50, max_tokens=60)
    trainer = trainer_with(tokenizer, tmp_path / "t", env, [r.record for r in items(2, "tool")],
                           "tool", turns=[CALL])
    (group,) = trainer.rollout(trainer.train_items[:1], 1)
    assert group[0].episode["stop_reason"] == "max_tokens" and group[0].episode["steps"] < 50


@pytest.mark.slow
def test_multi_turn_climb_on_a_tool_environment(tokenizer, tmp_path):
    """The tiny model's own episodes (tools offered, a fresh counter per episode, at most two at
    once); the reward (final answer starts with a capital letter) rises within ten steps."""
    env = CounterEnv(max_steps=2)
    trainer = Trainer(
        config(steps=10, prompts_per_step=4, group_size=8, top_p=1.0, episode_concurrency=2),
        tiny(tokenizer), tokenizer, items(12, "tool"), tmp_path, environments={"tool": env},
    )
    rows = trainer.train()
    rewards = [r["reward"] for r in rows]
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last > first + 0.25 and last > 0.7, rewards
    assert env.opened == env.closed == 10 * 4 * 8 and env.in_flight_max <= 2
    assert all("episode/steps" in r for r in rows)


def add_problem():
    tests = [TestCase(input=f"{a} {b}\n", output=f"{a + b}\n") for a, b in [(1, 2), (10, 5), (7, 7)]]
    return CodeProblem(id="add", statement="Read two integers and print their sum.", tests=tests,
                       solutions=[Solution(language="python", code="print(sum(map(int, input().split())))")])


PROBE = '<tool_call>{"name": "python", "arguments": {"code": "print(6 * 7)"}}</tool_call>'
ANSWER = "```python\nprint(sum(map(int, input().split())))\n```"


def test_code_episode_with_real_sandbox_tool_calls_in_training(tokenizer, tmp_path):
    backend = fast_backend()
    sandbox_or_skip(backend)
    env = get_environment("code", backend=backend, tools=["python"], max_steps=3, test_timeout_s=5)
    trainer = trainer_with(tokenizer, tmp_path, env, [add_problem(), add_problem().model_copy(update={"id": "add2"})],
                           "code", turns=[PROBE, ANSWER], log_rollouts=True, eval_items=0)
    try:
        row = trainer.step()
    finally:
        env.close()
    assert row["episode/tool_calls"] == 1.0 and row["pass_rate_all"] == 1.0
    # the sandbox's real output is in the context the second turn was sampled from
    texts = [tokenizer.decode(c) for c in trainer.engine.contexts]
    later = [t for t in texts if TOOL_TAG in t]
    assert len(texts) == 4 and len(later) == 2  # two episodes of two turns each
    assert all("<|im_start|>tool\n42\n<|im_end|>" in t for t in later)
    assert all("- python: Run a Python 3 program" in t for t in texts)  # the tool was offered


FIND = '<tool_call>{"name": "find_customer", "arguments": {"email": "ana@example.com"}}</tool_call>'


@pytest.mark.slow
def test_a_mix_of_math_and_tool_environment_items_trains(tokenizer, tmp_path):
    """A mix spec naming a QA dataset and a tool environment directory (the bike_shop example):
    tool tasks run in the real tool-use environment (its sandboxed tool runtime), graded on its
    final state; math items stay single-turn."""
    from pathlib import Path

    from helpers.rl_agentic import CapitalEnv

    from rlclimb.rl.data import load_items

    examples = Path(__file__).resolve().parent.parent / "examples"
    spec = tmp_path / "mix.yaml"
    spec.write_text(
        "name: agentic\nsources:\n"
        f"  - path: {examples / 'arithmetic.jsonl'}\n    max_items: 4\n"
        f"  - path: {examples / 'tool_envs' / 'bike_shop'}\n    max_items: 3\n"
    )
    mix = load_items(spec)
    assert sorted({i.kind for i in mix}) == ["math", "tool"]
    backend = fast_backend()
    sandbox_or_skip(backend)
    cfg = config(top_p=1.0, max_new_tokens=48, max_new_tokens_cap=48, prompts_per_step=7,
                 group_size=2, lr=1e-3, environments={"tool": {"backend": backend, "max_steps": 3}})
    trainer = Trainer(cfg, tiny(tokenizer), tokenizer, mix, tmp_path / "run",
                      environments={"math": CapitalEnv()})
    trainer.engine = ScriptedTurns(trainer.model, tokenizer, [FIND, "Your account is found."])
    try:
        row = trainer.step()
    finally:
        for env in trainer.envs.values():
            env.close()
    assert row["prompts"] == 7 and row["episode/tool_calls"] == 1.0
    tool_env = trainer.envs["tool"]
    assert type(tool_env).__name__ == "ToolUseEnvironment"
    texts = [tokenizer.decode(c) for c in trainer.engine.contexts]
    # the real runtime answered the call (Ana's customer record) inside the episode's context
    assert any("<tool_response>" in t and "c001" in t for t in texts)
