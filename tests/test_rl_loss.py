"""GRPO loss pieces against hand-computed values (SPEC.md section 6)."""

import math

import pytest

torch = pytest.importorskip("torch")

from rlclimb.rl.loss import (  # noqa: E402
    clipped_objective,
    entropy_estimate,
    group_advantages,
    nucleus,
    replay_nucleus,
    token_logprobs,
    token_weights,
    update_k,
)

LOW, HIGH = 0.4, 2.5  # eps = 0.6: [1 - eps, (1 - eps)^-1 + k] with k = 0


def objective(ratios, advantages, *, high=HIGH, ratio_max=50.0, weights=None):
    old = torch.zeros(len(ratios))
    logp = torch.tensor([math.log(r) for r in ratios], requires_grad=True)
    adv = torch.tensor(advantages, dtype=torch.float32)
    w = torch.ones(len(ratios)) if weights is None else torch.tensor(weights)
    loss, stats = clipped_objective(logp, old, adv, w, low=LOW, high=high, ratio_max=ratio_max)
    loss.backward()
    return float(loss.detach()), logp.grad.tolist(), stats


def test_clip_branches():
    # r=1,A=1 -> 1 | r=3,A=1 -> clipped to 2.5 | r=0.2,A=1 -> 0.2 (no lower clip for A>0)
    # r=0.2,A=-1 -> clipped to -0.4 | r=3,A=-1 -> -3 (no upper clip for A<0)
    loss, grad, stats = objective([1.0, 3.0, 0.2, 0.2, 3.0], [1, 1, 1, -1, -1])
    assert loss == pytest.approx(-(1 + 2.5 + 0.2 - 0.4 - 3))
    # d(-r A)/d logp = -r A on unclipped tokens, 0 where the clipped branch is active
    assert grad == pytest.approx([-1.0, 0.0, -0.2, 0.0, 3.0])
    assert (stats.clip_low, stats.clip_high, stats.clip_outer) == (1, 1, 0)
    assert stats.ratio_max == pytest.approx(3.0) and stats.ratio_min == pytest.approx(0.2)


def test_k_widens_the_upper_clip():
    loss, grad, stats = objective([3.0], [1], high=1 / 0.4 + 0.5)  # k = 0.5 -> high = 3.0
    assert loss == pytest.approx(-3.0) and grad == pytest.approx([-3.0]) and stats.clip_high == 0


def test_outer_clip_on_all_branches():
    loss, grad, stats = objective([60.0], [-1])  # r > r_max: clamped to 50, no gradient
    assert loss == pytest.approx(50.0) and grad == pytest.approx([0.0]) and stats.clip_outer == 1
    loss, grad, _ = objective([60.0], [-1], ratio_max=100.0)
    assert loss == pytest.approx(60.0) and grad == pytest.approx([60.0])


def test_entropy_estimate_is_importance_weighted():
    logp = torch.tensor([math.log(0.5), math.log(0.25)])
    mask = torch.ones(2)
    assert entropy_estimate(logp, logp, mask) == pytest.approx((math.log(2) + math.log(4)) / 2)
    old = logp - torch.tensor([math.log(2.0), 0.0])  # ratio 2 on the first token
    assert entropy_estimate(logp, old, mask) == pytest.approx((2 * math.log(2) + math.log(4)) / 2)
    _, _, stats = objective([1.0, 1.0], [1, 1])
    assert stats.entropy == pytest.approx(0.0)


def test_controller_steps_and_bounds():
    assert update_k(0.0, 0.1, target=0.3, delta=0.25, k_max=2.5) == 0.25  # too little entropy
    assert update_k(1.0, 1.0, target=0.3, delta=0.25, k_max=2.5) == 0.75  # too much
    assert update_k(2.5, 0.1, target=0.3, delta=0.25, k_max=2.5) == 2.5  # upper bound
    assert update_k(0.0, 1.0, target=0.3, delta=0.25, k_max=2.5) == 0.0  # lower bound
    assert update_k(1.0, 0.3, target=0.3, delta=0.25, k_max=2.5) == 1.0  # sign(0) = 0


