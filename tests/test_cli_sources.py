"""Records name their input files relative to the --input given (no local absolute paths), and
carry a license from --license or a document's sidecar FILE.license."""

from __future__ import annotations

import json

from helpers.textbook_gen import ChapterSpec, make_textbook
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.schemas.io import read_rows

runner = CliRunner()


def cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def rows(run) -> list[dict]:
    return [r for f in sorted((run / "data").glob("*.parquet")) for r in read_rows(f)]


def test_jsonl_documents_are_relative_to_the_input_and_licensed(tmp_path):
    dumps = tmp_path / "dumps"
    (dumps / "algebra").mkdir(parents=True)
    (dumps / "algebra" / "a.jsonl").write_text(json.dumps({"question": "What is 2 + 2 here?", "answer": "4"}) + "\n")
    cli("run", "qa-jsonl", "--input", dumps, "--out", tmp_path / "run", "--license", "cc-by-4.0", "-q")
    [row] = rows(tmp_path / "run")
    assert row["source"]["document"] == "dumps/algebra/a.jsonl" and row["source"]["license"] == "cc-by-4.0"
    assert str(tmp_path) not in json.dumps(row)


def test_pdf_documents_and_answer_sources_are_relative_with_the_sidecar_license(tmp_path):
    book = make_textbook(tmp_path / "book.pdf", [ChapterSpec("Arithmetic", "key", exercises=4)])
    (tmp_path / "book.pdf.license").write_text("cc-by-sa-4.0\n")
    cli("run", "textbook-pdf", "--input", book.path, "--out", tmp_path / "run", "--license", "mit", "-q")
    got = rows(tmp_path / "run")
    answered = [r for r in got if r["answer"]]
    assert answered and all(json.loads(r["meta"])["answer_source"]["document"] == "book.pdf" for r in answered)
    assert {(r["source"]["document"], r["source"]["license"]) for r in got} == {("book.pdf", "cc-by-sa-4.0")}
    assert str(tmp_path) not in json.dumps(got)
    (tmp_path / "book.pdf.license").unlink()  # no sidecar: --license applies
    cli("run", "textbook-pdf", "--input", book.path, "--out", tmp_path / "run2", "--license", "mit", "-q")
    assert {r["source"]["license"] for r in rows(tmp_path / "run2")} == {"mit"}


def test_a_jsonl_sidecar_license_wins_over_the_option(tmp_path):
    for name, lic in (("a.jsonl", "cc0-1.0"), ("b.jsonl", None)):
        (tmp_path / name).write_text(json.dumps({"question": f"What is in {name} here?", "answer": "x"}) + "\n")
        if lic:
            (tmp_path / f"{name}.license").write_text(lic + "\n")
    cli("run", "qa-jsonl", "--input", tmp_path / "a.jsonl", "--input", tmp_path / "b.jsonl", "--out", tmp_path / "run",
        "--license", "cc-by-4.0", "-q")
    assert {r["source"]["document"]: r["source"]["license"] for r in rows(tmp_path / "run")} == {"a.jsonl": "cc0-1.0", "b.jsonl": "cc-by-4.0"}
