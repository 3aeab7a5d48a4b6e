"""`rlclimb train` end to end on a tiny model directory: metrics, figure, checkpoint, resume,
config errors; mix specs; routing a code problem to the code environment."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from test_rl_trainer import tiny_model, tokenizer  # noqa: E402,F401 (a fixture)
from typer.testing import CliRunner  # noqa: E402

from rlclimb.pipelines.cli import app  # noqa: E402
from rlclimb.rl.data import load_items, split_eval  # noqa: E402
from rlclimb.schemas.io import write_records  # noqa: E402
from rlclimb.schemas.records import CodeProblem, QAItem, TestCase  # noqa: E402

FAST = [
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
    "eval_items=1",
    "--set",
    "eval_every=1",
    "--set",
    "checkpoint_every=1",
    "-q",
]


@pytest.fixture
def model_path(tokenizer, tmp_path):  # noqa: F811
    path = tmp_path / "tiny"
    tiny_model(tokenizer).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_train_command(model_path, tmp_path, monkeypatch):
    monkeypatch.setenv("RLCLIMB_TORCH_THREADS", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # torch's default on a 2-core machine
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1), "note": "x"}) + "\n"
            for i in range(4)
        )
        + "not json\n"
    )
    out = tmp_path / "run"
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["train", str(data), "--model", str(model_path), "--out", str(out), "--steps", "1", *FAST[:-1]],  # not -q
    )
    assert result.exit_code == 0, result.output
    assert torch.get_num_threads() == 1  # capped as the local LLM backend does
    torch.set_num_threads(threads)
    assert "1 rows skipped" in result.output and "3 training items" in result.output
    assert "train: step 1/1 · reward" in result.output  # not a terminal: a plain line per step
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1] and "eval/pass@1" in rows[1]
    assert {
        "reward/task",
        "reward/lang",
        "reward/length",
        "entropy",
        "k",
        "clip/high",
        "ratio/max",
        "truncation",
        "tokens_per_s",
        "time/generate",
        "time/score",
        "time/learn",
    } <= set(rows[1])
    assert (out / "reward.png").stat().st_size > 1000
    assert (out / "checkpoints" / "step-000001" / "model" / "config.json").exists()
    # a second invocation continues the run
    result = runner.invoke(
        app,
        ["train", str(data), "--model", str(model_path), "--out", str(out), "--steps", "2", *FAST],
    )
    assert result.exit_code == 0, result.output
    assert "resuming" in result.output
    assert [
        json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()
    ] == [0, 1, 2]
    # ... but only with the same config
    result = runner.invoke(
        app,
        ["train", str(data), "--model", str(model_path), "--out", str(out), *FAST, "--set", "lr=1"],
    )
    assert result.exit_code == 2 and "another config" in result.output
    result = runner.invoke(
        app,
        [
            "train",
            str(data),
            "--model",
            str(model_path),
            "--out",
            str(tmp_path / "x"),
            "--set",
            "nope=1",
        ],
    )
    assert result.exit_code == 2 and "nope" in result.output


def test_mix_spec_and_run_dirs(tmp_path):
    run = tmp_path / "runs" / "curated" / "data"
    write_records(
        [
            QAItem(question=f"q{i}", answer=str(i), difficulty="hard" if i % 2 else "easy")
            for i in range(10)
        ],
        run / "train-00000-of-00001.parquet",
    )
    (tmp_path / "extra.jsonl").write_text(json.dumps({"question": "extra", "answer": "1"}) + "\n")
    spec = tmp_path / "mix.yaml"
    spec.write_text(
        "name: m\nsources:\n"
        "  - {path: runs/curated, weight: 3, filter: \"difficulty = 'hard'\", max_items: 4}\n"
        "  - {path: extra.jsonl, weight: 1}\n"
    )
    items = load_items(spec)
    assert len(items) == 5 and {i.kind for i in items} == {"math"}
    assert sum(i.weight for i in items if i.record.question != "extra") == pytest.approx(3.0)
    assert all(i.record.difficulty == "hard" for i in items if i.record.question != "extra")
    spec.write_text(spec.read_text() + "total: 8\n")
    assert len(load_items(spec)) == 8  # 6 + 2, the small source repeated
    assert len(load_items(tmp_path / "runs" / "curated")) == 10
    train, held = split_eval(load_items(tmp_path / "runs" / "curated"), 3, seed=0)
    assert len(held) == 3 and not {i.id for i in held} & {i.id for i in train}


def test_code_problems_go_to_the_code_environment(tokenizer, tmp_path):  # noqa: F811
    pytest.importorskip("rlclimb.environments.code_env")
    from rlclimb.rl.config import GRPOConfig
    from rlclimb.rl.data import Item
    from rlclimb.rl.trainer import Trainer

    problem = CodeProblem(
        statement="Print the sum of two integers.", tests=[TestCase(input="1 2\n", output="3\n")]
    )
    cfg = GRPOConfig(
        steps=1,
        prompts_per_step=1,
        group_size=2,
        early_group_size=0,
        pass_range=(0.0, 1.0),
        max_new_tokens=3,
        max_new_tokens_cap=3,
        eval_items=0,
        checkpoint_every=0,
        environments={"code": {"backend": "process"}},
    )
    trainer = Trainer(cfg, tiny_model(tokenizer), tokenizer, [Item(problem, "code")], tmp_path)
    trainer.train()
    rollouts = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert {r["environment"] for r in rollouts} == {"code"} and len(rollouts) == 2
    assert all(
        r["reward_components"]["task"] == 0.0 for r in rollouts
    )  # 3 random tokens: no program


def test_spec_config_and_clip_range():
    from rlclimb.rl.config import GRPOConfig

    spec = GRPOConfig.spec()
    # full scale: a global batch of 7040 sequences per gradient step, 5 gradient steps per inference
    # update (here: per batch of rollouts)
    assert (spec.group_size, spec.early_group_size, spec.minibatches) == (128, 16, 5)
    assert spec.sequences_per_gradient_step == 7040
    assert spec.prompts_per_step * spec.group_size == 5 * 7040
    assert (spec.lr, spec.betas, spec.adam_eps, spec.top_p) == (1e-6, (0.95, 0.95), 1e-15, 0.97)
    assert spec.clip_low == pytest.approx(0.4) and spec.clip_high(0.5) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        GRPOConfig(early_group_size=8, group_size=8)
