"""answer_consistency: antiderivatives, stated maxima and minima, and the bound on every check."""

from __future__ import annotations

import pytest

from rlclimb.pipelines.stage import Drop, StageContext
from rlclimb.stages.curate import answer_consistency as ac
from rlclimb.stages.curate.usability import UsabilityStage


@pytest.mark.parametrize("question,answer,wrong", [
    # Thompson: the book's x^{a+1}/(a+1) (log x − 1/(a+1)) lost its brackets
    ("Find ∫ x^a log_ε x dx.", "\\frac{x^{a+1}}{a + 1} log_ε x − \\frac{1}{a + 1} + C.", True),
    ("Find ∫ x^a log_ε x dx.", "\\frac{x^{a+1}}{a + 1} (log_ε x − \\frac{1}{a + 1}) + C.", False),
    ("Find ∫ x^2ε^x dx.", "ε^x(x^2 −2x + 2) + C.", False),  # ε is Euler's number
    ("Find ∫ \\sqrt{a^2 −x^2} dx.", "\\frac{x\\sqrt{a^2 −x^2}}{2} + a^2 x + C.", True),
    # not checked: no constant (a definite value?), a function name left as letters
    ("Find ∫ x^a log_ε x dx.", "\\frac{x^{a+1}}{a + 1} log_ε x", False),
    ("Find ∫ sin^2 θ dθ.", "\\frac{θ}{2} + C.", False),
    # the differential in the numerator, Thompson's "arc tan", a log of a fraction
    ("Find ∫ \\frac{dx}{1 −x^4}.", "\\frac{1}{4} log_ε \\frac{1 + x}{1 −x} + \\frac{1}{2} arc tan x + C.", False),
    ("Find ∫ \\frac{dx}{1 −x^4}.", "\\frac{1}{4} log_ε \\frac{1 + x}{1 −x} + \\frac{1}{3} arc tan x + C.", True),
])
def test_an_antiderivative_is_checked_against_its_integrand(question, answer, wrong):
    assert (ac.integral_mismatch(question, answer) is not None) is wrong


@pytest.mark.parametrize("question,answer,wrong", [
    # the only critical point of x + 2xy + y is a saddle: the book's "Minimum" is wrong
    ("Find the maximum or minimum of the function u = x + 2xy + y.", "Minimum for x = y = −\\frac{1}{2}.", True),
    ("Find the maximum or minimum of u = \\frac{ε^{x+y}}{xy}.", "Minimum for x = y = 1.", False),
    ("If y = x^5 −5x, find what values of x will make y a maximum or a minimum.", "Max. for x = −1; min. for x = 1.", False),
    ("If y = x^5 −5x, find what values of x will make y a maximum or a minimum.", "Max. for x = 1; min. for x = −1.", True),
    ("If y = x^5 −5x, find what values of x will make y a maximum or a minimum.", "Max. for x = 2.", True),  # not critical
    ("What values of x will make y a maximum and a minimum, if y = \\frac{x^2}{x + 1}?",
     "Min.: x = 0, y = 0; max.: x = −2, y = −4.", False),
    ("Find the minimum or maximum of y = x^x.", "Min. for x = \\frac{1}{ε}.", False),
    # rounded decimals and text the clauses do not cover are not checked
    ("Find the maximum or minimum of y = θ cos θ.", "θ = cot θ; θ = ±0.86; is max. for +θ, min. for −θ.", False),
    # rounded decimals: the stated function value at the stated point, within 1% (Thompson's key lost a minus)
    ("Find the maxima and minima of y = \\frac{5x}{2 + x^2}.", "Max.: x = 1.414, y = 1.7675. Min.: x = −1.414, y = 1.7675.", True),
    ("Find the maxima and minima of y = \\frac{5x}{2 + x^2}.", "Max.: x = 1.414, y = 1.7675. Min.: x = −1.414, y = −1.7675.", False),
])
def test_a_stated_extremum_is_checked_by_the_second_derivative_test(question, answer, wrong):
    assert (ac.extremum_mismatch(question, answer) is not None) is wrong


