"""Programs against tests in the sandbox: Python and C++, stdio and function-call tests, and the
ways a solution fails (wrong answer, compile error, crash, time, memory)."""

from __future__ import annotations

import pytest
from helpers.sandboxes import fast_backend, sandbox_or_skip

from rlclimb.environments.code_run import get_language, hardest_tests, outputs_match, run_tests
from rlclimb.schemas.records import TestCase

SUM_TESTS = [
    TestCase(input=f"{a} {b}\n", output=f"{a + b}\n")
    for a, b in [(1, 2), (-3, 3), (10**17, 10**17), (5, 6), (0, 0)]
]
PY_SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
CPP_SUM = "#include <iostream>\nint main(){long long a,b; std::cin>>a>>b; std::cout<<a+b<<'\\n';}\n"


@pytest.fixture(scope="module")
def sb():
    return sandbox_or_skip(fast_backend())


def test_python_and_cpp_pass(sb):
    for code, lang in ((PY_SUM, "python"), (CPP_SUM, "c++")):
        report = run_tests(sb, code, lang, SUM_TESTS, time_limit_s=5)
        assert report.all_passed, report.summary()
        assert report.language == get_language(lang).name


def test_failures_have_their_status(sb):
    wrong = run_tests(sb, "print(0)", "python", SUM_TESTS, time_limit_s=5)
    assert [o.status for o in wrong.outcomes] == ["WA", "OK", "WA", "WA", "OK"]
    assert "first failure: test 0 WA" in wrong.summary()
    ce = run_tests(sb, "int main( {", "cpp", SUM_TESTS, time_limit_s=5)
    assert (
        not ce.compiled
        and {o.status for o in ce.outcomes} == {"CE"}
        and "error" in ce.compile_error
    )
    crash = run_tests(sb, "raise SystemExit(4)", "python", SUM_TESTS[:1], time_limit_s=5)
    assert crash.outcomes[0].status == "RE"
    slow = run_tests(sb, "while True: pass", "python", SUM_TESTS[:1], time_limit_s=1)
    assert slow.outcomes[0].status == "TLE"
    hog = '#include <vector>\n#include <cstdio>\nint main(){std::vector<char> v(10000000000ULL, 1); std::printf("%d", v[5]);}\n'
    mle = run_tests(sb, hog, "cpp", SUM_TESTS[:1], time_limit_s=5, memory_mb=256)
    assert mle.outcomes[0].status == "MLE", mle.outcomes[0]


def test_stop_on_failure_skips_the_rest(sb):
    report = run_tests(sb, "print(99)", "python", SUM_TESTS, time_limit_s=5, stop_on_failure=True)
    assert len(report.outcomes) == 1 and not report.all_passed


def test_function_call_tests(sb):
    tests = [
        TestCase(input="add(1, 2)", output="3", kind="call"),
        TestCase(input="pair(2)", output="(2, 4)", kind="call"),
    ]
    code = "def add(a, b):\n    return a + b\n\ndef pair(x):\n    return [x, 2 * x]\n"
    assert run_tests(sb, code, "python", tests).all_passed
    bad = run_tests(sb, code.replace("a + b", "a - b"), "python", tests)
    assert [o.passed for o in bad.outcomes] == [False, True]
    cpp = run_tests(sb, CPP_SUM, "cpp", tests[:1])
    assert cpp.outcomes[0].status == "ERROR" and "not supported" in cpp.outcomes[0].detail


def test_output_comparison_and_sampling():
    assert outputs_match("1 2\n3  \n\n", "1 2 3")
    assert outputs_match("0.3333333", "0.33333333")
    assert not outputs_match("1 2", "1 2 3") and not outputs_match("abc", "abd")
    tests = [TestCase(input="x" * n, output="") for n in (5, 1, 9, 3, 7)]
    assert hardest_tests(tests, 2) == [2, 4]
    assert hardest_tests(tests, 10) == [0, 1, 2, 3, 4]
    with pytest.raises(KeyError, match="unsupported language 'cobol'"):
        get_language("cobol")


@pytest.mark.docker
def test_cpp_in_docker():
    sb = sandbox_or_skip("docker")
    assert run_tests(sb, CPP_SUM, "cpp", SUM_TESTS, time_limit_s=5).all_passed
    assert run_tests(sb, PY_SUM, "python", SUM_TESTS, time_limit_s=5).all_passed


def test_call_results_are_plain_data(sb):
    """Returned values are compared as the builtin data they hold: a namedtuple, a Counter or an
    IntEnum passes like the tuple, dict or int it is; no method of the program's decides."""
    tests = [
        TestCase(input="f(0)", output="(1, 2)", kind="call"),
        TestCase(input="f(1)", output="{'a': 2}", kind="call"),
        TestCase(input="f(2)", output="3", kind="call"),
        TestCase(input="f(3)", output="[1.5, None, True, 'x', {1, 2}]", kind="call"),
        TestCase(input="f(4)", output="b'\\x00'", kind="call"),
        TestCase(input="f(5)", output="float('inf')", kind="call"),
    ]
    code = (
        "import collections, enum\nP = collections.namedtuple('P', 'x y')\n"
        "class E(enum.IntEnum):\n    THREE = 3\n"
        "def f(i):\n    return [P(1, 2), collections.Counter('aa'), E.THREE,"
        " (1.5000000001, None, True, 'x', frozenset({1, 2})), b'\\x00', 1e999][i]\n"
    )
    report = run_tests(sb, code, "python", tests)
    assert [o.status for o in report.outcomes] == ["OK"] * 5 + ["ERROR"], report.outcomes
    assert "not a Python literal" in report.outcomes[5].detail
    shapes = run_tests(sb, "def f(i):\n    return (lambda: 0)\n", "python", tests[:1])
    assert shapes.outcomes[0].status == "RE" and "not plain data" in shapes.outcomes[0].detail
