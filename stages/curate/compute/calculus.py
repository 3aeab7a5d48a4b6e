"""Calculus kinds: derivatives (also Thompson's chains and partials), antiderivatives, and an explicit
solution of a differential equation with its initial values (moved from compute.py, unchanged)."""

from __future__ import annotations

import re

from ..answer_consistency import (
    _EXPLICIT,
    _SOLVE_ASK,
    _differ,
    _e_constant,
    _expr,
    bounded,
    derivative_values,
    mentions_derivative,
    ode_clauses,
    ode_sides,
    placeholder_marks,
)
from ._common import _ELLIPSIS, Computed, _same, _split, _value

# ---- derivatives and antiderivatives ----------------------------------------------------------------------

_DIFF_VERB = re.compile(r"^\s*(?:differentiate|find\s+the\s+differential\s+coefficient\s+of)\s+(?:the\s+following\s*:?\s*)?", re.I)
_DEF = r"(?P<name>[a-zA-Z])\s*=\s*(?P<f>[^=;?]+?)"


def _derivative_ask(question: str):
    """(function text, name of the function, variable or None) for "Differentiate y = f", "Differentiate
    the following:\\n(b) y = f.", "Find the differential coefficient of y = f.", "If w = f, find \\frac{dw}{dt}."."""
    q = question.strip()
    if re.search(r"\b(?:and|then|also)\s+(?:find|calculate|compute|deduce|plot)|;|\bat\s+[a-z]\s*=|\bwith\s+respect\s+to\b|\bwhen\b|\bsecond\b|d\^\{?2", q, re.I):
        return None
    stem, item = _split(q)
    lines = q.split("\n")
    if stem == q and len(lines) == 2 and re.match(r"^\s*differentiate\s+the\s+following\s*:?\s*$", lines[0], re.I):
        stem, item = lines[0], lines[1]
    m = re.match(rf"^\s*if\s+{_DEF}\s*,?\s*find\s+\\frac\{{d(?P=name)\}}\{{d(?P<v>[a-zθ])\}}\s*\.?\s*$", q, re.I)
    if m:
        return m.group("f"), m.group("name"), m.group("v")
    if stem != q and re.match(r"^\s*differentiate(?:\s+the\s+following)?\s*:?\s*$", stem, re.I) and "\n" not in stem:
        line = item
    else:
        if "\n" in q:
            return None
        if not _DIFF_VERB.match(q):
            return None
        line = _DIFF_VERB.sub("", q)
    m = re.match(rf"^\s*(?:differentiate\s+)?{_DEF}\s*\.?\s*$", line, re.I)
    if m is None:
        return None
    return m.group("f"), m.group("name"), None


def _gold_formula(answer: str, lhs: str = r"\\frac\{d[a-zθ]*\}\{d[a-zθ]\}|d[a-z]/d[a-z]|[a-z]'|[a-zA-Z]") -> str | None:
    """The gold's one formula: "\\frac{dy}{dx} = 13x^{12}." -> "13x^{12}"; None for two answers or prose."""
    g = answer.strip().rstrip(".").strip()
    if ";" in g or "," in g or _ELLIPSIS.search(g) or re.search(r"\b(?:or|and|where|for)\b", g):
        return None
    sides = [s.strip() for s in re.split(r"(?<![<>!\\])=", g)]
    if len(sides) > 2:
        return None
    if len(sides) == 2:
        if not re.fullmatch(lhs, sides[0].replace(" ", "")):
            return None
        g = sides[1]
    return g or None


