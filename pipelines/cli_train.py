"""`rlclimb train MIX --model MODEL --out runs/NAME`: GRPO on a curated mix (rlclimb.rl)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .cli import app, apply_sets, console, fail, read_yaml_mapping
from .readers import InputError
from .rundir import claim_dir


def grpo_settings(path: Path | None, sets: list[str]) -> dict[str, Any]:
    """A GRPO config mapping from a YAML file plus `--set key=value` (dotted keys for sections,
    e.g. reward.w_len=0; values parsed as YAML, e.g. pass_range=[0.1,0.9])."""
    return apply_sets(read_yaml_mapping(path), sets)


@app.command()
def train(
    mix: Annotated[
        str,
        typer.Argument(
            help="curated run dir, dataset dir or .parquet/.jsonl file, or mix spec .yaml"
        ),
    ],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Hugging Face model dir, .gguf file, or smollm2")
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="run directory, e.g. runs/NAME (resumes from its last checkpoint)"
        ),
    ],
    config: Annotated[Path | None, typer.Option("--config", "-c", help="GRPO config YAML")] = None,
    set_: Annotated[
        list[str], typer.Option("--set", help="override a config key: key=value, reward.w_len=0")
    ] = [],  # noqa: B006
    steps: Annotated[int | None, typer.Option(help="total steps (same as --set steps=N)")] = None,
    engine: Annotated[
        str | None,
        typer.Option(help="rollout engine: local, server (OpenAI-compatible) or vllm (GPU)"),
    ] = None,
    server_url: Annotated[
        str | None,
        typer.Option(help="server engine: base URL, e.g. http://127.0.0.1:8000/v1"),
    ] = None,
    weights_dir: Annotated[
        Path | None,
        typer.Option(help="server engine: where new weights are saved for the server to reload"),
    ] = None,
    async_eta: Annotated[
        int | None,
        typer.Option(help="async rollouts at most N steps stale (0: same as synchronous)"),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
    gpus: Annotated[
        int, typer.Option(help="learner processes on this node (FSDP2; CPU: gloo processes)")
    ] = 1,
    lora: Annotated[
        int | None, typer.Option(help="LoRA rank (adapters on all linear layers; 0: off)")
    ] = None,
    log_to: Annotated[
        str | None, typer.Option(help="writers beside metrics.jsonl: tensorboard,wandb")
    ] = None,
    packing: Annotated[
        bool | None, typer.Option("--packing/--no-packing", help="packed learner rows")
    ] = None,
) -> None:
    """Train a model with GRPO on a mix (curated run, dataset, or mix spec).

    Early-exit group sampling, environment rewards, clipped token-level loss with adaptive entropy
    control; metrics.jsonl, checkpoints and reward.png in the run directory."""
    from pydantic import ValidationError

    from rlclimb.rl.config import GRPOConfig
    from rlclimb.rl.data import DataError, load_items

    settings = grpo_settings(config, set_)
    if steps is not None:
        settings["steps"] = steps
    if engine is not None:
        settings["engine"] = engine
    if async_eta is not None:
        settings["async_eta"] = async_eta
    options = settings.setdefault("engine_options", {})
    if server_url is not None:
        options["base_url"] = server_url
    if weights_dir is not None:
        options["weights_dir"] = str(weights_dir)
    if settings.get("engine") == "server" and "base_url" not in options:
        fail("engine server needs --server-url (or engine_options.base_url in the config)")
    scale_settings(settings, lora=lora, log_to=log_to, packing=packing)  # [scale]
    try:
        cfg = GRPOConfig.model_validate(settings)
    except ValidationError as e:
        err = e.errors()[0]
        fail(f"invalid GRPO config: {'.'.join(map(str, err['loc']))}: {err['msg']}")
    previous = out / "config.json"
    if previous.exists() and any((out / "checkpoints").glob("step-*")):
        before = json.loads(previous.read_text()).get("grpo", {})
        changed = sorted(
            k
            for k, v in cfg.model_dump(mode="json").items()
            if k != "steps" and json.dumps(before.get(k)) != json.dumps(v)
        )
        if changed:
            fail(
                f"{out} holds a run with another config (differs in {', '.join(changed)}): "
                "resume with the same config, or choose a new --out"
            )
    skipped: list[str] = []
    try:
        items = load_items(mix, skipped)
    except DataError as e:
        fail(str(e))
    if skipped:
        console.print(
            f"[yellow]{len(skipped)} rows skipped[/yellow] (first: {skipped[0]})", highlight=False
        )

    out = learner_processes(gpus, out, cfg)  # [scale] torchrun relaunch; rank > 0: RUN/.ranks/N
    from rlclimb.rl import distributed

    if distributed.rank() > 0:  # [scale] rank 0 claims RUN before the others write under it
        distributed.barrier()
    try:  # never write into (or over) a directory rlclimb did not create
        claim_dir(out, "train")
    except InputError as e:
        fail(str(e))
    if distributed.rank() == 0:  # [scale]
        distributed.barrier()

    from rlclimb.rl.models import ModelNotFound, load_causal_lm
    from rlclimb.rl.plot import plot_rewards
    from rlclimb.rl.trainer import Trainer

    from .local_llm import _set_threads

    _set_threads()  # torch's default (one thread per core) spin-waits on a shared machine

    progress = not quiet  # a bar on a terminal, a plain line per step in a log
    if not sys.stderr.isatty():  # transformers' own bars (loading, writing checkpoints)
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    try:
        lm, tokenizer = load_causal_lm(model)
    except ModelNotFound as e:
        fail(str(e))
    trainer = Trainer(
        cfg,
        lm,
        tokenizer,
        items,
        out,
        progress=progress,
        meta={"model": model, "mix": mix},
    )
    if start := trainer.resume():
        console.print(f"resuming {out} after step {start}")
    kinds = sorted({i.kind for i in items})
    console.print(
        f"{len(trainer.train_items)} training items ({', '.join(kinds)}), "
        f"{len(trainer.eval_items)} held out; {cfg.steps} steps on {trainer.device}"
    )
    try:
        rows = trainer.train()
    except RuntimeError as e:  # an environment that cannot run here (code without a sandbox)
        fail(str(e))
    figure = plot_rewards(out / "metrics.jsonl", out / "reward.png", title=f"{model} on {mix}")
    if rows:
        last = rows[-1]
        line = f"step {last['step']}: reward {last['reward_all']:.3f}, pass rate {last['pass_rate_all']:.2f}"
        if "eval/pass@1" in last:
            line += f", held-out pass@1 {last['eval/pass@1']:.2f}"
        console.print(line)
    console.print(
        f"metrics in {out / 'metrics.jsonl'}, curve in {figure}, model in {out / 'checkpoints'}",
        highlight=False,
    )


# ---- trainer at scale: --gpus / --lora / --log-to / --packing, and `rlclimb distill` ----------


def scale_settings(settings: dict[str, Any], *, lora, log_to, packing) -> None:
    if lora is not None:
        settings["lora_rank"] = lora
    if log_to is not None:
        settings["log_to"] = [k.strip() for k in log_to.split(",") if k.strip()]
    if packing is not None:
        settings["packing"] = packing


def learner_processes(gpus: int, out: Path, cfg) -> Path:
    """--gpus N > 1: re-run this command under torchrun (N processes on this node; the exit code
    is theirs). In a launched process: join the group; ranks > 0 write under RUN/.ranks/N."""
    import os
    import subprocess

    from rlclimb.rl import distributed

    if gpus > 1 and not distributed.launched():
        if cfg.lora_rank:
            fail("--gpus with --lora is not built yet: train LoRA on one process")
        if any((out / "checkpoints").glob("step-*")):
            fail(f"{out}: resuming an FSDP run is not built yet; choose a new --out")
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        command += [f"--nproc-per-node={gpus}", "-m", "rlclimb.rl.distributed", *sys.argv[1:]]
        console.print(f"launching {gpus} learner processes: {' '.join(command[2:6])}")
        raise typer.Exit(subprocess.call(command, env={**os.environ, "OMP_NUM_THREADS": "1"}))
    distributed.init()
    rank = int(os.environ.get("RANK", "0"))
    return out if rank == 0 else out / ".ranks" / str(rank)


@app.command()
def distill(
    runs: Annotated[list[Path], typer.Argument(help="RL run directories (their rollouts.jsonl)")],
    model: Annotated[
        str,
        typer.Option("--model", "-m", help="the model to fine-tune (a mid-training checkpoint)"),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="output directory (OUT/model)")],
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="distill config YAML")
    ] = None,
    set_: Annotated[
        list[str], typer.Option("--set", help="override a key: per_prompt=2, lr=1e-5")
    ] = [],  # noqa: B006
    per_prompt: Annotated[int | None, typer.Option(help="traces per prompt at most")] = None,
    filter_hacking: Annotated[
        bool, typer.Option(help="drop traces that look like reward hacking")
    ] = False,
) -> None:
    """Self-distillation: SFT on the successful rollouts of later steps of RL runs (random, capped
    per prompt), writing OUT/model for `rlclimb train --model OUT/model`."""
    from pydantic import ValidationError

    from rlclimb.rl.distill import DistillConfig, DistillError
    from rlclimb.rl.distill import distill as run_distill
    from rlclimb.rl.models import ModelNotFound

    from .local_llm import _set_threads

    settings = apply_sets(read_yaml_mapping(config), set_)
    if per_prompt is not None:
        settings["per_prompt"] = per_prompt
    if filter_hacking:
        settings["filter_hacking"] = True
    try:
        cfg = DistillConfig.model_validate(settings)
    except ValidationError as e:
        err = e.errors()[0]
        fail(f"invalid distill config: {'.'.join(map(str, err['loc']))}: {err['msg']}")
    try:
        claim_dir(out, "distill")
    except InputError as e:
        fail(str(e))
    _set_threads()
    try:
        summary = run_distill(runs, model, out, cfg, log=console.print)
    except (DistillError, ModelNotFound) as e:
        fail(str(e))
    console.print(
        f"{summary['selected']} traces ({summary['prompts']} prompts), {summary['steps']} SFT "
        f"steps: loss {summary['loss_before']:.3f} -> {summary['loss_after']:.3f}; "
        f"model in {out / 'model'}",
        highlight=False,
    )
