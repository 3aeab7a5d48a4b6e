"""LoRA for RL with peft: adapters on every linear layer of the body,
attention and MLP ("all-linear": q/k/v/o, gate/up/down; not the LM head), alpha 32, the base
frozen, and the adapters learning at lr * lora_lr_multiplier (LoRA needs ~10x the full
fine-tuning LR). Even rank 1 can match full fine-tuning in RL.

Checkpoints hold the adapter only (PeftModel.save_pretrained: adapter_model.safetensors +
adapter_config.json, ~MBs instead of the whole model and its Adam state). Engines: the local
engine samples through the same (unmerged) adapter modules, so sampler and learner numerics are
identical; a server or vLLM engine gets a merged full-weight copy (`for_engine`), since it loads
plain model weights. `merged(model)` also writes the model `rlclimb train` / `distill` restart
from."""

from __future__ import annotations

import copy
from pathlib import Path

import torch


def is_lora(model) -> bool:
    return hasattr(model, "peft_config")


def wrap(model, cfg):
    """`model` with fresh LoRA adapters when cfg.lora_rank > 0 (else unchanged). Adapter init
    draws from torch's global RNG, seeded by the trainer, so a resumed run's fresh adapters are
    identical before the checkpoint overwrites them anyway."""
    if not cfg.lora_rank:
        return model
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        target_modules="all-linear",  # every nn.Linear of the body, MLP included; never lm_head
        lora_dropout=0.0,
        bias="none",
    )
    return get_peft_model(model, config).eval()


def optimizer_params(model, cfg):
    """What AdamW optimizes: all weights, or with LoRA only the adapters at the multiplied LR."""
    if not is_lora(model):
        return model.parameters()
    trainable = [p for p in model.parameters() if p.requires_grad]
    return [{"params": trainable, "lr": cfg.lr * cfg.lora_lr_multiplier}]


def load_adapter(model, folder: str | Path) -> None:
    """Load an adapter-only checkpoint (written by save_pretrained) into `model`'s adapters."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    folder = Path(folder)
    file = folder / "adapter_model.safetensors"
    if not file.exists():
        raise RuntimeError(
            f"{folder}: no adapter_model.safetensors (a LoRA run's checkpoint holds the adapter "
            "only; this one was written without LoRA: resume it without lora_rank)"
        )
    device = next(model.parameters()).device
    result = set_peft_model_state_dict(model, load_file(file, device=str(device)))
    unexpected = getattr(result, "unexpected_keys", [])
    missing = [k for k in getattr(result, "missing_keys", []) if "lora_" in k]
    if unexpected or missing:
        raise RuntimeError(
            f"adapter {file} does not fit the model (lora_rank or layers differ): "
            f"missing {missing[:3]}, unexpected {unexpected[:3]}"
        )


def merged(model):
    """A plain model with the adapters folded into the weights (a copy; `model` is unchanged)."""
    if not is_lora(model):
        return model
    with torch.no_grad():
        return copy.deepcopy(model).merge_and_unload()


def for_engine(model, engine):
    """The weights an engine is given: the local engine runs the adapter modules themselves (the
    same numerics as the learner); others load plain weights, so they get the merged copy."""
    if is_lora(model) and getattr(engine, "name", "local") != "local":
        return merged(model)
    return model
