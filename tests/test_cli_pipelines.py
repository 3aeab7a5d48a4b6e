"""Discovering the CLI: --version, `rlclimb pipelines`, `rlclimb config show`, config errors in
plain words with a did-you-mean, flag help, and running your own pipeline module."""

from __future__ import annotations

import json
import textwrap
from importlib.metadata import version

import pytest
from helpers.textbook_gen import make_text_pdf
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.definitions import PIPELINES, catalog, config_keys
from rlclimb.schemas.io import read_rows
from rlclimb.stages.dedup.minhash import MinHashDedup

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def qa_file(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps({"question": "What is 2 + 2 here?", "answer": "4"}) + "\n")
    return path


def test_version():
    result = cli("--version")
    assert result.exit_code == 0 and result.output.strip() == f"rlclimb {version('rlclimb')}"


def test_pipelines_lists_every_pipeline_and_its_stages():
    result = cli("pipelines")
    assert result.exit_code == 0
    for name in PIPELINES:
        assert f"{name}:" in result.output
    assert "dedup_vector    global  opt-in: enabled=true" in result.output
    assert "grade" in result.output and "with parse.ocr=vlm" in result.output


def test_config_show_gives_keys_defaults_and_descriptions():
    result = runner.invoke(app, ["config", "show", "qa-jsonl"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "dedup_minhash (global" in result.output
    line = next(x for x in result.output.splitlines() if "│ threshold" in x and "Jaccard" in x)
    assert "0.7" in line and "float" in line
    keys = {k: (t, d, text) for k, t, d, text in config_keys(MinHashDedup)}
    assert keys["keep"][0] == "earliest|longest_answer|source_priority" and keys["memory_mb"][1] == "256"
    assert "spilling" in keys["memory_mb"][2]
    assert cli("config", "show", "qa-jsnl").exit_code == 2


def test_catalog_covers_what_each_pipeline_builds(tmp_path):
    """The listing must not drift from the definitions: every stage build() makes, in order."""
    jsonl = qa_file(tmp_path)
    pdf = make_text_pdf(tmp_path / "b.pdf", [["1. What is 2 + 2?"]])
    md = tmp_path / "b.md"
    md.write_text("# Exercises\n\n1. What is 2 + 2?\n")
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"question": "What is 9 + 9?", "answer": "18"}) + "\n")
    inputs = {"qa-jsonl": jsonl, "stem-curate": jsonl, "textbook-pdf": pdf, "qa-markdown": md,
              "code-problems": jsonl, "stem-score": jsonl}
    variants = {
        "qa-jsonl": [{}, {"curate": True, "dedup_vector": {"enabled": True}, "decontam": {"benchmarks": [str(bench)]}}],
        "stem-curate": [{}],
        "textbook-pdf": [{}, {"curate": True}, {"parse": {"ocr": "vlm"}, "extract": {"method": "llm"}}],
        "qa-markdown": [{}, {"curate": True}],
        "code-problems": [{}],
        "stem-score": [{}],
    }
    for name, configs in variants.items():
        listed = [cls.name for cls, _ in catalog(name)]
        for sections in configs:
            built = [s.name for s in PIPELINES[name]([str(inputs[name])], sections, 100).stages]
            it = iter(listed)
            assert all(n in it for n in built), (name, sections, built, listed)  # an ordered subsequence


@pytest.mark.parametrize(("sets", "words"), [
    (["dedup_minhash.threshhold=0.8"], ["unknown key 'dedup_minhash.threshhold'", "did you mean 'threshold'?", "valid keys of stage dedup_minhash: enabled, field"]),
    (["dedup_minhas.threshold=0.8"], ["unknown stage section 'dedup_minhas'", "did you mean 'dedup_minhash'?"]),
    (["dedup_minhash.threshold=7"], ["config dedup_minhash.threshold: input should be less than or equal to 1 (got 7)"]),
])
def test_config_errors_name_the_key_and_the_fix(tmp_path, sets, words):
    args = [x for s in sets for x in ("--set", s)]
    result = cli("run", "qa-jsonl", "--input", qa_file(tmp_path), "--out", tmp_path / "r", *args)
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    for w in words:
        assert w in result.output
    assert "Extra inputs" not in result.output and "validation error" not in result.output


def test_llm_and_top_level_config_errors(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("llm:\n  profiles:\n    a: {base_url: 'http://127.0.0.1:1/v1', model: m, concurrancy: 3}\n")
    result = cli("run", "qa-jsonl", "--input", qa_file(tmp_path), "--out", tmp_path / "r", "--config", cfg)
    assert result.exit_code == 2 and "unknown key 'llm.profiles.a.concurrancy'; did you mean 'concurrency'?" in result.output
    cfg.write_text("shard_sise: 10\n")
    result = cli("run", "qa-jsonl", "--input", qa_file(tmp_path), "--out", tmp_path / "r", "--config", cfg)
    assert result.exit_code == 2 and "unknown config key 'shard_sise'; did you mean 'shard_size'?" in result.output


def test_flags_render_as_flags_in_help():
    result = cli("run", "--help")
    assert "-q, --quiet " in result.output and "<bool>" not in result.output


def test_your_own_pipeline_module_runs_from_the_cli(tmp_path, monkeypatch):
    (tmp_path / "my_stages.py").write_text(textwrap.dedent('''
        from rlclimb.pipelines.engine import Pipeline
        from rlclimb.pipelines.readers import JsonlReader
        from rlclimb.pipelines.definitions import configure
        from rlclimb.pipelines.stage import Drop, Stage, StageConfig
        from rlclimb.stages.qa.importer import ImportQA

        class ShoutConfig(StageConfig):
            suffix: str = "!"

        class Shout(Stage):
            name, version, kind = "shout", "1", "map"
            Config = ShoutConfig

            def process(self, record, ctx):
                if "skip" in record["question"]:
                    return Drop("skipped", "asked to")
                return {**record, "answer": record["answer"].upper() + self.config.suffix}

        def build(inputs, sections, shard_size):
            return Pipeline("shout", JsonlReader(inputs), configure([ImportQA, Shout], sections), shard_size=shard_size)
    '''))
    src = tmp_path / "qa.jsonl"
    src.write_text(json.dumps({"question": "Say the word yes, loudly.", "answer": "yes"}) + "\n"
                   + json.dumps({"question": "Please skip this question.", "answer": "no"}) + "\n")
    monkeypatch.chdir(tmp_path)
    result = cli("run", "my_stages:build", "--input", src, "--out", tmp_path / "run", "--set", "shout.suffix=-loud", "-q")
    assert result.exit_code == 0, result.output
    rows = read_rows(next((tmp_path / "run" / "data").glob("*.parquet")))
    assert [r["answer"] for r in rows] == ["YES-loud"]
    assert json.loads(cli("status", tmp_path / "run", "--json").output)["stages"][-1]["dropped"] == {"skipped": 1}
    bad = cli("run", "my_stages:nope", "--input", src, "--out", tmp_path / "r2")
    assert bad.exit_code == 2 and "has no 'nope'" in bad.output
