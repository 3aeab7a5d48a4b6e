"""`rlclimb export`: the format follows the extension; a folder is Hub-ready (data + card)."""

from __future__ import annotations

import gzip
import json

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.schemas.io import read_rows

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def run(tmp_path):
    src = tmp_path / "qa.jsonl"
    src.write_text("".join(json.dumps({"question": f"What is {i} times {i} here?", "answer": str(i * i)}) + "\n"
                           for i in range(1, 6)))
    assert cli("run", "qa-jsonl", "--input", src, "--out", tmp_path / "run", "-q").exit_code == 0
    return tmp_path / "run"


def dataset(run):
    return [r for f in sorted((run / "data").glob("*.parquet")) for r in read_rows(f)]


def test_parquet_jsonl_and_gz_by_extension(run, tmp_path):
    assert cli("export", run, "--out", tmp_path / "x.parquet").exit_code == 0
    assert pq.read_table(tmp_path / "x.parquet").to_pylist() == dataset(run)
    assert cli("export", run, "--out", tmp_path / "x.jsonl").exit_code == 0
    lines = (tmp_path / "x.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == [r["id"] for r in dataset(run)]
    assert cli("export", run, "--out", tmp_path / "x.jsonl.gz").exit_code == 0
    assert gzip.decompress((tmp_path / "x.jsonl.gz").read_bytes()).decode().splitlines() == lines


@pytest.mark.parametrize(("name", "words"), [("x.csv", "CSV cannot hold the nested columns"), ("x.txt", "unknown extension")])
def test_other_extensions_are_refused_clearly(run, tmp_path, name, words):
    result = cli("export", run, "--out", tmp_path / name)
    assert result.exit_code == 2 and words in result.output and not (tmp_path / name).exists()


def test_a_folder_is_hub_ready_data_and_card(run, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hub"
    result = cli("export", run, "--out", out)
    assert result.exit_code == 0, result.output
    readme = (out / "README.md").read_text()
    header = yaml.safe_load(readme.split("---")[1])
    assert header["configs"][0]["data_files"]  # what the Hub reads to find the data
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf"))
    assert sorted(ds["train"]["id"]) == sorted(r["id"] for r in dataset(run))
    assert cli("export", run, "--out", out).exit_code == 2  # never into a non-empty folder


def test_jsonl_export_keeps_the_stage_trail_of_chained_runs(run, tmp_path):
    """A stem-curate run over the qa-jsonl run's data: the JSONL export names both runs' stages."""
    curated = tmp_path / "curated"
    result = cli("run", "stem-curate", "--input", run / "data", "--out", curated, "-q")
    assert result.exit_code == 0, result.output
    assert cli("export", curated, "--out", tmp_path / "final.jsonl").exit_code == 0
    trail = json.loads((tmp_path / "final.jsonl.provenance.json").read_text())
    pipelines = [s["pipeline"] for s in trail["stages"]]
    assert pipelines[0] == "qa-jsonl" and pipelines[-1] == "stem-curate"
    meta = pq.read_schema(sorted((curated / "data").glob("*.parquet"))[0]).metadata
    assert trail["stages"] == json.loads(meta[b"rlclimb.stages"])
    assert all({"name", "version", "fingerprint"} <= set(s) for s in trail["stages"])
