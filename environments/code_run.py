"""Run a program against a code problem's tests in a sandbox (the code pipeline and environment).

Languages are a small table: a source file name, an optional compile command (run once per
program, inside the sandbox) and a run command. Adding a language is one `Language(...)` entry
(the sandbox image must have its toolchain).

Tests are stdin/stdout pairs (output compared token by token, floats within 1e-6) or, for
Python, function calls: `input` is a call expression such as `add(1, 2)`, `output` the expected
value as a Python literal; a small driver imports the program as a module and sends back the
returned value, which the host compares (the expected output never enters the sandbox, for
either kind of test).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlclimb.schemas.records import TestCase

from .sandbox import Limits, Sandbox, Status


@dataclass(frozen=True)
class Language:
    name: str
    source: str
    run: str
    compile: str | None = None
    aliases: tuple[str, ...] = ()
    call_tests: bool = False  # function-call tests supported (a driver exists)


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language(
            "python", "main.py", "python3 main.py", aliases=("py", "python3"), call_tests=True
        ),
        Language(
            "cpp",
            "main.cpp",
            "./main",
            compile="g++ -O2 -std=c++17 -pipe -o main main.cpp",
            aliases=("c++", "cpp17", "cxx", "g++", "cc"),
        ),
    )
}
_ALIASES = {alias: lang for lang in LANGUAGES.values() for alias in (lang.name, *lang.aliases)}


def get_language(name: str) -> Language:
    lang = _ALIASES.get(name.strip().lower())
    if lang is None:
        raise KeyError(f"unsupported language {name!r}; supported: {', '.join(LANGUAGES)}")
    return lang


# Compiling needs more room than most problems' limits allow the program itself.
COMPILE_LIMITS = Limits(wall_s=60, memory_mb=1024, processes=64, output_bytes=64 << 10)

# Function-call tests: the driver runs in the sandbox with the call expression on stdin, imports
# the program, evaluates the call and writes the returned value, as tagged JSON of plain data
# (read through the builtin types' own methods: no __eq__ or __repr__ of the program's objects
# takes part), to the original stdout; the program's own prints go to stderr. The expected value never enters the
# sandbox: the host decodes the value and compares. Nothing inside the program's process can be
# kept from the program, and nothing needs to be: whatever it writes to the driver's channel
# (fd 1) is just a value it chose, which it could have returned; it cannot learn the expected one.
CALL_DRIVER = r"""
import importlib.util, json, math, os, sys
expr = sys.stdin.read()
channel = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdin = open(os.devnull)
sys.set_int_max_str_digits(0)
spec = importlib.util.spec_from_file_location("solution", "main.py")
mod = importlib.util.module_from_spec(spec)
sys.modules["solution"] = mod
spec.loader.exec_module(mod)
got = eval(expr, vars(mod))
def plain(x):
    # Values as their builtin base type holds them (a namedtuple as a tuple, a Counter as a
    # dict), read through the base type's own methods: no method of the program's runs.
    if x is None or type(x) is bool:
        return x
    if isinstance(x, int):
        return int.__int__(x)
    if isinstance(x, float):
        x = float.__float__(x)
        return x if math.isfinite(x) else {"__float__": repr(x)}
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, list):
        return [plain(v) for v in list.__iter__(x)]
    if isinstance(x, tuple):
        return [plain(v) for v in tuple.__iter__(x)]
    if isinstance(x, (set, frozenset)):
        it = set.__iter__(x) if isinstance(x, set) else frozenset.__iter__(x)
        return {"__set__": [plain(v) for v in it]}
    if isinstance(x, dict):
        return {"__dict__": [[plain(k), plain(v)] for k, v in dict.items(x)]}
    if isinstance(x, bytes):
        return {"__bytes__": bytes.hex(x)}
    raise TypeError(f"the function returned {type(x).__name__}, not plain data (numbers, strings, lists, dicts, ...)")
channel.write(json.dumps(plain(got)))
channel.close()
"""
CALL_COMMAND = ["python3", "-I", "-B", "-c", CALL_DRIVER]


def _decode(tagged):
    """The driver's tagged JSON back to Python values (tuples arrive as lists)."""
    if isinstance(tagged, list):
        return [_decode(v) for v in tagged]
    if isinstance(tagged, dict):
        if "__float__" in tagged:
            return float(tagged["__float__"])
        if "__set__" in tagged:
            return {_hashable(_decode(v)) for v in tagged["__set__"]}
        if "__dict__" in tagged:
            return {_hashable(_decode(k)): _decode(v) for k, v in tagged["__dict__"]}
        if "__bytes__" in tagged:
            return bytes.fromhex(tagged["__bytes__"])
        raise ValueError(f"unknown tag {sorted(tagged)[:3]}")
    return tagged


