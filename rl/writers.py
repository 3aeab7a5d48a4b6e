"""Metric writers beside metrics.jsonl (which is always written and stays the source of truth):
TensorBoard event files (torch.utils.tensorboard, under RUN/tensorboard) and Weights & Biases in
offline mode (under RUN/wandb; `wandb sync` uploads it later). One option picks them:
`--log-to tensorboard,wandb` (GRPOConfig.log_to). Only numeric values are logged; a row's
"step" is the x axis. A resumed run drops what the writers saw after its checkpoint (TensorBoard
purge_step; W&B offline runs are append-only, so a resumed run starts a new offline run)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

KINDS = ("tensorboard", "wandb")


class WriterError(RuntimeError):
    pass


def scalars(row: dict[str, Any]) -> dict[str, float]:
    """The row's finite numbers (bools as 0/1), without the step itself."""
    out = {}
    for key, value in row.items():
        if key == "step" or value is None or isinstance(value, str):
            continue
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            out[key] = float(value)
    return out


class Writers:
    """Fan a metrics row out to the chosen writers."""

    def __init__(
        self,
        out: str | Path,
        kinds: list[str] | tuple[str, ...],
        *,
        config: dict[str, Any] | None = None,
        resume_step: int = 0,
        name: str | None = None,
    ):
        self.out = Path(out)
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise WriterError(
                f"unknown writer(s) {', '.join(unknown)}: choose from {', '.join(KINDS)}"
            )
        self.tb = None
        self.wandb_run = None
        if "tensorboard" in kinds:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as e:
                raise WriterError(
                    f"--log-to tensorboard needs the tensorboard package ({e}): pip install tensorboard"
                ) from e
            # purge_step: events after the resumed checkpoint are dropped, as in metrics.jsonl
            self.tb = SummaryWriter(
                str(self.out / "tensorboard"), purge_step=resume_step + 1 if resume_step else None
            )
        if "wandb" in kinds:
            try:
                import wandb
            except ImportError as e:
                raise WriterError(
                    "--log-to wandb needs the wandb package: pip install wandb"
                ) from e
            self.wandb_run = wandb.init(
                mode="offline",
                dir=str(self.out),
                project="rlclimb",
                name=name or self.out.name,
                config=config or {},
            )

    def log(self, row: dict[str, Any]) -> None:
        step = int(row.get("step", 0))
        values = scalars(row)
        if self.tb is not None:
            for key, value in values.items():
                self.tb.add_scalar(key, value, step)
            self.tb.flush()
        if self.wandb_run is not None:
            self.wandb_run.log(values, step=step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
            self.tb = None
        if self.wandb_run is not None:
            self.wandb_run.finish()
            self.wandb_run = None


def read_tensorboard(folder: str | Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] from the event files in `folder` (tensorboard's own reader)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
