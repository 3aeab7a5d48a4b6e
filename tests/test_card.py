"""`rlclimb card`: the Hub's own parsers read the card header, the card's numbers are stats.json's,
figures are PNGs, croissant.json validates with mlcroissant and loads the records."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from helpers.textbook_gen import ChapterSpec, make_textbook
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app

runner = CliRunner()
# The real textbooks sit beside the checkout (../shared) on the team's machines; a clone elsewhere
# (CI) finds them through RLCLIMB_TEXTBOOKS or the team's fixed path, else the test skips.
BOOKS = next(
    (p for p in (Path(os.environ.get("RLCLIMB_TEXTBOOKS", "")), Path(__file__).resolve().parents[2] / "shared" / "data" / "textbooks",
                 Path("/work/shared/data/textbooks")) if str(p) != "." and p.is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "textbooks",
)
PNG = b"\x89PNG\r\n\x1a\n"


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def funnel_rows(card: str, run_name: str) -> dict[str, list[int]]:
    """stage -> [in, out, dropped] from the card's funnel table of one run."""
    section = card.split(f"**{run_name}**", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = [int(c.replace(",", "")) for c in cells[1:4]]
    return rows


def check_card(run: Path, expect_validation: bool = False) -> str:
    res = cli("card", run)
    assert res.exit_code == 0, res.output
    assert "croissant.json validated with mlcroissant" in res.output
    from huggingface_hub import DatasetCard, DatasetCardData

    card = DatasetCard.load(run / "README.md")  # a local path: parsed offline
    data: DatasetCardData = card.data
    assert data.license and data.language == ["en"] and data.pretty_name
    assert data.task_categories and data.size_categories and "rlclimb" in data.tags
    configs = data.configs
    assert configs[0]["config_name"] == "default"
    splits = {f["split"]: f["path"] for f in configs[0]["data_files"]}
    assert splits["train"] == "data/train-*" and ("validation" in splits) == expect_validation
    # what the Hub reads: `datasets` resolves the configs of the card in the folder itself
    datasets = pytest.importorskip("datasets")
    cache = str(run.parent / "hf-cache")  # its own cache: datasets keys a local folder's cache by its name
    from_card = datasets.load_dataset(str(run), cache_dir=cache)
    from_dir = datasets.load_dataset("parquet", data_dir=str(run / "data"), cache_dir=cache)
    assert set(from_card) == set(splits) == set(from_dir)
    text = (run / "README.md").read_text()
    for png in (run / "figures").glob("*.png"):
        assert png.read_bytes()[:8] == PNG
        from PIL import Image

        with Image.open(png) as im:
            im.verify()
    for name in re.findall(r"\]\((figures/[^)]+\.png)\)", text):
        assert (run / name).is_file()
    import mlcroissant as mlc

    meta = mlc.Dataset(jsonld=str(run / "croissant.json"))
    for split in splits:
        assert len(list(meta.records(f"default-{split}"))) == from_card[split].num_rows
    return text


def check_numbers(run: Path, text: str) -> None:
    stats = json.loads((run / "stats.json").read_text())
    rows = funnel_rows(text, run.name)
    assert list(rows) == [s["name"] for s in stats["stages"]]
    for s in stats["stages"]:
        assert rows[s["name"]] == [s["in"], s["out"], sum(s["dropped"].values())], s["name"]
        for reason, n in s["dropped"].items():
            assert f"{reason} {n:,}" in text
    assert f"stats.json: {stats['records']:,} records, {stats['drops']:,} drops" in text
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["size_categories"] == ["n<1K" if stats["records"] < 1000 else "1K<n<10K"]


@pytest.mark.slow
def test_card_of_a_generated_textbook_run(tmp_path):
    book = make_textbook(tmp_path / "algebra.pdf", [ChapterSpec("Arithmetic and Algebra", "inline", exercises=8),
                                                    ChapterSpec("Fractions", "key", exercises=6)])
    run = tmp_path / "gen"
    res = cli("run", "textbook-pdf", "--input", book.path, "--out", run, "--set", "curate=true", "-q")
    assert res.exit_code == 0, res.output
    text = check_card(run)
    check_numbers(run, text)
    for section in ("## Sources and licenses", "## Curation funnel", "## Dedup and decontamination", "## Difficulty",
                    "## Topics", "## Schema", "## Example records", "## Models and endpoints",
                    "## Known limitations", "## Reproduction"):
        assert section in text
    assert "![funnel](figures/funnel.png)" in text and "![topics](figures/topics.png)" in text
    assert "rlclimb run textbook-pdf" in text and "algebra.pdf" in text


@pytest.mark.slow
def test_card_of_a_mix(tmp_path):
    sample = Path(__file__).resolve().parents[1] / "pipelines" / "samples" / "qa_sample.jsonl"
    res = cli("run", "qa-jsonl", "--input", sample, "--out", tmp_path / "qa", "-q")
    assert res.exit_code == 0, res.output
    spec = tmp_path / "mix.yaml"
    spec.write_text(yaml.safe_dump({"name": "sample-mix", "validation": 0.3, "license": "apache-2.0",
                                    "sources": [{"path": "qa", "name": "sample"}]}))
    res = cli("mix", spec, "--out", tmp_path / "mix")
    assert res.exit_code == 0, res.output
    text = check_card(tmp_path / "mix", expect_validation=True)
    check_numbers(tmp_path / "qa", text.replace("**sample**", "**qa**"))
    manifest = json.loads((tmp_path / "mix" / "mix.json").read_text())
    assert "| sample | 1.0 | 1.000 | " + f"{manifest['sources'][0]['selection']['read']:,}" in text
    assert "license: apache-2.0" in text and "rlclimb mix" in text


def test_card_refuses_a_directory_that_is_not_a_run(tmp_path):
    (tmp_path / "data").mkdir()
    res = cli("card", tmp_path)
    assert res.exit_code == 2 and "not a run or mix directory" in res.output and "rlclimb run" in res.output


@pytest.mark.slow
@pytest.mark.skipif(not (BOOKS / "strickland-linmath-probs.pdf").exists(),
                    reason=f"the development textbooks are not on this machine ({BOOKS})")
def test_card_of_a_real_textbook(tmp_path):
    run = tmp_path / "strickland"
    res = cli("run", "textbook-pdf", "--input", BOOKS / "strickland-linmath-probs.pdf", "--out", run,
              "--set", "curate=true", "-q")
    assert res.exit_code == 0, res.output
    text = check_card(run)
    check_numbers(run, text)
    stats = json.loads((run / "stats.json").read_text())
    assert stats["records"] > 0 and f"{stats['records']:,} math items" in text
