"""The embedded (in-process) LLM backend behind the same client, and stem-score with no llm config."""

from __future__ import annotations

import asyncio
import json
import re

import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines import local_llm
from rlclimb.pipelines.definitions.stem_score import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMBadRequestError, LLMClient, LLMConfig
from rlclimb.pipelines.local_llm import LocalOutput
from rlclimb.schemas.io import to_rows


@pytest.fixture
def fake_generate(monkeypatch):
    """Replaces the model: answers `a+b` questions right on even seeds' rows, records batches."""
    calls: list[dict] = []

    def generate(model, conversations, params, seed):
        calls.append({"model": model, "rows": len(conversations), "params": params})
        out = []
        for row, messages in enumerate(conversations):
            text = messages[-1]["content"]
            m = re.search(r"(\d+) \+ (\d+)", text)
            value = int(m.group(1)) + int(m.group(2)) + (row % 2)  # every other row is wrong
            out.append(LocalOutput(f"\\boxed{{{value}}}", "stop", 20, 5))
        return out

    monkeypatch.setattr(local_llm, "generate", generate)
    return calls


def local_client(tmp_path, **profile):
    config = LLMConfig.from_dict(
        {
            "profiles": {
                "tier-0": {"backend": "local", "model": "smollm2", "concurrency": 8, **profile}
            }
        }
    )
    return LLMClient(config, cache_path=tmp_path / "llm.sqlite")


def test_local_samples_of_a_prompt_run_as_one_batch_and_are_cached_per_sample(
    tmp_path, fake_generate
):
    msgs = [{"role": "user", "content": "What is 2 + 3?"}]

    async def k_samples(client, k=4):
        try:
            return await asyncio.gather(
                *(
                    client.complete("tier-0", msgs, tag="solve.tier-0", seed=i, max_tokens=16)
                    for i in range(k)
                )
            )
        finally:
            await client.aclose()

    client = local_client(tmp_path)
    first = asyncio.run(k_samples(client))
    assert [c.text for c in first] == ["\\boxed{5}", "\\boxed{6}", "\\boxed{5}", "\\boxed{6}"]
    assert fake_generate == [{"model": "smollm2", "rows": 4, "params": {"max_tokens": 16}}]
    usage = client.usage["solve.tier-0"]
    assert (usage.requests, usage.prompt_tokens, usage.completion_tokens, usage.cost) == (
        4,
        80,
        20,
        0.0,
    )
    assert first[0].model == "tier-0" and first[0].finish_reason == "stop"

    again = local_client(tmp_path)  # a resumed run: every sample comes from the request cache
    resumed = asyncio.run(k_samples(again, k=5))
    assert [c.cached for c in resumed] == [True] * 4 + [False]
    assert len(fake_generate) == 2 and fake_generate[1]["rows"] == 1


def test_local_profile_config_and_missing_model(tmp_path):
    config = LLMConfig.from_dict(
        {"profiles": {"t": {"backend": "local", "model": "/no/such/model"}}}
    )
    profile = config.resolve("t")
    assert profile.structured_mode == "none" and profile.endpoint == "local:/no/such/model"
    with pytest.raises(ValueError, match="base_url is required"):
        LLMConfig.from_dict({"profiles": {"t": {"model": "m"}}})
    client = LLMClient(config)

    async def call():
        try:
            return await client.complete("t", [{"role": "user", "content": "hi"}])
        finally:
            await client.aclose()

    with pytest.raises(LLMBadRequestError, match="not a packaged model"):
        asyncio.run(call())


def write_sums(path, pairs):
    path.write_text(
        "".join(
            json.dumps({"question": f"What is {a} + {b}?", "answer": str(a + b)}) + "\n"
            for a, b in pairs
        )
    )
    return path


def test_stem_score_without_llm_config_uses_the_embedded_tier(tmp_path, fake_generate):
    src = write_sums(tmp_path / "sums.jsonl", [(2, 3), (4, 4), (1, 6)])
    result = run_pipeline(build([str(src)], {}, 100), tmp_path / "run", RunOptions(progress=False))
    rows = to_rows(pq.read_table(result.run_dir / "data"))
    assert len(rows) == 3
    for row in rows:  # k=4 by default with the embedded tier; rows alternate right / wrong
        assert row["pass_rates"] == [{"tier": "tier-0", "rate": 0.5}] and row["difficulty"] == "tier-0"
        assert row["solve"][0]["samples"] == 4 and row["solve"][0]["model"] == "tier-0"
        assert row["tags"] == ["guessable"]
    solve_calls = [c for c in fake_generate if c["params"].get("max_tokens") == 256]
    # 3 items x 2 early samples, then 3 x 2 more: batched up to 8 rows per generate call
    assert sum(c["rows"] for c in solve_calls) == 12 and max(c["rows"] for c in solve_calls) > 2
    stats = {s["name"]: s for s in result.stats["stages"]}
    assert stats["solve"]["llm"]["completion_tokens"] == 60
    assert stats["solve"]["llm"].get("cost", 0) == 0  # (zero deltas are left out)
    assert "grade" in stats and stats["grade"]["llm"] == {}  # no judge: items pass ungraded


@pytest.mark.slow
def test_real_smollm2_tier_solves_single_digit_sums(tmp_path):
    """The real embedded model (SmolLM2-135M on CPU): a few easy items, small k, short answers."""
    pytest.importorskip("transformers")
    src = write_sums(tmp_path / "sums.jsonl", [(2, 3), (4, 4)])
    sections = {
        "solve": {"k": 2, "k_early": 2, "tier_params": {"tier-0": {"max_tokens": 32}}},
        "guess": {"tries": 2, "parallel": 2, "max_tokens": 6},
    }
    result = run_pipeline(
        build([str(src)], sections, 100), tmp_path / "run", RunOptions(progress=False)
    )
    rows = to_rows(pq.read_table(result.run_dir / "data"))
    assert len(rows) == 2
    for row in rows:
        tier = row["solve"][0]
        assert tier["samples"] == 2 and [r["tier"] for r in row["pass_rates"]] == ["tier-0"]
        assert 0.0 <= row["pass_rates"][0]["rate"] <= 1.0
        assert row["difficulty"] in ("tier-0", "unsolved")
    stats = {s["name"]: s for s in result.stats["stages"]}
    assert stats["solve"]["llm"]["completion_tokens"] > 0
    assert stats["solve"]["llm"].get("cost", 0) == 0


def test_a_local_tier_that_cannot_load_fails_before_the_run(tmp_path):
    from rlclimb.pipelines.stage import ConfigError

    src = write_sums(tmp_path / "sums.jsonl", [(2, 3)])
    llm = LLMConfig.from_dict({"profiles": {"tier-0": {"backend": "local", "model": "/no/model"}}})
    with pytest.raises(ConfigError, match="tier tier-0: model '/no/model': not a packaged model"):
        run_pipeline(
            build([str(src)], {}, 100), tmp_path / "run", RunOptions(progress=False, llm=llm)
        )
    assert not (tmp_path / "run").exists()
