"""stem-score against scripted model tiers on the real HTTP server: pass rates, early exit,
difficulty bins, blind grading, guessability, faults, resume, budget and the dry-run estimate."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest
from helpers.score import handler, requests_by_item, tier_config, write_items

from rlclimb.pipelines.definitions.stem_score import build
from rlclimb.pipelines.engine import RunOptions, run_pipeline
from rlclimb.pipelines.scripted_server import Reply
from rlclimb.schemas.io import to_rows
from rlclimb.schemas.records import pass_rate_map

TRUNCATED = Reply("Let me think about this carefully and", finish_reason="length")
NO_ANSWER = Reply("I am not sure how to do this one.")

# m0 weakest .. m2 strongest; k=4, k_early=2. Sample i answers item[model][i].
SCRIPT = {
    "easy": {"truth": "4", "m0": ["4"], "m1": ["4"], "m2": ["4"]},  # all right on m0: early exit
    "mid": {
        "truth": "10",
        "m0": ["10", "3", "3", "3"],
        "m1": ["10", "3", "10", "10"],
        "m2": ["10"],
    },
    "suspect": {"truth": "7", "m0": ["5"], "m1": ["5"], "m2": ["5"], "judge": "consensus"},
    "hard": {"truth": "12", "m0": ["1"], "m1": ["2"], "m2": ["13"], "judge": "truth"},
    "faulty": {
        "truth": "6",
        "m0": [TRUNCATED, NO_ANSWER, "6", "\\frac{12}{2}"],
        "m1": ["6", "7", "6", "6"],
        "m2": ["6"],
        "guess": ["1", "2", "6", "6"],
    },
}


def items(tmp_path, script=SCRIPT):
    return write_items(tmp_path / "items.jsonl", script)


def run(src, out, llm, sections=None, shard_size=100):
    sections = {"solve": {"k": 4, "k_early": 2}, **(sections or {})}
    return run_pipeline(
        build([str(src)], sections, shard_size), out, RunOptions(progress=False, llm=llm)
    )


def data(run_dir):
    rows = to_rows(pq.read_table(run_dir / "data"))
    return {row["question"].split("]")[0][1:]: row for row in rows}


def ledger(run_dir):
    rows = pq.read_table(run_dir / "ledger").to_pylist()
    return {json.loads(r["record"])["question"].split("]")[0][1:]: r for r in rows}


def stage_stats(result):
    return {s["name"]: s for s in result.stats["stages"]}


def test_pass_rates_early_exit_bins_grading_and_guessing(llm_server, tmp_path):
    llm_server.script(handler(SCRIPT))
    result = run(items(tmp_path), tmp_path / "run", tier_config(llm_server))
    got, dropped = data(result.run_dir), ledger(result.run_dir)

    assert set(got) == {"easy", "mid", "hard", "faulty"}
    assert dropped["suspect"]["stage"] == "grade"
    assert dropped["suspect"]["reason"] == "ground_truth_suspect"
    assert "'5' (2/2)" in dropped["suspect"]["detail"]

    rates = {name: pass_rate_map(row["pass_rates"]) for name, row in got.items()}
    assert rates["easy"] == {"tier-0": 1.0, "tier-1": 1.0, "tier-2": 1.0}  # 2 samples each
    assert rates["mid"] == {"tier-0": 0.25, "tier-1": 0.75, "tier-2": 1.0}
    assert rates["hard"] == {"tier-0": 0.0, "tier-1": 0.0, "tier-2": 0.0}
    # truncated and answerless samples count as wrong; \frac{12}{2} is right by the checker
    assert rates["faulty"] == {"tier-0": 0.5, "tier-1": 0.75, "tier-2": 1.0}
    faulty0 = got["faulty"]["solve"][0]
    assert (faulty0["truncated"], faulty0["no_answer"]) == (1, 1)
    assert faulty0["answers"] == ["", "", "6", "\\frac{12}{2}"]
    assert faulty0["verdicts"] == [False, False, True, True] and faulty0["texts"] == []

    assert {n: r["difficulty"] for n, r in got.items()} == {
        "easy": "tier-0",
        "mid": "tier-1",
        "hard": "unsolved",
        "faulty": "tier-0",
    }
    assert "hard" in got["hard"]["tags"]
    assert got["faulty"]["tags"] == ["guessable"] and "guessable" not in got["easy"]["tags"]

    sent = requests_by_item(llm_server)
    solve_calls = {
        n: Counter(m for m, _ in calls if m.startswith("m")) for n, calls in sent.items()
    }
    # early exit: decided items got k_early=2 samples per tier, the others k=4
    assert solve_calls["easy"] == {"m0": 2, "m1": 2, "m2": 2}
    assert solve_calls["suspect"] == solve_calls["hard"] == {"m0": 2, "m1": 2, "m2": 2}
    assert solve_calls["mid"] == solve_calls["faulty"] == {"m0": 4, "m1": 4, "m2": 4}
    assert sorted(s for m, s in sent["mid"] if m == "m1") == [0, 1, 2, 3]  # seed = sample index
    # guessing: 4 parallel tries per round, up to 8; "faulty" is guessed in the first round
    assert Counter(m for m, _ in sent["faulty"])["guess"] == 4
    assert Counter(m for m, _ in sent["easy"])["guess"] == 8
    assert "guess" not in dict(sent["suspect"])  # dropped before guessing
    assert [m for m, _ in sent["hard"]].count("judge") == 1
    assert "judge" not in dict(sent["mid"])  # strongest tier solves it: not graded

    stats = stage_stats(result)
    assert stats["solve"]["llm"]["requests"] == 6 * 3 + 12 * 2
    # per-tier usage in the funnel: 6 items x 2 early samples + 2 undecided items x 2 more
    assert [stats["solve"]["llm"][f"solve.tier-{t}/requests"] for t in range(3)] == [14, 14, 14]
    assert stats["grade"]["dropped"] == {"ground_truth_suspect": 1}
    prov = {e["stage"]: e for e in got["easy"]["provenance"]}
    assert prov["solve"]["reason"] == "early exit: all 2 right on tier-0"


def test_judge_sees_the_answers_in_seeded_random_order(llm_server, tmp_path):
    script = {
        f"s{i}": {"truth": "7", "m0": ["5"], "m1": ["5"], "m2": ["5"], "judge": "truth"}
        for i in range(12)
    }
    llm_server.script(handler(script))
    run(
        items(tmp_path, script),
        tmp_path / "run",
        tier_config(llm_server),
        {"guess": {"enabled": False}},
    )
    firsts = []
    for body in llm_server.requests:
        if body["model"] == "judge":
            text = body["messages"][-1]["content"]
            firsts.append(text.split("Answer A: ")[1].split("\n")[0])
    assert len(firsts) == 12 and set(firsts) == {"5", "7"}  # truth first in some, not all
    assert all("truth" not in f and "ground" not in f for f in firsts)  # unlabeled


def test_difficulty_edges_and_options(llm_server, tmp_path):
    llm_server.script(handler(SCRIPT))
    sections = {
        "difficulty": {
            "method": "edges",
            "edges": [0.3, 0.7],
            "on": "mean",
            "labels": ["hard", "medium", "easy"],
        },
        "grade": {"action": "tag"},
        "guess": {"action": "drop"},
        "solve": {"k": 4, "k_early": 2, "keep_texts": True},
    }
    result = run(items(tmp_path), tmp_path / "run", tier_config(llm_server), sections)
    got, dropped = data(result.run_dir), ledger(result.run_dir)
    assert {n: r["difficulty"] for n, r in got.items()} == {
        "easy": "easy",
        "mid": "medium",
        "hard": "hard",
        "suspect": "hard",
    }
    assert "ground_truth_suspect" in got["suspect"]["tags"]
    assert dropped["faulty"]["reason"] == "guessable"
    assert got["mid"]["solve"][1]["texts"][0].endswith("\\boxed{10}")


def test_rate_limits_are_retried_and_a_failing_endpoint_is_resumed(llm_server, tmp_path):
    state = {"down": True}
    base = handler(SCRIPT)
    limited: set[str] = set()

    def flaky(body, n):
        text = body["messages"][-1]["content"]
        key = f"{body['model']}:{body.get('seed')}:{text}"
        if body.get("seed") == 1 and key not in limited:  # every seed-1 sample: one 429 first
            limited.add(key)
            return Reply(status=429, headers={"Retry-After": "0"})
        if state["down"] and "[mid]" in text and body["model"] == "m2" and body["seed"] >= 2:
            return Reply(status=503)  # the strongest endpoint fails for mid's late samples
        return base(body, n)

    llm_server.script(flaky)
    src, out, llm = items(tmp_path), tmp_path / "run", tier_config(llm_server)
    first = run(src, out, llm)
    dropped = ledger(out)
    assert dropped["mid"]["reason"] == "llm_server_error" and dropped["mid"]["stage"] == "solve"
    assert set(data(out)) == {"easy", "hard", "faulty"}
    assert stage_stats(first)["solve"]["llm"]["retries"] >= 1
    before = len(llm_server.requests)

    # The endpoint is back; the run was killed before its commits (markers lost): only mid's two
    # failed samples are asked again, every finished sample comes from the caches.
    state["down"] = False
    for done in [*out.glob("stages/*/part-*.done.json")]:
        done.unlink()
    second = run(src, out, llm)
    again = [
        (b["model"], b["seed"])
        for b in llm_server.requests[before:]
        if b["messages"][-1]["content"].startswith("Solve") and "[mid]" in str(b)
    ]
    assert sorted(set(again)) == [("m2", 2), ("m2", 3)]
    assert pass_rate_map(data(out)["mid"]["pass_rates"]) == {"tier-0": 0.25, "tier-1": 0.75, "tier-2": 1.0}
    assert stage_stats(second)["solve"]["cached"] == 4  # easy, suspect, hard, faulty


def test_a_finished_run_retries_its_transient_drops_on_request(llm_server, tmp_path):
    state = {"down": True}
    base = handler(SCRIPT)

    def flaky(body, n):
        text = body["messages"][-1]["content"]
        if state["down"] and "[mid]" in text and body["model"] == "m2" and body["seed"] >= 2:
            return Reply(status=503)
        return base(body, n)

    llm_server.script(flaky)
    src, out, llm = items(tmp_path), tmp_path / "run", tier_config(llm_server)
    sections = {"solve": {"k": 4, "k_early": 2}}
    run(src, out, llm)
    assert ledger(out)["mid"]["reason"] == "llm_server_error"
    state["down"] = False
    before = len(llm_server.requests)
    run(src, out, llm)  # a plain re-run of a finished run does nothing
    assert len(llm_server.requests) == before and "mid" not in data(out)

    options = RunOptions(progress=False, llm=llm, retry_transient=True)
    retried = run_pipeline(build([str(src)], sections, 100), out, options)
    again = {(b["model"], b["seed"]) for b in llm_server.requests[before:] if "[mid]" in str(b)}
    assert {m for m, _ in again} <= {"m2", "guess"} and ("m2", 2) in again  # only mid's failures
    assert pass_rate_map(data(out)["mid"]["pass_rates"]) == {"tier-0": 0.25, "tier-1": 0.75, "tier-2": 1.0}
    assert "mid" not in ledger(out) and retried.stats["records"] == 4  # easy, mid, hard, faulty


def test_a_dead_endpoint_is_not_called_for_every_remaining_item(llm_server, tmp_path):
    script = {
        f"q{i}": {"truth": "3", "m0": ["3", "1"], "m1": ["3"], "m2": ["3"]} for i in range(10)
    }
    base = handler(script)
    llm_server.script(lambda body, n: Reply(status=503) if body["model"] == "m2" else base(body, n))
    sections = {"solve": {"k": 2, "k_early": 2, "breaker_failures": 2}}
    result = run(items(tmp_path, script), tmp_path / "run", tier_config(llm_server), sections, 2)
    assert result.records == 0
    assert stage_stats(result)["solve"]["dropped"] == {"llm_server_error": 2, "llm_connection": 8}
    # the first shard's 2 items x 2 samples, each tried twice; later shards fail fast
    assert sum(b["model"] == "m2" for b in llm_server.requests) == 8


def test_budget_stops_cleanly_and_a_higher_budget_continues(llm_server, tmp_path):
    script = {
        f"q{i}": {"truth": "3", "m0": ["3", "1"], "m1": ["3"], "m2": ["3"]} for i in range(10)
    }
    llm_server.script(handler(script))
    priced = {
        m: {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 1000.0}
        for m in ("m0", "m1", "m2")
    }
    llm = tier_config(llm_server, judge=False, **priced)
    src, out = items(tmp_path, script), tmp_path / "run"
    sections = {
        "solve": {"k": 2, "k_early": 2, "max_tokens": 20, "budget_usd": 2.0},
        "guess": {"enabled": False},
    }
    first = run(src, out, llm, sections)
    solve = stage_stats(first)["solve"]
    assert 0 < solve["llm"]["cost"] <= 2.0  # worst case reserved before each call: no overshoot
    assert solve["dropped"].get("budget_exceeded", 0) >= 1
    done_first = set(data(out))
    assert 1 <= len(done_first) < 10
    asked_first = [
        (b["model"], b["seed"], b["messages"][-1]["content"]) for b in llm_server.requests
    ]

    sections["solve"]["budget_usd"] = 100.0
    second = run(src, out, llm, sections)
    assert len(data(out)) == 10 and done_first < set(data(out))
    asked = [(b["model"], b["seed"], b["messages"][-1]["content"]) for b in llm_server.requests]
    assert len(set(asked)) == len(asked)  # no sample was paid twice
    assert len(asked) > len(asked_first)
    assert stage_stats(second)["solve"]["dropped"] == {}


def test_dry_run_prints_the_estimate_and_writes_nothing(llm_server, tmp_path, capsys):
    priced = {"m2": {"price_input_per_mtok": 3.0, "price_output_per_mtok": 15.0}}
    llm = tier_config(llm_server, **priced)
    sections = {"solve": {"k": 8, "k_early": 2, "dry_run": True}}
    with pytest.raises(SystemExit) as exit_:
        run(items(tmp_path), tmp_path / "run", llm, sections)
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "cost estimate, 5 items" in out
    assert "solve tier-2" in out and "calls 10-40" in out and "guess" in out
    assert not (tmp_path / "run").exists() and llm_server.chat_count == 0


def test_cli_dry_run_and_config_errors(llm_server, tmp_path):
    from typer.testing import CliRunner

    from rlclimb.pipelines.cli import app

    src = items(tmp_path)
    cfg = tmp_path / "llm.yaml"
    args = ["run", "stem-score", "-i", str(src), "-o", str(tmp_path / "r"), "-c", str(cfg)]
    url = llm_server.base_url
    cfg.write_text(
        f"llm:\n  profiles:\n    tier-0: {{base_url: '{url}', model: m0, "
        "price_output_per_mtok: 2.0}\n"
    )
    res = CliRunner().invoke(app, [*args, "--set", "solve.dry_run=true"])
    assert res.exit_code == 0 and "cost estimate, 5 items" in res.output
    assert not (tmp_path / "r").exists()
    cfg.write_text(f"llm:\n  profiles:\n    judge: {{base_url: '{url}', model: j}}\n")
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "no model tiers" in res.output
