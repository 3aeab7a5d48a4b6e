"""The GRPO trainer on a tiny random-init model (tokenizer from the packaged SmolLM2): replayed
log-probs, early-exit sampling, a real climb, exact resume."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rlclimb.environments.base import Environment, Grade  # noqa: E402
from rlclimb.rl.config import GRPOConfig  # noqa: E402
from rlclimb.rl.data import Item  # noqa: E402
from rlclimb.rl.models import ModelNotFound, model_dir  # noqa: E402
from rlclimb.rl.rollout import Sample  # noqa: E402
from rlclimb.rl.sampler import PromptSampler, sample_groups  # noqa: E402
from rlclimb.rl.trainer import Trainer  # noqa: E402
from rlclimb.schemas.records import QAItem  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    try:
        folder = model_dir("smollm2")
    except ModelNotFound as e:
        pytest.skip(str(e))
    tok = AutoTokenizer.from_pretrained(folder)
    tok.padding_side = "left"
    return tok


def tiny_model(tok, seed=0):
    from rlclimb.rl.models import tiny_causal_lm

    return tiny_causal_lm(tok, seed=seed)


class CapitalEnv(Environment):
    """Task reward 1 when the response starts with a capital letter. About a third of a random
    model's first tokens do, so the reward is reachable by chance."""

    kind = "math"

    def messages(self, task):
        return [{"role": "user", "content": task.question}]

    def grade(self, task, completion):
        first = completion.strip()[:1]
        return Grade(task=1.0 if first.isascii() and first.isupper() else 0.0, formatted=True)


def items(n=12):
    return [Item(QAItem(question=f"Say one word. ({i})", answer="x"), "math") for i in range(n)]


def config(**overrides):
    values = dict(
        steps=4,
        prompts_per_step=2,
        group_size=4,
        early_group_size=0,
        pass_range=(0.0, 1.0),
        max_new_tokens=3,
        max_new_tokens_cap=3,
        lr=1e-1,
        eval_items=0,
        checkpoint_every=0,
        reward={"w_lang": 0.0, "w_len": 0.0},
        log_rollouts=False,
    )
    return GRPOConfig(**{**values, **overrides})


def make(tokenizer, tmp_path, seed=0, **overrides):
    return Trainer(
        config(**overrides),
        tiny_model(tokenizer, seed),
        tokenizer,
        items(),
        tmp_path,
        environments={"math": CapitalEnv()},
    )


def test_learner_replays_the_sampling_distribution(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, top_p=0.9, temperature=0.7)
    groups = trainer.rollout(trainer.train_items[:2], 3)
    samples = [s for g in groups for s in g]
    assert all(0 < size < len(tokenizer) for s in samples for size in s.nucleus_sizes)
    weights = [torch.ones(len(s.completion_ids)) for s in samples]
    _, stats = trainer._micro_step(samples, weights, torch.ones(len(samples)))
    # same weights: the learner's log-probs (temperature + replayed nucleus) are the sampler's
    assert stats.ratio_max == pytest.approx(1.0, abs=1e-4)
    assert stats.ratio_min == pytest.approx(1.0, abs=1e-4)


def test_micro_batches_do_not_change_the_update(tokenizer, tmp_path):
    grads, losses = [], []
    for size in (1, 8):
        trainer = make(tokenizer, tmp_path / str(size), micro_batch_size=size)
        losses.append(trainer.step()["loss"])
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters()]))
    # (compared before AdamW: with eps 1e-15 it turns float noise in ~0 gradients into +-lr)
    assert losses[0] == pytest.approx(losses[1], abs=1e-6)
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-7)


def test_early_exit_sampling():
    patterns = {"easy": "11111111", "hard": "00000000", "edge": "10101010", "rare": "10000000"}
    pool = [Item(QAItem(question=name, answer="x"), "math") for name in patterns]
    calls = []

    def rollout(batch, n):
        calls.append((sorted(i.record.question for i in batch), n))
        return [[Sample([1], [2], [0.0], [1], [1], False, 0) for _ in range(n)] for _ in batch]

    seen = {}

    def score(item, samples):
        name = item.record.question
        for s in samples:
            s.passed = patterns[name][seen.get(name, 0)] == "1"
            seen[name] = seen.get(name, 0) + 1

    cfg = GRPOConfig(
        prompts_per_step=4,
        group_size=8,
        early_group_size=4,
        early_pass_range=(0.05, 0.8),
        pass_range=(0.3, 0.8),
        sampling_rounds=1,
    )
    sampler = PromptSampler(pool, seed=0)
    draw = sample_groups(sampler, cfg, rollout, score)
    # all four get G_early; easy (4/4) and hard (0/4) exit early; edge and rare get 4 more
    assert calls == [(["easy", "edge", "hard", "rare"], 4), (["edge", "rare"], 4)]
    assert (draw.dropped_early, draw.dropped_full) == (2, 1)  # rare: 1/8 < 0.3
    assert [g.item.record.question for g in draw.groups] == ["edge"]
    assert len(draw.groups[0].samples) == 8 and len(draw.samples) == 4 * 4 + 2 * 4
    assert {sampler.pass_rates[i.id] for i in pool} == {1.0, 0.0, 0.5, 0.125}
    # curriculum: solved and hopeless prompts come back rarely
    weights = {i.record.question: sampler.weight(i) for i in pool}
    assert weights["easy"] == weights["hard"] == cfg.curriculum_floor and weights["edge"] == 1.0


@pytest.mark.slow
def test_climb(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, steps=10, prompts_per_step=4, group_size=8, top_p=1.0)
    rewards = [row["reward"] for row in trainer.train()]
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last > first + 0.25 and last > 0.7, rewards
    assert (tmp_path / "metrics.jsonl").exists()


STABLE = ("time/", "tokens_per_s", "gen_tokens_per_s")


def stable(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(STABLE)} for r in rows]


def test_resume_is_bit_for_bit(tokenizer, tmp_path):
    opts = dict(
        steps=4,
        checkpoint_every=2,
        eval_items=2,
        eval_every=2,
        minibatches=2,
        log_rollouts=True,
        double_above_truncation=2.0,
    )
    straight = make(tokenizer, tmp_path / "a", **opts)
    straight.train()
    first = make(tokenizer, tmp_path / "b", **opts)
    first.train(steps=2)
    # as a new process would: fresh objects, other initial weights
    resumed = make(tokenizer, tmp_path / "b", seed=1, **opts)
    assert resumed.resume() == 2
    resumed.train()
    a, b = stable(tmp_path / "a" / "metrics.jsonl"), stable(tmp_path / "b" / "metrics.jsonl")
    assert [r["step"] for r in b] == [0, 1, 2, 3, 4]
    assert a == b
    assert (tmp_path / "a" / "rollouts.jsonl").read_text() == (
        tmp_path / "b" / "rollouts.jsonl"
    ).read_text()
    assert [p.name for p in (tmp_path / "b" / "checkpoints").iterdir()] == ["step-000004"]
