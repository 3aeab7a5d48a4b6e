"""GRPO loss pieces against hand-computed values."""

import math

import pytest

torch = pytest.importorskip("torch")

from rlclimb.rl.loss import (  # noqa: E402
    clipped_objective,
    completion_logprobs,
    group_advantages,
    head_logits,
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


def test_entropy_is_importance_weighted():
    # the trainer's H (LossStats.entropy): mean of -log pi(y_t) * r_t over policy tokens
    logp = torch.tensor([math.log(0.5), math.log(0.25), math.log(0.1)])
    old = logp - torch.tensor([math.log(2.0), 0.0, 0.0])  # ratio 2 on the first token
    weights = torch.tensor([0.5, 0.5, 0.0])  # the third is padding
    _, stats = clipped_objective(logp, old, torch.ones(3), weights, low=LOW, high=HIGH)
    assert stats.tokens == 2
    assert stats.entropy == pytest.approx((2 * math.log(2) + math.log(4)) / 2)
    _, stats = clipped_objective(logp, logp, torch.ones(3), weights, low=LOW, high=HIGH)
    assert stats.entropy == pytest.approx((math.log(2) + math.log(4)) / 2)


def test_log_ratio_is_clamped_before_exp():
    # log r = 200 overflows exp in fp32; clamped to 20 it stays finite, and the outer clip
    # (r_max 50) then leaves it without gradient instead of 0 * inf = nan
    logp = torch.tensor([200.0, -200.0], requires_grad=True)
    loss, stats = clipped_objective(
        logp, torch.zeros(2), torch.tensor([-1.0, 1.0]), torch.ones(2), low=LOW, high=HIGH
    )
    loss.backward()
    assert math.isfinite(float(loss.detach())) and math.isfinite(stats.ratio_max)
    assert logp.grad.tolist() == [0.0, 0.0]  # both clamped
    assert float(loss.detach()) == pytest.approx(50.0 - math.exp(-20))


def test_truncated_importance_weight_and_mismatch_kl():
    logp = torch.zeros(3, requires_grad=True)
    old = torch.zeros(3)  # on-policy for the learner: r = 1
    behavior = torch.tensor([0.0, -math.log(1.5), -math.log(4.0)])  # pi_old / pi_b = 1, 1.5, 4
    loss, stats = clipped_objective(
        logp, old, torch.ones(3), torch.ones(3), low=LOW, high=HIGH, behavior_logp=behavior
    )
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([-1.0, -1.5, -2.0])  # capped at 2
    assert stats.is_capped == 1
    d = -behavior
    assert stats.summary()["mismatch/kl"] == pytest.approx(float((d.exp() - d - 1).mean()))
    _, same = clipped_objective(
        logp, old, torch.ones(3), torch.ones(3), low=LOW, high=HIGH, behavior_logp=old
    )
    assert same.summary()["mismatch/kl"] == 0.0


def test_controller_steps_and_bounds():
    assert update_k(0.0, 0.1, target=0.3, delta=0.25, k_max=2.5) == 0.25  # too little entropy
    assert update_k(1.0, 1.0, target=0.3, delta=0.25, k_max=2.5) == 0.75  # too much
    assert update_k(2.5, 0.1, target=0.3, delta=0.25, k_max=2.5) == 2.5  # upper bound
    assert update_k(0.0, 1.0, target=0.3, delta=0.25, k_max=2.5) == 0.0  # lower bound
    assert update_k(1.0, 0.3, target=0.3, delta=0.25, k_max=2.5) == 1.0  # sign(0) = 0


def test_nucleus_and_replay():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])  # p = .644 .237 .087 .032
    masked, size, ids = nucleus(logits, 0.7)
    assert size.tolist() == [2] and ids[0, :2].tolist() == [0, 1]
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
    assert nucleus(logits, 1.0)[2] is None
    assert float(token_logprobs(logits, torch.tensor([0]), temperature=2.0)) == pytest.approx(
        float((logits / 2).log_softmax(-1)[0, 0])
    )


@pytest.mark.parametrize("scale", [3.0, 0.1])  # peaked (top window) and flat (bottom window)
def test_nucleus_large_vocab_uses_the_same_set_as_a_full_sort(scale):
    torch.manual_seed(0)
    logits = torch.randn(3, 5000) * scale
    masked, size, _ = nucleus(logits, 0.9)
    probs = logits.softmax(-1).sort(-1, descending=True).values
    expected = ((probs.cumsum(-1) - probs) < 0.9).sum(-1)
    assert size.tolist() == expected.tolist()
    sorted_masked, sorted_size, _ = nucleus(logits, 0.9, full_sort=True)  # the GPU path
    assert torch.equal(sorted_size, size) and torch.equal(sorted_masked, masked)
    targets = masked.argmax(-1)
    assert torch.allclose(
        token_logprobs(logits, targets, size),
        masked.log_softmax(-1).gather(-1, targets[:, None])[:, 0],
    )


def test_replay_keeps_the_recorded_set_not_its_size():
    sampled = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    _, size, top = nucleus(sampled, 0.7)  # kept {0, 1}
    ids = torch.where(torch.arange(4) < size[:, None], top, -1)
    learner = torch.tensor([[1.0, 0.0, 2.0, -1.0]])  # after an update token 2 ranks first
    kept = torch.isfinite(replay_nucleus(learner, size, torch.tensor([0]), ids))
    assert kept.tolist() == [[True, True, False, False]]  # the sampler's set
    by_size = torch.isfinite(replay_nucleus(learner, size, torch.tensor([0])))
    assert by_size.tolist() == [[True, False, True, False]]  # its two top logits now
    # a row without recorded ids (first id -1) falls back to the size
    kept = torch.isfinite(replay_nucleus(learner, size, torch.tensor([0]), torch.full((1, 2), -1)))
    assert kept.tolist() == by_size.tolist()
    expected = learner[0, :2].log_softmax(-1)[0]
    got = token_logprobs(learner, torch.tensor([0]), size, ids=ids)
    assert float(got) == pytest.approx(float(expected))


def test_head_runs_in_fp32_under_bf16_autocast():
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 50, bias=False)
    hidden = torch.randn(3, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        plain = head(hidden)
        ours = head_logits(hidden.bfloat16(), head)
    assert plain.dtype == torch.bfloat16 and ours.dtype == torch.float32
    assert torch.equal(ours, hidden.bfloat16().float() @ head.weight.T)


def test_chunked_logprobs_equal_unchunked():
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 40, bias=False)
    hidden = torch.randn(2, 7, 8, requires_grad=True)
    targets = torch.randint(0, 40, (2, 7))
    sizes = torch.randint(1, 40, (2, 7), dtype=torch.int32)
    results = []
    for chunk in (10**6, 3):  # one chunk; then 1 position (2 rows) per chunk, checkpointed
        hidden.grad = head.weight.grad = None
        logp = completion_logprobs(hidden, head, targets, sizes, 0.7, chunk_tokens=chunk)
        (logp * torch.arange(14.0).view(2, 7)).sum().backward()
        results.append((logp.detach(), hidden.grad.clone(), head.weight.grad.clone()))
    for whole, chunked in zip(*results, strict=True):
        assert torch.allclose(whole, chunked, atol=1e-6)
    with torch.no_grad():
        no_grad = completion_logprobs(hidden, head, targets, sizes, 0.7, chunk_tokens=3)
    assert torch.allclose(no_grad, results[0][0], atol=1e-6)


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
