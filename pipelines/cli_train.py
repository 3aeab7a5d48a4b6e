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

    try:  # never write into (or over) a directory rlclimb did not create
        claim_dir(out, "train")
    except InputError as e:
        fail(str(e))

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
