"""qa-markdown: text sources (markdown, LaTeX, plain text) through the same structure, extract
and pair stages as textbook-pdf."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.schemas.io import read_rows

runner = CliRunner()

MARKDOWN = """\
# Chapter 1: Sequences

## 1.1 Arithmetic sequences

An arithmetic sequence adds the same number at every step.

### Exercises 1.1

In Exercises 1-2, find the next term of the sequence.

**1.** 3, 7, 11, 15, ...

**2.** 10, 8, 6, 4, ...

**3.** A ladder has 12 rungs spaced 30 cm apart. How long is the ladder, from the lowest to the
highest rung?

Solution: 11 gaps of 30 cm, so 330 cm.

**4.** Prove that the sum of two consecutive terms of 1, 3, 5, 7, ... is always a multiple of 4.

## Answers to Selected Exercises

### Section 1.1

1. 19
2. 2
"""

LATEX = r"""
\documentclass{book}
\begin{document}
\chapter{Limits}
\section{Definition}
A limit describes the value a function approaches.  % a comment
\begin{example}
Compute the limit of (x^2 - 1)/(x - 1) as x approaches 1.
\end{example}
\begin{solution}
Factor: (x - 1)(x + 1)/(x - 1) = x + 1, so the limit is 2.
\end{solution}
\section*{Exercises}
\begin{enumerate}
\item Compute the limit of 3x + 2 as x approaches 4.
\item Compute the limit of $x^2$ as $x$ approaches $-3$.
\begin{enumerate}
\item First by substitution.
\item Then with a table of values.
\end{enumerate}
\end{enumerate}
\begin{exercise}
Show that the limit of 1/x as x approaches 0 does not exist.
\end{exercise}
\begin{solution}
The one-sided limits are $+\infty$ and $-\infty$.
\end{solution}
\end{document}
"""


def run(tmp_path: Path, *files: Path) -> tuple[list[dict], list[dict]]:
    out = tmp_path / "run"
    args = ["run", "qa-markdown", *(a for f in files for a in ("--input", str(f))), "--out", str(out), "--quiet"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [r for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]
    ledger = pq.read_table(out / "ledger").to_pylist() if any((out / "ledger").glob("*.parquet")) else []
    return rows, ledger


def test_markdown_exercises_inline_solutions_instructions_and_answer_key(tmp_path):
    md = tmp_path / "sequences.md"
    md.write_text(MARKDOWN)
    rows, ledger = run(tmp_path, md)
    got = [(r["source"]["number"], r["question"], r["answer"], json.loads(r["meta"])["pair_method"]) for r in rows]
    assert got == [
        ("1", "In Exercises 1-2, find the next term of the sequence.\n3, 7, 11, 15, ...", "19", "numbering"),
        ("2", "In Exercises 1-2, find the next term of the sequence.\n10, 8, 6, 4, ...", "2", "numbering"),
        ("3", "A ladder has 12 rungs spaced 30 cm apart. How long is the ladder, from the lowest to the "
              "highest rung?", "11 gaps of 30 cm, so 330 cm.", "inline"),
        ("4", "Prove that the sum of two consecutive terms of 1, 3, 5, 7, ... is always a multiple of 4.", "", "none"),
    ]
    assert rows[0]["source"]["line"] == 11 and rows[0]["source"]["section"] == "1.1"
    assert rows[3]["tags"] == ["unanswered"] and ledger == []


def test_latex_environments_and_exercise_lists(tmp_path):
    tex = tmp_path / "limits.tex"
    tex.write_text(LATEX)
    rows, _ = run(tmp_path, tex)
    got = [(r["source"]["number"], r["question"], r["answer"]) for r in rows]
    assert got == [
        ("1", "Compute the limit of (x^2 - 1)/(x - 1) as x approaches 1.",
         "Factor: (x - 1)(x + 1)/(x - 1) = x + 1, so the limit is 2."),
        ("1", "Compute the limit of 3x + 2 as x approaches 4.", ""),
        ("2", "Compute the limit of $x^2$ as $x$ approaches $-3$.\n(a) First by substitution.\n"
              "(b) Then with a table of values.", ""),
        ("1", "Show that the limit of 1/x as x approaches 0 does not exist.", "The one-sided limits are $+\\infty$ and $-\\infty$."),
    ]
    assert rows[0]["tags"] == ["worked_example"] and rows[0]["source"]["section"] == "1.1"


def test_unreadable_text_files_are_ledgered(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("## Exercises\n\n1. Compute 2 + 2 and explain why.\n")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Exercice 1. Calculer 2 + 2 \xe9t\xe9.".encode("latin-1"))
    empty = tmp_path / "empty.md"
    empty.write_text("\n\n")
    rows, ledger = run(tmp_path, good, latin1, empty)
    assert [r["question"] for r in rows] == ["Compute 2 + 2 and explain why."]
    reasons = {Path(d["file"]).name: (d["reason"], d["detail"]) for d in ledger}
    assert reasons["latin1.txt"][0] == "bad_encoding" and "iconv" in reasons["latin1.txt"][1]
    assert reasons["empty.md"][0] == "empty_document"


def test_curate_option_cleans_dedups_and_curates_document_items(tmp_path):
    md = tmp_path / "sequences.md"
    md.write_text(MARKDOWN)
    out = tmp_path / "curated"
    result = runner.invoke(app, ["run", "qa-markdown", "--input", str(md), "--out", str(out), "--quiet",
                                 "--set", "curate=true", "--set", "validate.min_question_chars=5"])
    assert result.exit_code == 0, result.output
    rows = [r for f in sorted((out / "data").glob("*.parquet")) for r in read_rows(f)]
    ledger = pq.read_table(out / "ledger").to_pylist()
    stages = [s["name"] for s in json.loads((out / "stats.json").read_text())["stages"]]
    assert stages[:5] == ["read", "structure", "extract", "pair", "normalize"]
    assert {"validate", "dedup_exact", "dedup_minhash", "verifiable", "taxonomy"} <= set(stages)
    # the unanswered proof exercise is not training data once curated: ledgered, with its reason
    assert [(r["stage"], r["reason"]) for r in ledger] == [("validate", "empty_answer")]
    assert sorted(r["source"]["number"] for r in rows) == ["1", "2", "3"]
    assert all(r["topic"] and r["question_type"] for r in rows)  # curation labels are on the items


def test_curate_option_rejects_non_boolean(tmp_path):
    md = tmp_path / "sequences.md"
    md.write_text(MARKDOWN)
    result = runner.invoke(app, ["run", "qa-markdown", "--input", str(md), "--out", str(tmp_path / "x"),
                                 "--set", "curate=maybe"])
    assert result.exit_code == 2 and "curate" in result.output and not (tmp_path / "x").exists()