@bounded
def derivative(question: str, answer: str) -> Computed | None:
    """"Differentiate\\n(c) y = (x + a)^2." answered "2x + 2a": d/dx of the printed function, compared at
    sample points (the book's constants at sample values)."""
    import sympy

    ask = _derivative_ask(question)
    if ask is None:
        return None
    text, name, var_name = ask
    if _ELLIPSIS.search(text) or "°" in text or "◦" in text:
        return None
    gold = _gold_formula(answer)
    f, g = _expr(text), _expr(gold) if gold else None
    if f is None or g is None:
        return None
    f, g = _e_constant(f), _e_constant(g)
    symbols = {s.name: s for s in f.free_symbols}
    if var_name is not None:
        var = symbols.get(var_name) or symbols.get({"θ": "theta"}.get(var_name, var_name))
    else:
        candidates = [symbols[v] for v in ("x", "t", "theta", "θ", "z", "u", "y") if v in symbols and v != name]
        var = candidates[0] if len(set(candidates)) == 1 or (len(f.free_symbols) == 1 and candidates) else None
        if var is None and len(f.free_symbols) == 1:
            var = next(iter(f.free_symbols))
    if var is None or name in symbols or not {s.name for s in g.free_symbols} <= set(symbols):
        return None
    params = {s: sympy.Float(0.7 + 0.37 * i) for i, s in enumerate(sorted(f.free_symbols - {var}, key=lambda s: s.name))}
    d = sympy.diff(f, var)
    differ = _differ_real(f.subs(params), d.subs(params), g.subs(params), var)
    if differ is None:
        return None
    return Computed("derivative", str(sympy.simplify(d))[:200], not differ, sure=True,
                    detail=f"d/d{var} of {text.strip()[:40]} is {str(d)[:60]}")


def _differ_real(f, d, g, var) -> bool | None:
    """Whether d and g differ where the function f is real and finite (3 such points at least): equal
    forms differ off the real line by a branch ("\\sqrt{(a −x^2)^3}" and "(a −x^2)^{3/2}" for x^2 > a)."""
    seen = 0
    for x in (0.3, 0.55, 0.8, 1.1, 1.7, 2.3, 0.15, 3.1):
        try:
            values = [complex(e.subs(var, x).evalf()) for e in (f, d, g)]
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if any(z != z or abs(z) > 1e12 or abs(z.imag) > 1e-9 * max(1.0, abs(z)) for z in values):
            continue
        seen += 1
        a, b = values[1].real, values[2].real
        if abs(a - b) > 1e-6 * max(1.0, abs(a), abs(b)):
            return True
    return False if seen >= 3 else None


_INTEGRAL_ASK = re.compile(r"^\s*(?:find|evaluate|compute)?\s*∫\s*(?P<f>[^∫=]+?)\s*\\?,?\s*d(?P<v>[a-zθ])\s*\.?\s*$", re.I)
_DY_ASK = re.compile(r"^\s*if\s+\\frac\{dy\}\{dx\}\s*=\s*(?P<f>[^=;]+?)\s*[;,]?\s*find\s+y\s*\.?\s*$", re.I)
_CONSTANT = re.compile(r"\s*\+\s*(?:C|c|K|const\.?)\s*\.?\s*$")


@bounded
def antiderivative(question: str, answer: str) -> Computed | None:
    """"Find ∫ (x^2 + a) dx." or "If \\frac{dy}{dx} = 2x + 3, find y." answered "x^2 + 3x + C.": the gold's
    derivative against the integrand. The gold must carry its constant ("+ C")."""
    import sympy

    stem, item = _split(question)
    line = item if stem != question.strip() and re.search(r"find\s+y|integrat", stem, re.I) else question.strip()
    line = re.sub(r"∫\s*\\frac\{\s*d([a-zθ])\s*\}\{([^{}]+)\}", r"∫ \\frac{1}{\2} d\1", line)
    m = _INTEGRAL_ASK.match(line) or _DY_ASK.match(line) or re.match(r"^\s*if\s+\\frac\{dy\}\{dx\}\s*=\s*(?P<f>[^=;]+?)\s*\.?\s*$", line, re.I)
    if m is None or "(2)" in m.group("f") or _ELLIPSIS.search(m.group("f")):
        return None
    if m.re is not _INTEGRAL_ASK and not re.search(r"find\s+y", question, re.I):
        return None
    gold = answer.strip()
    gold = re.sub(r"^\s*y\s*=\s*", "", gold)
    if not _CONSTANT.search(gold) or "=" in gold or ";" in gold:
        return None
    f, g = _expr(m.group("f")), _expr(_CONSTANT.sub("", gold))
    if f is None or g is None:
        return None
    f, g = _e_constant(f), _e_constant(g)
    v = m.groupdict().get("v") or "x"
    names = ("θ", "theta") if v == "θ" else (v,)
    var = next((s for s in f.free_symbols | g.free_symbols if s.name in names), None)
    if var is None or not g.free_symbols <= f.free_symbols | {var}:
        return None
    params = {s: sympy.Float(0.7 + 0.37 * i) for i, s in enumerate(sorted((f + g).free_symbols - {var}, key=lambda s: s.name))}
    differ = _differ_real(g.subs(params), sympy.diff(g, var).subs(params), f.subs(params), var)
    if differ is None:
        return None
    return Computed("antiderivative", f"d/d{var} of the gold is {f}"[:200], not differ, sure=True,
                    detail=f"the gold's derivative is {'not ' if differ else ''}the integrand")


