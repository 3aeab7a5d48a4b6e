"""Pipeline definitions: one short module per source kind, registered by CLI name.

A definition lists its stage classes; the run config has one section per stage name
(`stages: {import: {question_field: problem}}` in YAML, or `--set import.question_field=problem`).
"""

from __future__ import annotations

import difflib
import importlib
import json
import typing
from collections.abc import Callable
from typing import Any, Literal

from pydantic import ValidationError

from ..engine import Pipeline
from ..stage import ConfigError, Stage


def configure(stage_classes: list[type[Stage]], sections: dict[str, Any]) -> list[Stage]:
    """Instantiate stages from per-stage config sections, naming any unknown or invalid key.

    Every section may say `enabled: true|false` (`--set <stage>.enabled=false`): disabled stages,
    and stages that find nothing to do (`active` false), are left out of the pipeline."""
    known = {cls.name: cls for cls in stage_classes}
    unknown = set(sections) - set(known)
    if unknown:
        name = sorted(unknown)[0]
        raise ConfigError(f"unknown stage section '{name}'{did_you_mean(name, known)}"
                          f"this pipeline's stages: {', '.join(known)} (rlclimb pipelines lists them)")
    stages = []
    for cls in stage_classes:
        section = dict(sections.get(cls.name) or {})
        enabled = section.pop("enabled", cls.enabled_by_default)
        if not isinstance(enabled, bool):
            raise ConfigError(f"config {cls.name}.enabled: expected true or false, got {enabled!r}")
        if not enabled:
            continue
        try:
            stage = cls(section)
        except ValidationError as e:
            raise ConfigError(config_error(cls, e)) from None
        if stage.active:
            stages.append(stage)
    return stages


def did_you_mean(name: str, choices) -> str:
    """`; did you mean 'x'? ` for the closest choice, else `; ` (the separator before what follows)."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'? " if close else "; "


def config_error(cls: type[Stage], e: ValidationError) -> str:
    """A stage config's validation error in the user's words: the key, what is wrong, the fix."""
    err = e.errors()[0]
    key = ".".join(str(x) for x in err["loc"])
    valid = ", ".join(["enabled", *cls.Config.model_fields])
    if err["type"] == "extra_forbidden":
        return (f"unknown key '{cls.name}.{key}'{did_you_mean(key, cls.Config.model_fields)}"
                f"valid keys of stage {cls.name}: {valid} (rlclimb config show PIPELINE: defaults, meaning)")
    if err["type"] == "missing":
        return f"stage {cls.name}: key '{key}' is required"
    got = f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else ""
    msg = err["msg"].removeprefix("Value error, ")
    return f"config {cls.name}.{key}: {msg[0].lower()}{msg[1:]}{got}" if key else f"config {cls.name}: {msg}"


def _lazy(module: str) -> Callable[[list[str], dict[str, Any], int], Pipeline]:
    """The `build` of a definition module, imported on first use (keeps `rlclimb --help` fast)."""

    def build(inputs: list[str], sections: dict[str, Any], shard_size: int) -> Pipeline:
        return importlib.import_module(f"{__name__}.{module}").build(inputs, sections, shard_size)

    return build


PIPELINES: dict[str, Callable[[list[str], dict[str, Any], int], Pipeline]] = {
    name: _lazy(name.replace("-", "_"))
    for name in ("qa-jsonl", "stem-curate", "textbook-pdf", "qa-markdown", "code-problems", "stem-score", "github-prs", "swe-synth", "tool-envs")
}


def catalog(pipeline: str) -> list[tuple[type[Stage], str]]:
    """Every stage a pipeline can run, in order, and when it runs ("" = always), for
    `rlclimb pipelines` and `rlclimb config show` (a test checks this against what build() makes)."""
    from rlclimb.stages.code.importer import ImportCode
    from rlclimb.stages.code.verify import VerifyCode
    from rlclimb.stages.dedup.exact import ExactDedup
    from rlclimb.stages.dedup.minhash import MinHashDedup
    from rlclimb.stages.documents.extract_llm import ExtractLLM
    from rlclimb.stages.documents.extract_qa import ExtractQA
    from rlclimb.stages.documents.pair_qa import PairQA
    from rlclimb.stages.documents.parse_pdf import ParsePdf
    from rlclimb.stages.documents.parse_vlm import OcrVlm
    from rlclimb.stages.documents.structure import StructureDocument
    from rlclimb.stages.qa.importer import ImportQA
    from rlclimb.stages.text import NormalizeText, ValidateQA

    from .github_prs import STAGES as GITHUB_PRS
    from .qa_jsonl import STAGES as QA_JSONL
    from .stem_curate import CURATE_STAGES
    from .stem_score import SCORE_STAGES
    from .swe_synth import STAGES as SWE_SYNTH
    from .tool_envs import STAGES as TOOL_ENV_STAGES

    def when(classes, condition: str = "") -> list[tuple[type[Stage], str]]:
        def notes(c):
            opt_in = "opt-in: enabled=true" if not c.enabled_by_default else ""
            return ", ".join(x for x in (condition, opt_in, "with decontam.benchmarks" if c.name == "decontam" else "") if x)
        return [(c, notes(c)) for c in classes]

    curate = when(CURATE_STAGES, "with curate=true")
    documents = [*when([StructureDocument]), (ExtractQA, "extract.method=structure (default)"),
                 (ExtractLLM, "extract.method=llm|both"), (PairQA, ""),
                 *when([NormalizeText, ValidateQA, ExactDedup, MinHashDedup], "with curate=true"), *curate]
    table = {
        "qa-jsonl": [*when(QA_JSONL), *curate],
        "stem-curate": [*when(QA_JSONL, "JSONL input only"), *when(CURATE_STAGES)],
        "textbook-pdf": [(ParsePdf, ""), (OcrVlm, "with parse.ocr=vlm"), *documents],
        "qa-markdown": documents,
        "code-problems": when([ImportCode, ExactDedup, VerifyCode]),
        "stem-score": [(ImportQA, "JSONL input only"), *when(SCORE_STAGES)],
        "github-prs": when(GITHUB_PRS),
        "swe-synth": when(SWE_SYNTH),
        "tool-envs": when(TOOL_ENV_STAGES),
    }
    return table[pipeline]


def config_keys(cls: type[Stage]) -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) of a stage's config; descriptions are the pydantic
    `description` or else the comment on (or just above) the field in the Config class source."""
    comments: dict[str, str] = {}
    for klass in reversed(cls.Config.__mro__):  # a subclass's comment wins
        if klass.__module__.startswith("pydantic") or klass is object:
            continue
        comments.update(_field_comments(klass))
    rows = [("enabled", "bool", str(cls.enabled_by_default).lower(), "run this stage (false leaves it out)")]
    for name, f in cls.Config.model_fields.items():
        default = "(required)" if f.is_required() else json.dumps(f.get_default(call_default_factory=True), default=str)
        rows.append((name, _type_name(f.annotation), default, f.description or comments.get(name, "")))
    return rows


