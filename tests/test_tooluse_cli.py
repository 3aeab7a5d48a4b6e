"""`rlclimb env import tau-bench`, `env replay` and `env card` end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from test_tooluse_tau_import import write_domain
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app

runner = CliRunner()
BIKE = Path(__file__).resolve().parents[1] / "examples" / "tool_envs" / "bike_shop"


def test_import_replay_card(tmp_path):
    write_domain(tmp_path / "src")
    r = runner.invoke(
        app, ["env", "import", "tau-bench", str(tmp_path / "src"), "--out", str(tmp_path / "env")]
    )
    assert r.exit_code == 0, r.output
    assert "shop: 4 tasks, 3 tools" in r.output and "1 task(s) skipped" in r.output
    assert "skipped tasks_test.py[3]: not a plain literal" in r.output
    assert "gold replays: 4/4 hashed" in r.output
    tasks = [json.loads(x) for x in (tmp_path / "env" / "tasks.jsonl").read_text().splitlines()]
    assert all(t["final_hash"] for t in tasks)

    r = runner.invoke(app, ["env", "replay", str(tmp_path / "env"), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "4 tasks replayed, 0 failed, 4 match their recorded hash, 0 differ" in r.output
    assert sorted(p.name for p in (tmp_path / "out" / "states").iterdir()) == [
        "test-0.json",
        "test-1.json",
        "test-2.json",
        "test-4.json",
    ]

    # a tampered recorded hash is caught
    tasks[0]["final_hash"] = "0" * 64
    (tmp_path / "env" / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    r = runner.invoke(
        app, ["env", "replay", str(tmp_path / "env"), "--out", str(tmp_path / "out2")]
    )
    assert r.exit_code == 1 and "test-0: hash differs" in r.output

    r = runner.invoke(app, ["env", "card", str(tmp_path / "env"), "--json"])
    assert r.exit_code == 0, r.output
    card = json.loads(r.output)
    assert card["tools_by_kind"] == {"read": 2, "write": 1}
    assert card["state"]["collections"] == {"orders": 2, "users": 2}
    assert card["gold_replay"] == {"replayed": 4, "failed": 0, "match_recorded": 3, "differ": 1}


def test_card_of_the_bike_shop():
    r = runner.invoke(app, ["env", "card", str(BIKE)])
    assert r.exit_code == 0, r.output
    assert "place_order" in r.output and "write" in r.output
    assert "tasks: 12 (no-tool 1, read 3, write 8); 12 with a recorded final hash" in r.output
    assert "gold replay: 12 replayed, 0 failed, 12 match the recorded hash, 0 differ" in r.output


def test_cli_errors_name_the_problem(tmp_path):
    r = runner.invoke(app, ["env", "import", "tau3", str(tmp_path), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown format 'tau3'" in r.output
    r = runner.invoke(
        app, ["env", "import", "tau-bench", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 2 and "no tau-bench domain" in r.output
    r = runner.invoke(app, ["env", "replay", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no env.yaml" in r.output
