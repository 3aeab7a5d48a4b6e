"""The GRPO trainer on a tiny random-init model (tokenizer from the packaged SmolLM2): replayed
log-probs, early-exit sampling, a real climb, exact resume."""

import json
import math

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


def test_learner_replays_the_sampling_distribution(tokenizer, tmp_path, monkeypatch):
    from rlclimb.rl import loss

    # a cold temperature makes the random model's nuclei one to hundreds of tokens wide; those
    # wider than 300 ids are recorded by size
    monkeypatch.setattr(loss, "NUCLEUS_IDS", 300)
    trainer = make(tokenizer, tmp_path, top_p=0.9, temperature=0.07, max_new_tokens=6)
    groups = trainer.rollout(trainer.train_items[:2], 3)
    samples = [s for g in groups for s in g]
    assert all(0 < size < len(tokenizer) for s in samples for size in s.nucleus_sizes)
    # the kept set itself is recorded where it is at most NUCLEUS_IDS wide
    assert all(len(s.nucleus_ids) == len(s.completion_ids) for s in samples)
    assert any(len(ids) > 1 for s in samples for ids in s.nucleus_ids)
    assert any(size > 300 for s in samples for size in s.nucleus_sizes)
    for s in samples:
        for size, ids, token in zip(s.nucleus_sizes, s.nucleus_ids, s.completion_ids, strict=True):
            assert (len(ids) == size and token in ids) if size <= 300 else ids == []
    # same weights: the learner's log-probs (temperature + replayed nucleus) are the sampler's
    with torch.no_grad():
        batch = trainer.batch(samples)
        learner = trainer.logprobs(batch)
    mask = batch["targets"] != trainer.pad_id
    assert torch.allclose(learner[mask], batch["behavior"][mask], atol=1e-4)


def perturb(model, scale=0.05, seed=1):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * scale * p.std().nan_to_num(0.02))


def test_replay_uses_the_sampled_set_after_an_update(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, top_p=0.9, temperature=0.07, max_new_tokens=6)
    samples = [s for g in trainer.rollout(trainer.train_items[:2], 2) for s in g]
    perturb(trainer.model)  # ranks move: a size-only replay would keep other tokens
    with torch.no_grad():
        batch = trainer.batch(samples)
        learner = trainer.logprobs(batch)
        hidden = trainer.model.get_decoder()(
            input_ids=batch["ids"], attention_mask=batch["attention"]
        ).last_hidden_state[:, batch["width_p"] - 1 : -1]
        logits = trainer.model.get_output_embeddings()(hidden).float() / 0.07
    checked = moved = 0
    for i, s in enumerate(samples):
        for t, ids in enumerate(s.nucleus_ids):
            if len(ids) < 2:
                continue
            expected = logits[i, t, ids].log_softmax(-1)[ids.index(s.completion_ids[t])]
            assert float(learner[i, t]) == pytest.approx(float(expected), abs=1e-4)
            top = set(logits[i, t].topk(len(ids)).indices.tolist())
            checked, moved = checked + 1, moved + (top != set(ids))
    assert checked and moved  # the learner's own top set differs from the sampled one


def test_padding_never_ranks_the_whole_vocabulary(tokenizer, tmp_path, monkeypatch):
    from rlclimb.rl import loss

    trainer = make(tokenizer, tmp_path, top_p=0.9)
    short = Sample([1, 2], [5, 6], [0.0, 0.0], [3, 4], [1, 1], False, 0)
    long = Sample([1], [5, 6, 7, 8, 9], [0.0] * 5, [2, 3, 4, 5, 6], [1] * 5, False, 0)
    asked = []  # no nucleus ids recorded: every real token is replayed by rank

    def spy(logits, k):
        asked.append(int(k.max()))
        return kth(logits, k)

    kth = loss.kth_largest
    monkeypatch.setattr(loss, "kth_largest", spy)
    with torch.no_grad():
        trainer.logprobs(trainer.batch([short, long]))
    assert asked == [6]  # the largest real nucleus, not the vocabulary for padded positions