def _hashable(value):
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def _normalize(value):
    """Expected values as the driver sends returned ones: tuples as lists, throughout."""
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, dict):
        return {_hashable(_normalize(k)): _normalize(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return {_hashable(_normalize(v)) for v in value}
    return value


def expected_value(text: str):
    """A call test's expected value: a Python literal (or JSON: true/null). Never evaluated as
    code. Raises ValueError when it is neither."""
    try:
        return _normalize(ast.literal_eval(text.strip()))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        return _normalize(json.loads(text))
    except (ValueError, RecursionError):
        raise ValueError(f"expected value is not a Python literal: {text[:60]!r}") from None


def values_match(got, want) -> bool:
    """Equal (Python's ==: True matches 1), with floats within 1e-6 relative to max(1, |want|)
    at any depth of lists and dicts."""
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(map(values_match, got, want))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(values_match(got[k], want[k]) for k in got)
    if isinstance(got, float) or isinstance(want, float):
        if not (isinstance(got, int | float) and isinstance(want, int | float)):
            return False
        return got == want or abs(got - want) <= 1e-6 * max(1.0, abs(want))
    return got == want


def _tokens_equal(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-6)


def outputs_match(got: str, expected: str) -> bool:
    """Whitespace-insensitive, token by token; numbers equal within 1e-6."""
    g, e = got.split(), expected.split()
    return len(g) == len(e) and all(_tokens_equal(x, y) for x, y in zip(g, e, strict=True))


@dataclass
class TestOutcome:
    __test__ = False  # not a pytest class
    status: str  # OK (passed) | WA | CE | RE | TLE | MLE | OLE | BLOCKED | ERROR
    passed: bool
    output: str = ""  # the program's stdout (trimmed), for agreement checks and reports
    wall_s: float = 0.0
    detail: str = ""


@dataclass
class RunReport:
    language: str
    compiled: bool = True
    compile_error: str = ""
    outcomes: list[TestOutcome] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def all_passed(self) -> bool:
        return bool(self.outcomes) and all(o.passed for o in self.outcomes)

    def first_failure(self) -> tuple[int, TestOutcome] | None:
        return next(((i, o) for i, o in enumerate(self.outcomes) if not o.passed), None)

    def summary(self) -> str:
        if not self.compiled:
            return f"compile error: {self.compile_error[:200]}"
        text = f"{self.passed}/{len(self.outcomes)} tests passed"
        if (fail := self.first_failure()) is not None:
            i, o = fail
            text += f"; first failure: test {i} {o.status}" + (f" ({o.detail})" if o.detail else "")
        return text

    def to_dict(self) -> dict:
        return {
            "language": self.language,
            "compiled": self.compiled,
            "passed": self.passed,
            "statuses": [o.status for o in self.outcomes],
        }


def run_tests(
    sandbox: Sandbox,
    code: str,
    language: str,
    tests: Sequence[TestCase],
    *,
    time_limit_s: float = 6.0,
    memory_mb: int = 512,
    stop_on_failure: bool = False,
    keep_output: int = 4096,
) -> RunReport:
    """Compile once (if the language needs it), then run every test in one sandbox session."""
    lang = get_language(language)
    report = RunReport(lang.name)
    limits = Limits(wall_s=time_limit_s, memory_mb=memory_mb, processes=32)
    session_limits = COMPILE_LIMITS if lang.compile else limits
    session_limits = session_limits.with_(memory_mb=max(session_limits.memory_mb, memory_mb))
    files: dict[str, str] = {lang.source: code}
    try:
        session = sandbox.session(files=files, limits=session_limits)
    except Exception as e:
        report.outcomes = [TestOutcome("ERROR", False, detail=f"sandbox: {e}"[:200]) for _ in tests]
        return report
    with session:
        if lang.compile:
            r = session.run(lang.compile, limits=COMPILE_LIMITS)
            if not r.ok:
                report.compiled = False
                report.compile_error = (r.stderr or r.detail)[-2000:]
                status = "ERROR" if r.status == Status.ERROR else "CE"
                report.outcomes = [TestOutcome(status, False, detail=r.detail) for _ in tests]
                return report
        for i, test in enumerate(tests):
            outcome = _run_one(session, lang, test, i, limits, keep_output)
            report.outcomes.append(outcome)
            if stop_on_failure and not outcome.passed:
                break
    return report


def _run_one(
    session, lang: Language, test: TestCase, i: int, limits: Limits, keep: int
) -> TestOutcome:
    if test.kind == "call":
        if not lang.call_tests:
            return TestOutcome(
                "ERROR", False, detail=f"function-call tests are not supported for {lang.name}"
            )
        try:
            want = expected_value(test.output)
        except ValueError as e:
            return TestOutcome("ERROR", False, detail=str(e))
        r = session.run(CALL_COMMAND, stdin=test.input, limits=limits)
        output = r.stdout.strip()[:keep]
        passed, detail = False, r.detail
        if r.ok:
            try:
                got = _decode(json.loads(r.stdout))
            except (ValueError, TypeError, KeyError, RecursionError):
                last = r.stderr.strip().splitlines()[-1:] or ["nothing"]
                detail = f"no returned value read: {last[0][:120]}"
            else:
                passed = values_match(got, want)
                detail = "" if passed else f"expected {test.output[:40]!r}, got {repr(got)[:40]}"
        elif r.stderr.strip():
            detail = f"{detail}: {r.stderr.strip().splitlines()[-1][:120]}"
    else:
        r = session.run(lang.run, stdin=test.input, limits=limits)
        output = r.stdout[:keep]
        passed = r.ok and outputs_match(r.stdout, test.output)
        detail = r.detail or (
            "" if passed else f"expected {test.output[:40]!r}, got {r.stdout[:40]!r}"
        )
        if r.status != Status.OK and r.stderr:
            detail = (
                f"{detail}: {r.stderr.strip().splitlines()[-1][:120]}"
                if r.stderr.strip()
                else detail
            )
    status = "OK" if passed else ("WA" if r.status == Status.OK else str(r.status))
    return TestOutcome(status, passed, output, r.wall_s, detail if not passed else "")


def hardest_tests(tests: Sequence[TestCase], k: int) -> list[int]:
    """Indices of the k tests with the longest inputs (a proxy for hardness), in input order."""
    if len(tests) <= k:
        return list(range(len(tests)))
    ranked = sorted(range(len(tests)), key=lambda i: (-len(tests[i].input), i))[:k]
    return sorted(ranked)


def normalized_output(text: str) -> str:
    return json.dumps(text.split())
