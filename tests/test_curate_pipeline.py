"""stem-curate and qa-jsonl + curate=true end to end through the CLI; configuration errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions import PIPELINES
from rlclimb.schemas.io import read_rows

runner = CliRunner()
CURATE = ["cleanup", "split_parts", "question_type", "verifiable", "usability", "pii", "evergreen", "convert", "part_context", "leakage",
           "taxonomy"]

ITEMS = [
    {"question": "Exercise 1.2. Solve for $x$: $3x - 7 = 11$.", "answer": "6"},
    {"question": "What is the SI unit of force?\n(A) Joule\n(B) Newton\n(C) Watt", "answer": "B"},
    {"question": "Which of the following is prime?\nA. 21\nB. 29\nC. 33", "answer": "B"},
    {"question": "Prove that $\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$.", "answer": "By induction."},
    {"question": "Prove that $\\sqrt{2}$ is irrational.", "answer": "Suppose p/q..."},
    {"question": "Who is the current CEO of Microsoft?", "answer": "Satya Nadella"},
    {"question": "Email me at jane.doe@gmail.com: what is 12 x 12?", "answer": "144"},
    {"question": "In the figure below, find angle ABC.", "answer": "30 degrees"},
    {"question": "Design an experiment to measure g.", "answer": "Answers may vary."},
    {"question": "Given that $x + y = 10$ and $x - y = 2$, find $x + y$.", "answer": "10"},
    {"question": "Is 91 a prime number?", "answer": "No, 91 = 7 x 13."},
]
EXPECTED_DROPS = {"proof_without_conclusion": 1, "time_sensitive": 1, "pii_email": 1,
                  "needs_figure": 1, "answer_varies": 1, "answer_leak": 1}


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def write(tmp_path: Path, items=ITEMS) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in items))
    return path


def funnel(run_dir: Path) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads((run_dir / "stats.json").read_text())["stages"]}


def rows(run_dir: Path) -> list[dict]:
    return [r for f in sorted((run_dir / "data").glob("*.parquet")) for r in read_rows(f)]


def check_curated(run_dir: Path) -> None:
    stats = funnel(run_dir)
    drops = {}
    for name in CURATE[:-1]:
        drops.update(stats[name]["dropped"])
    assert drops == EXPECTED_DROPS
    out = {r["question"]: r for r in rows(run_dir)}
    assert set(out) == {"Solve for $x$: $3x - 7 = 11$.", "What is the SI unit of force?",
                        "Find a closed-form expression for $\\sum_{k=1}^{n} k$.", "Is 91 a prime number?",
                        "Which of the following is prime?\nA. 21\nB. 29\nC. 33"}  # needs its options: stays MCQ
    assert out["What is the SI unit of force?"]["answer"] == "Newton"
    assert out["Find a closed-form expression for $\\sum_{k=1}^{n} k$."]["answer"] == "\\frac{n(n+1)}{2}"
    assert (out["Is 91 a prime number?"]["answer"], out["Is 91 a prime number?"]["answer_type"]) == ("No", "boolean")
    assert out["Solve for $x$: $3x - 7 = 11$."]["answer_type"] == "numeric"


def test_stem_curate_on_jsonl(tmp_path):
    result = cli("run", "stem-curate", "--input", write(tmp_path), "--out", tmp_path / "run", "--quiet",
                 "--set", "taxonomy.enabled=false", "--set", "convert.keep_mcq_share=0")
    assert result.exit_code == 0, result.output
    stats = funnel(tmp_path / "run")
    assert list(stats)[:2] == ["read", "import"] and list(stats)[-len(CURATE) + 1:] == CURATE[:-1]  # qa-jsonl's stages, then curation
    check_curated(tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["pipeline"] == "stem-curate"


def test_qa_jsonl_appends_curation_on_request(tmp_path):
    plain = PIPELINES["qa-jsonl"]([str(write(tmp_path))], {}, 100)
    assert not {s.name for s in plain.stages} & set(CURATE)  # opt-in: the demo stays fast
    result = cli("run", "qa-jsonl", "--input", write(tmp_path), "--out", tmp_path / "run", "--quiet",
                 "--set", "curate=true", "--set", "taxonomy.enabled=false", "--set", "convert.keep_mcq_share=0")
    assert result.exit_code == 0, result.output
    assert list(funnel(tmp_path / "run"))[-len(CURATE) + 1:] == CURATE[:-1]
    check_curated(tmp_path / "run")


def test_stem_curate_on_a_previous_runs_parquet(tmp_path):
    assert cli("run", "qa-jsonl", "--input", write(tmp_path), "--out", tmp_path / "raw", "--quiet").exit_code == 0
    result = cli("run", "stem-curate", "--input", tmp_path / "raw" / "data", "--out", tmp_path / "run", "--quiet",
                 "--set", "taxonomy.enabled=false", "--set", "convert.keep_mcq_share=0")
    assert result.exit_code == 0, result.output
    assert list(funnel(tmp_path / "run")) == CURATE[:-1]  # Arrow input: no unreadable lines, no read stage
    check_curated(tmp_path / "run")
    schema = pq.read_schema(next((tmp_path / "run" / "data").glob("*.parquet")))
    assert {"question_type", "answer_type", "choices", "topic"} <= set(schema.names)


@pytest.mark.parametrize("sets,message", [
    (["curate=maybe"], "config curate: stem-curate always curates"),
    (["pii.enabled=perhaps"], "config pii.enabled: expected true or false"),
    (["verifiable.methd=llm"], "verifiable.methd"),
    (["taxonomy.path=/nonexistent/tax.yaml"], "cannot read taxonomy file /nonexistent/tax.yaml"),
    (["convert.keep_mcq_share=2"], "convert.keep_mcq_share"),
    (["leakge.min_chars=3"], "unknown stage section 'leakge'"),
])
def test_bad_configuration_is_one_line_and_writes_nothing(tmp_path, sets, message):
    args = ["run", "stem-curate", "--input", write(tmp_path), "--out", tmp_path / "run", "--quiet"]
    for s in sets:
        args += ["--set", s]
    result = cli(*args)
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    assert not (tmp_path / "run").exists()


def test_qa_jsonl_curate_must_be_a_boolean(tmp_path):
    result = cli("run", "qa-jsonl", "--input", write(tmp_path), "--out", tmp_path / "run", "--set", "curate=maybe")
    assert result.exit_code == 2 and "config curate: expected true or false" in result.output


def test_bad_taxonomy_file_names_the_entry(tmp_path):
    bad = tmp_path / "tax.yaml"
    bad.write_text("domains:\n  math:\n    subtopics:\n      algebra: {examples: [x]}\n")
    result = cli("run", "stem-curate", "--input", write(tmp_path), "--out", tmp_path / "run", "--quiet",
                 "--set", f"taxonomy.path={bad}")
    assert result.exit_code == 2 and "math/algebra needs a non-empty `description`" in " ".join(result.output.split())


@pytest.mark.slow
def test_stem_curate_with_embedded_taxonomy_and_an_edited_taxonomy_file(tmp_path):
    src = write(tmp_path, ITEMS + [{"question": "What is the kinetic energy of a 2 kg mass at 3 m/s?", "answer": "9 J"},
                                   {"question": "Which organelle makes ATP in eukaryotic cells?", "answer": "mitochondrion"}])
    result = cli("run", "stem-curate", "--input", src, "--out", tmp_path / "run", "--quiet")
    assert result.exit_code == 0, result.output
    topics = {r["question"]: r["topic"] for r in rows(tmp_path / "run")}
    assert topics["What is the kinetic energy of a 2 kg mass at 3 m/s?"] == ["physics", "mechanics"]
    assert topics["Which organelle makes ATP in eukaryotic cells?"] == ["biology", "cell_molecular_biology"]
    assert topics["Solve for $x$: $3x - 7 = 11$."] == ["math", "algebra"]

    # users edit the taxonomy: a one-domain file puts everything there, and re-running re-classifies
    mine = tmp_path / "mine.yaml"
    mine.write_text("domains:\n  science:\n    subtopics:\n      all:\n        description: Any science or math question.\n")
    result = cli("run", "stem-curate", "--input", src, "--out", tmp_path / "run", "--quiet", "--set", f"taxonomy.path={mine}",
                 "--set", "taxonomy.min_similarity=0")
    assert result.exit_code == 0, result.output
    assert {tuple(r["topic"]) for r in rows(tmp_path / "run")} == {("science", "all")}
