"""LoRA for RL (peft): adapters on every linear layer of the body, the base frozen, adapters at
lr * multiplier; adapter-only checkpoints from which a run continues bit-for-bit on CPU; engines
that load plain weights get the merged model."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from helpers.rl_tiny import make, tokenizer_or_skip  # noqa: E402

from rlclimb.rl import lora  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return tokenizer_or_skip()


LORA = dict(lora_rank=4, lr=1e-2)


def test_adapters_on_every_linear_layer_and_lr_multiplier(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, **LORA)
    names = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    for proj in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        assert any(f"{proj}.lora_A" in n for n in names), proj
    assert not any("lm_head" in n or "embed" in n for n in names)
    (group,) = trainer.optimizer.param_groups
    assert group["lr"] == pytest.approx(1e-2 * 10)
    assert trainer.model.peft_config["default"].lora_alpha == 32
    frozen = {
        n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" not in n
    }
    trainer.train(steps=2)
    after = dict(trainer.model.named_parameters())
    assert all(torch.equal(frozen[n], after[n]) for n in frozen)  # the base never moves
    assert any(
        float(after[n].detach().abs().sum()) > 0 for n in names if "lora_B" in n
    )  # B starts at 0


def stable(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        {k: v for k, v in r.items() if not k.startswith(("time/", "tokens_per_s", "gen_"))}
        for r in rows
    ]


def adapter_state(trainer):
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" in n}


@pytest.mark.slow
def test_lora_resume_is_bit_for_bit_from_adapter_checkpoints(tokenizer, tmp_path):
    opts = dict(steps=4, checkpoint_every=2, keep_checkpoints=2, minibatches=2, **LORA)
    straight = make(tokenizer, tmp_path / "a", **opts)
    straight.train()
    first = make(tokenizer, tmp_path / "b", **opts)
    first.train(steps=2)
    files = sorted(p.name for p in (tmp_path / "b/checkpoints/step-000002/model").iterdir())
    assert "adapter_model.safetensors" in files and "model.safetensors" not in files
    # a new process: the same base model (--model), adapters other than the checkpoint's
    resumed = make(tokenizer, tmp_path / "b", **opts)
    with torch.no_grad():
        for p in adapter_state(resumed) and (
            p for n, p in resumed.model.named_parameters() if "lora_" in n
        ):
            p.normal_()
    assert resumed.resume() == 2
    resumed.train()
    assert stable(tmp_path / "a" / "metrics.jsonl") == stable(tmp_path / "b" / "metrics.jsonl")
    a, b = adapter_state(straight), adapter_state(resumed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # keep-last-N
    assert [p.name for p in sorted((tmp_path / "b/checkpoints").iterdir())] == [
        "step-000002",
        "step-000004",
    ]


def test_a_full_checkpoint_is_refused_by_a_lora_run(tokenizer, tmp_path):
    make(tokenizer, tmp_path, steps=1, checkpoint_every=1).train()
    with pytest.raises(RuntimeError, match="adapter_model.safetensors"):
        make(tokenizer, tmp_path, steps=1, checkpoint_every=1, **LORA).resume()


def test_merged_model_for_engines_computes_the_same(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, **LORA)
    trainer.train(steps=1)
    plain = lora.merged(trainer.model)
    assert not lora.is_lora(plain) and lora.is_lora(trainer.model)
    assert lora.for_engine(trainer.model, trainer.engine) is trainer.model  # local: the adapters

    class Server:
        name = "server"

    assert not lora.is_lora(lora.for_engine(trainer.model, Server()))
    ids = torch.tensor([tokenizer("Hello there, how are you?")["input_ids"]])
    with torch.no_grad():
        a = trainer.model(input_ids=ids).logits
        b = plain(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-4)
    assert "model.layers.0.mlp.up_proj.weight" in plain.state_dict()


def test_checkpoint_without_optimizer_state_still_resumes(tokenizer, tmp_path):
    opts = dict(steps=2, checkpoint_every=1, save_optimizer=False, **LORA)
    make(tokenizer, tmp_path, **opts).train(steps=1)
    resumed = make(tokenizer, tmp_path, **opts)
    assert resumed.resume() == 1
    assert [r["step"] for r in resumed.train()] == [2]


def test_lora_with_packed_rows(tokenizer, tmp_path):
    """LoRA and packing together: the packed learner reads the adapters' outputs too."""
    opts = dict(top_p=0.9, **LORA)
    padded = make(tokenizer, tmp_path / "a", **opts)
    padded.train(steps=1)  # adapters away from their zero init
    packed = make(tokenizer, tmp_path / "b", packing=True, pack_tokens=64, **opts)
    packed.model.load_state_dict(padded.model.state_dict())
    samples = [s for g in padded.rollout(padded.train_items[:2], 3) for s in g]
    with torch.no_grad():
        a = padded.logprobs(padded.batch(samples))
        batch = packed.batch(samples)
        b = packed.logprobs(batch)
    assert torch.allclose(a[batch["valid"]], b[batch["valid"]], atol=1e-5)
    assert packed.train(steps=1)[0]["grad_norm"] > 0
