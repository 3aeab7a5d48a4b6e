"""Does the gold answer check against the question as printed? Two asks a computer algebra system
can settle: "Differentiate y = f(x)" answered g (is f' = g?), and an initial condition "x(0) = π/2"
with an explicit solution "x = f(t)" (is f(0) = π/2?). A gold that fails is wrong for the question
as it now reads: the text layer changed the question (a radical's index, a lost bracket) or the
key is wrong; either way the pair does not grade. Anything that does not parse cleanly is left
alone (None): these checks only ever find a mismatch they can show.
"""

from __future__ import annotations

import re

from rlclimb.environments import answer_check as ac

_FUNCTIONS = r"sin|cos|tan|cot|sec|csc|log|ln|exp|arcsin|arccos|arctan"


def _latex(text: str) -> str:
    """The book's plain notation as LaTeX the parser reads: "log_ε cos x" -> "\\ln(\\cos(x))",
    "sin^{−1} t" -> "\\arcsin(t)", "cotan x" -> "\\cot(x)"."""
    t = text.strip().rstrip(".")
    t = re.sub(r"\blog_\{?[εe]\}?", "ln", t)
    t = re.sub(r"\bcotan\b", "cot", t)
    t = re.sub(r"\b(sin|cos|tan)\^\{[−-]1\}", r"arc\1", t)
    t = re.sub(r"\\(?=(?:%s)\b)" % _FUNCTIONS, "", t)
    # a function applied without brackets to one factor: "cos x", "ln cos x" (innermost first)
    for _ in range(3):
        t = re.sub(r"\b(%s)\s+([A-Za-zθ]|\d+[A-Za-zθ]?)(?![\w(^])" % _FUNCTIONS, r"\1(\2)", t)
        t = re.sub(r"\b(%s)\s+((?:%s)\([^()]*\))" % (_FUNCTIONS, _FUNCTIONS), r"\1(\2)", t)
    t = re.sub(r"(?<![A-Za-z\\])(%s)\(" % _FUNCTIONS, r"\\\1(", t)
    return t.replace("−", "-")


def _expr(text: str):
    import sympy

    latex = _latex(text)
    if re.search(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", " ", latex)):
        return None  # prose, or letters run together: not one formula
    try:
        value = ac._parse(ac._math_form(latex))
    except Exception:  # noqa: BLE001  # the parser's errors are many; unparsed is "cannot tell"
        return None
    if not isinstance(value, sympy.Expr) or isinstance(value, sympy.Symbol) and not value.free_symbols:
        return None
    return value


def _differ(f, g, var) -> bool | None:
    """Whether f and g differ at sample points of `var` (None: cannot tell, e.g. nothing is finite)."""
    import sympy

    seen = 0
    for x in (0.3, 0.55, 0.8, 1.7):
        try:
            a, b = complex(f.subs(var, x).evalf()), complex(g.subs(var, x).evalf())
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if not all(map(lambda z: abs(z) < 1e12, (a, b))) or any(z != z for z in (a.real, b.real)):
            continue
        seen += 1
        if abs(a - b) > 1e-6 * max(1.0, abs(a), abs(b)):
            return True
    return False if seen >= 2 else None


_DERIVATIVE_ASK = re.compile(r"\bdifferentiat|\\frac\{dy\}\{dx\}|\bdy/dx\b", re.I)
_FUNCTION_LINE = re.compile(r"^\s*(?:differentiate\s+)?y\s*=\s*(?P<f>[^;=]+?)\s*\.?\s*$|^\s*differentiate\s+(?P<g>[^;=]+?)\s*\.?\s*$", re.I)


def derivative_mismatch(question: str, answer: str) -> str | None:
    """"Differentiate y = \\sqrt[3]{x^{−5}}." answered "−\\frac{5}{3} x^{−\\frac{8}{5}}": the derivative
    of the printed function is −5/3 x^{−8/3}, not the gold."""
    import sympy

    if not _DERIVATIVE_ASK.search(question) or re.search(r"\b(?:and|then)\s+(?:find|calculate|compute)|;|\bat\s+x\s*=", question, re.I):
        return None  # one ask only: "... and calculate the values at x = 0, ..." asks more
    m = _FUNCTION_LINE.match(question.strip().split("\n")[-1])
    if m is None:
        return None
    f = _expr(m.group("f") or m.group("g"))
    gold = re.sub(r"^\s*(?:\\frac\{d[a-zθ]\}\{d[a-zθ]\}|d[a-z]/d[a-z]|y')\s*=\s*", "", answer.strip())
    if "=" in gold:
        gold = gold.rsplit("=", 1)[1]  # "\frac{cos x}{sin x} = cotan x": its last form
    g = _expr(gold)
    if f is None or g is None or len(f.free_symbols) != 1 or not g.free_symbols <= f.free_symbols:
        return None
    var = next(iter(f.free_symbols))
    try:
        derivative = sympy.diff(f, var)
    except Exception:  # noqa: BLE001
        return None
    if _differ(derivative, g, var):
        return f"d/d{var} of {m.group('f') or m.group('g')} is not the gold {gold.strip()[:40]!r}"
    return None


_INITIAL = re.compile(r"(?<![A-Za-z])([a-zA-Z])\((0)\)\s*=\s*([^,;]+?)(?=\s*(?:,|;|\.\s|\.?$|\s+(?:et|and|pour|for)\b))")
_EXPLICIT = re.compile(r"^\s*([a-zA-Z])\s*=\s*(.+?)\s*\.?\s*$")


def initial_value_mismatch(question: str, answer: str) -> str | None:
    """"x′ = 1/cos(x), x(0) = π/2." answered "x = sin^{−1} t + 1": at t = 0 the gold gives 1, not π/2
    (the book's sin^{−1}(t + 1) lost its brackets)."""
    import sympy

    gold = _EXPLICIT.match(answer)
    if gold is None or "=" in gold.group(2):
        return None
    for name, _, value in _INITIAL.findall(question):
        if name != gold.group(1):
            continue
        f, v = _expr(gold.group(2)), _expr(value)
        if f is None or v is None or v.free_symbols or len(f.free_symbols) != 1:
            return None
        var = next(iter(f.free_symbols))
        try:
            at0 = complex(f.subs(var, 0).evalf())
            want = complex(v.evalf())
        except (TypeError, ValueError, ZeroDivisionError):
            return None
        if abs(at0 - want) > 1e-6 * max(1.0, abs(want)) and abs(at0) < 1e12:
            return f"{name}(0) = {value.strip()} but the gold gives {sympy.nsimplify(at0.real) if not at0.imag else at0}"
    return None
