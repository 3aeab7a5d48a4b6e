"""YAML aliases ("billion laughs") are refused wherever rlclimb reads a config, with a one-line
error naming the file, before anything expands. Small files: the mechanism, not the 4 GB."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from rlclimb.pipelines.cli import app
from rlclimb.pipelines.llm import LLMConfig, LLMConfigError
from rlclimb.rl.data import DataError, load_items
from rlclimb.schemas.io import load_yaml
from rlclimb.stages.curate.taxonomy import TaxonomyError, load_taxonomy

# nine levels of nine aliases: 9**9 (387 million) strings once expanded
LAUGHS = "a0: &a0 [lol]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
)

runner = CliRunner()


def test_load_yaml_refuses_aliases_and_keeps_plain_yaml():
    with pytest.raises(yaml.YAMLError, match="aliases"):
        load_yaml(LAUGHS)
    with pytest.raises(yaml.YAMLError, match="aliases"):
        load_yaml("base: &b {x: 1}\nother:\n  <<: *b\n")  # merge keys use aliases too
    assert load_yaml("a: &anchor [1, 2]\nb: {c: 3}\n") == {"a": [1, 2], "b": {"c": 3}}


def test_run_config_with_aliases_is_a_one_line_error(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"question": "What is one plus one here?", "answer": "2"}) + "\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("llm:\n  profiles:\n    p:\n      base_url: http://127.0.0.1:1/v1\n      model: m\n"
                   "      params: " + "\n        ".join(["", *LAUGHS.splitlines()]) + "\n")
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "qa-jsonl", "-i", str(src), "--out", str(out), "-c", str(cfg)])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and str(cfg) in res.stderr and "aliases" in res.stderr, res.stderr
    assert not out.exists()

    res = runner.invoke(app, ["run", "qa-jsonl", "-i", str(src), "--out", str(out),
                              "--set", "import.license=[&x [a], *x, *x]"])
    assert res.exit_code == 2 and "aliases" in res.stderr and res.stderr.count("\n") == 1, res.stderr


def test_llm_config_file_with_aliases(tmp_path):
    path = tmp_path / "llm.yaml"
    path.write_text("profiles:\n  p: &p {base_url: 'http://127.0.0.1:1/v1', model: m}\n  q: *p\n")
    with pytest.raises(LLMConfigError, match="aliases") as e:
        LLMConfig.from_yaml(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_taxonomy_and_mix_spec_with_aliases(tmp_path):
    tax = tmp_path / "tax.yaml"
    tax.write_text("domains:\n  math: &m {subtopics: {algebra: {description: x}}}\n  physics: *m\n")
    with pytest.raises(TaxonomyError, match="aliases"):
        load_taxonomy(str(tax))
    mix = tmp_path / "mix.yaml"
    mix.write_text(LAUGHS)
    with pytest.raises(DataError, match="aliases") as e:
        load_items(mix)
    assert str(mix) in str(e.value)