def full_grad(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


@pytest.mark.parametrize("aggregation", ["token-mean", "sample-mean"])
def test_micro_batches_do_not_change_the_update(tokenizer, tmp_path, aggregation):
    grads, rows = [], []
    for size in (1, 8):
        # no clipping: it would rescale a wrongly normalized gradient back to norm 1 (the loss
        # itself is ~0 on-policy with equal lengths; its gradient is not)
        trainer = make(
            tokenizer,
            tmp_path / str(size),
            micro_batch_size=size,
            grad_clip=1e9,
            lr=0.0,
            aggregation=aggregation,
        )
        rows.append(trainer.step())
        grads.append(full_grad(trainer.model))
    assert rows[0]["loss"] == pytest.approx(rows[1]["loss"], rel=1e-4, abs=1e-6)
    assert rows[0]["grad_norm"] == pytest.approx(rows[1]["grad_norm"], rel=1e-4)
    assert torch.allclose(grads[0], grads[1], rtol=1e-3, atol=1e-7)
    assert rows[0]["grad_norm"] > 1e-3


def test_pi_old_is_the_learners_own(tokenizer, tmp_path):
    """CPU bf16 autocast (the GPU default). A sampler whose numerics differ from the learner's
    (here: its log-probs shifted by up to +-0.2) must not show up as ratios: on unchanged weights
    (lr 0) every ratio is 1, in the second minibatch too; the difference is the mismatch KL."""
    trainer = make(tokenizer, tmp_path, dtype="bfloat16", lr=0.0, minibatches=2, top_p=0.9)
    assert trainer.autocast == torch.bfloat16
    sample = trainer.rollout

    def shifted(items, n, **kw):
        groups = sample(items, n, **kw)
        for s in (s for g in groups for s in g):
            s.logprobs = [lp + 0.2 * math.sin(7 * i) for i, lp in enumerate(s.logprobs)]
        return groups

    trainer.rollout = shifted
    row = trainer.step()
    assert row["ratio/min"] == pytest.approx(1.0, abs=1e-6)
    assert row["ratio/max"] == pytest.approx(1.0, abs=1e-6)
    assert row["mismatch/kl"] > 1e-3
    fp32 = make(tokenizer, tmp_path / "fp32", lr=0.0, minibatches=2, top_p=0.9).step()
    assert fp32["mismatch/kl"] < 1e-8 and fp32["ratio/max"] == pytest.approx(1.0, abs=1e-6)


def test_later_minibatches_use_pi_old_from_before_the_update(tokenizer, tmp_path):
    # fp32 and exact sampler log-probs: after the first gradient step, the second minibatch's
    # ratios are pi_new / pi_before, not 1 (its pi_old comes from before any update)
    row = make(tokenizer, tmp_path, minibatches=2, lr=1e-2, top_p=0.9).step()
    assert max(row["ratio/max"] - 1, 1 - row["ratio/min"]) > 1e-3
    assert row["mismatch/kl"] < 1e-8


def test_bf16_sampler_matches_the_learner(tokenizer, tmp_path):
    """Under bf16 autocast the sampler's log-probs stay within 1e-4 of the learner's on this
    small model (weights scaled up so its logits are as peaked as a trained model's). A guard on
    the two code paths agreeing; on this model it does not tell a bf16 head from an fp32 one (on
    SmolLM2 it does: sampler/learner ratios 0.79-1.31 with a bf16 head, 0.88-1.09 in fp32; see
    test_head_runs_in_fp32_under_bf16_autocast for the head itself)."""
    trainer = make(tokenizer, tmp_path, dtype="bfloat16", top_p=0.9, max_new_tokens=6)
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.mul_(20 if p.dim() == 2 else 1)
    samples = [s for g in trainer.rollout(trainer.train_items[:2], 3) for s in g]
    with torch.no_grad():
        batch = trainer.batch(samples)
        learner = trainer.logprobs(batch)
    mask = batch["targets"] != trainer.pad_id
    assert (learner - batch["behavior"])[mask].abs().max() < 1e-4


def test_k_moves_once_per_gradient_step(tokenizer, tmp_path):
    # entropy below the target every step: k grows by delta per gradient step (3 per batch)
    low = make(tokenizer, tmp_path / "a", minibatches=3, entropy_target=100.0, k_delta=0.25)
    row = low.step()
    assert (row["k"], row["k_next"], low.k) == (0.0, 0.75, 0.75)
    # entropy above a target of 0: k shrinks from k_init, down to its floor 0
    high = make(tokenizer, tmp_path / "b", minibatches=3, entropy_target=0.0, k_init=1.0)
    assert high.step()["k_next"] == 0.25
    assert high.step()["k_next"] == 0.0


def test_k_reaches_the_loss(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, is_cap=0.0)  # no importance weight: pi_old is made up
    samples = [s for g in trainer.rollout(trainer.train_items[:1], 2) for s in g]
    batch = trainer.batch(samples)
    weights = [torch.ones(len(s.completion_ids)) for s in samples]
    losses = {}
    for k in (0.0, 1.0):  # ratio 3 with A > 0: clipped at 2.5 with k = 0, not with k = 1 (3.5)
        trainer.k = k
        logp = trainer.logprobs(batch)
        loss, _ = trainer.loss(batch, logp, logp.detach() - math.log(3), weights, torch.ones(2))
        losses[k] = float(loss.detach())
    tokens = sum(len(w) for w in weights)
    assert losses[0.0] == pytest.approx(-2.5 * tokens, rel=1e-4)
    assert losses[1.0] == pytest.approx(-3.0 * tokens, rel=1e-4)


def test_rewards_use_the_groups_own_pass_rate(tokenizer, tmp_path):
    """The length penalty's rho is the pass rate of the prompt's whole group (graded first),
    also for a prompt never seen before, and after early exit's second half of the group."""
    trainer = make(
        tokenizer,
        tmp_path,
        group_size=8,
        early_group_size=4,
        prompts_per_step=1,
        max_new_tokens=4,
        max_new_tokens_cap=8,
        reward={"w_lang": 0.0, "w_len": 0.25},
    )
    words = ["Yes", "no", "Yes", "no", "no", "no", "Yes", "no"]  # 2/4 early, 3/8 in all
    pending = iter(words)

    def rollout(batch, n):
        out = []
        for _ in batch:
            group = []
            for _ in range(n):
                ids = tokenizer(next(pending), add_special_tokens=False)["input_ids"]
                group.append(
                    Sample([1], ids, [0.0] * len(ids), [1] * len(ids), [1] * len(ids), False, 0)
                )
            out.append(group)
        return out

    draw = sample_groups(trainer.sampler, trainer.cfg, rollout, trainer.score)
    (group,) = draw.groups
    assert [s.passed for s in group.samples] == [w == "Yes" for w in words]
    for s in group.samples:
        assert s.components["length"] == pytest.approx(0.375 * len(s.completion_ids) / 4)


def test_early_exit_sampling():
    patterns = {"easy": "11111111", "hard": "00000000", "edge": "10101010", "rare": "10000000"}
    pool = [Item(QAItem(question=name, answer="x"), "math") for name in patterns]
    calls = []

    def rollout(batch, n):
        calls.append((sorted(i.record.question for i in batch), n))
        return [[Sample([1], [2], [0.0], [1], [1], False, 0) for _ in range(n)] for _ in batch]

    seen = {}

    def score(item, samples):  # gets the whole group so far; grades each sample once
        name = item.record.question
        for s in samples:
            if s.grade is None:
                s.grade = patterns[name][seen.get(name, 0)] == "1"
                s.passed = s.grade
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


def count_host_syncs(monkeypatch):
    """Counts tensor -> Python conversions made from rl/ code (each one waits for the device on a
    GPU): tolist, item, bool/int/float, nonzero, cpu."""
    import sys

    calls = []
    for name in ("tolist", "item", "__bool__", "__int__", "__float__", "nonzero", "cpu"):
        original = getattr(torch.Tensor, name)

        def spy(self, *args, _original=original, **kwargs):
            if "/rl/" in sys._getframe(1).f_code.co_filename:
                calls.append(1)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, spy)
    return calls


