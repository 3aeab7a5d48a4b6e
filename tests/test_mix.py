"""`rlclimb mix`: selection, cross-source dedup, balance by sample count, split by content id,
the manifest, and the output as Hugging Face `datasets` and `rlclimb train` read it."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.rl.data import load_items
from rlclimb.schemas import QAItem, write_records

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def dataset(folder: Path, items: list[QAItem]) -> Path:
    write_records(items, folder / "data" / "train-00000-of-00001.parquet")
    return folder


def qa(i: int, topic: list[str], rate: float | None = None, difficulty: str | None = None, q: str | None = None) -> QAItem:
    return QAItem(question=q or f"Compute {i} + {i * 7} and give the sum of the two numbers {i}.",
                  answer=str(i + i * 7), topic=topic, difficulty=difficulty,
                  pass_rates={} if rate is None else {"tier-0": rate})


@pytest.fixture
def sources(tmp_path):
    a = [qa(i, ["math", "algebra"] if i % 2 else ["math", "geometry"], rate=(i % 5) / 4,
            difficulty="tier-0" if i % 3 else "unsolved") for i in range(40)]
    shared = a[1]  # the same item in both sources
    near = qa(3, ["math", "algebra"], q=a[3].question.replace("give the sum", "state the sum"))  # near-duplicate of a[3]
    b = [qa(100 + i, ["physics", "mechanics"]) for i in range(12)] + [shared, near]
    return dataset(tmp_path / "a", a), dataset(tmp_path / "b", b), a, b


def write_spec(path: Path, spec: dict) -> Path:
    path.write_text(yaml.safe_dump(spec))
    return path


def test_selection_dedup_balance_and_split(sources, tmp_path):
    a_dir, b_dir, a, b = sources
    spec = write_spec(tmp_path / "mix.yaml", {
        "name": "test-mix", "total": 60, "validation": 0.25, "seed": 3,
        "sources": [
            {"path": "a", "name": "algebra", "weight": 2, "topics": ["math/algebra"], "pass_rate": [0.25, 0.75]},
            {"path": "b", "weight": 1},
        ]})
    res = cli("mix", spec, "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    manifest = json.loads((out / "mix.json").read_text())
    alg, phys = manifest["sources"]
    # selection: odd i are algebra (20), of which pass rate (i % 5) / 4 in [0.25, 0.75]
    expected = [x for i, x in enumerate(a) if i % 2 and 0.25 <= (i % 5) / 4 <= 0.75]
    assert alg["selection"] == {"read": 40, "topics": 20, "pass_rate": len(expected)}
    # b's copy of a[1] (same id) and its near-duplicate of a[3] are removed; a keeps them
    assert a[1] in expected and a[3] in expected
    assert manifest["removed"]["by_reason"] == {"same_id": 1, "duplicate_minhash": 1}
    assert phys["removed_as_duplicates"] == 2 and phys["available"] == 12
    # balance: round(total * share), repeating a source that has fewer
    assert (alg["rows"], phys["rows"]) == (40, 20) and alg["share"] == pytest.approx(2 / 3)
    assert alg["unique"] == len(expected) and phys["unique"] == 12
    items = pl.read_parquet(out / "mix_items.parquet")
    assert items["copies"].sum() == 60 == manifest["rows"]
    # split by content id: no id in both splits, copies together, the manifest's counts
    train = pl.read_parquet(out / "data" / "train-00000-of-00001.parquet")
    val = pl.read_parquet(out / "data" / "validation-00000-of-00001.parquet")
    assert not set(train["id"]) & set(val["id"])
    assert (train.height, val.height) == (manifest["splits"]["train"], manifest["splits"]["validation"])
    assert 0 < val.height < train.height and train.height + val.height == 60
    assert set(train["id"]) | set(val["id"]) == {x.id for x in expected} | {x.id for x in b[:12]}
    assert b[-1].id not in set(train["id"]) | set(val["id"])
    # Hugging Face datasets reads it; the trainer reads the train split
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("parquet", data_dir=str(out / "data"), cache_dir=str(tmp_path / "hf-cache"))
    assert loaded["train"].num_rows == train.height and loaded["validation"].num_rows == val.height
    assert len(load_items(out)) == train.height
    # the same spec read by `rlclimb train`: the same selection (weights as sampling weights)
    from_spec = load_items(spec)
    assert {i.id for i in from_spec} >= {x.id for x in expected}


def test_without_total_the_scarcest_source_is_used_in_full(sources, tmp_path):
    spec = write_spec(tmp_path / "mix.yaml", {
        "name": "m", "validation": 0, "dedup": "none",
        "sources": [{"path": "a", "weight": 1}, {"path": "b", "weight": 1, "max_items": 5}]})
    res = cli("mix", spec, "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "out" / "mix.json").read_text())
    a, b = manifest["sources"]
    assert b["selection"] == {"read": 14, "max_items": 5}
    assert (a["rows"], b["rows"]) == (5, 5) and a["repeated"] == b["repeated"] == 0
    assert manifest["splits"] == {"train": 10, "validation": 0}
    assert "near-duplicates were not looked for" in manifest["split_by"]
    assert not (tmp_path / "out" / "data" / "validation-00000-of-00001.parquet").exists()
    res = cli("mix", spec, "--out", tmp_path / "out", "--set", "total=8")  # rewritten in place
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "mix.json").read_text())["rows"] == 8
    assert pl.read_parquet(tmp_path / "out" / "data" / "train-00000-of-00001.parquet").height == 8


def test_bad_specs_fail_with_the_file_and_the_key(sources, tmp_path):
    bad_key = write_spec(tmp_path / "bad.yaml", {"name": "m", "sources": [{"path": "a", "wieght": 2}]})
    res = cli("mix", bad_key, "--out", tmp_path / "o1")
    assert res.exit_code == 2 and "bad.yaml" in res.output and "wieght" in res.output
    missing = write_spec(tmp_path / "missing.yaml", {"name": "m", "sources": [{"path": "nowhere"}]})
    res = cli("mix", missing, "--out", tmp_path / "o2")
    assert res.exit_code == 2 and "nowhere" in res.output
    empty = write_spec(tmp_path / "empty.yaml", {"name": "m", "sources": [{"path": "a", "topics": ["chemistry"]}]})
    res = cli("mix", empty, "--out", tmp_path / "o3")
    assert res.exit_code == 2 and "empty" in res.output
    bad_sql = write_spec(tmp_path / "sql.yaml", {"name": "m", "sources": [{"path": "a", "filter": "nonsense ="}]})
    res = cli("mix", bad_sql, "--out", tmp_path / "o4")
    assert res.exit_code == 2 and "filter" in res.output
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o3" / "mix.json").exists()


def test_train_leaves_out_items_only_a_judge_can_grade(tmp_path):
    """A statement answer (curation's `needs_judge` tag) would score every rollout 0 under the
    math environment's rule checker: `rlclimb train` leaves it out and names it; `mix` keeps it."""
    stated = QAItem(question="State the converse of: if n is even then n^2 is even.",
                    answer="If n^2 is even then n is even.", tags=["statement_answer", "needs_judge"])
    valued = QAItem(question="What is 2 + 2?", answer="4")
    run = dataset(tmp_path / "run", [stated, valued])
    skipped: list[str] = []
    items = load_items(run, skipped)
    assert [i.record.id for i in items] == [valued.id]
    assert len(skipped) == 1 and stated.id in skipped[0] and "judge" in skipped[0]
    spec = write_spec(tmp_path / "mix.yaml", {"name": "m", "validation": 0, "sources": [{"path": "run"}]})
    res = cli("mix", spec, "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert pl.read_parquet(tmp_path / "out" / "mix_items.parquet").height == 2
