"""The data-parallel learner on torch FSDP2 (`torch.distributed.fsdp.fully_shard`): each decoder
layer is its own shard group, the embeddings / final norm / LM head form the root group. NCCL on
GPUs, gloo on CPU (the tests run 2 CPU processes).

Layout: every rank runs the same rollouts (same seeds, same weights: identical samples; on GPUs
the rollouts belong on a vLLM or server engine, `engine: vllm|server`, so the learner ranks do not
generate at all), then each minibatch's micro-batches are dealt round-robin over the ranks
(`local`). The loss weights are normalized over the whole minibatch, so the gradient is the SUM of
the ranks' gradients while FSDP averages them: each rank's weights are scaled by the world size
(a divide factor of 1 would need PREMUL_SUM, which gloo lacks). Ranks with fewer
micro-batches run a zero-weight one, so every rank issues the same collectives. Loss statistics
are summed over ranks (`reduce_stats`) before the entropy controller moves k, so k is the same
everywhere.

The LM head is read by `loss.head_logits` outside any module's forward, so it is registered
inside the decoder (FSDP's root) as well: it is gathered with the root group, and a tied head
stays tied (FSDP updates every module that shares the parameter).

Launch: `rlclimb train ... --gpus N` re-runs itself under torchrun on one node (CPU: N gloo
processes). Multi-node: run on every node
  torchrun --nnodes M --nproc-per-node N --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
      -m rlclimb.rl.distributed train MIX --model MODEL --out RUN
(the run directory on a shared filesystem; rank 0 writes metrics, rollouts and checkpoints)."""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def active() -> bool:
    return world_size() > 1


def launched() -> bool:
    """True in a process that torchrun (or torch.multiprocessing with the same variables) started."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init() -> torch.device | None:
    """Join the process group torchrun described (env://); returns this rank's device, or None
    when not launched distributed."""
    if not launched():
        return None
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def shard(model, *, mixed_bf16: bool = False):
    """fully_shard each decoder layer, then the decoder (with the LM head registered in it) as the
    root. mixed_bf16: FSDP2's bf16 compute with fp32 reduce (for GPUs; the trainer's autocast
    path is the default and keeps fp32 master weights either way)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    decoder = model.get_decoder()
    policy = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if mixed_bf16
        else MixedPrecisionPolicy()
    )
    for layer in decoder.layers:
        fully_shard(layer, mp_policy=policy)
    # the head joins the root group: gathered with it, a tied head shares its parameter
    decoder.add_module("fsdp_lm_head", model.get_output_embeddings())
    fully_shard(decoder, mp_policy=policy)
    return model


def local(micro: list[tuple[list[int], list[torch.Tensor]]]) -> list:
    """This rank's share of a minibatch's micro-batches (round-robin), weights times the world
    size (FSDP averages gradients), padded with zero-weight copies of the first so every rank
    runs the same number of forward/backward passes."""
    world = world_size()
    if world == 1:
        return micro
    mine = [(part, [w * world for w in weights]) for part, weights in micro[rank() :: world]]
    need = -(-len(micro) // world)
    part, weights = micro[0]
    while len(mine) < need:
        mine.append((part, [torch.zeros_like(w) for w in weights]))
    return mine


def reduce_stats(stats):
    """LossStats summed over ranks (max / min for the ratio extremes)."""
    if not active():
        return stats
    from dataclasses import fields

    names = [f.name for f in fields(stats) if f.name not in ("ratio_max", "ratio_min")]
    sums = torch.tensor([getattr(stats, n) for n in names], dtype=torch.float64)
    dist.all_reduce(sums)
    for n, v in zip(names, sums.tolist(), strict=True):
        setattr(stats, n, v)
    extremes = torch.tensor([stats.ratio_max, -stats.ratio_min], dtype=torch.float64)
    dist.all_reduce(extremes, op=dist.ReduceOp.MAX)
    stats.ratio_max, stats.ratio_min = float(extremes[0]), float(-extremes[1])
    return stats


def total(value: float) -> float:
    """The loss over all ranks (each rank's was scaled by the world size in `local`)."""
    if not active():
        return value
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return float(t[0]) / world_size()


def as_float(norm: Any) -> float:
    """clip_grad_norm_'s result as a float (a DTensor under FSDP)."""
    if hasattr(norm, "full_tensor"):
        norm = norm.full_tensor()
    return float(norm)


def full_state_dict(model) -> dict[str, torch.Tensor]:
    """The whole model's weights on every rank (CPU), without the head alias `shard` added."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    state = get_model_state_dict(
        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
    )
    return {k: v for k, v in state.items() if "fsdp_lm_head" not in k}


def save_pretrained(model, folder) -> None:
    """model.save_pretrained, under FSDP with the gathered full weights, written by rank 0 only
    (every rank takes part in the gather)."""
    if not active():
        model.save_pretrained(folder)
        return
    state = full_state_dict(model)
    if rank() == 0:
        model.save_pretrained(folder, state_dict=state)


def load_full_state_dict(model, state: dict[str, torch.Tensor]) -> None:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    alias = {
        k.replace("lm_head", "model.fsdp_lm_head"): v for k, v in state.items() if "lm_head" in k
    }
    set_model_state_dict(
        model, {**state, **alias}, options=StateDictOptions(full_state_dict=True, strict=False)
    )


def barrier() -> None:
    if active():
        dist.barrier()


if (
    __name__ == "__main__"
):  # torchrun's entry: `-m rlclimb.rl.distributed train ...` is `rlclimb train`
    from rlclimb.pipelines.cli import main

    main()
