"""Import coding problems (JSONL rows from the reader) as CodeProblem records.

Accepted shapes, per row (field names are matched in this order; `--set import.KEY=...` names
others):
- statement: `statement` | `question` | `problem` | `prompt` | `description`
- tests: `tests`: a list of {"input", "output"} (also "stdin"/"stdout"), or of assert strings
  (`assert add(1, 2) == 3` -> a function-call test); or APPS/DeepCoder style
  `input_output`: {"inputs": [...], "outputs": [...], "fn_name": optional}
- solutions: `solutions` | `solution`: code strings or {"language", "code"}; the row's
  `language` (default python) applies to bare strings
- limits: `time_limit` (s, or "2 seconds"), `memory_limit` (MB, or "256 megabytes")
A bad row is dropped with a reason naming the field and the fix; it never stops the run.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from pydantic import ValidationError

from rlclimb.environments.code_run import expected_value, get_language
from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import CodeProblem, Solution, Source, TestCase

STATEMENT_FIELDS = ("statement", "question", "problem", "prompt", "description")
SOLUTION_FIELDS = ("solutions", "solution", "reference_solutions")
KNOWN = {
    "id",
    "tests",
    "input_output",
    "language",
    "time_limit",
    "memory_limit",
    "entry_point",
    "fn_name",
    "difficulty",
    "tags",
}


class ImportCodeConfig(StageConfig):
    statement_field: str | None = None
    tests_field: str | None = None
    solutions_field: str | None = None
    default_language: str = "python"
    time_limit_s: float = 6.0  # when the row gives none
    memory_limit_mb: int = 512
    license: str | None = None


class BadRecord(ValueError):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _number(value: Any, what: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and (m := re.match(r"\s*([\d.]+)", value)):
        return float(m.group(1))
    raise BadRecord(
        "bad_limits", f"{what} must be a number (or text like '2 seconds'), got {value!r}"
    )


_ASSERT = re.compile(r"^\s*assert\s+(.+?)\s*==\s*(.+?)\s*$", re.S)


def parse_test(raw: Any, i: int) -> TestCase:
    if isinstance(raw, str):
        m = _ASSERT.match(raw)
        if not m:
            raise BadRecord(
                "bad_tests",
                f"test {i}: a string test must be `assert CALL == VALUE`, got {raw[:60]!r}",
            )
        call, expected = m.group(1), m.group(2)
        try:
            ast.parse(call, mode="eval")
        except SyntaxError:
            raise BadRecord(
                "bad_tests", f"test {i}: not a Python expression: {raw[:60]!r}"
            ) from None
        _literal(expected, i)
        return TestCase(input=call, output=expected, kind="call")
    if isinstance(raw, dict):
        kind = raw.get("kind", "stdio")
        inp = raw.get("input", raw.get("stdin"))
        out = raw.get("output", raw.get("stdout", raw.get("expected")))
        if inp is None or out is None:
            raise BadRecord(
                "bad_tests",
                f"test {i}: needs 'input' and 'output' (or 'stdin'/'stdout'); has {sorted(raw)}",
            )
        if kind not in ("stdio", "call"):
            raise BadRecord("bad_tests", f"test {i}: kind must be stdio or call, got {kind!r}")
        if kind == "call":
            _literal(_text(out), i)
        return TestCase(input=_text(inp), output=_text(out), kind=kind)
    raise BadRecord(
        "bad_tests", f"test {i}: expected an object or an assert string, got {type(raw).__name__}"
    )


def _literal(expected: str, i: int) -> None:
    """Call tests are graded on the host, which never evaluates code: the expected value must be
    a literal."""
    try:
        expected_value(expected)
    except ValueError:
        raise BadRecord(
            "bad_tests",
            f"test {i}: the expected value must be a Python literal (numbers, strings, lists, "
            f"dicts, True/None; or JSON), got {expected[:60]!r}",
        ) from None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value) + "\n"
    return json.dumps(value)


def parse_tests(data: dict, field: str | None) -> list[TestCase]:
    if field:
        raw = data.get(field)
    elif "tests" in data:
        raw = data["tests"]
    elif "input_output" in data:
        io = data["input_output"]
        if isinstance(io, str):
            try:
                io = json.loads(io)
            except json.JSONDecodeError:
                raise BadRecord("bad_tests", "input_output is not valid JSON") from None
        if not isinstance(io, dict) or len(io.get("inputs", [])) != len(io.get("outputs", [None])):
            raise BadRecord(
                "bad_tests", "input_output needs 'inputs' and 'outputs' lists of equal length"
            )
        fn = io.get("fn_name")
        if fn:  # call style: inputs are argument lists
            return [
                TestCase(
                    input=f"{fn}(*{json.dumps(a)})",
                    output=json.dumps(o[0] if isinstance(o, list) and len(o) == 1 else o),
                    kind="call",
                )
                for a, o in zip(io["inputs"], io["outputs"], strict=True)
            ]
        return [
            TestCase(input=_text(a), output=_text(o))
            for a, o in zip(io["inputs"], io["outputs"], strict=True)
        ]
    else:
        raise BadRecord(
            "missing_tests",
            f"no tests (looked for 'tests' and 'input_output'; fields present: {', '.join(sorted(data)[:12])})",
        )
    if not isinstance(raw, list):
        raise BadRecord("bad_tests", f"tests must be a list, got {type(raw).__name__}")
    return [parse_test(t, i) for i, t in enumerate(raw)]


def parse_solutions(data: dict, field: str | None, default_language: str) -> list[Solution]:
    name = field or next((f for f in SOLUTION_FIELDS if f in data), None)
    raw = data.get(name) if name else None
    if raw is None:
        raise BadRecord(
            "missing_solutions", f"no reference solution (looked for {'/'.join(SOLUTION_FIELDS)})"
        )
    if isinstance(raw, str | dict):
        raw = [raw]
    language = data.get("language") or default_language
    out = []
    for i, s in enumerate(raw):
        if isinstance(s, str):
            s = {"language": language, "code": s}
        if not isinstance(s, dict) or not isinstance(s.get("code"), str) or not s["code"].strip():
            raise BadRecord(
                "bad_solutions", f"solution {i}: expected code text or {{language, code}}"
            )
        try:
            lang = get_language(str(s.get("language") or language)).name
        except KeyError as e:
            raise BadRecord("unsupported_language", str(e.args[0])) from None
        out.append(Solution(language=lang, code=s["code"]))
    if not out:
        raise BadRecord("missing_solutions", "the solutions list is empty")
    return out


def parse_problem(
    data: dict, config: ImportCodeConfig | None = None, source: Source | None = None
) -> CodeProblem:
    """A CodeProblem from one input row; raises BadRecord(reason, detail) for unusable rows."""
    cfg = config or ImportCodeConfig()
    if not isinstance(data, dict):
        raise BadRecord("not_an_object", f"expected a JSON object, got {type(data).__name__}")
    s_name = cfg.statement_field or next((f for f in STATEMENT_FIELDS if f in data), None)
    statement = data.get(s_name) if s_name else None
    if not isinstance(statement, str) or not statement.strip():
        raise BadRecord(
            "missing_statement",
            f"no statement text (looked for {'/'.join(STATEMENT_FIELDS)}); set --set import.statement_field=NAME",
        )
    tests = parse_tests(data, cfg.tests_field)
    solutions = parse_solutions(data, cfg.solutions_field, cfg.default_language)
    entry = data.get("entry_point") or data.get("fn_name")
    used = {s_name, cfg.tests_field, cfg.solutions_field, *SOLUTION_FIELDS, *KNOWN}
    meta = {k: v for k, v in data.items() if k not in used}
    try:
        return CodeProblem(
            id=str(data["id"]) if data.get("id") is not None else "",
            statement=statement.strip(),
            tests=tests,
            solutions=solutions,
            entry_point=entry,
            time_limit_s=_number(data["time_limit"], "time_limit")
            if data.get("time_limit") is not None
            else cfg.time_limit_s,
            memory_limit_mb=int(_number(data["memory_limit"], "memory_limit"))
            if data.get("memory_limit") is not None
            else cfg.memory_limit_mb,
            difficulty=str(data["difficulty"]) if data.get("difficulty") is not None else None,
            tags=[str(t) for t in data.get("tags") or []],
            meta=json.dumps(meta, ensure_ascii=False, sort_keys=True, default=str),
            source=source or Source(),
        )
    except ValidationError as e:
        raise BadRecord("invalid_record", str(e).replace("\n", " ")[:500]) from None


class ImportCode(Stage):
    name = "import"
    version = "1"
    kind = "map"
    Config = ImportCodeConfig
    output_model = CodeProblem

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        source = Source(document=record["file"], line=record["line"], license=record.get("license") or self.config.license)
        try:
            return parse_problem(record["data"], self.config, source).model_dump()
        except BadRecord as e:
            return Drop(e.reason, str(e))
