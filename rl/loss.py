"""The GRPO loss of SPEC.md section 6, as small pure-torch functions (tested against hand-computed
values in tests/test_rl_loss.py).

- Top-p mask replay: the sampler records, per token, how many vocabulary entries its nucleus kept
  (an int, not a 49k-entry bitmask). The learner keeps the same number of its own highest logits
  (plus the sampled token) and sets the rest to -inf before the softmax. On unchanged weights that
  is exactly the sampler's set; after an update it can differ only at the nucleus boundary, where
  the probabilities are tiny. A stored probability threshold would not be rank-stable like this.
- Objective per token: min(r A, clip(r, lo, hi) A) with r first passed through the outer clip
  clamp(r, r_min, r_max) on every branch (a clamped ratio has no gradient, so extreme ratios are
  dropped), lo = 1 - eps, hi = (1 - eps)^-1 + k.
- Aggregation is a per-token weight (`token_weights`), so micro-batches just add up.
- Entropy estimate H = mean over tokens of (-log pi(y_t)) * r_t; controller
  k <- clip(k + delta * sign(H* - H), 0, k_max)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# ---- top-p (nucleus) -----------------------------------------------------------------------


def kth_largest(logits: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Each row's k-th largest logit (k >= 1, shape [..., 1]). A full sort of a 49k vocabulary is
    most of a small model's step, so look only at the top (small k) or the bottom (k near the
    vocabulary size, as for a near-uniform distribution) when that is enough."""
    vocab = logits.shape[-1]
    if 8 * int(k.max()) <= vocab:
        return logits.topk(int(k.max()), dim=-1).values.gather(-1, k - 1)
    if 8 * (vocab - int(k.min()) + 1) <= vocab:
        bottom = (-logits).topk(vocab - int(k.min()) + 1, dim=-1).values.neg()  # ascending
        return bottom.gather(-1, vocab - k)
    return logits.sort(dim=-1, descending=True).values.gather(-1, k - 1)


def nucleus_threshold(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Each row's lowest logit inside the nucleus (the smallest top set whose mass reaches
    top_p), shape [..., 1]."""
    vocab = logits.shape[-1]
    log_total = logits.logsumexp(-1, keepdim=True)
    top = logits.topk(min(1024, vocab), dim=-1).values
    probs = (top - log_total).exp()
    if top.shape[-1] == vocab or bool((probs.sum(-1) >= top_p).all()):  # a peaked distribution
        size = ((probs.cumsum(-1) - probs) < top_p).sum(-1, keepdim=True).clamp(min=1)
        return top.gather(-1, size - 1)
    # a flat one: count the excluded tail from the bottom instead (an entry is excluded when it
    # and everything below it weigh at most 1 - top_p)
    bottom = (-logits).topk(max(1024, vocab // 8), dim=-1).values.neg()  # ascending
    tail = (bottom - log_total).exp().cumsum(-1)
    if bool((tail[..., -1] > 1 - top_p).all()):
        return bottom.gather(-1, (tail <= 1 - top_p).sum(-1, keepdim=True))
    ranked = logits.sort(dim=-1, descending=True).values
    probs = (ranked - log_total).exp()
    size = ((probs.cumsum(-1) - probs) < top_p).sum(-1, keepdim=True).clamp(min=1)
    return ranked.gather(-1, size - 1)


def nucleus(logits: torch.Tensor, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits with entries outside the nucleus set to -inf, kept-set size per row). Ties at the
    boundary are kept too, so the set is `logits >= its lowest kept logit`."""
    vocab = logits.shape[-1]
    if top_p >= 1.0:
        return logits, torch.full(logits.shape[:-1], vocab, dtype=torch.int32, device=logits.device)
    keep = logits >= nucleus_threshold(logits, top_p)
    return logits.masked_fill(~keep, -math.inf), keep.sum(-1).to(torch.int32)


