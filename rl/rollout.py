"""Rollouts with local transformers models: a plain sampling loop over the KV cache, so every
token's behavior log-prob and nucleus size are recorded exactly as sampled (model.generate only
exposes processed scores, and its RNG is the global one).

Each prompt is prefilled once and its cache repeated for the n samples of its group; rows that
reached an end-of-turn token leave the batch, so a short answer costs no further compute."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .loss import nucleus


@dataclass
class Sample:
    """One response to one prompt, with what the learner needs to replay it."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]  # behavior log-prob of each completion token (after temperature, top-p)
    nucleus_sizes: list[int]  # kept-set size of the top-p nucleus at each completion token
    loss_mask: list[int]  # 1 = policy token; 0 = not trained on (tool output in multi-step kinds)
    truncated: bool  # stopped by max_new_tokens, not by an end-of-turn token
    policy_version: int
    text: str = ""
    reward: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    passed: bool = False


@torch.no_grad()
def generate(
    model,
    prompts: list[list[int]],
    *,
    n: int = 1,
    max_new_tokens: int,
    eos_ids: list[int],
    pad_id: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    greedy: bool = False,
    generator: torch.Generator | None = None,
    policy_version: int = 0,
    autocast_dtype: torch.dtype | None = None,
) -> list[list[Sample]]:
    """n samples per prompt (token id lists); returns one list of samples per prompt."""
    device = next(model.parameters()).device
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long, device=device)
    attention = torch.zeros_like(ids)
    for i, p in enumerate(prompts):  # left padding: every prompt ends at the same column
        ids[i, width - len(p) :] = torch.tensor(p, device=device)
        attention[i, width - len(p) :] = 1
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    autocast = torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None)
    with autocast:
        out = model(
            input_ids=ids,
            attention_mask=attention,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
        )
    cache = out.past_key_values
    logits = out.logits[:, -1].float()
    if n > 1:  # prefill once per prompt, then fan out to the group
        cache.batch_repeat_interleave(n)
        logits = logits.repeat_interleave(n, 0)
        attention = attention.repeat_interleave(n, 0)
        positions = positions.repeat_interleave(n, 0)
    rows = len(prompts) * n
    tokens: list[list[int]] = [[] for _ in range(rows)]
    logps: list[list[float]] = [[] for _ in range(rows)]
    sizes: list[list[int]] = [[] for _ in range(rows)]
    finished = [False] * rows
    live = torch.arange(rows, device=device)  # original row of each batch row
    position = positions[:, -1:]
    eos = torch.tensor(eos_ids, device=device)
    for t in range(max_new_tokens):
        if greedy:
            token = logits.argmax(-1)
            logp = logits.log_softmax(-1).gather(-1, token[:, None]).squeeze(-1)
            size = torch.full_like(token, logits.shape[-1])
        else:
            masked, size = nucleus(logits / temperature, top_p)
            logprobs = masked.log_softmax(-1)
            # Gumbel-max: an exact categorical sample in one pass (multinomial is 10x slower here)
            noise = torch.rand(logprobs.shape, generator=generator, device=device)
            token = (logprobs - (-noise.clamp_min(1e-20).log()).log()).argmax(-1)
            logp = logprobs.gather(-1, token[:, None]).squeeze(-1)
        done = torch.isin(token, eos)
        step = zip(
            live.tolist(), token.tolist(), logp.tolist(), size.tolist(), done.tolist(), strict=True
        )
        for row, tok, lp, sz, end in step:
            tokens[row].append(tok)
            logps[row].append(lp)
            sizes[row].append(sz)
            finished[row] = end
        if t == max_new_tokens - 1 or bool(done.all()):
            break
        keep = (~done).nonzero().squeeze(-1)
        if len(keep) < len(live):  # drop finished rows from the batch and the cache
            cache.batch_select_indices(keep)
            live, token, attention, position = (
                live[keep],
                token[keep],
                attention[keep],
                position[keep],
            )
        attention = torch.cat([attention, torch.ones_like(attention[:, :1])], dim=-1)
        position = position + 1
        with autocast:
            out = model(
                input_ids=token[:, None],
                attention_mask=attention,
                position_ids=position,
                past_key_values=cache,
                use_cache=True,
            )
        cache = out.past_key_values
        logits = out.logits[:, -1].float()
    samples = [
        Sample(
            prompt_ids=list(prompts[row // n]),
            completion_ids=tokens[row],
            logprobs=logps[row],
            nucleus_sizes=sizes[row],
            loss_mask=[1] * len(tokens[row]),
            truncated=not finished[row],
            policy_version=policy_version,
        )
        for row in range(rows)
    ]
    return [samples[i * n : (i + 1) * n] for i in range(len(prompts))]