_DEFINITION = re.compile(r"^\s*(?:and\s+)?([a-z])\s*=\s*(.+?)\s*$")


@bounded
def chained_derivative(question: str, answer: str) -> Computed | None:
    """"If u = \\frac{1}{2}x^3; v = 3(u + u^2); and w = \\frac{1}{v^2}, find \\frac{dw}{dx}." (functions of
    functions, Thompson): the definitions substituted, the derivative against the gold. Also "Differentiate
    the expression F with respect to x alone, and with respect to y alone." and "Find the partial
    differential coefficients with respect to x, y and z, of the expression F." (golds listed with ";")."""
    import sympy

    q = question.strip()
    m = re.fullmatch(r"if\s+(.+?),\s*find\s+\\frac\{d([a-z])\}\{d([a-z])\}\s*\.?", q, re.I | re.S)
    if m and ";" in m.group(1):
        defs = [_DEFINITION.match(d) for d in m.group(1).split(";")]
        if any(d is None for d in defs) or m.group(2) != defs[-1].group(1):
            return None
        exprs = {}
        for d in defs:
            e = _expr(d.group(2))
            if e is None:
                return None
            e = e.subs({sym: exprs[sym.name] for sym in e.free_symbols if sym.name in exprs})
            exprs[d.group(1)] = e
        f = exprs[m.group(2)]
        gold = _gold_formula(answer)
        g = _expr(gold) if gold else None
        names = {s.name: s for s in f.free_symbols}
        if g is None or set(names) != {m.group(3)} or not {s.name for s in g.free_symbols} <= set(names):
            return None
        var = names[m.group(3)]
        g = g.subs({s: var for s in g.free_symbols})
        d = sympy.diff(f, var)
        differ = _differ_real(f, d, g, var)
        if differ is None:
            return None
        return Computed("derivative", str(sympy.simplify(d))[:200], not differ, detail=f"d{m.group(2)}/d{var} is {sympy.simplify(d)}")
    m = re.fullmatch(r"differentiate\s+the\s+expression\s+(.+?)\s+with\s+respect\s+to\s+([a-z])\s+alone\s*,\s*and\s+with\s+respect\s+to\s+([a-z])\s+alone\s*\.?", q, re.I) \
        or re.fullmatch(r"find\s+the\s+partial\s+differential\s+coefficients\s+with\s+respect\s+to\s+([a-z](?:\s*,\s*[a-z])*\s+and\s+[a-z])\s*,\s*of\s+the\s+expression\s+(.+?)\s*\.?", q, re.I)
    if m is None:
        return None
    if q.lower().startswith("differentiate"):
        body, variables = m.group(1), [m.group(2), m.group(3)]
    else:
        body, variables = m.group(2), re.findall(r"\b[a-z]\b", m.group(1))
    golds = [g.strip() for g in answer.strip().rstrip(".").split(";")]
    f = _expr(body)
    if f is None or len(golds) != len(variables) or any(_ELLIPSIS.search(g) or "=" in g for g in golds):
        return None
    names = {s.name: s for s in f.free_symbols}
    if set(variables) - set(names):
        return None
    want, bad = [], None
    for v, gtext in zip(variables, golds):
        g = _expr(gtext)
        if g is None or not {s.name for s in g.free_symbols} <= set(names):
            return None
        g = g.subs({s: names[s.name] for s in g.free_symbols})
        d = sympy.diff(f, names[v])
        others = {names[o]: sympy.Float(0.6 + 0.29 * i) for i, o in enumerate(sorted(set(names) - {v}))}
        differ = _differ_real(f.subs(others), d.subs(others), g.subs(others), names[v])
        if differ is None:
            return None
        want.append(str(d))
        if differ and bad is None:
            bad = f"∂/∂{v} is {d}"
    return Computed("derivative", "; ".join(want)[:200], bad is None, detail=bad or "")


