"""The GRPO loss (token-level, asymmetric clip, top-p replay), as small pure-torch functions (tested against hand-computed
values in tests/test_rl_loss.py).

- Logits: the LM head and the log-softmax run in fp32 on both sides (`head_logits`), also under
  bf16 autocast: a bf16 head alone moves the sampler's and the learner's log-probs apart by
  ratios of 0.75-1.33 on unchanged weights. The learner's log-probs are computed in chunks of
  positions (`completion_logprobs`), so a [B, T, V] fp32 logit tensor never exists at long T.
- Top-p mask replay: the sampler records, per token, the ids its nucleus kept (that is: which tokens
  were outside it), up to NUCLEUS_IDS of them (median 3-4 at p = 0.97); a wider nucleus records
  only its size, and the learner keeps that many of its own highest logits instead (ranks move
  with the weights, so a size alone replays a different set after an update). The sampled token
  always stays in.
- Objective per token: min(r A, clip(r, lo, hi) A) with r = exp(clamp(log r, +-20)) first passed
  through the outer clip clamp(r, r_min, r_max) on every branch (a clamped ratio has no gradient,
  so extreme ratios are dropped), lo = 1 - eps, hi = (1 - eps)^-1 + k. pi_old is the learner's
  own log-prob before the update; the sampler's (behavior) log-prob enters only as a truncated
  importance weight min(pi_old / pi_behavior, C) on each token, and as the mismatch KL metric.
- Aggregation is a per-token weight (`token_weights`), so micro-batches just add up.
- Entropy estimate H = mean over tokens of (-log pi(y_t)) * r_t (`LossStats.entropy`);
  controller k <- clip(k + delta * sign(H* - H), 0, k_max)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# ---- fp32 head and top-p (nucleus) -------------------------------------------------------------

NUCLEUS_IDS = 1024  # a nucleus up to this wide is recorded as its ids; a wider one as its size
LOG_RATIO_CLAMP = 20.0  # log r is clamped before exp (as verl does): no inf, no 0 * inf = nan


def head_logits(hidden: torch.Tensor, head: torch.nn.Module) -> torch.Tensor:
    """The LM head in fp32 (weights upcast, autocast off), whatever precision the body ran in."""
    with torch.autocast(hidden.device.type, enabled=False):
        bias = None if head.bias is None else head.bias.float()
        return torch.nn.functional.linear(hidden.float(), head.weight.float(), bias)


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


def _nucleus_size(ranked: torch.Tensor, log_total: torch.Tensor, top_p: float) -> torch.Tensor:
    probs = (ranked - log_total).exp()
    return ((probs.cumsum(-1) - probs) < top_p).sum(-1, keepdim=True).clamp(min=1)


def nucleus_threshold(
    logits: torch.Tensor, top_p: float, *, full_sort: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(each row's lowest logit inside the nucleus, the smallest top set whose mass reaches top_p,
    shape [..., 1]; the ids of each row's NUCLEUS_IDS highest logits, highest first).

    full_sort: one sort, no data-dependent branch, so nothing waits for the device (for GPUs,
    where a sort is cheap). Otherwise (CPU) look at a top or bottom window first."""
    vocab = logits.shape[-1]
    log_total = logits.logsumexp(-1, keepdim=True)
    if full_sort:
        ranked, order = logits.sort(dim=-1, descending=True)
        return ranked.gather(-1, _nucleus_size(ranked, log_total, top_p) - 1), order[
            ..., :NUCLEUS_IDS
        ]
    top, ids = logits.topk(min(NUCLEUS_IDS, vocab), dim=-1)
    probs = (top - log_total).exp()
    if top.shape[-1] == vocab or bool((probs.sum(-1) >= top_p).all()):  # a peaked distribution
        return top.gather(-1, _nucleus_size(top, log_total, top_p) - 1), ids
    # a flat one: count the excluded tail from the bottom instead (an entry is excluded when it
    # and everything below it weigh at most 1 - top_p)
    bottom = (-logits).topk(max(1024, vocab // 8), dim=-1).values.neg()  # ascending
    tail = (bottom - log_total).exp().cumsum(-1)
    if bool((tail[..., -1] > 1 - top_p).all()):
        return bottom.gather(-1, (tail <= 1 - top_p).sum(-1, keepdim=True)), ids
    ranked = logits.sort(dim=-1, descending=True).values
    return ranked.gather(-1, _nucleus_size(ranked, log_total, top_p) - 1), ids


def nucleus(
    logits: torch.Tensor, top_p: float, *, full_sort: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(logits with entries outside the nucleus set to -inf, kept-set size per row, the ids of
    each row's top NUCLEUS_IDS logits, highest first: a row's kept set is its first `size` ids
    when size <= NUCLEUS_IDS; None when top_p = 1). Ties at the boundary are kept too, so the set
    is `logits >= its lowest kept logit`."""
    vocab = logits.shape[-1]
    if top_p >= 1.0:
        sizes = torch.full(logits.shape[:-1], vocab, dtype=torch.int32, device=logits.device)
        return logits, sizes, None
    threshold, ids = nucleus_threshold(logits, top_p, full_sort=full_sort)
    keep = logits >= threshold
    return logits.masked_fill(~keep, -math.inf), keep.sum(-1).to(torch.int32), ids


def replay_nucleus(
    logits: torch.Tensor,
    sizes: torch.Tensor,
    targets: torch.Tensor,
    ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """Re-apply the sampler's nucleus: keep each row's recorded ids (`ids`, [..., K], padded with
    -1), or where none were recorded (first id -1, or no `ids` at all) its `sizes` highest logits,
    and always the target token; the rest become -inf (gradients flow through kept logits only)."""
    vocab = logits.shape[-1]
    sizes = sizes.long().clamp(1, vocab)
    if bool((sizes >= vocab).all()):
        return logits
    with torch.no_grad():
        keep = torch.zeros_like(logits, dtype=torch.bool)
        keep.scatter_(-1, targets.unsqueeze(-1), True)
        by_rank = torch.ones_like(sizes, dtype=torch.bool)
        if ids is not None:
            by_rank = ids[..., 0] < 0
            keep.scatter_(-1, torch.where(ids < 0, targets.unsqueeze(-1), ids.long()), True)
        if bool(by_rank.any()):
            rows = logits.detach()[by_rank]
            keep[by_rank] = keep[by_rank] | (rows >= kth_largest(rows, sizes[by_rank][:, None]))
    return logits.masked_fill(~keep, -math.inf)


def token_logprobs(
    logits: torch.Tensor,
    targets: torch.Tensor,
    sizes: torch.Tensor | None = None,
    temperature: float = 1.0,
    ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """log pi(target) under the sampling distribution: temperature, then the replayed nucleus."""
    logits = logits.float() / temperature
    if sizes is not None:
        logits = replay_nucleus(logits, sizes, targets, ids)
    return logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def completion_logprobs(
    hidden: torch.Tensor,
    head: torch.nn.Module,
    targets: torch.Tensor,
    sizes: torch.Tensor | None = None,
    temperature: float = 1.0,
    ids: torch.Tensor | None = None,
    *,
    chunk_tokens: int = 8192,
) -> torch.Tensor:
    """`token_logprobs` of the fp32 head over hidden states [B, T, H], a chunk of positions at a
    time holding at most ~chunk_tokens rows of logits. With autograd on, each chunk is
    checkpointed (its logits are recomputed in the backward pass, not kept), so peak memory is
    one chunk's [B, t, V] fp32 logits, not the whole sequence's plus its softmax copies."""
    width = hidden.shape[1]
    step = max(1, chunk_tokens // max(1, hidden.shape[0]))

    def part(h, t, s, i):
        return token_logprobs(head_logits(h, head), t, s, temperature, i)

    if step >= width:
        return part(hidden, targets, sizes, ids)
    from torch.utils.checkpoint import checkpoint

    out = []
    for a in range(0, width, step):
        cut = slice(a, a + step)
        args = (
            hidden[:, cut],
            targets[:, cut],
            None if sizes is None else sizes[:, cut],
            None if ids is None else ids[:, cut],
        )
        grad = torch.is_grad_enabled() and hidden.requires_grad
        out.append(checkpoint(part, *args, use_reentrant=False) if grad else part(*args))
    return torch.cat(out, dim=1)


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
      token-mean        1 / (policy tokens in the batch)                    (the default)
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
    mismatch_kl_sum: float = 0.0  # KL(behavior || pi_old) per token (k3), sampler vs learner
    is_capped: float = 0.0  # tokens whose importance weight pi_old / pi_behavior hit the cap

    def add(self, other: LossStats) -> None:
        for name in (
            "tokens",
            "entropy_sum",
            "clip_low",
            "clip_high",
            "clip_outer",
            "ratio_sum",
            "kl_sum",
            "mismatch_kl_sum",
            "is_capped",
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
            "mismatch/kl": self.mismatch_kl_sum / n,
            "mismatch/is_capped": self.is_capped / n,
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
    behavior_logp: torch.Tensor | None = None,
    is_cap: float = 2.0,
) -> tuple[torch.Tensor, LossStats]:
    """The loss to minimize, -sum_t w_t * c_t * min(r A, clip(r, low, high) A) (+ kl_coef * KL),
    and the token statistics. All tensors are per token (same shape); `advantages` is the sample's
    advantage repeated over its tokens; tokens with weight 0 do not count. With `behavior_logp`
    (the sampler's log-probs), c_t = min(pi_old / pi_behavior, is_cap) is the truncated
    importance weight that corrects for sampler/learner numerics (is_cap 0: c_t = 1)."""
    mask = weights != 0
    ratio = torch.exp((logp - old_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    outer = ratio.clamp(ratio_min, ratio_max)  # outer clip on all branches
    unclipped = outer * advantages
    clipped = outer.clamp(low, high) * advantages
    objective = torch.minimum(unclipped, clipped)
    correction = torch.ones_like(logp)
    mismatch = torch.zeros_like(logp)
    if behavior_logp is not None:
        with torch.no_grad():
            drift = (old_logp - behavior_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
            # k3 estimate of KL(behavior || pi_old), >= 0 (clamped: rounding can dip below)
            mismatch = (drift.exp() - drift - 1).clamp(min=0)
            if is_cap:
                correction = drift.exp().clamp(max=is_cap)
    loss = -(weights * correction * objective).sum()
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
            mismatch_kl_sum=float((mismatch * m).sum()),
            is_capped=float(((correction >= is_cap) & mask).sum()) if is_cap else 0.0,
        )
    return loss, stats


# ---- adaptive entropy control --------------------------------------------------------------


def update_k(k: float, entropy: float, *, target: float, delta: float, k_max: float) -> float:
    """k <- clip(k + delta * sign(H* - H), 0, k_max): entropy below target widens the upper clip
    (lets low-probability tokens gain), above target narrows it."""
    sign = (target > entropy) - (target < entropy)
    return min(max(k + delta * sign, 0.0), k_max)
