"""A tiny random-init Llama over the packaged SmolLM2 tokenizer, a reachable reward and a small
GRPO config: shared by the trainer-at-scale tests (packing, LoRA, FSDP, distill, writers), and
importable by the FSDP test's spawned worker processes."""

from __future__ import annotations

from rlclimb.environments.base import Environment, Grade
from rlclimb.rl.config import GRPOConfig
from rlclimb.rl.data import Item
from rlclimb.schemas.records import QAItem


def tokenizer_or_skip():
    import pytest

    from rlclimb.rl.models import ModelNotFound, model_dir

    try:
        folder = model_dir("smollm2")
    except ModelNotFound as e:
        pytest.skip(str(e))
    return load_tokenizer(folder)


def load_tokenizer(folder):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    tok.padding_side = "left"
    return tok


class CapitalEnv(Environment):
    """Task reward 1 when the response starts with a capital letter (reachable by chance)."""

    kind = "math"

    def messages(self, task):
        return [{"role": "user", "content": task.question}]

    def grade(self, task, completion):
        first = completion.strip()[:1]
        return Grade(task=1.0 if first.isascii() and first.isupper() else 0.0, formatted=True)


def items(n=12, kind="math"):
    return [Item(QAItem(question=f"Say one word. ({i})", answer="x"), kind) for i in range(n)]


def config(**overrides) -> GRPOConfig:
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


def make(tokenizer, out, seed=0, model=None, **overrides):
    from rlclimb.rl.models import tiny_causal_lm
    from rlclimb.rl.trainer import Trainer

    return Trainer(
        config(**overrides),
        model if model is not None else tiny_causal_lm(tokenizer, seed=seed),
        tokenizer,
        items(),
        out,
        environments={"math": CapitalEnv()},
    )


def fsdp_worker(rank: int, world: int, port: int, out: str, overrides: dict) -> None:
    """One rank of a gloo FSDP run (torch.multiprocessing.spawn target): trains, then rank 0
    writes the metrics rows and the gathered full weights to OUT/result.pt."""
    import os

    import torch

    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    from rlclimb.rl import distributed
    from rlclimb.rl.models import model_dir

    distributed.init()
    try:
        tok = load_tokenizer(model_dir("smollm2"))
        trainer = make(tok, f"{out}/rank-{rank}", **overrides)
        rows = trainer.train()
        weights = distributed.full_state_dict(trainer.model)
        if rank == 0:
            torch.save({"rows": rows, "weights": weights}, f"{out}/result.pt")
        distributed.barrier()
    finally:
        import torch.distributed as dist

        dist.destroy_process_group()
