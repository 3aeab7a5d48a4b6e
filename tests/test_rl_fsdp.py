"""The FSDP2 learner on 2 CPU processes (gloo) takes the same steps as one process: same loss,
gradient norm, k and final weights (float tolerance: the ranks sum their gradients in another
order), with micro-batches dealt over the ranks (an odd count included)."""

import socket

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from helpers.rl_tiny import fsdp_worker, make, tokenizer_or_skip  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("micro_batch_size", [2, 3])  # 4 micro-batches / 3 (one rank pads)
def test_fsdp_two_processes_equal_one(tmp_path, micro_batch_size):
    import torch.multiprocessing as mp
    from safetensors.torch import load_file

    tokenizer = tokenizer_or_skip()
    overrides = dict(
        steps=2, micro_batch_size=micro_batch_size, lr=1e-2, top_p=0.9, checkpoint_every=2
    )
    single = make(tokenizer, tmp_path / "single", **overrides)
    rows = single.train()
    mp.spawn(fsdp_worker, args=(2, free_port(), str(tmp_path), overrides), nprocs=2, join=True)
    result = torch.load(tmp_path / "result.pt", weights_only=False)
    for a, b in zip(rows, result["rows"], strict=True):
        assert a["reward_all"] == b["reward_all"]  # the same rollouts
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-6)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4)
        assert a["entropy"] == pytest.approx(b["entropy"], rel=1e-5)
        assert a["k_next"] == b["k_next"]
    # Adam with eps 1e-15 turns a near-zero gradient's rounding into a step of lr on a few
    # entries, so compare each tensor's relative error, not every entry
    mine = single.model.state_dict()
    assert result["weights"].keys() <= mine.keys()
    for name, value in result["weights"].items():
        err = float((mine[name] - value).norm() / mine[name].norm())
        assert err < 1e-3, (name, err)
    assert rows[-1]["grad_norm"] > 1e-3
    # the checkpoint: rank 0 writes the gathered full model, the same weights as returned
    saved = load_file(tmp_path / "rank-0/checkpoints/step-000002/model/model.safetensors")
    assert all(torch.equal(saved[k], v) for k, v in result["weights"].items() if k in saved)
    assert "model.layers.1.mlp.up_proj.weight" in saved
    assert not (tmp_path / "rank-1/checkpoints/step-000002/model/model.safetensors").exists()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_train_gpus_2_launches_two_learner_processes(tmp_path):
    """`rlclimb train --gpus 2` on CPU: torchrun starts 2 gloo ranks; rank 0 writes the run and
    the gathered checkpoint, rank 1 its own metrics under RUN/.ranks/1 (the same numbers)."""
    import json
    import os
    import subprocess
    import sys

    from rlclimb.rl.models import tiny_causal_lm

    tokenizer = tokenizer_or_skip()
    base = tmp_path / "tiny"
    tiny_causal_lm(tokenizer).save_pretrained(base)
    tokenizer.save_pretrained(base)
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n"
            for i in range(6)
        )
    )
    out = tmp_path / "run"
    sets = ["max_new_tokens=3", "max_new_tokens_cap=3", "prompts_per_step=2", "group_size=2"]
    sets += ["early_group_size=0", "pass_range=[0,1]", "eval_items=0", "micro_batch_size=1"]
    command = [sys.executable, "-c", "from rlclimb.pipelines.cli import main; main()"]
    command += ["train", str(data)]
    command += ["--model", str(base), "--out", str(out), "--steps", "1", "--gpus", "2", "-q"]
    command += [a for s in sets for a in ("--set", s)]
    env = {**os.environ, "RLCLIMB_TORCH_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=800, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "launching 2 learner processes" in done.stdout
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    other = [json.loads(line) for line in (out / ".ranks/1/metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1]
    assert rows[0]["loss"] == other[0]["loss"] and rows[0]["grad_norm"] == other[0]["grad_norm"]
    assert (out / "checkpoints/step-000001/model/model.safetensors").exists()
