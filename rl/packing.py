"""Packed sequences for the learner: several samples (prompt + completion) back to back in one
model row, no padding inside, position ids restarting at 0 for each sample.

Attention never crosses samples: with `attention_mask=None` and restarting `position_ids`,
transformers builds a block-diagonal causal mask for sdpa/eager (masking_utils'
find_packed_sequence_indices) and runs flash-attention's varlen kernel on GPUs, so no mask of our
own is needed. The learner's per-token tensors come back in the padded [samples, completion]
layout (`packed_logprobs`), so the loss, the weights and the advantages do not change with
packing; only `sample-mean` does, by definition (its rows are the packed rows).

Micro-batches are the packed rows: first-fit decreasing of the samples into rows of at most
`pack_tokens` tokens (a longer sample gets a row of its own)."""

from __future__ import annotations

from typing import Any

import torch

from .loss import completion_logprobs, token_weights


def pack_rows(lengths: list[int], capacity: int) -> list[list[int]]:
    """Indices of `lengths` grouped into rows of total length <= capacity (first-fit decreasing;
    an item longer than capacity gets a row alone). Rows keep their items in index order."""
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        for r, free in enumerate(room):
            if lengths[i] <= free:
                rows[r].append(i)
                room[r] -= lengths[i]
                break
        else:
            rows.append([i])
            room.append(capacity - lengths[i])
    return [sorted(r) for r in rows]


def packed_plan(
    mode: str, samples: list, indices: list[int], capacity: int
) -> list[tuple[list[int], list[torch.Tensor]]]:
    """One minibatch's micro-batches, each one packed row: (sample indices, per-sample token
    weights). Weights are normalized over the whole minibatch; `sample-mean` averages per packed
    row, `true-sample-mean` per true sample."""
    chosen = [samples[i] for i in indices]
    rows = pack_rows([len(s.prompt_ids) + len(s.completion_ids) for s in chosen], capacity)
    masks = [torch.tensor(s.loss_mask, dtype=torch.float32) for s in chosen]
    row_of = {j: r for r, members in enumerate(rows) for j in members}
    row_ids = torch.cat([torch.full((len(m),), row_of[j]) for j, m in enumerate(masks)])
    sample_ids = torch.cat([torch.full((len(m),), j) for j, m in enumerate(masks)])
    weights = token_weights(mode, torch.cat(masks), row_ids, sample_ids).split(
        [len(m) for m in masks]
    )
    return [([indices[j] for j in members], [weights[j] for j in members]) for members in rows]


def packed_batch(samples: list, pad_id: int, device: torch.device) -> dict[str, Any]:
    """One packed row for `samples` plus the per-token tensors the loss reads, in the padded
    [samples, completion width] layout the unpacked batch uses (padded positions replay a nucleus
    of one and have weight 0)."""
    total = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    width_c = max(len(s.completion_ids) for s in samples)
    n = len(samples)
    ids = torch.empty(total, dtype=torch.long)
    positions = torch.empty(total, dtype=torch.long)
    source = []  # packed position of the hidden state that predicts each completion token
    targets = torch.full((n, width_c), pad_id, dtype=torch.long)
    behavior = torch.zeros(n, width_c)
    sizes = torch.ones((n, width_c), dtype=torch.int32)
    width_k = max((len(k) for s in samples for k in s.nucleus_ids), default=0)
    kept = torch.full((n, width_c, max(width_k, 1)), -1, dtype=torch.long)
    kept[..., 0] = pad_id
    start = 0
    for i, s in enumerate(samples):
        p, c = len(s.prompt_ids), len(s.completion_ids)
        ids[start : start + p + c] = torch.tensor(s.prompt_ids + s.completion_ids)
        positions[start : start + p + c] = torch.arange(p + c)
        source.append(torch.arange(start + p - 1, start + p + c - 1))
        targets[i, :c] = torch.tensor(s.completion_ids)
        behavior[i, :c] = torch.tensor(s.logprobs)
        sizes[i, :c] = torch.tensor(s.nucleus_sizes, dtype=torch.int32)
        kept[i, :c, 0] = -1
        for t, row in enumerate(s.nucleus_ids if len(s.nucleus_ids) == c else []):
            kept[i, t, : len(row)] = torch.tensor(row, dtype=torch.long)
        start += p + c
    lengths = torch.tensor([len(s.completion_ids) for s in samples])
    valid = torch.arange(width_c)[None, :] < lengths[:, None]  # [n, width_c]
    return {
        "packed": True,
        "ids": ids[None].to(device),
        "positions": positions[None].to(device),
        "source": torch.cat(source).to(device),
        "valid": valid.to(device),
        "targets": targets.to(device),
        "behavior": behavior.to(device),
        "sizes": sizes.to(device),
        "kept": kept.to(device),
    }


def packed_logprobs(
    model,
    decoder,
    batch: dict[str, Any],
    *,
    temperature: float,
    replay: bool,
    autocast: torch.dtype | None,
    chunk_tokens: int,
) -> torch.Tensor:
    """The learner's log-prob of each completion token of a packed batch, [samples, width]
    (0 at padded positions). The head runs only over completion positions, in fp32."""
    device = batch["ids"].device
    with torch.autocast(device.type, dtype=autocast, enabled=bool(autocast)):
        # no mask and no cache: transformers then reads sample boundaries from the positions
        hidden = decoder(
            input_ids=batch["ids"],
            attention_mask=None,
            position_ids=batch["positions"],
            use_cache=False,
        ).last_hidden_state
    valid = batch["valid"]
    flat = completion_logprobs(
        hidden[0, batch["source"]][None],
        model.get_output_embeddings(),
        batch["targets"][valid][None],
        batch["sizes"][valid][None] if replay else None,
        temperature,
        batch["kept"][valid][None] if replay else None,
        chunk_tokens=chunk_tokens,
    )[0]
    out = torch.zeros(valid.shape, dtype=flat.dtype, device=device)
    return out.masked_scatter(valid, flat)