def test_nucleus_and_replay():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])  # p = .644 .237 .087 .032
    masked, size = nucleus(logits, 0.7)
    assert size.tolist() == [2]
    assert torch.isinf(masked[0, 2:]).all() and torch.isfinite(masked[0, :2]).all()
    expected = math.log(math.exp(1) / (math.exp(2) + math.exp(1)))
    got = token_logprobs(logits, torch.tensor([1]), size)
    assert float(got) == pytest.approx(expected)
    assert float(masked.log_softmax(-1)[0, 1]) == pytest.approx(expected)
    # replay ranks the learner's own logits; the target always stays in
    replayed = replay_nucleus(torch.tensor([[1.0, 2.0, 0.0, -1.0]]), size, torch.tensor([3]))
    assert torch.isfinite(replayed).tolist() == [[True, True, False, True]]
    # top_p = 1 and temperature
    assert nucleus(logits, 1.0)[1].tolist() == [4]
    assert float(token_logprobs(logits, torch.tensor([0]), temperature=2.0)) == pytest.approx(
        float((logits / 2).log_softmax(-1)[0, 0])
    )


@pytest.mark.parametrize("scale", [3.0, 0.1])  # peaked (top window) and flat (bottom window)
def test_nucleus_large_vocab_uses_the_same_set_as_a_full_sort(scale):
    torch.manual_seed(0)
    logits = torch.randn(3, 5000) * scale
    masked, size = nucleus(logits, 0.9)
    probs = logits.softmax(-1).sort(-1, descending=True).values
    expected = ((probs.cumsum(-1) - probs) < 0.9).sum(-1)
    assert size.tolist() == expected.tolist()
    targets = masked.argmax(-1)
    assert torch.allclose(
        token_logprobs(logits, targets, size),
        masked.log_softmax(-1).gather(-1, targets[:, None])[:, 0],
    )


def test_group_advantages():
    adv = group_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]]))
    assert adv[0].tolist() == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert adv[1].tolist() == [0, 0, 0, 0]


# two samples with 2 and 3 policy tokens, ratio 1 so each token's objective is its advantage
ADV = [1.0, 3.0, 2.0, 2.0, 5.0]


def aggregate(mode, row, sample=None):
    mask = torch.ones(5)
    w = token_weights(
        mode, mask, torch.tensor(row), None if sample is None else torch.tensor(sample)
    )
    loss, _ = clipped_objective(
        torch.zeros(5), torch.zeros(5), torch.tensor(ADV), w, low=LOW, high=HIGH
    )
    return float(loss)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", -13 / 5),
        ("token-sum", -13),
        ("sample-mean", -((1 + 3) / 2 + (2 + 2 + 5) / 3) / 2),
        ("true-sample-mean", -((1 + 3) / 2 + (2 + 2 + 5) / 3) / 2),
    ],
)
def test_aggregation_modes(mode, expected):
    assert aggregate(mode, [0, 0, 1, 1, 1]) == pytest.approx(expected)


def test_packed_equals_unpacked_where_it_should():
    unpacked = {m: aggregate(m, [0, 0, 1, 1, 1]) for m in ("token-mean", "true-sample-mean")}
    # both samples packed into one input row
    packed_row, samples = [0, 0, 0, 0, 0], [0, 0, 1, 1, 1]
    assert aggregate("token-mean", packed_row, samples) == pytest.approx(unpacked["token-mean"])
    assert aggregate("true-sample-mean", packed_row, samples) == pytest.approx(
        unpacked["true-sample-mean"]
    )
    # a per-row mean is not packing-invariant: the packed row counts as one sample
    assert aggregate("sample-mean", packed_row, samples) == pytest.approx(-13 / 5)


def test_weights_ignore_masked_tokens():
    mask = torch.tensor([1.0, 1.0, 0.0, 1.0])  # a tool-output token in the middle
    w = token_weights("sample-mean", mask, torch.tensor([0, 0, 0, 1]))
    assert w.tolist() == pytest.approx([0.25, 0.25, 0.0, 0.5])
    assert token_weights("token-mean", mask, torch.zeros(4)).tolist() == pytest.approx(
        [1 / 3, 1 / 3, 0, 1 / 3]
    )