def replay_nucleus(
    logits: torch.Tensor, sizes: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Re-apply the sampler's nucleus: keep each row's `sizes` highest logits and its target token,
    set the rest to -inf (gradients flow through the kept logits only)."""
    vocab = logits.shape[-1]
    sizes = sizes.long().clamp(1, vocab)
    if bool((sizes >= vocab).all()):
        return logits
    with torch.no_grad():
        keep = logits.detach() >= kth_largest(logits.detach(), sizes.unsqueeze(-1))
        keep.scatter_(-1, targets.unsqueeze(-1), True)
    return logits.masked_fill(~keep, -math.inf)


def token_logprobs(
    logits: torch.Tensor,
    targets: torch.Tensor,
    sizes: torch.Tensor | None = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """log pi(target) under the sampling distribution: temperature, then the replayed nucleus."""
    logits = logits.float() / temperature
    if sizes is not None:
        logits = replay_nucleus(logits, sizes, targets)
    return logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


# ---- advantages and aggregation ----------------------------------------------------------------


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """A_i = (R_i - mean(R)) / std(R) within each group (rows = groups; population std).
    A group whose rewards are all equal gets zero advantages."""
    mean = rewards.mean(-1, keepdim=True)
    std = rewards.std(-1, keepdim=True, correction=0)
    return (rewards - mean) / (std + eps)


def token_weights(
    mode: str, mask: torch.Tensor, row: torch.Tensor, sample: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-token weights w_t so that the batch loss is -sum_t w_t * objective_t (seed 001 L72-204).

    mask: 1 for policy tokens (prompt, padding and tool-output tokens are 0); row: which model
    input row (a packed sequence holds several samples) each token is in; sample: which true
    sample. Modes:
      token-mean        1 / (policy tokens in the batch)                    (SPEC default)
      token-sum         1
      sample-mean       1 / (|row| * rows): mean per input row, then over rows
      true-sample-mean  1 / (|sample| * samples): mean per true sample, then over samples;
                        equals sample-mean without packing, and is unchanged by packing."""
    mask = mask.float()
    if mode == "token-mean":
        return mask / mask.sum().clamp(min=1)
    if mode == "token-sum":
        return mask
    groups = row if mode == "sample-mean" else (row if sample is None else sample)
    if mode not in ("sample-mean", "true-sample-mean"):
        raise ValueError(f"unknown aggregation {mode!r}")
    ids, inverse = torch.unique(groups, return_inverse=True)
    counts = torch.zeros(len(ids), device=mask.device).index_add_(
        0, inverse.flatten(), mask.flatten()
    )
    live = (counts > 0).sum().clamp(min=1)
    per_token = counts[inverse].clamp(min=1)
    return mask / (per_token * live)


# ---- the clipped objective -------------------------------------------------------------------


@dataclass
class LossStats:
    """Sums over policy tokens (weighted by the mask), so micro-batches add up."""

    tokens: float = 0.0
    entropy_sum: float = 0.0  # sum of -log pi * r
    clip_low: float = 0.0  # tokens where the lower clip bound is the active branch
    clip_high: float = 0.0
    clip_outer: float = 0.0  # ratio outside [r_min, r_max]
    ratio_sum: float = 0.0
    ratio_max: float = 0.0
    ratio_min: float = math.inf
    kl_sum: float = 0.0

    def add(self, other: LossStats) -> None:
        for name in (
            "tokens",
            "entropy_sum",
            "clip_low",
            "clip_high",
            "clip_outer",
            "ratio_sum",
            "kl_sum",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.ratio_max = max(self.ratio_max, other.ratio_max)
        self.ratio_min = min(self.ratio_min, other.ratio_min)

    @property
    def entropy(self) -> float:
        return self.entropy_sum / max(self.tokens, 1.0)

    def summary(self) -> dict[str, float]:
        n = max(self.tokens, 1.0)
        return {
            "entropy": self.entropy,
            "clip/low": self.clip_low / n,
            "clip/high": self.clip_high / n,
            "clip/outer": self.clip_outer / n,
            "ratio/mean": self.ratio_sum / n,
            "ratio/max": self.ratio_max if self.tokens else 1.0,
            "ratio/min": self.ratio_min if self.tokens else 1.0,
            "kl": self.kl_sum / n,
        }


def clipped_objective(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    *,
    low: float,
    high: float,
    ratio_min: float = 0.0,
    ratio_max: float = 50.0,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> tuple[torch.Tensor, LossStats]:
    """The loss to minimize, -sum_t w_t * min(r A, clip(r, low, high) A) (+ kl_coef * KL), and the
    token statistics. All tensors are per token (same shape); `advantages` is the sample's
    advantage repeated over its tokens; tokens with weight 0 do not count."""
    mask = weights != 0
    ratio = torch.exp(logp - old_logp)
    outer = ratio.clamp(ratio_min, ratio_max)  # outer clip on all branches
    unclipped = outer * advantages
    clipped = outer.clamp(low, high) * advantages
    objective = torch.minimum(unclipped, clipped)
    loss = -(weights * objective).sum()
    kl = torch.zeros_like(logp)
    if ref_logp is not None and kl_coef:
        # k3 estimator of KL(pi || ref): exp(ref - logp) - (ref - logp) - 1 >= 0
        diff = ref_logp - logp
        kl = torch.exp(diff) - diff - 1
        loss = loss + kl_coef * (weights * kl).sum()
    with torch.no_grad():
        m = mask.float()
        r = ratio.detach()
        stats = LossStats(
            tokens=float(m.sum()),
            entropy_sum=float((-logp.detach() * r * m).sum()),
            clip_low=float(((r < low) & (advantages < 0) & mask).sum()),
            clip_high=float(((r > high) & (advantages > 0) & mask).sum()),
            clip_outer=float((((r < ratio_min) | (r > ratio_max)) & mask).sum()),
            ratio_sum=float((r * m).sum()),
            ratio_max=float(r[mask].max()) if mask.any() else 0.0,
            ratio_min=float(r[mask].min()) if mask.any() else math.inf,
            kl_sum=float((kl.detach() * m).sum()),
        )
    return loss, stats


# ---- adaptive entropy control --------------------------------------------------------------


def entropy_estimate(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> float:
    """H = mean over policy tokens of (-log pi(y_t)) * r_t (importance-weighted to the current
    policy, from the sampled tokens only: no full-vocabulary entropy needed)."""
    m = mask.float()
    ratio = torch.exp(logp - old_logp)
    return float((-logp * ratio * m).sum() / m.sum().clamp(min=1))


def update_k(k: float, entropy: float, *, target: float, delta: float, k_max: float) -> float:
    """k <- clip(k + delta * sign(H* - H), 0, k_max): entropy below target widens the upper clip
    (lets low-probability tokens gain), above target narrows it."""
    sign = (target > entropy) - (target < entropy)
    return min(max(k + delta * sign, 0.0), k_max)
