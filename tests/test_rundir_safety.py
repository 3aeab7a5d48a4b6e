"""The run directory never destroys what rlclimb did not create: `--out` that is someone else's
directory, a file, a run of another pipeline or config. Through the real `rlclimb run` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.schemas.io import read_rows

runner = CliRunner()


def cli(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def qa_input(path: Path, n: int = 3) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(
        json.dumps({"question": f"What is {i} plus {i} in base ten?", "answer": str(2 * i)}) + "\n"
        for i in range(n)))
    return path


def run_qa(src: Path, out: Path, *extra) -> object:
    return cli("run", "qa-jsonl", "-i", src, "--out", out, "-q", *extra)


def one_line_error(res, *expect: str) -> None:
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr
    for text in expect:
        assert text in res.stderr, res.stderr


def data_questions(out: Path) -> list[str]:
    return [r["question"] for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]


def test_existing_directory_with_a_data_folder_is_refused_and_kept(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    out = tmp_path / "mine"
    (out / "data").mkdir(parents=True)
    (out / "data" / "precious.txt").write_text("do not delete")
    (out / "notes.md").write_text("mine too")
    one_line_error(run_qa(src, out), str(out), "not an rlclimb run directory")
    assert (out / "data" / "precious.txt").read_text() == "do not delete"
    assert sorted(p.name for p in out.rglob("*")) == ["data", "notes.md", "precious.txt"]


@pytest.mark.parametrize("where", ["is_a_file", "under_a_file"])
def test_out_that_is_a_file_or_under_a_file_is_a_one_line_error(tmp_path, where):
    src = qa_input(tmp_path / "in.jsonl")
    blocker = tmp_path / "afile"
    blocker.write_text("keep")
    out = blocker if where == "is_a_file" else blocker / "sub" / "run"
    one_line_error(run_qa(src, out), str(out), "is a file")
    assert blocker.read_text() == "keep"


def test_new_and_empty_directories_become_runs_and_resume(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new" / "run", empty):
        assert run_qa(src, out).exit_code == 0
        assert json.loads((out / ".rlclimb-run").read_text())["kind"] == "run"
        assert run_qa(src, out).exit_code == 0  # the same run again: resumes
        assert len(data_questions(out)) == 3


def test_finalize_keeps_files_it_did_not_create(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    out = tmp_path / "run"
    assert run_qa(src, out).exit_code == 0
    (out / "data" / "README.txt").write_text("my notes about this dataset")
    (out / "ledger" / "notes.txt").write_text("my notes about the drops")
    assert run_qa(src, out, "--retry-transient").exit_code == 0  # finalizes again
    assert (out / "data" / "README.txt").exists() and (out / "ledger" / "notes.txt").exists()
    assert len(data_questions(out)) == 3


def test_a_run_of_another_pipeline_needs_force(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    out = tmp_path / "run"
    assert run_qa(src, out).exit_code == 0
    before = data_questions(out)
    res = cli("run", "stem-score", "-i", src, "--out", out, "-q")
    one_line_error(res, str(out), "pipeline", "'qa-jsonl'", "--force")
    assert data_questions(out) == before
    assert json.loads((out / "config.json").read_text())["pipeline"] == "qa-jsonl"


def test_a_run_of_other_inputs_needs_force(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    other = qa_input(tmp_path / "other.jsonl", n=2)
    out = tmp_path / "run"
    assert run_qa(src, out).exit_code == 0
    (out / "reports").mkdir(exist_ok=True)
    (out / "reports" / "stale.json").write_text("{}")
    one_line_error(run_qa(other, out), str(out), "inputs", "--force")
    assert len(data_questions(out)) == 3
    # a changed stage config is the same run iterated on (tests/test_engine.py): no --force
    assert run_qa(src, out, "--set", "validate.min_question_chars=5").exit_code == 0

    assert run_qa(other, out, "--force").exit_code == 0
    assert len(data_questions(out)) == 2
    assert not (out / "reports" / "stale.json").exists()  # the replaced run's reports go with it
    assert run_qa(other, out).exit_code == 0  # now the recorded run: resumes without --force

    # input files added to the recorded ones: the same run, grown (no --force)
    res = cli("run", "qa-jsonl", "-i", other, "-i", src, "--out", out, "-q")
    assert res.exit_code == 0, res.output
    assert len(data_questions(out)) == 3  # src's 3 questions include other's 2 (deduplicated)
    one_line_error(run_qa(src, out), "inputs", "--force")  # other.jsonl left out: a replacement


def test_a_run_directory_from_before_the_marker_is_recognised(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    out = tmp_path / "run"
    assert run_qa(src, out).exit_code == 0
    (out / ".rlclimb-run").unlink()
    assert run_qa(src, out).exit_code == 0
    assert (out / ".rlclimb-run").exists()


def test_decontam_and_train_refuse_a_foreign_directory(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    out = tmp_path / "mine"
    (out / "clean").mkdir(parents=True)
    (out / "clean" / "precious.txt").write_text("do not delete")
    (out / "config.json").write_text('{"mine": true}')
    res = cli("decontam", "-b", src, "-i", src, "--out", out, "--matchers", "exact", "-q")
    one_line_error(res, str(out), "not an rlclimb decontam directory")
    res = cli("train", src, "--model", "no-such-model", "--out", out)
    one_line_error(res, str(out), "not an rlclimb train directory")
    assert (out / "clean" / "precious.txt").read_text() == "do not delete"
    assert (out / "config.json").read_text() == '{"mine": true}'
    assert sorted(p.name for p in out.rglob("*")) == ["clean", "config.json", "precious.txt"]


def test_decontam_reruns_into_its_own_directory_but_not_a_run_directory(tmp_path):
    src = qa_input(tmp_path / "in.jsonl")
    out = tmp_path / "dc"
    for _ in range(2):
        res = cli("decontam", "-b", src, "-i", src, "--out", out, "--matchers", "exact", "-q")
        assert res.exit_code == 0, res.output
    run = tmp_path / "run"
    assert run_qa(src, run).exit_code == 0
    res = cli("decontam", "-b", src, "-i", src, "--out", run, "--matchers", "exact", "-q")
    one_line_error(res, str(run), "rlclimb run directory, not a decontam directory")


def test_mix_refuses_a_foreign_directory_with_a_data_folder(tmp_path):
    spec = tmp_path / "mix.yaml"
    spec.write_text("sources: []\n")
    out = tmp_path / "mine"
    (out / "data").mkdir(parents=True)
    (out / "data" / "precious.txt").write_text("do not delete")
    one_line_error(cli("mix", spec, "--out", out), str(out), "not an rlclimb mix directory")
    assert (out / "data" / "precious.txt").read_text() == "do not delete"
