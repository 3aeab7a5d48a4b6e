"""Rollouts with local transformers models: a plain sampling loop over the KV cache, so every
token's behavior log-prob and top-p nucleus (its kept ids, or its size when wider than
loss.NUCLEUS_IDS) are recorded exactly as sampled (model.generate only exposes processed scores,
and its RNG is the global one). The LM head runs in fp32 (`loss.head_logits`), as in the learner.

Each prompt is prefilled once and its cache repeated for the n samples of its group; rows that
reached an end-of-turn token leave the batch at the next look at the device (every token on CPU,
every 16 on a GPU), so a short answer costs little further compute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .loss import head_logits, nucleus


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
    # the kept ids at each token (loss.NUCLEUS_IDS at most; [] where the nucleus was wider, or
    # for every token when none were recorded): replayed as a set
    nucleus_ids: list[list[int]] = field(default_factory=list)
    text: str = ""
    grade: Any = None  # the environment's Grade, once graded (each sample is graded once)
    reward: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    passed: bool = False
    # multi-turn kinds (rl/episodes.py): final answer, steps, stop reason, tool calls
    episode: dict[str, Any] | None = None


def body(model):
    """The transformer without its LM head (which `loss.head_logits` runs in fp32)."""
    config = model.config
    if getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None):
        raise NotImplementedError(f"{type(model).__name__}: a head beyond a linear layer")
    return model.get_decoder()


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
    sync_every: int | None = None,
    full_sort: bool | None = None,
) -> list[list[Sample]]:
    """n samples per prompt (token id lists); returns one list of samples per prompt.

    sync_every: tokens between looks at the device's results (which rows finished, the tokens so
    far). Default 1 on CPU, where looking is free and finished rows leave at once; 16 elsewhere,
    with a sync-free nucleus (`full_sort`, default off the CPU), so the host queues work without
    waiting on each token (a finished row runs on for at most sync_every - 1 tokens, which are
    discarded)."""
    device = next(model.parameters()).device
    on_cpu = device.type == "cpu"
    sync_every = sync_every or (1 if on_cpu else 16)
    full_sort = not on_cpu if full_sort is None else full_sort
    decoder, head = body(model), model.get_output_embeddings()
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long, device=device)
    attention = torch.zeros_like(ids)
    for i, p in enumerate(prompts):  # left padding: every prompt ends at the same column
        ids[i, width - len(p) :] = torch.tensor(p, device=device)
        attention[i, width - len(p) :] = 1
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    autocast = torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None)
    with autocast:
        out = decoder(
            input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=True
        )
    cache = out.past_key_values
    logits = head_logits(out.last_hidden_state[:, -1], head)
    if n > 1:  # prefill once per prompt, then fan out to the group
        cache.batch_repeat_interleave(n)
        logits = logits.repeat_interleave(n, 0)
        attention = attention.repeat_interleave(n, 0)
        positions = positions.repeat_interleave(n, 0)
    rows = len(prompts) * n
    tokens: list[list[int]] = [[] for _ in range(rows)]
    logps: list[list[float]] = [[] for _ in range(rows)]
    sizes: list[list[int]] = [[] for _ in range(rows)]
    kept: list[list[list[int]]] = [[] for _ in range(rows)]
    finished = [False] * rows
    live = torch.arange(rows, device=device)  # original row of each batch row
    done = torch.zeros(rows, dtype=torch.bool, device=device)  # per batch row, since the last look
    position = positions[:, -1:]
    eos = torch.tensor(eos_ids, device=device)
    window: list[tuple[torch.Tensor, ...]] = []  # per token since the last look, on the device

    def look() -> None:
        """Move the window's tokens to the host, each row's up to its end-of-turn token."""
        token, logp, size, end = (torch.stack([w[i] for w in window]).tolist() for i in range(4))
        kept_ids, width = None, 0
        if window[0][4] is not None:  # each token's kept ids: the first `size` of its top ids
            top = torch.stack([w[4] for w in window])  # [tokens, rows, width]
            width = top.shape[-1]
            sz = torch.stack([w[2] for w in window])[..., None]
            take = (torch.arange(width, device=device) < sz) & (sz <= width)
            kept_ids = top[take].tolist()  # in (token, row) order, as read below
        cursor, batch_rows = 0, live.tolist()
        for t in range(len(window)):
            for j, row in enumerate(batch_rows):
                count = size[t][j]
                recorded = count if kept_ids is not None and count <= width else 0
                if not finished[row]:
                    tokens[row].append(token[t][j])
                    logps[row].append(logp[t][j])
                    sizes[row].append(count)
                    if kept_ids is not None:
                        kept[row].append(kept_ids[cursor : cursor + recorded])
                    finished[row] = end[t][j]
                cursor += recorded
        window.clear()

    for t in range(max_new_tokens):
        top = None
        if greedy:
            token = logits.argmax(-1)
            logp = logits.log_softmax(-1).gather(-1, token[:, None]).squeeze(-1)
            size = torch.full_like(token, logits.shape[-1], dtype=torch.int32)
        else:
            masked, size, top = nucleus(logits / temperature, top_p, full_sort=full_sort)
            logprobs = masked.log_softmax(-1)
            # Gumbel-max: an exact categorical sample in one pass (multinomial is 10x slower here)
            noise = torch.rand(logprobs.shape, generator=generator, device=device)
            token = (logprobs - (-noise.clamp_min(1e-20).log()).log()).argmax(-1)
            logp = logprobs.gather(-1, token[:, None]).squeeze(-1)
            if top is not None:
                top = top.to(torch.int32)
        done = done | torch.isin(token, eos)
        window.append((token, logp, size, done, top))
        last = t == max_new_tokens - 1
        if last or len(window) >= sync_every:
            look()
            if last or bool(done.all()):
                break
            keep = (~done).nonzero().squeeze(-1)
            if len(keep) < len(live):  # drop finished rows from the batch and the cache
                cache.batch_select_indices(keep)
                live, token, attention, position, done = (
                    live[keep],
                    token[keep],
                    attention[keep],
                    position[keep],
                    done[keep],
                )
        attention = torch.cat([attention, torch.ones_like(attention[:, :1])], dim=-1)
        position = position + 1
        with autocast:
            out = decoder(
                input_ids=token[:, None],
                attention_mask=attention,
                position_ids=position,
                past_key_values=cache,
                use_cache=True,
            )
        cache = out.past_key_values
        logits = head_logits(out.last_hidden_state[:, -1], head)
    samples = [
        Sample(
            prompt_ids=list(prompts[row // n]),
            completion_ids=tokens[row],
            logprobs=logps[row],
            nucleus_sizes=sizes[row],
            loss_mask=[1] * len(tokens[row]),
            truncated=not finished[row],
            policy_version=policy_version,
            nucleus_ids=kept[row],
        )
        for row in range(rows)
    ]
    return [samples[i * n : (i + 1) * n] for i in range(len(prompts))]