def _type_name(t: Any) -> str:
    if typing.get_origin(t) is Literal:
        return "|".join(str(a) for a in typing.get_args(t))
    return str(t).replace("typing.", "") if typing.get_origin(t) or not isinstance(t, type) else t.__name__


def _field_comments(klass: type) -> dict[str, str]:
    import ast
    import inspect
    import io
    import textwrap
    import tokenize

    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return {}
    by_line = {tok.start[0]: tok.string.lstrip("# ").strip()
               for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text = by_line.get(node.end_lineno, "")
            above = node.lineno - 1
            while not text and above >= 1 and lines[above - 1].strip().startswith("#"):
                text = by_line.get(above, "")
                above -= 1
            out[node.target.id] = text
    return out


def resolve(name: str) -> Callable[[list[str], dict[str, Any], int], Pipeline]:
    """A pipeline by CLI name, or your own `package.module:function` with build()'s signature
    (inputs, sections, shard_size) -> Pipeline; modules are found from the working directory too."""
    if name in PIPELINES:
        return PIPELINES[name]
    module, sep, attr = name.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"unknown pipeline {name!r}{did_you_mean(name, PIPELINES)}"
                          f"available: {', '.join(PIPELINES)}, or your own as package.module:function")
    import os
    import sys

    if os.getcwd() not in sys.path:  # like `python -m`: a module next to you is found
        sys.path.insert(0, os.getcwd())
    try:
        build = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise ConfigError(f"pipeline {name}: cannot import {module}: {e}") from None
    except AttributeError:
        raise ConfigError(f"pipeline {name}: module {module} has no {attr!r}") from None
    if not callable(build):
        raise ConfigError(f"pipeline {name}: {attr} is not a function (inputs, sections, shard_size) -> Pipeline")
    return build


def name_documents(stages: list[Stage], paths: list, inputs: list[str]) -> None:
    """Document pipelines: `pair` (which makes the records) names each document relative to the
    --input it came from and takes its sidecar license (FILE.license)."""
    from ..readers import document_name, sidecar_license

    for st in stages:
        if st.name == "pair":
            st.documents = {str(p): (document_name(p, inputs), sidecar_license(p)) for p in paths}
