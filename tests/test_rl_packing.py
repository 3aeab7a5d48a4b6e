"""Packed sequences: several samples in one row, no padding, attention kept inside each sample.
The packed learner must give the padded learner's log-probs, loss and gradients (float
tolerance) in every aggregation mode whose divisor does not depend on the layout."""

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.rl_tiny import make, tokenizer_or_skip  # noqa: E402

from rlclimb.rl.packing import pack_rows  # noqa: E402
from rlclimb.rl.sampler import Group  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return tokenizer_or_skip()


def test_pack_rows_fills_rows_first_fit_decreasing():
    lengths = [5, 3, 9, 2, 4, 12, 1]
    rows = pack_rows(lengths, 10)
    assert sorted(i for r in rows for i in r) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in r) <= 10 for r in rows if len(r) > 1)
    assert [5] in rows  # longer than a row: alone
    assert len(rows) == 4  # 12 | 9+1 | 5+4 | 3+2 (+ nothing wasted beyond that)


def uneven_groups(trainer, seed=0):
    """Real sampled groups, with completions cut to different lengths and varied rewards, so rows
    differ in length and advantages are not zero."""
    gen = torch.Generator().manual_seed(seed)
    items = trainer.train_items[:3]
    groups = []
    for item, samples in zip(items, trainer.rollout(items, 4), strict=True):
        for s in samples:
            c = int(torch.randint(1, len(s.completion_ids) + 1, (1,), generator=gen))
            s.completion_ids, s.logprobs = s.completion_ids[:c], s.logprobs[:c]
            s.nucleus_sizes, s.loss_mask = s.nucleus_sizes[:c], s.loss_mask[:c]
            s.nucleus_ids = s.nucleus_ids[:c]
            s.reward = float(torch.rand((), generator=gen))
        groups.append(Group(item, samples))
    return groups


def full_grad(model):
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def test_packed_logprobs_equal_padded(tokenizer, tmp_path):
    opts = dict(max_new_tokens=8, max_new_tokens_cap=8, top_p=0.9)
    padded = make(tokenizer, tmp_path / "a", **opts)
    packed = make(tokenizer, tmp_path / "b", packing=True, pack_tokens=64, **opts)
    samples = [s for g in uneven_groups(padded) for s in g.samples]
    assert len({len(s.prompt_ids) + len(s.completion_ids) for s in samples}) > 2
    with torch.no_grad():
        a = padded.logprobs(padded.batch(samples))
        batch = packed.batch(samples)
        b = packed.logprobs(batch)
    assert batch["ids"].shape == (
        1,
        sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples),
    )
    valid = batch["valid"]
    assert torch.allclose(a[valid], b[valid], atol=1e-5)
    assert (b[~valid] == 0).all()


@pytest.mark.parametrize(
    "mode, padded_mode",
    [
        ("token-sum", "token-sum"),
        ("token-mean", "token-mean"),
        # a true sample's divisor is its own tokens: packing changes nothing
        ("true-sample-mean", "sample-mean"),
    ],
)
@pytest.mark.parametrize("pack_tokens", [40, 4096])  # several rows / one row
def test_packed_update_equals_padded(tokenizer, tmp_path, mode, padded_mode, pack_tokens):
    opts = dict(max_new_tokens=8, max_new_tokens_cap=8, top_p=0.9, lr=0.0, grad_clip=1e9)
    ref = make(tokenizer, tmp_path / "a", aggregation=padded_mode, micro_batch_size=5, **opts)
    groups = uneven_groups(ref)
    got = make(
        tokenizer, tmp_path / "b", aggregation=mode, packing=True, pack_tokens=pack_tokens, **opts
    )
    a = ref.learn(copy.deepcopy(groups))
    grad_a = full_grad(ref.model)
    b = got.learn(copy.deepcopy(groups))
    grad_b = full_grad(got.model)
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-6)
    assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4)
    assert a["grad_norm"] > 1e-3
    # elementwise tolerances fail on near-zero entries summed in another order: compare the
    # whole gradient's relative error
    assert float((grad_a - grad_b).norm() / grad_a.norm()) < 1e-4


def test_sample_mean_averages_per_packed_row(tokenizer, tmp_path):
    """sample-mean's divisor is the input row: with everything in one packed row it is the
    token mean of the batch; with several rows it is not."""
    opts = dict(max_new_tokens=8, max_new_tokens_cap=8, top_p=0.9, lr=0.0, grad_clip=1e9)
    ref = make(tokenizer, tmp_path / "a", aggregation="token-mean", **opts)
    groups = uneven_groups(ref)
    one_row = make(
        tokenizer, tmp_path / "b", aggregation="sample-mean", packing=True, pack_tokens=4096, **opts
    )
    rows = make(
        tokenizer, tmp_path / "c", aggregation="sample-mean", packing=True, pack_tokens=40, **opts
    )
    a = ref.learn(copy.deepcopy(groups))
    b = one_row.learn(copy.deepcopy(groups))
    c = rows.learn(copy.deepcopy(groups))
    assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4)
    assert c["grad_norm"] != pytest.approx(a["grad_norm"], rel=1e-3)


def test_packed_training_steps_run(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, packing=True, pack_tokens=48, steps=2)
    rows = trainer.train()
    assert [r["step"] for r in rows] == [1, 2] and all(r["grad_norm"] > 0 for r in rows)