def test_the_usability_stage_drops_a_saddle_called_a_minimum():
    record = {"question": "Find the maximum or minimum of the function u = x + 2xy + y.",
              "answer": "Minimum for x = y = −\\frac{1}{2}.", "answer_type": "text", "tags": [], "meta": "{}"}
    out = UsabilityStage().embedded(record, StageContext())
    assert isinstance(out, Drop) and out.reason == "answer_mismatch" and "saddle" in out.detail


def _tower(n: int) -> str:
    t = "x"
    for _ in range(n):
        t = f"(x+{t})^{{{t}}}"
    return t


def test_a_hostile_formula_is_cannot_tell_not_a_crash(monkeypatch):
    monkeypatch.setattr(ac, "MAX_CHARS", 100_000)  # past the size guard: sympy overflows on this tower
    assert ac.derivative_mismatch(f"Differentiate y = {_tower(6)}.", "x") is None
    monkeypatch.undo()
    assert ac.derivative_mismatch(f"Differentiate y = {_tower(6)}.", "x") is None  # the size guard


def test_a_check_that_runs_too_long_is_stopped(monkeypatch):
    import time

    import sympy

    def slow_diff(*args, **kwargs):  # stands in for a derivative sympy takes forever over
        end = time.monotonic() + 30
        while time.monotonic() < end:
            pass
        return sympy.Integer(0)

    monkeypatch.setattr(ac, "BOUND_S", 0.2)
    monkeypatch.setattr(sympy, "diff", slow_diff)
    # unbounded, the derivative 0 would differ from the gold and report a mismatch after 30 s
    assert ac.derivative_mismatch("Differentiate y = x^3.", "3x^2") is None
    monkeypatch.undo()
    assert ac.derivative_mismatch("Differentiate y = x^3.", "3x^3") is not None  # the alarm is gone afterwards


def _patch_diff(monkeypatch, before, result=None) -> list:
    """sympy.diff replaced by one that records its calls and runs `before()` first; it returns
    `result` when given, else the real derivative. Returns the list of calls."""
    import sympy

    real_diff, calls = sympy.diff, []

    def diff(*args, **kwargs):
        calls.append(args)
        before()
        return real_diff(*args, **kwargs) if result is None else result

    monkeypatch.setattr(sympy, "diff", diff)
    return calls


def test_the_bound_is_cpu_time_so_a_loaded_machine_gives_the_same_verdict(monkeypatch):
    import time

    monkeypatch.setattr(ac, "BOUND_S", 0.2)
    # wall time passes, no CPU time: what a busy machine looks like
    calls = _patch_diff(monkeypatch, lambda: time.sleep(0.6))
    assert ac.derivative_mismatch("Differentiate y = x^3.", "3x^3") is not None
    assert calls


def test_other_threads_cpu_time_does_not_count(monkeypatch):
    import threading
    import time

    def busy(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def other_thread_computes():  # while the check waits
        worker = threading.Thread(target=busy, args=(0.6,))
        worker.start()
        worker.join()

    monkeypatch.setattr(ac, "BOUND_S", 0.2)
    calls = _patch_diff(monkeypatch, other_thread_computes)
    assert ac.derivative_mismatch("Differentiate y = x^4.", "4x^4") is not None
    assert calls


def test_a_check_that_blocks_is_stopped_by_the_wall_clock_backstop(monkeypatch):
    import time

    import sympy

    monkeypatch.setattr(ac, "BACKSTOP_S", 0.3)
    calls = _patch_diff(monkeypatch, lambda: time.sleep(30), result=sympy.Integer(0))
    # unbounded, the derivative 0 would differ from the gold and report a mismatch after 30 s
    assert ac.derivative_mismatch("Differentiate y = x^3.", "3x^2") is None
    assert calls
