"""Self-distillation from a real (tiny) RL run's rollouts.jsonl: selection rules, a loss that
decreases on the distilled set, and an output model that `rlclimb train` restarts from."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.rl_tiny import make, tokenizer_or_skip  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from rlclimb.pipelines.cli import app  # noqa: E402
from rlclimb.rl.distill import DistillConfig, hacking_reasons, select  # noqa: E402
from rlclimb.schemas.records import Rollout  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return tokenizer_or_skip()


@pytest.fixture(scope="module")
def run(tokenizer, tmp_path_factory):
    """A 6-step GRPO run that logged its rollouts, plus its base model as a directory."""
    root = tmp_path_factory.mktemp("distill")
    trainer = make(
        tokenizer,
        root / "run",
        steps=6,
        log_rollouts=True,
        max_new_tokens=6,
        max_new_tokens_cap=6,
        lr=1e-2,
    )
    trainer.train()
    base = root / "base"
    from rlclimb.rl.models import tiny_causal_lm

    tiny_causal_lm(tokenizer, seed=0).save_pretrained(base)
    tokenizer.save_pretrained(base)
    return root / "run", base


def rollout(text, **kw):
    return Rollout(
        prompt_id="p",
        environment="math",
        policy_version=1,
        prompt="q",
        completion=text,
        reward=1.0,
        **kw,
    )


def test_hacking_reasons():
    assert hacking_reasons(rollout("so \\boxed{3} or maybe \\boxed{4}")) == [
        "several final answers"
    ]
    assert hacking_reasons(rollout("the answer " * 30)) == ["repetition loop"]
    assert hacking_reasons(rollout("x", truncated=True)) == ["truncated"]
    assert hacking_reasons(rollout("We add 2 and 2, which gives \\boxed{4}.")) == []


def test_selection_rules(run):
    folder, _ = run
    lines = (folder / "rollouts.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    (folder / "rollouts.jsonl").write_text("\n".join([*lines, "{not json"]) + "\n")
    try:
        cfg = DistillConfig(from_fraction=0.5, per_prompt=1)
        chosen = select([folder], cfg)
    finally:
        (folder / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    assert chosen.skipped_lines and "rollouts.jsonl:" in chosen.skipped_lines[0]
    assert chosen.rollouts
    assert all(r.step > 3 and r.reward_components.task >= 1.0 for r in chosen.rollouts)
    assert len({r.prompt_id for r in chosen.rollouts}) == len(chosen.rollouts)  # cap 1
    later_ok = {
        (r["prompt_id"], r["completion"])
        for r in rows
        if r["step"] > 3 and r["reward_components"]["task"] >= 1.0
    }
    assert chosen.counts["read"] == len(rows)
    taken = len(chosen.rollouts) + chosen.counts.get("over the per-prompt cap", 0)
    assert taken == len(later_ok)
    assert select([folder], cfg).rollouts == chosen.rollouts  # seeded


@pytest.mark.slow
def test_distill_command_then_train_restarts_from_it(run, tmp_path, monkeypatch):
    monkeypatch.setenv("RLCLIMB_TORCH_THREADS", "1")
    folder, base = run
    out = tmp_path / "distilled"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "distill",
            str(folder),
            "--model",
            str(base),
            "--out",
            str(out),
            "--per-prompt",
            "3",
            "--set",
            "from_fraction=0.3",
            "--set",
            "epochs=4",
            "--set",
            "lr=3e-3",
            "--set",
            "min_lr=1e-3",
            "--set",
            "batch_size=4",
            "--set",
            "pack_tokens=256",
            "--set",
            "aggregation=true-sample-mean",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "distill.json").read_text())
    assert summary["selected"] > 0 and summary["steps"] >= 4
    assert summary["loss_after"] < summary["loss_before"]
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps[0]["lr"] < steps[-1]["lr"] or steps[-1]["lr"] < 3e-3  # warmup / cosine moved it
    assert (out / "sft.jsonl").read_text().count("\n") == summary["selected"]
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n"
            for i in range(4)
        )
    )
    result = runner.invoke(
        app,
        [
            "train",
            str(data),
            "--model",
            str(out / "model"),
            "--out",
            str(tmp_path / "again"),
            "--steps",
            "1",
            "--set",
            "max_new_tokens=3",
            "--set",
            "max_new_tokens_cap=3",
            "--set",
            "prompts_per_step=1",
            "--set",
            "group_size=2",
            "--set",
            "early_group_size=0",
            "--set",
            "pass_range=[0,1]",
            "--set",
            "eval_items=0",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "again" / "metrics.jsonl").read_text().count("\n") == 1


def test_no_selected_rollouts_is_a_clear_error(run, tmp_path):
    folder, base = run
    result = CliRunner().invoke(
        app,
        [
            "distill",
            str(folder),
            "--model",
            str(base),
            "--out",
            str(tmp_path / "o"),
            "--set",
            "from_fraction=1.0",
        ],
    )
    assert result.exit_code != 0 and "no rollouts selected" in result.output