# ---- an explicit solution of a differential equation with its initial values (Lebl) ------------------------------

_CONDITION0 = re.compile(r"(?<![A-Za-z_\\])([a-zA-Zφ])(′*|'*)\(\s*([−-]?\d+|π/2|\\frac\{π\}\{2\})\s*\)\s*=\s*([−-]?\s*[\w\\{}/.π]+?)(?=\s*(?:,|;|\.\s|\.?$|\s+(?:et|and|pour|for|où)\b))")


@bounded
def ode_solution(question: str, answer: str) -> Computed | None:
    """"Résolvez\\na) \\frac{dx}{dt} = −4x, x(0) = 9" answered "x= 9e^{−4t}": the gold substituted into the
    equation (at sample points) and into every printed initial value. Only agreement is reported here
    (answer_consistency's ode, initial and boundary checks report the disagreements); a gold that fails
    only a derivative's initial value is a doubt."""
    import sympy

    gold = _EXPLICIT.match(answer.strip())
    if gold is None or "=" in gold.group(2) or not _SOLVE_ASK.search(question) or re.search(r"∑|série|series|C_?\d?\b|\bC\b", question + answer):
        return None
    name = gold.group(1)
    q = re.sub(rf"\\frac\{{d\^\{{?2\}}?{re.escape(name)}\}}\{{d[a-z]\^\{{?2\}}?\}}", f"{name}^{{′′}}", question)
    stem, item = _split(q)
    body = item if stem != q.strip() else q
    parts = ode_clauses(body)
    conditions = [c for c in parts if _CONDITION0.fullmatch(c.strip().rstrip("."))]
    equations = [e for e in parts if e not in conditions and mentions_derivative(e, name)]
    if len(equations) != 1 or len(parts) != len(conditions) + 1:
        return None
    sides = ode_sides(equations[0], name)
    f = _expr(gold.group(2))
    if sides is None or f is None:
        return None
    eq, lhs, rhs = sides
    f = _e_constant(f)
    marks = placeholder_marks(lhs, rhs)
    others = (f.free_symbols | lhs.free_symbols | rhs.free_symbols) - marks
    if not marks or len(others) != 1:
        return None  # constants or a second letter: the check of answer_consistency covers those
    var = next(iter(others))
    residual = _e_constant((lhs - rhs).subs(derivative_values(f, var, marks)))
    if _differ(residual, sympy.Integer(0), var) is not False:
        return None  # a residual: answer_consistency's ode check decides
    for c in conditions:
        m = _CONDITION0.fullmatch(c.strip().rstrip("."))
        if m.group(1) != name:
            return None
        order = len(m.group(2))
        at, want = _value(m.group(3).replace("π", "\\pi ")), _value(m.group(4).replace("π", "\\pi "))
        if at is None or want is None:
            return None
        got = sympy.diff(f, var, order).subs(var, at)
        if _same(got, want) is not True:
            return Computed("ode_solution", "", False, sure=False, detail=f"{m.group(0)[:30]} but the gold gives {sympy.nsimplify(got)}")
    return Computed("ode_solution", str(f)[:200], True)