def test_sampler_looks_at_the_device_every_sync_every_tokens(tokenizer, monkeypatch):
    from rlclimb.rl.rollout import generate

    model = tiny_model(tokenizer)
    results, syncs = {}, {}
    for every in (1, 16):
        calls = count_host_syncs(monkeypatch)
        results[every] = generate(
            model,
            [[1, 2, 3], [4, 5]],
            n=2,
            max_new_tokens=48,
            eos_ids=[tokenizer.eos_token_id],
            pad_id=tokenizer.eos_token_id,
            top_p=0.9,
            temperature=0.07,
            generator=torch.Generator().manual_seed(0),
            sync_every=every,
            full_sort=every > 1,  # the GPU path: no data-dependent branch in the nucleus
        )
        syncs[every] = len(calls)
        monkeypatch.undo()
    assert syncs[1] >= 48 and syncs[16] <= 3 * 10  # 3 looks at the device, not 48
    a = [s for g in results[1] for s in g]
    b = [s for g in results[16] for s in g]
    assert [s.completion_ids for s in a] == [s.completion_ids for s in b]
    def kept_sets(samples):  # (ties may come in another order)
        return [[sorted(ids) for ids in s.nucleus_ids] for s in samples]

    assert kept_sets(a) == kept_sets(b)
    assert [s.nucleus_sizes for s in a] == [s.nucleus_sizes for s in b]
    assert all(len(s.completion_ids) == 48 and s.truncated for s in a)


def test_rows_stop_at_their_end_of_turn_token(tokenizer):
    from rlclimb.rl.rollout import generate

    stops = list(range(0, len(tokenizer), 3))  # a third of the vocabulary ends a turn
    for every in (1, 8):
        (group,) = generate(
            tiny_model(tokenizer),
            [[1, 2, 3]],
            n=6,
            max_new_tokens=20,
            eos_ids=stops,
            pad_id=0,
            generator=torch.Generator().manual_seed(0),
            sync_every=every,
        )
        for s in group:
            ends = [t in stops for t in s.completion_ids]
            assert len(s.logprobs) == len(s.nucleus_sizes) == len(s.completion_ids)
            assert not any(ends[:-1]) and ends[-1] == (not s.truncated)
        assert any(len(s.completion_ids) < 20 for s in group)


def test_rollouts_keep_the_whole_templated_prompt(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, steps=1, log_rollouts=True)
    trainer.train()
    rows = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    item = next(i for i in trainer.train_items if i.id == rows[0]["prompt_id"])
    assert rows[0]["prompt"] == trainer.prompt_text(item)
    assert "<|im_start|>user" in rows[0]["prompt"] and item.record.question in rows[0]["prompt"]
    assert rows[0]["prompt"].endswith("<|im_start|>assistant\n")


def test_true_sample_mean_says_it_is_sample_mean_without_packing(tokenizer, tmp_path):
    with pytest.warns(UserWarning, match="does not pack"):
        make(tokenizer, tmp_path, aggregation="true-sample-mean")
