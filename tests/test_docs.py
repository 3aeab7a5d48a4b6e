"""The repository's docs stand on their own and match the CLI."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tracked(*suffixes: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if f.endswith(suffixes)]


def test_no_references_to_a_spec_outside_the_repository():
    """"SPEC §2.3", "SPEC.md section 6": a document a reader of this repository does not have."""
    pattern = re.compile(r"SPEC(\.md| §|\s+\d|:|\s+section)")
    files = [p for p in tracked(".py", ".md", ".yaml", ".yml", ".toml") if p.name != "test_docs.py"]
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if pattern.search(line)]
    assert hits == []


def cli_commands():
    """(command path, long option names) for every command of `rlclimb`, from the CLI itself."""
    import typer.main

    from rlclimb.pipelines.cli import app

    def walk(cmd, path):
        if hasattr(cmd, "commands"):  # a group (typer vendors its own click: no isinstance checks)
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])
        else:
            opts = [o for p in cmd.params if p.param_type_name == "option" for o in p.opts
                    if o.startswith("--") and o != "--help"]
            yield " ".join(path), opts

    yield "", ["--version"]
    yield from walk(typer.main.get_command(app), ["rlclimb"])


def readme_cli_entries() -> list[str]:
    """The README's CLI reference block, one entry per `rlclimb ...` line with its continuation lines."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## CLI"):].split("```")[1]
    entries: list[str] = []
    for line in block.splitlines():
        if line.startswith("rlclimb"):
            entries.append(line)
        elif line.strip() and entries:
            entries[-1] += "\n" + line
    return entries


def test_readme_cli_reference_names_every_command_and_option():
    """The README's CLI block is checked against the CLI: every command has an entry naming each of
    its options (a new option fails this test until it is documented)."""
    entries = readme_cli_entries()
    missing = []
    for path, opts in cli_commands():
        mine = [e for e in entries if e.startswith(path or "rlclimb")]
        if not mine:
            missing.append(path)
        text = "\n".join(mine)
        missing += [f"{path} {o}" for o in opts if not re.search(re.escape(o) + r"(?![\w-])", text)]
    assert missing == []


EXAMPLE_CONFIGS = {  # examples/<config>: the pipeline it is for
    "qa_jsonl.yaml": "qa-jsonl", "stem_curate.yaml": "stem-curate", "textbook_pdf.yaml": "textbook-pdf",
    "qa_markdown.yaml": "qa-markdown", "code_problems.yaml": "code-problems", "stem_score.yaml": "stem-score",
    "tool_envs.yaml": "tool-envs", "github_prs.yaml": "github-prs", "swe_synth.yaml": "swe-synth",
}


def test_every_example_config_is_valid_for_its_pipeline(tmp_path):
    """Each source kind has an example config, and every key in it is one its pipeline takes."""
    import json

    from helpers.textbook_gen import make_text_pdf

    from rlclimb.pipelines.cli import load_config
    from rlclimb.pipelines.definitions import PIPELINES
    from rlclimb.pipelines.engine import check_and_bind
    from rlclimb.pipelines.llm import LLMConfig

    assert set(EXAMPLE_CONFIGS.values()) == set(PIPELINES)
    jsonl = tmp_path / "qa.jsonl"
    jsonl.write_text(json.dumps({"problem": "What is 2 + 2 here?", "final_answer": "4"}) + "\n")
    md = tmp_path / "notes.md"
    md.write_text("# Exercises\n\n1. What is 2 + 2?\n")
    inputs = {"textbook-pdf": make_text_pdf(tmp_path / "b.pdf", [["1. What is 2 + 2?"]]), "qa-markdown": md}
    inputs["tool-envs"] = ROOT / "examples" / "tool_env_services.yaml"
    for name, pipeline in EXAMPLE_CONFIGS.items():
        cfg = load_config(ROOT / "examples" / name, [])
        built = PIPELINES[pipeline]([str(inputs.get(pipeline, jsonl))], cfg.get("stages") or {}, int(cfg.get("shard_size", 100)))
        llm = LLMConfig.from_dict(cfg["llm"]) if cfg.get("llm") else None
        for stage in built.stages:
            check_and_bind(stage, llm, 0)
        assert built.stages, name
