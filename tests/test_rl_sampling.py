"""Prompt sampling over a mix (rl/sampler.py): per-source weights, prioritized sampling by pass
rate, curriculum stages by difficulty band and offline pass rate."""

from collections import Counter

import pytest

from rlclimb.rl.config import GRPOConfig
from rlclimb.rl.data import Item
from rlclimb.rl.sampler import PromptSampler
from rlclimb.schemas.records import QAItem


def qa(i, difficulty=None, prior=None, weight=1.0):
    rates = [{"tier": "small", "rate": prior}] if prior is not None else []
    return Item(QAItem(question=f"q{i}", answer="1", difficulty=difficulty, pass_rates=rates),
                "math", weight)


def test_prioritized_weight_is_one_minus_the_pass_rate():
    items = [qa(i) for i in range(4)]
    s = PromptSampler(items, mode="prioritized", floor=0.05)
    for item, p in zip(items, [0.0, 0.25, 0.9, 1.0], strict=True):
        s.record(item.id, p)
    assert [s.weight(i) for i in items] == pytest.approx([1.0, 0.75, 0.1, 0.05])
    edge = PromptSampler(items, mode="edge", floor=0.05)
    edge.pass_rates = dict(s.pass_rates)
    assert [edge.weight(i) for i in items] == pytest.approx([0.05, 0.75, 0.36, 0.05])
    uniform = PromptSampler(items, mode="uniform")
    uniform.pass_rates = dict(s.pass_rates)
    assert {uniform.weight(i) for i in items} == {1.0}


def test_prioritized_draws_follow_the_weights():
    items = [qa(i) for i in range(2)]
    s = PromptSampler(items, seed=0, mode="prioritized", floor=0.01)
    s.record(items[0].id, 0.0)  # weight 1
    s.record(items[1].id, 0.75)  # weight 0.25
    counts = Counter(s.draw(1)[0].id for _ in range(2000))
    assert counts[items[0].id] / 2000 == pytest.approx(0.8, abs=0.04)


def test_source_weights_scale_every_mode():
    heavy, light = qa(0, weight=3.0), qa(1, weight=1.0)
    s = PromptSampler([heavy, light], mode="prioritized")
    s.record(heavy.id, 0.5)
    s.record(light.id, 0.5)
    assert s.weight(heavy) == pytest.approx(3 * s.weight(light))


def test_curriculum_stages_by_difficulty_then_prior_then_all():
    items = [qa(0, "easy", 0.9), qa(1, "easy", 0.2), qa(2, "hard", 0.1), qa(3, "hard")]
    stages = [{"until_step": 2, "difficulty": ["easy"]}, {"until_step": 4, "max_prior": 0.5}]
    s = PromptSampler(items, seed=1, curriculum=stages)

    def drawn(step):
        s.step = step
        return {i.record.question for _ in range(50) for i in s.draw(4)}

    assert drawn(0) == drawn(1) == {"q0", "q1"}
    assert drawn(2) == {"q1", "q2", "q3"}  # q3 has no offline rate: kept
    assert drawn(4) == {"q0", "q1", "q2", "q3"}
    state = s.state_dict()
    again = PromptSampler(items, curriculum=stages)
    again.load_state_dict(state)
    assert again.step == 4


def test_config_takes_sampling_and_curriculum():
    cfg = GRPOConfig(sampling="prioritized", curriculum=[{"until_step": 5, "difficulty": ["easy"]}])
    assert cfg.sampling == "prioritized" and cfg.curriculum[0]["until_step"] == 5
    with pytest.raises(ValueError):
        GRPOConfig(sampling="greedy")


def test_a_mix_routes_swe_instances_tool_tasks_and_qa(tmp_path):
    """Mix sources of three kinds: a SWE-bench instance file (rows kept for the swe
    environment; one without an instance id skipped with a reason), a tool environment
    directory and a QA file."""
    import json
    from pathlib import Path

    from rlclimb.rl.data import load_items

    examples = Path(__file__).resolve().parent.parent / "examples"
    swe = tmp_path / "swebench.jsonl"
    row = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": "diff",
           "test_patch": "diff", "problem_statement": "Fix it.", "FAIL_TO_PASS": ["t"]}
    swe.write_text(json.dumps(row) + "\n" + json.dumps({**row, "instance_id": ""}) + "\n")
    spec = tmp_path / "mix.yaml"
    spec.write_text(
        "name: three\nsources:\n"
        f"  - path: {swe}\n"
        f"  - path: {examples / 'tool_envs' / 'bike_shop'}\n    max_items: 2\n"
        f"  - path: {examples / 'arithmetic.jsonl'}\n    max_items: 3\n"
    )
    skipped = []
    mix = load_items(spec, skipped)
    assert Counter(i.kind for i in mix) == {"swe": 1, "tool": 2, "math": 3}
    assert next(i for i in mix if i.kind == "swe").id == "o__r-1"
    assert len(skipped) == 1 and "without instance_id" in skipped[0]
