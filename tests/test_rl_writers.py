"""TensorBoard (and W&B offline, when installed) writers beside metrics.jsonl: event files are
written by a real training run and read back with tensorboard's own reader."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tensorboard")

from helpers.rl_tiny import make, tokenizer_or_skip  # noqa: E402

from rlclimb.rl.writers import WriterError, Writers, read_tensorboard, scalars  # noqa: E402


def test_scalars_keep_finite_numbers_only():
    row = {"step": 3, "loss": 0.5, "ok": True, "name": "x", "reward": None, "bad": float("nan")}
    assert scalars(row) == {"loss": 0.5, "ok": 1.0}


def test_unknown_writer_is_named(tmp_path):
    with pytest.raises(WriterError, match="unknown writer.*mlflow"):
        Writers(tmp_path, ["mlflow"])


def test_tensorboard_events_from_a_training_run(tmp_path):
    tokenizer = tokenizer_or_skip()
    trainer = make(tokenizer, tmp_path, steps=3, log_to=["tensorboard"])
    trainer.train()
    events = read_tensorboard(tmp_path / "tensorboard")
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [s for s, _ in events["loss"]] == [1, 2, 3]
    assert [v for _, v in events["reward_all"]] == pytest.approx(
        [r["reward_all"] for r in metrics], rel=1e-6
    )
    assert "time/step" in events and "grad_norm" in events


def test_tensorboard_resume_drops_events_after_the_checkpoint(tmp_path):
    writer = Writers(tmp_path, ["tensorboard"])
    for step in (1, 2, 3):
        writer.log({"step": step, "loss": float(step)})
    writer.close()
    resumed = Writers(tmp_path, ["tensorboard"], resume_step=1)  # continue after step 1
    for step in (2, 3):
        resumed.log({"step": step, "loss": 10.0 * step})
    resumed.close()
    assert read_tensorboard(tmp_path / "tensorboard")["loss"] == [(1, 1.0), (2, 20.0), (3, 30.0)]


def test_wandb_offline_run(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    writer = Writers(tmp_path, ["wandb"], config={"lr": 1.0})
    writer.log({"step": 1, "loss": 0.25})
    writer.close()
    assert list((tmp_path / "wandb").glob("offline-run-*"))
