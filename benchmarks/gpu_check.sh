#!/usr/bin/env bash
# One short GPU check of the trainer-at-scale paths (a few minutes on one GPU), for a lent GPU
# machine: bf16 autocast GRPO steps, packed == padded log-probs under bf16 on the GPU's attention
# kernels, FSDP2 on 1 GPU (NCCL, world size 1), `rlclimb train --gpus N` when N GPUs are there,
# and the vLLM engine if vllm is installed. Results go to ${OUT:-/tmp/gpu_check}/gpu_check.json
# and the log; each part prints PASS / FAIL / SKIP and the script goes on.
#
#   bash benchmarks/gpu_check.sh            # from the repository root, the venv active
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt" || true

python - "$OUT" <<'PY' 2>&1 | tee "$OUT/gpu_check.log"
import json, os, sys, tempfile, time, traceback
from pathlib import Path

import torch

out = Path(sys.argv[1])
sys.path.insert(0, "tests")
from helpers.rl_tiny import make, load_tokenizer  # noqa: E402

from rlclimb.rl.models import model_dir, tiny_causal_lm  # noqa: E402

results = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
tok = load_tokenizer(model_dir("smollm2"))
tmp = Path(tempfile.mkdtemp())


def part(name):
    def wrap(fn):
        t = time.perf_counter()
        try:
            results[name] = {"ok": True, **(fn() or {})}
            print(f"PASS {name}", results[name], flush=True)
        except Exception as e:  # noqa: BLE001 (a check reports, never stops the others)
            results[name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            print(f"FAIL {name}", traceback.format_exc(), flush=True)
        results[name]["seconds"] = round(time.perf_counter() - t, 1)
    return wrap


@part("bf16_steps")
def _():
    trainer = make(tok, tmp / "bf16", steps=3, dtype="bfloat16", device="cuda",
                   max_new_tokens=16, max_new_tokens_cap=16, top_p=0.97)
    assert trainer.autocast == torch.bfloat16
    rows = trainer.train()
    return {"mismatch_kl": rows[-1]["mismatch/kl"], "grad_norm": rows[-1]["grad_norm"],
            "step_s": rows[-1]["time/step"]}


@part("packed_equals_padded_bf16")
def _():
    sys.path.insert(0, "tests")
    from test_rl_packing import uneven_groups
    opts = dict(max_new_tokens=16, max_new_tokens_cap=16, top_p=0.9, device="cuda", dtype="bfloat16")
    padded = make(tok, tmp / "pa", **opts)
    packed = make(tok, tmp / "pb", packing=True, pack_tokens=256, **opts)
    samples = [s for g in uneven_groups(padded) for s in g.samples]
    with torch.no_grad():
        a = padded.logprobs(padded.batch(samples))
        batch = packed.batch(samples)
        b = packed.logprobs(batch)
    err = float((a - b)[batch["valid"]].abs().max())
    assert err < 5e-2, err  # bf16 bodies, fp32 heads
    return {"max_abs_logprob_diff": err, "attn": padded.model.config._attn_implementation}


@part("fsdp_1gpu")
def _():
    import torch.distributed as dist
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT="29511")
    dist.init_process_group("nccl")
    from rlclimb.rl import distributed, lora
    trainer = make(tok, tmp / "fsdp", steps=2, dtype="bfloat16", device="cuda")
    distributed.shard(trainer.model)  # world size 1: the trainer does not shard by itself
    trainer.optimizer = torch.optim.AdamW(lora.optimizer_params(trainer.model, trainer.cfg), lr=1e-3)
    rows = trainer.train()
    state = distributed.full_state_dict(trainer.model)
    dist.destroy_process_group()
    return {"grad_norm": rows[-1]["grad_norm"], "tensors": len(state)}


@part("vllm_engine")
def _():
    try:
        import vllm  # noqa: F401
    except ImportError:
        return {"skipped": "vllm not installed"}
    folder = tmp / "tiny"
    tiny_causal_lm(tok).save_pretrained(folder)
    tok.save_pretrained(folder)
    trainer = make(tok, tmp / "vllm", steps=1, engine="vllm", device="cuda", top_p=1.0,
                   engine_options={"model_path": str(folder)})
    rows = trainer.train()
    return {"gen_tokens_per_s": rows[-1]["gen_tokens_per_s"]}


(out / "gpu_check.json").write_text(json.dumps(results, indent=1))
PY

# --gpus N through the CLI when there are several GPUs
n=$(python -c "import torch; print(torch.cuda.device_count())")
if [ "$n" -ge 2 ]; then
  python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
Path(sys.argv[1], "items.jsonl").write_text("".join(
    json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n" for i in range(16)))
PY
  timeout 300 rlclimb train "$OUT/items.jsonl" --model smollm2 --out "$OUT/fsdp-run" --gpus 2 \
    --steps 2 --set eval_items=0 --set checkpoint_every=0 --set max_new_tokens=32 -q \
    && echo "PASS train --gpus 2" || echo "FAIL train --gpus 2"
else
  echo "SKIP train --gpus 2 (one GPU)"
fi
echo "results in $OUT"
