"""Compute the gold where a computer algebra system can: for asks whose answer follows from the
question as printed (a derivative, an antiderivative, the sequence a generating function makes, a
recurrence's closed form, the sum of a progression, a power modulo n, the solutions of a
congruence, an element's order in Z_n, a complex number's value), compute the answer and compare
it with the gold.

`compute(question, answer)` gives a `Computed` (the kind, the computed value, whether the gold
agrees, and whether a disagreement is sure) or None: cannot tell. A question parses for a kind only
when several cues agree (the ask's verb, one formula of the kind's shape, a gold of the asked
type); anything else is "cannot tell". A disagreement is `sure` only when the formula and the gold
both parsed cleanly (no prose, no ellipsis in a value, no unknown letters); otherwise it is a
doubt (`maybe_answer_mismatch`). The gold is never rewritten.

Every kind is bounded like answer_consistency's checks (`bounded`: BOUND_S seconds in the main
thread, errors are "cannot tell").
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from .answer_consistency import (
    _EXPLICIT,
    _SOLVE_ASK,
    _differ,
    _e_constant,
    _expr,
    bounded,
    ode_sides,
)


@dataclass(frozen=True)
class Computed:
    kind: str
    value: str  # the computed answer, as text (kept in the record's meta when the gold agrees)
    agrees: bool
    sure: bool = True  # a disagreement is certain (clean question and gold); False: a doubt to tag
    detail: str = ""


_LABEL = re.compile(r"^\s*(?:\((?:[a-z]|[ivx]+)\)|[a-h]\))\s*")  # "(a) ", Lebl's "a) "
_ELLIPSIS = re.compile(r"\.\s*\.|…|·\s*·|\betc\b")


def _split(question: str) -> tuple[str, str]:
    """(stem, item): the last line without its part label when the question is a part of a
    numbered list ("Evaluate each of the following.\\n(a) (3 −2i) + (5i −6)"), else (question, question)."""
    lines = question.strip().split("\n")
    if len(lines) >= 2 and _LABEL.match(lines[-1]):
        if any(_LABEL.match(line) for line in lines[:-1]):
            return question.strip(), ""  # several parts in one item (not split): no one ask
        return "\n".join(lines[:-1]), _LABEL.sub("", lines[-1])
    return question.strip(), question.strip()


def _clean(text: str) -> str:
    return text.replace("−", "-").replace("–", "-").strip().rstrip(".").strip()


_INT = re.compile(r"^\s*([-+]?\d+)\s*$")


def _integer(text: str) -> int | None:
    m = _INT.match(_clean(text))
    return int(m.group(1)) if m else None


def _value(text: str, letters: str = ""):
    """A number (sympy) written in `text`, or None: only digits, operators, fractions, roots, powers,
    binomials, π and the `letters` allowed (none of a prose word, an ellipsis or a second value)."""
    t = _clean(text)
    if not t or _ELLIPSIS.search(t) or re.search(r"[=≡,;<>≤≥]", t):
        return None
    bare = re.sub(r"\\(?:frac|dfrac|sqrt|binom|cdot|times|pi|left|right)\b|π|·|×", " ", t)
    if re.search(rf"[^\d\s+\-*/^(){{}}\[\].{re.escape(letters)}]", bare):
        return None
    v = _expr(t.replace("×", "\\times ").replace("·", "\\cdot "))
    if v is None:
        return None
    import sympy

    if any(s.name not in letters for s in v.free_symbols):
        return None
    return sympy.nsimplify(v) if v.is_Float else v


def _same(a, b) -> bool | None:
    """Whether two constants are equal (exactly, else numerically); None when neither can tell."""
    import sympy

    try:
        d = sympy.simplify(a - b)
        if d == 0:
            return True
        za, zb = complex(sympy.N(a, 30)), complex(sympy.N(b, 30))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if any(z != z or abs(z) > 1e300 for z in (za, zb)):
        return None
    return abs(za - zb) <= 1e-9 * max(1.0, abs(za), abs(zb))


def _terms(text: str) -> list | None:
    """A listed sequence "0, 4, 4, 4, . ." or "1, 2, 16, 68, 364": its numbers (3 or more; an
    ellipsis only at the end), or None."""
    t = _clean(text)
    t = re.sub(r"(?:,\s*)?(?:\.\s*)+$|(?:,\s*)?(?:…|·\s*·\s*·|etc\.?)$", "", t).strip().rstrip(",")
    parts = [p for p in re.split(r",\s*", t)]
    if len(parts) < 3:
        return None
    out = []
    for p in parts:
        v = _value(p)
        if v is None or not v.is_number:
            return None
        out.append(v)
    return out


def _sequence_in(text: str) -> list | None:
    """The listed sequence a question states ("... the sequence 1, −2, 4, −8, 16,....", "(a) 4, 4, 4, 4,")."""
    m = re.search(r"(?<![\w^{_])((?:[−-]?\d+(?:/\d+)?\s*,\s*){2,}[−-]?\d+(?:/\d+)?)\s*(?:,\s*)?(?:\.\s*\.|…|·\s*·)", text)
    if m is None:
        return None
    return _terms(m.group(1))


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


_LOGIC_TOKEN = re.compile(r"\s*(?:([P-Z])|(¬)|(∧)|(∨)|(→)|(↔)|(\()|(\))|([TF])(?![A-Za-z]))")


def _logic(text: str):
    """A propositional formula in P ... Z with ¬ ∧ ∨ → ↔ (T, F) as a Python function of its letters, and
    the letters; None for anything else (quantifiers, predicates, prose)."""
    t = text.strip().rstrip(".").strip()
    tokens, pos = [], 0
    while pos < len(t):
        m = _LOGIC_TOKEN.match(t, pos)
        if m is None:
            return None
        tokens.append(next(g for g in m.groups() if g))
        pos = m.end()
    if not tokens:
        return None
    i = 0

    def peek():
        return tokens[i] if i < len(tokens) else None

    def atom():
        nonlocal i
        tok = peek()
        if tok is None:
            raise ValueError
        i += 1
        if tok == "¬":
            inner = atom()
            return lambda env: not inner(env)
        if tok == "(":
            inner = iff()
            if peek() != ")":
                raise ValueError
            i += 1
            return inner
        if tok in ("T", "F"):
            return lambda env, v=(tok == "T"): v
        if re.fullmatch(r"[P-Z]", tok):
            return lambda env, k=tok: env[k]
        raise ValueError

    def binary(sub, op, fn):
        def parse():
            nonlocal i
            left = sub()
            while peek() == op:
                i += 1
                right = sub()
                left = (lambda a, b: lambda env: fn(a(env), b(env)))(left, right)
            return left
        return parse

    conj = binary(atom, "∧", lambda a, b: a and b)
    disj = binary(conj, "∨", lambda a, b: a or b)

    def implies():
        nonlocal i
        left = disj()
        if peek() == "→":
            i += 1
            right = implies()
            return lambda env: (not left(env)) or right(env)
        return left

    iff = binary(implies, "↔", lambda a, b: a == b)
    try:
        f = iff()
    except (ValueError, RecursionError):
        return None
    if i != len(tokens):
        return None
    return f, {tok for tok in tokens if re.fullmatch(r"[P-Z]", tok)}


@bounded
def logic(question: str, answer: str) -> Computed | None:
    """"Simplify the following statements (so that negation only appears right before variables).\\n(b) (¬P
    ∨¬Q) →¬(¬Q ∧R)." answered "(P ∨Q) ∨(Q ∧¬R)": the two statements' truth tables."""
    import itertools

    stem, item = _split(question)
    if stem == question.strip() or not re.match(r"^\s*simplify\s+the\s+following(?:\s+statements)?\b", stem, re.I):
        return None
    a, b = _logic(item), _logic(answer)
    if a is None or b is None:
        return None
    letters = sorted(a[1] | b[1])
    for values in itertools.product((False, True), repeat=len(letters)):
        env = dict(zip(letters, values))
        if a[0](env) != b[0](env):
            shown = ", ".join(f"{k}={'T' if v else 'F'}" for k, v in env.items())
            return Computed("logic", "", False, detail=f"at {shown} the statement is {'T' if a[0](env) else 'F'}, the gold {'T' if b[0](env) else 'F'}")
    return Computed("logic", "equivalent", True)


# ---- generating functions, recurrences, closed formulas, sums (Levin) ------------------------------------------------

def _series(f, x, n: int) -> list:
    import sympy

    s = sympy.series(f, x, 0, n).removeO()
    return [sympy.nsimplify(s.coeff(x, k)) for k in range(n)]


def _gf(text: str):
    """A generating function in x alone, or None."""
    t = re.sub(r"\(hint:[^)]*\)", "", text, flags=re.I).strip().rstrip(".").strip()
    if _ELLIPSIS.search(t) or re.search(r"[=,;]", t) or re.search(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", "", t)):
        return None
    f = _expr(t)
    if f is None or {s.name for s in f.free_symbols} != {"x"}:
        return None
    return f, next(iter(f.free_symbols))


def _gold_gf(answer: str):
    """The gold generating function(s): "\\frac{1}{1 + 3x}.", "A = \\frac{2x}{(1−x)^3} + \\frac{3}{1−x} = ...": each side."""
    sides = [s for s in re.split(r"(?<![<>!\\])=", answer.strip().rstrip(".").strip())]
    if len(sides) > 1 and re.fullmatch(r"\s*[A-Za-z](?:\(x\))?\s*", sides[0]):
        sides = sides[1:]
    out = [_gf(s) for s in sides]
    return None if not out or any(o is None for o in out) else out


_RECURRENCE = re.compile(r"a_n\s*=\s*(?P<rhs>[^,;]*?a_\{n\s*[−-]\s*1\}[^,;]*?)\s*(?:,|\bwith\b|\.\s|\.?$|\bfor\b|\bwhere\b)")
_INITIAL = re.compile(r"a_\{?(\d)\}?\s*=\s*([−-]?\d+)")


def _recurrence_terms(text: str, count: int) -> list | None:
    """The first `count` terms of "a_n = 3a_{n−1} + 4a_{n−2} ... a_0 = 5 and a_1 = 8" (exact), or None."""
    import sympy

    m = _RECURRENCE.search(text)
    if m is None:
        return None
    rhs = m.group("rhs")
    orders = sorted({int(k) for k in re.findall(r"a_\{n\s*[−-]\s*(\d)\}", rhs)})
    marks = {1: "p", 2: "q", 3: "r"}
    if not orders or max(orders) > 3:
        return None
    body = re.sub(r"a_\{n\s*[−-]\s*(\d)\}", lambda k: f"({marks[int(k.group(1))]})", rhs)
    if re.search(r"[A-Za-z]", re.sub(r"[pqrn]", "", body)):
        return None
    expr = _expr(body)
    if expr is None or not {s.name for s in expr.free_symbols} <= {"p", "q", "r", "n"}:
        return None
    initial = {}
    for k, v in _INITIAL.findall(text[m.end():] + " " + text[:m.start()]):
        if int(k) in initial and initial[int(k)] != int(v.replace("−", "-")):
            return None  # two sets of initial terms: the question is not one sequence
        initial[int(k)] = int(v.replace("−", "-"))
    start = min(initial) if initial else None
    if start is None or sorted(initial) != list(range(start, start + max(orders))):
        return None
    terms = [sympy.Integer(initial[k]) for k in sorted(initial)]
    symbols = {s.name: s for s in expr.free_symbols}
    while len(terms) < count:
        n = start + len(terms)
        subs = {symbols[marks[o]]: terms[-o] for o in orders if marks[o] in symbols}
        if "n" in symbols:
            subs[symbols["n"]] = n
        terms.append(sympy.nsimplify(expr.subs(subs)))
    return start, terms[:count]


def _closed(answer: str, name: str | None = None):
    """A gold closed formula "a_n = \\frac{13}{5}4^n + \\frac{12}{5}(−1)^n." -> (its name, f(n))."""
    g = answer.strip().rstrip(".").strip()
    m = re.fullmatch(r"([a-zA-Z])_\{?n\}?\s*=\s*([^=;,]+)", g)
    if m is None or (name and m.group(1) != name) or _ELLIPSIS.search(m.group(2)):
        return None
    f = _expr(m.group(2))
    if f is None or {s.name for s in f.free_symbols} != {"n"}:
        return None
    return m.group(1), f


def _evaluate_at(f, ns) -> list | None:
    import sympy

    var = next(iter(f.free_symbols))
    try:
        return [sympy.nsimplify(sympy.simplify(f.subs(var, n))) for n in ns]
    except Exception:  # noqa: BLE001
        return None


def _compare_lists(kind: str, want: list, got: list, what: str, sure: bool = True) -> Computed:
    import sympy

    bad = next((i for i, (a, b) in enumerate(zip(want, got)) if _same(sympy.sympify(a), sympy.sympify(b)) is not True), None)
    value = ", ".join(str(w) for w in want)
    if bad is None:
        return Computed(kind, value, True)
    return Computed(kind, value, False, sure, detail=f"{what}: term {bad} is {want[bad]}, the gold has {got[bad]}")


@bounded
def generating_function(question: str, answer: str) -> Computed | None:
    """"Find the sequence generated by the following generating functions:\\n(d) \\frac{3x}{(1 + x)^2}." answered
    "0, 3, −6, 9, ...": the series coefficients; "Find the generating function for ... (e) 1, −3, 9, −27,
    81,...." answered "\\frac{1}{1 + 3x}": the gold's coefficients against the listed terms (or the terms of
    a stated recurrence or closed formula)."""
    stem, item = _split(question)
    if "generating function" not in question.lower():
        return None
    if re.search(r"sequence\s+generated\s+by|find\s+the\s+sequence", stem, re.I):
        gf = _gf(item if stem != question.strip() else question.split(":")[-1])
        got = _terms(answer)
        if gf is None or got is None:
            return None
        f, x = gf
        want = _series(f, x, len(got))
        return _compare_lists("generating_function", want, got, "the series coefficients")
    if not re.search(r"\bfind\s+(?:the|a)\s+generating\s+function\s+for\b|\bfind\s+the\s+generating\s+function\s+for\s+the\s+original", question, re.I):
        return None
    golds = _gold_gf(answer)
    if golds is None:
        return None
    n = 8
    if re.search(r"recurrence", question, re.I):
        r = _recurrence_terms(question, n)
        if r is None or r[0] != 0:
            return None
        want, what = r[1], "the recurrence's terms"
    elif re.search(r"closed\s+formula\s+a_n\s*=", question, re.I):
        m = re.search(r"closed\s+formula\s+(a_n\s*=\s*[^,;]+?)\s*\.?\s*$", question, re.I)
        c = _closed(m.group(1)) if m else None
        if c is None:
            return None
        want, what = _evaluate_at(c[1], range(n)), "the closed formula's terms"
    else:
        if re.search(r"partial\s+sums|multiplication|differenc", question, re.I):
            return None
        want = _sequence_in(item if stem != question.strip() else question) or (_sequence_in(stem) if stem != question.strip() and not re.search(r"\d", item) else None)
        what = "the listed terms"
    if not want:
        return None
    out = None
    for f, x in golds:
        c = _compare_lists("generating_function", _series(f, x, len(want)), want, what)
        if not c.agrees:
            return Computed(c.kind, ", ".join(map(str, want)), False, len(golds) == 1, detail="the gold's " + c.detail.replace(what, "series vs " + what))
        out = c
    return Computed("generating_function", answer.strip()[:200], True) if out else None


@bounded
def recurrence(question: str, answer: str) -> Computed | None:
    """"Find the solution to the recurrence relation a_n = 3a_{n−1}+4a_{n−2} with initial terms a_0 = 5 and
    a_1 = 8." answered "a_n = \\frac{13}{5}4^n + \\frac{12}{5}(−1)^n.": the gold against the terms the
    recurrence makes (a_0 ... a_9); also "write out the first 5 terms" and "find the next two terms
    (a_2 and a_3)"."""
    if "generating function" in question.lower() or not re.search(r"recurrence", question, re.I):
        return None
    stem, item = _split(question)
    ask = item if stem != question.strip() else question
    if re.search(r"\bsolve\b|\bsolution\b|closed\s+formula", ask, re.I):
        c = _closed(answer, "a")
        r = _recurrence_terms(question, 10)
        if c is None or r is None:
            return None
        start, want = r
        got = _evaluate_at(c[1], range(start, start + 10))
        return _compare_lists("recurrence", want, got, "the recurrence") if got else None
    m = re.search(r"first\s+(\d+)\s+terms", ask, re.I)
    if m:
        got = _terms(answer)
        r = _recurrence_terms(question, len(got) if got else 0)
        if got is None or r is None or len(got) != int(m.group(1)):
            return None
        return _compare_lists("recurrence", r[1], got, "the recurrence's terms")
    m = re.search(r"next\s+two\s+terms\s+of\s+the\s+sequence\s*\(a_(\d)\s+and\s+a_(\d)\)", ask, re.I)
    if m:
        pairs = re.findall(r"a_\{?(\d)\}?\s*=\s*([−-]?\d+)", answer)
        if len(pairs) != 2 or re.sub(r"a_\{?\d\}?\s*=\s*[−-]?\d+|[\s.,;]|and", "", answer):
            return None
        r = _recurrence_terms(question, 10)
        if r is None:
            return None
        start, terms = r
        want = [terms[int(k) - start] for k, _ in pairs]
        return _compare_lists("recurrence", want, [int(v.replace("−", "-")) for _, v in pairs], "the recurrence's terms")
    return None


_START = re.compile(r"first\s+term\s+(?:given\s+)?is\s+([a-z])_\{?([01])\}?|assum\w*\s+([a-z])_\{?([01])\}?\s*=|where\s+([a-z])_\{?([01])\}?\s*=|with\s+([a-z])_\{?([01])\}?\s*=|\(assume\s+([a-z])_\{?([01])\}?\s*=", re.I)


@bounded
def closed_formula(question: str, answer: str) -> Computed | None:
    """"Find the closed formula ... Assume the first term given is a_1.\\n(a) 2, 5, 10, 17, 26,..." answered
    "a_n = n^2 + 1": the gold at n = 1, 2, ... against the listed terms. The first index must be stated
    (a_0 or a_1): without it the check cannot tell."""
    if re.search(r"recurrence|generating\s+function|partial\s+sums|second-to-last|F_n", question, re.I):
        return None
    if not re.search(r"closed\s+formula|formula\s+for\s+the\s+n\s*\^?\{?th\}?\s+term|n\^\{th\}\s+term|nth\s+term|polynomial\s+fitting", question, re.I):
        return None
    stem, item = _split(question)
    c = _closed(answer)
    if c is None:
        return None
    name, f = c
    if stem != question.strip() and re.search(r"\d", item) and not re.search(r"\b(?:find|give|use)\b", item, re.I):
        terms = _sequence_in(item)  # the item is the sequence itself
    elif stem != question.strip():
        if re.search(r"\d\s*,\s*\d", item):
            terms = _sequence_in(item)
        else:
            terms = _sequence_in(stem)
    else:
        terms = _sequence_in(question)
    if not terms:
        return None
    starts = {int(next(g for g in m.groups()[1::2] if g)) for m in _START.finditer(question)}
    if len(starts) != 1:
        return None
    start = starts.pop()
    got = _evaluate_at(f, range(start, start + len(terms)))
    if got is None:
        return None
    return _compare_lists("closed_formula", terms, got, f"the gold at n = {start}, {start + 1}, ...")


_PROGRESSION = re.compile(r"((?:[−-]?\d+\s*\+\s*){2,}[−-]?\d+)\s*\+\s*(?:·\s*·\s*·|\.\s*\.\s*\.|…)\s*\+\s*([^.?=]+?)\s*(?:\.\s|[.?]?\s*$|\.\s*(?:Show|Remember))")


def _progression(text: str):
    """"5 + 7 + 9 + 11 + · · · + 521" -> its terms' count and sum (exact), arithmetic or geometric; None."""
    import sympy

    m = _PROGRESSION.search(text)
    if m is None:
        return None
    first = [int(t.replace("−", "-")) for t in re.findall(r"[−-]?\d+", m.group(1))]
    last = _value(m.group(2))
    if last is None or not last.is_Integer:
        return None
    last = int(last)
    diffs = {b - a for a, b in zip(first, first[1:])}
    if len(diffs) == 1 and (d := diffs.pop()) != 0:
        count = sympy.Rational(last - first[0], d) + 1
        if not count.is_Integer or count < len(first):
            return None
        return int(count), sympy.Rational(count * (first[0] + last), 2)
    if 0 in first:
        return None
    ratios = {sympy.Rational(b, a) for a, b in zip(first, first[1:])}
    if len(ratios) == 1 and (r := ratios.pop()) not in (0, 1, -1):
        k = sympy.log(sympy.Rational(last, first[0]), r)
        k = sympy.nsimplify(k)
        if not k.is_Integer or k < len(first) - 1:
            return None
        return int(k) + 1, sympy.Rational(first[0]) * (r ** (k + 1) - 1) / (r - 1)
    return None


@bounded
def progression_sum(question: str, answer: str) -> Computed | None:
    """"Find 5 + 7 + 9 + 11 + · · · + 521." answered "68117.": the sum of the arithmetic (or geometric)
    progression the first terms make, to the printed last term; "How many terms ..." its count. The gold's
    last side is compared ("\\frac{430·107}{2} = 23005.")."""
    stem, item = _split(question)
    ask = item if stem != question.strip() else question
    p = _progression(ask) or (_progression(stem) if stem != question.strip() else None)
    if p is None:
        return None
    count, total = p
    sides = [s for s in re.split(r"(?<![<>!\\])=", answer.strip().rstrip(".").strip())]
    got = _value(sides[-1])
    if got is None or not got.is_number:
        return None
    if re.search(r"how\s+many\s+terms", ask, re.I):
        want, what = count, "the number of terms"
    elif re.search(r"^\s*find\s+[−-]?\d|\b(?:compute|find)\s+the\s+sum\b", ask, re.I):
        want, what = total, "the sum"
    else:
        return None
    import sympy

    same = _same(sympy.Integer(want) if isinstance(want, int) else want, got)
    if same is None:
        return None
    return Computed("progression_sum", str(want), same, sure=len(sides) == 1 or all(_value(s) is not None for s in sides[:-1]),
                    detail=f"{what} is {want}, the gold has {sides[-1].strip()[:30]}")


# ---- numbers: complex arithmetic, powers mod n, congruences, orders in Z_n (Judson, Levin) ----------------------------

_EVAL_ASK = re.compile(r"^\s*(?:evaluate|calculate|compute|simplify)\s+(?:each\s+of\s+)?(?:the\s+following)?(?:\s+expressions?)?\s*[.:]?\s*$"
                       r"|^\s*convert\s+the\s+following\s+complex\s+numbers\s+to\s+the\s+form\s+a\s*\+\s*bi\s*\.?\s*$", re.I)


def _complex(text: str):
    """A complex number written with i (and cis θ), or None."""
    import sympy

    t = _clean(text)
    if re.search(r"\d\s+\d", t):
        return None  # "(1 3 4 5)(2 3 4)": a permutation's cycles, not numbers
    t = re.sub(r"\bcis\s*\(([^()]+)\)", r"(\\cos(\1) + i\\sin(\1))", t)
    if re.search(r"\b(?:mod|in)\b|[A-Za-hj-z]", re.sub(r"\\(?:frac|sqrt|cdot|times|pi|cos|sin|left|right)\b", "", t)):
        return None
    v = _value(t, letters="i")
    if v is None:
        return None
    return sympy.nsimplify(v.subs({s: sympy.I for s in v.free_symbols if s.name == "i"}))


_POWER_MOD = re.compile(r"^\s*(\d+)\^\{?(\d+)\}?\s*\(\s*mod\s+(\d+)\s*\)\s*\.?\s*$")


@bounded
def evaluate(question: str, answer: str) -> Computed | None:
    """"Evaluate each of the following.\\n(c) (5 −4i)(7 + 2i)" answered "43 −18i"; "Calculate each of the
    following.\\n(a) 292^{3171} (mod 582)" answered "292": the value of the printed numbers."""
    import sympy

    stem, item = _split(question)
    if stem == question.strip() or not _EVAL_ASK.match(stem):
        return None
    pm = _POWER_MOD.match(item)
    if pm:
        a, k, n = map(int, pm.groups())
        got = _integer(answer)
        if got is None or n < 2:
            return None
        want = pow(a, k, n)
        return Computed("power_mod", str(want), got % n == want, detail=f"{a}^{k} mod {n} is {want}")
    want = _complex(item)
    gold = answer.strip().rstrip(".")
    if "=" in gold:
        return None
    got = _complex(gold)
    if want is None or got is None:
        return None
    same = _same(want, got)
    if same is None:
        return None
    return Computed("evaluate", str(sympy.nsimplify(sympy.expand(want)))[:200], same, detail=f"{item.strip()[:40]} is {sympy.expand(want)}")


_REMAINDER = re.compile(r"^\s*find\s+the\s+remainder\s+of\s+(\d+)\^\{(\d+)\}\s+when\s+divided\s+by\s*$", re.I)


@bounded
def remainder(question: str, answer: str) -> Computed | None:
    """"Find the remainder of 3^{456} when divided by\\n(c) 7." answered "3^{456} = 9^{228} ≡2^{228} = 8^{76}
    ≡1^{76} = 1 (mod 7)": the gold's last value against 3^456 mod 7."""
    stem, item = _split(question)
    m = _REMAINDER.match(stem)
    n = _integer(item)
    if m is None or n is None or n < 2:
        return None
    gold = re.sub(r"\(\s*mod\s+(\d+)\s*\)\s*\.?\s*$", "", answer.strip())
    mods = re.findall(r"\(\s*mod\s+(\d+)\s*\)", answer)
    if mods and any(int(x) != n for x in mods):
        return None
    got = _integer(re.split(r"=|≡", gold)[-1])
    if got is None:
        return None
    want = pow(int(m.group(1)), int(m.group(2)), n)
    return Computed("power_mod", str(want), got % n == want and 0 <= got < n, detail=f"{m.group(1)}^{m.group(2)} mod {n} is {want}")


_CONGRUENCE = re.compile(r"(?<![\w^])(\d*)x(?:\^\{?(\d)\}?)?\s*(?:\+\s*(\d+)\s*)?≡\s*([−-]?\d+)\s*\(\s*mod\s+(\d+)\s*\)")


def _solutions(item: str) -> tuple[int, set[int]] | None:
    """The modulus (the lcm for a system) and the solutions in [0, modulus) of the printed congruence(s)."""
    found = _CONGRUENCE.findall(item)
    rest = _CONGRUENCE.sub("", item).strip(" .")
    if not found or rest:
        return None
    moduli = [int(f[4]) for f in found]
    big = math.lcm(*moduli)
    if big > 200000 or min(moduli) < 2:
        return None
    out = set()
    for x in range(big):
        if all((int(a or 1) * x ** int(p or 1) + int(c or 0) - int(b.replace("−", "-"))) % int(n) == 0 for a, p, c, b, n in found):
            out.add(x)
    return big, out


def _gold_solutions(answer: str, modulus: int) -> set[int] | None:
    """The gold's solutions as residues mod `modulus`: "3 + 7Z = {...}", "18 + 26Z", "x = 2, x = 5, x = 8",
    "x ≡17 (mod 55)", "No solutions"; None for anything else."""
    g = _clean(answer)
    if re.fullmatch(r"no\s+solutions?", g, re.I):
        return set()
    m = re.fullmatch(r"(?:x\s*[≡=]\s*)?(\d+)\s*\+\s*(\d+)\s*Z(?:\s*=\s*\{[^}]*\})?", g)
    if m is None:
        m = re.fullmatch(r"x\s*≡\s*(\d+)\s*\(\s*mod\s+(\d+)\s*\)", g)
    if m:
        r, n = int(m.group(1)), int(m.group(2))
        if n < 1 or modulus % n:
            return None
        return {x for x in range(modulus) if (x - r) % n == 0}
    parts = re.split(r"\s*(?:,|\band\b|\bor\b)\s*", g)
    values = []
    for p in parts:
        m = re.fullmatch(r"(?:x\s*=\s*)?(\d+)", p.strip())
        if m is None:
            return None
        values.append(int(m.group(1)))
    if any(v >= modulus for v in values) or not values:
        return None
    return set(values)


_CONGRUENCE_ASK = re.compile(r"\bfind\s+all\s+x\b|\bsolve\s+each\s+of\s+the\s+following\s+(?:systems\s+of\s+)?congruences|\bfind\s+any\s+solutions\b", re.I)


@bounded
def congruence(question: str, answer: str) -> Computed | None:
    """"Find all x ∈Z satisfying each of the following equations.\\n(c) 5x + 1 ≡13 (mod 26)" answered "18 +
    26Z": the solutions by trial over one period. A gold missing some solutions is a doubt (the book
    may list one); a gold with a non-solution, or "No solutions" where there are some, is sure."""
    stem, item = _split(question)
    if stem == question.strip() or not _CONGRUENCE_ASK.search(stem):
        return None
    s = _solutions(item.strip().rstrip("."))
    if s is None:
        return None
    modulus, want = s
    got = _gold_solutions(answer, modulus)
    if got is None:
        return None
    shown = ", ".join(map(str, sorted(want))) + f" (mod {modulus})" if want else "no solutions"
    if got == want:
        return Computed("congruence", shown, True)
    sure = bool(got - want) or not got
    return Computed("congruence", shown, False, sure, detail=f"the solutions are {shown}")


_ORDER = re.compile(r"^\s*(?:\((?P<tuple>[\d,\s]+)\)|(?P<a>\d+))\s*(?:∈|in)\s*(?P<groups>Z_\{?\d+\}?(?:\s*×\s*Z_\{?\d+\}?)*)\s*\.?\s*$")


@bounded
def element_order(question: str, answer: str) -> Computed | None:
    """"Find the order of each of the following elements.\\n(a) (3, 4) in Z_4 × Z_6" answered "12": the lcm
    of n / gcd(a, n) over the coordinates."""
    stem, item = _split(question)
    if stem == question.strip() or not re.match(r"^\s*find\s+the\s+order\s+of\s+each\s+of\s+the\s+following\s+elements", stem, re.I):
        return None
    m = _ORDER.match(item)
    got = _integer(answer)
    if m is None or got is None:
        return None
    moduli = [int(n) for n in re.findall(r"Z_\{?(\d+)\}?", m.group("groups"))]
    coords = [int(c) for c in (m.group("tuple").split(",") if m.group("tuple") else [m.group("a")])]
    if len(coords) != len(moduli) or min(moduli) < 1:
        return None
    want = math.lcm(*[n // math.gcd(a, n) for a, n in zip(coords, moduli)])
    return Computed("element_order", str(want), got == want, detail=f"the order of {item.strip()[:30]} is {want}")


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
    parts = [e for e in re.split(r",\s*|;\s*|\s+(?:et|and|pour|for|où|where)\s+|(?<=[.?])\s+", body) if "=" in e]
    conditions = [c for c in parts if _CONDITION0.fullmatch(c.strip().rstrip("."))]
    equations = [e for e in parts if e not in conditions and re.search(rf"(?<![A-Za-z\\]){re.escape(name)}(?:\^\{{′|′|')|\\frac\{{d{re.escape(name)}\}}", e)]
    if len(equations) != 1 or len(parts) != len(conditions) + 1:
        return None
    sides = ode_sides(equations[0], name)
    f = _expr(gold.group(2))
    if sides is None or f is None:
        return None
    eq, lhs, rhs = sides
    f = _e_constant(f)
    names = {0: "xi", 1: "eta", 2: "zeta", 3: "chi"}
    marks = {m for m in lhs.free_symbols | rhs.free_symbols if m.name in names.values()}
    others = (f.free_symbols | lhs.free_symbols | rhs.free_symbols) - marks
    if not marks or len(others) != 1:
        return None  # constants or a second letter: the check of answer_consistency covers those
    var = next(iter(others))
    derivatives = {m: sympy.diff(f, var, next(k for k, n in names.items() if n == m.name)) for m in marks}
    residual = _e_constant((lhs - rhs).subs(derivatives))
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


# ---- matrices: products, sums, transposes, determinants, inverses, lengths, eigenvalues (Hefferon, Strickland) --------

_PMATRIX = re.compile(r"\\begin\{[pbv]?matrix\}(.*?)\\end\{[pbv]?matrix\}", re.S)


def _matrix(body: str, letters: str = ""):
    """The sympy Matrix of a `pmatrix` body "1 & 2 \\\\ 3 & 4" (entries numbers, or the `letters`), or None."""
    import sympy

    rows = [r for r in re.split(r"\\\\", body) if r.strip()]
    cells = [[c for c in r.split("&")] for r in rows]
    if not cells or len({len(r) for r in cells}) != 1:
        return None
    out = []
    for r in cells:
        row = []
        for c in r:
            c = c.strip().replace("+", "", 1) if c.strip().startswith("+") else c.strip()
            v = _value(c, letters) if c else None
            if v is None:
                return None
            row.append(v)
        out.append(row)
    return sympy.Matrix(out)


def _gold_matrix(answer: str, letters: str = ""):
    """The gold's one matrix, the last side of "AB = M", "X Y = M"; None for anything else."""
    g = answer.strip().rstrip(".").strip()
    sides = re.split(r"(?<![<>!\\])=", g)
    last = sides[-1].strip().rstrip(".").strip()
    m = _PMATRIX.fullmatch(last)
    if m is None:
        return None
    return _matrix(m.group(1), letters)


def _matrix_expression(text: str):
    """"7 \\begin{pmatrix} 2 \\\\ 1 \\end{pmatrix} + 9 \\begin{pmatrix} 3 \\\\ 5 \\end{pmatrix}": its value, or
    the string "undefined" (sizes that do not fit), or None (not such an expression)."""
    import sympy

    tokens, pos = [], 0
    t = text.strip().rstrip(".").strip()
    pattern = re.compile(r"\s*(?:(?P<m>\\begin\{pmatrix\}.*?\\end\{pmatrix\})|(?P<n>\d+(?:\.\d+)?)|(?P<op>[+\-−·]|\\cdot))", re.S)
    while pos < len(t):
        m = pattern.match(t, pos)
        if m is None:
            return None
        if m.group("m"):
            mat = _matrix(_PMATRIX.fullmatch(m.group("m")).group(1))
            if mat is None:
                return None
            tokens.append(mat)
        elif m.group("n"):
            tokens.append(sympy.nsimplify(m.group("n")))
        else:
            tokens.append({"−": "-", "·": "*", "\\cdot": "*"}.get(m.group("op"), m.group("op")))
        pos = m.end()
    if not any(isinstance(x, sympy.MatrixBase) for x in tokens):
        return None
    # terms joined by + and -; factors by juxtaposition or ·
    terms, sign, factors = [], 1, []
    for x in tokens + ["+"]:
        if x in ("+", "-"):
            if not factors:
                if x == "-":
                    sign = -sign
                continue
            terms.append((sign, factors))
            sign, factors = (1 if x == "+" else -1), []
        elif x == "*":
            continue
        else:
            factors.append(x)
    try:
        total = None
        for sign, fs in terms:
            value = fs[0]
            for f in fs[1:]:
                value = value * f
            value = sign * value
            total = value if total is None else total + value
    except (sympy.ShapeError, ValueError, TypeError):
        return "undefined"
    return total if isinstance(total, sympy.MatrixBase) else None


_ARITHMETIC_ASK = re.compile(r"(?:do\s+the\s+indicated\s+vector\s+operations?|perform\s+the\s+indicated\s+operations?)(?:\s*,\s*if\s+(?:it\s+is\s+)?defined)?\s*\.?"
                             r"|compute\s*,?\s+or\s+state\s+[“\"‘']not\s+defined[”\"’']\s*\.?|compute\s*:?|(?:add|multiply)\s+the\s+following\s+matrices\s*:?", re.I)


def _named_matrices(text: str) -> dict:
    return {m.group(1): m.group(2) for m in re.finditer(r"(?<![A-Za-z\\])([A-Z])\s*=\s*(\\begin\{pmatrix\}.*?\\end\{pmatrix\})", text, re.S)}


@bounded
def matrix(question: str, answer: str) -> Computed | None:
    """"Evaluate the determinant of each.\\n(b) \\begin{pmatrix} ... \\end{pmatrix}" answered "21"; "Perform the
    indicated operations, if defined.\\n(d) 4 M + 5 N" answered a matrix; "Where A = ..., B = ...
    compute ...\\n(b) (AB)C"; "Calculate AB, where A = ... B = ..."; "Transpose each."; "Find the length of
    each vector."; "Find the inverse of ... A = ..."; "find the characteristic polynomial and the
    eigenvalues" (the gold's λ values against the eigenvalues)."""
    import sympy

    stem, item = _split(question)
    parted = stem != question.strip()
    single = _PMATRIX.fullmatch(item.strip().rstrip(".").strip()) if parted else None
    if parted and single and re.match(r"^\s*(?:evaluate|find|compute)\s+the\s+determinant\s+of\s+each\b", stem, re.I):
        a, got = _matrix(single.group(1)), _value(answer)
        if a is None or got is None or a.rows != a.cols:
            return None
        want = a.det()
        return Computed("determinant", str(want), bool(_same(want, got)), detail=f"the determinant is {want}")
    if parted and single and re.match(r"^\s*(?:transpose\s+each\b|.*\bfind\s+the\s+transpose\s+of\s+each\b)", stem, re.I | re.S):
        a, got = _matrix(single.group(1)), _gold_matrix(answer)
        if a is None or got is None:
            return None
        return Computed("transpose", str(a.T.tolist()), a.T == got, detail=f"the transpose is {a.T.tolist()}")
    if parted and single and re.match(r"^\s*find\s+the\s+length\s+of\s+each\s+vector\b", stem, re.I):
        a = _matrix(single.group(1))
        sides = re.split(r"(?<![<>!\\])=", answer.strip().rstrip("."))
        got = _value(sides[-1])
        if a is None or got is None or a.cols != 1:
            return None
        want = sympy.sqrt(sum(x ** 2 for x in a))
        return Computed("vector_length", str(want), bool(_same(want, got)), detail=f"the length is {want}")
    if parted and single and re.match(r"^\s*compute\s+the\s+inverse\s+of\s+the\s+given\s+matri(?:ces|x)\s*\.?\s*$", stem, re.I):
        a, got = _matrix(single.group(1)), _gold_matrix(answer)
        if a is None or got is None or a.rows != a.cols or a.det() == 0:
            return None
        return Computed("inverse", str(a.inv().tolist()), a.inv() == got, detail=f"the inverse is {a.inv().tolist()}")
    m = re.fullmatch(r"\s*compute\s+det\s*\(\s*(\\begin\{pmatrix\}.*?\\end\{pmatrix\})\s*\^\{[−-]1\}\s*\)\s+without\s+computing\s+the\s+inverse\s*\.?\s*", question, re.I | re.S)
    if m:
        a, got = _matrix(_PMATRIX.fullmatch(m.group(1)).group(1)), _value(answer)
        if a is None or got is None or a.rows != a.cols or a.det() == 0:
            return None
        want = 1 / a.det()
        return Computed("determinant", str(want), bool(_same(want, got)), detail=f"det of the inverse is {want}")
    m = re.match(r"^\s*(?:calculez\s+le\s+déterminant\s+de|calculate\s+the\s+determinant\s+of\s+the\s+matrix\s+A\s*=)\s*(\\begin\{pmatrix\}.*?\\end\{pmatrix\})\s*\.?\s*(?:\((?:the\s+easiest|astuce)[^)]*\)\s*\.?)?\s*$", question, re.I | re.S)
    if m:
        a = _matrix(_PMATRIX.fullmatch(m.group(1)).group(1), letters="abcd")
        got = _value(answer, letters="abcd")
        if a is None or got is None or a.rows != a.cols:
            return None
        want = sympy.factor(a.det())
        same = sympy.simplify(want - got) == 0
        return Computed("determinant", str(want), same, detail=f"the determinant is {want}")
    if parted and single and re.match(r"^\s*(?:compute|find)\s+the\s+reduced\s+(?:row\s+)?echelon\s+form\s+(?:of\s+each\s+matrix|for\s+the\s+following\s+matrices)\s*[.:]?\s*$", stem, re.I):
        a, got = _matrix(single.group(1)), _gold_matrix(answer)
        if a is None or got is None or not _PMATRIX.fullmatch(answer.strip().rstrip(".").strip()):
            return None  # Hefferon's keys give the row operations: only a bare matrix is compared
        want = a.rref()[0]
        return Computed("rref", str(want.tolist()), want == got, detail=f"the reduced echelon form is {want.tolist()}")
    if parted and _ARITHMETIC_ASK.fullmatch(stem.strip()):
        want = _matrix_expression(item)
        if want is None:
            return None
        if want == "undefined":
            if re.search(r"not\s+defined|undefined", answer, re.I):
                return Computed("matrix_arithmetic", "not defined", True)
            return None  # a size the text layer may have changed: cannot tell
        got = _gold_matrix(answer)
        if got is None:
            return None
        return Computed("matrix_arithmetic", str(want.tolist()), want == got, detail=f"the value is {want.tolist()}")
    named = _named_matrices(question)
    product_ask = re.fullmatch(r"\s*([A-Z()]{2,})\s*\.?\s*", item) if parted and re.search(r"\bcompute\b", stem, re.I) else \
        re.match(r"^\s*calculate\s+([A-Z]{2,}),?\s+where\b", question, re.I)
    if named and product_ask:
        expr = product_ask.group(1)
        if re.sub(r"[()]", "", expr).strip() and not set(re.sub(r"[()]", "", expr)) <= set(named):
            return None
        mats = {k: _matrix(_PMATRIX.fullmatch(v).group(1)) for k, v in named.items()}
        if any(v is None for v in mats.values()):
            return None
        py = re.sub(r"(?<=[A-Z)])(?=[A-Z(])", "*", expr)
        try:
            want = eval(py, {"__builtins__": {}}, mats)  # noqa: S307  # letters and brackets only, checked above
        except (sympy.ShapeError, ValueError, TypeError):
            return None
        got = _gold_matrix(answer)
        if got is None or not isinstance(want, sympy.MatrixBase):
            return None
        return Computed("matrix_arithmetic", str(want.tolist()), want == got, detail=f"{expr} is {want.tolist()}")
    m = re.match(r"^\s*find\s+the\s+inverse\s+of\s+the\s+following\s+matrix\b.*?\bA\s*=\s*(\\begin\{pmatrix\}.*?\\end\{pmatrix\})\s*\.?\s*$", question, re.I | re.S)
    if m:
        a = _matrix(_PMATRIX.fullmatch(m.group(1)).group(1), letters="abcd")
        got = _gold_matrix(answer, letters="abcd")
        if a is None or got is None or a.shape != got.shape or not re.match(r"^\s*(?:A\^\{[−-]1\}\s*=\s*)?\\begin", answer):
            return None
        check = sympy.simplify(a * got - sympy.eye(a.rows))
        return Computed("inverse", "", check == sympy.zeros(a.rows), detail="A times the gold is not the identity")
    if parted and single and re.search(r"\beigenvalues\b", stem, re.I) and not re.search(r"eigenvectors", stem, re.I):
        a = _matrix(single.group(1))
        lams = re.findall(r"λ_?\{?\d*\}?\s*=\s*([^,;=]+?)\s*(?=,|;|$|\.$)", answer.strip().rstrip("."))
        if a is None or not lams or a.rows != a.cols:
            return None
        got = [_value(v) for v in lams]
        if any(v is None for v in got):
            return None
        want = list(a.eigenvals())
        ok = all(any(_same(g, w) for w in want) for g in got) and all(any(_same(g, w) for g in got) for w in want)
        return Computed("eigenvalues", ", ".join(map(str, want)), ok, sure=True, detail=f"the eigenvalues are {want}")
    return None


# ---- finite structures: Z_n, bit strings, permutations, polynomials over Z_n, finite sets (Judson, Levin) ------------

def _int_set(text: str) -> set[int] | None:
    """"{1, 3, 7, 9}" (or "A ∩B = {3, 4, 5}", "∅") -> the integers; None for anything else."""
    g = _clean(text)
    g = re.sub(r"^[^={}]*=\s*", "", g) if g.count("=") == 1 else g
    if g in ("∅", "{}", "\\emptyset"):
        return set()
    m = re.fullmatch(r"\{\s*([−\-\d,\s]*)\}", g)
    if m is None:
        return None
    items = [x.strip() for x in m.group(1).split(",") if x.strip()]
    if not all(re.fullmatch(r"-?\d+", x) for x in items):
        return None
    return {int(x) for x in items}


_ZN = r"Z_\{?(\d+)\}?"


@bounded
def finite(question: str, answer: str) -> Computed | None:
    """Judson's and Levin's small computations: Hamming distances and weights of bit tuples, the units of
    Z_n, the subgroup of Z_n one element generates, a two-line permutation in cycle notation, a sum or
    product of polynomials in Z_n[x], set operations on listed sets of integers."""
    stem, item = _split(question)
    if stem == question.strip():
        return None
    it = item.strip().rstrip(".").strip()
    if re.fullmatch(r"compute\s+the\s+hamming\s+distances?\s+between\s+the\s+following\s+pairs\s+of\s+n-tuples\s*\.?", stem, re.I):
        m = re.fullmatch(r"\(([01]+)\)\s*,?\s*\(([01]+)\)", it)
        got = _integer(answer)
        if m is None or got is None or len(m.group(1)) != len(m.group(2)):
            return None
        want = sum(a != b for a, b in zip(m.group(1), m.group(2)))
        return Computed("hamming", str(want), got == want, detail=f"the distance is {want}")
    if re.fullmatch(r"compute\s+the\s+weights?\s+of\s+the\s+following\s+n-tuples\s*\.?", stem, re.I):
        m, got = re.fullmatch(r"\(([01]+)\)", it), _integer(answer)
        if m is None or got is None:
            return None
        want = m.group(1).count("1")
        return Computed("hamming", str(want), got == want, detail=f"the weight is {want}")
    if re.fullmatch(r"list\s+or\s+characterize\s+all\s+of\s+the\s+units\s+in\s+each\s+of\s+the\s+following\s+rings\s*\.?", stem, re.I):
        m, got = re.fullmatch(_ZN, it), _int_set(answer)
        if m is None or got is None:
            return None
        n = int(m.group(1))
        want = {a for a in range(1, n) if math.gcd(a, n) == 1}
        return Computed("units", str(sorted(want)), got == want, detail=f"the units are {sorted(want)}")
    if re.fullmatch(r"list\s+all\s+of\s+the\s+elements\s+in\s+each\s+of\s+the\s+following\s+subgroups\s*\.?", stem, re.I):
        m, got = re.fullmatch(rf"the\s+subgroup\s+of\s+{_ZN}\s+generated\s+by\s+(\d+)", it, re.I), _int_set(answer)
        if m is None or got is None:
            return None
        n, a = int(m.group(1)), int(m.group(2))
        want = {a * k % n for k in range(n)}
        return Computed("subgroup", str(sorted(want)), got == want, detail=f"the subgroup is {sorted(want)}")
    if re.fullmatch(r"write\s+the\s+following\s+permutations\s+in\s+cycle\s+notation\s*\.?", stem, re.I):
        m = _PMATRIX.fullmatch(it)
        a = _matrix(m.group(1)) if m else None
        if a is None or a.rows != 2 or sorted(a.row(0)) != sorted(a.row(1)) or not re.fullmatch(r"(?:\((?:\d+\s*)+\))+|\(1\)|id", answer.strip().rstrip(".")):
            return None
        mapping = {int(x): int(y) for x, y in zip(a.row(0), a.row(1))}
        cycles = {tuple(int(x) for x in c.split()) for c in re.findall(r"\(([\d\s]+)\)", answer)}
        got = {}
        for c in cycles:
            for x, y in zip(c, c[1:] + c[:1]):
                if x in got:
                    return None
                got[x] = y
        same = all(mapping[x] == got.get(x, x) for x in mapping) and set(got) <= set(mapping)
        return Computed("cycles", "", same, detail="the cycles do not give the printed permutation")
    m = re.fullmatch(rf"(.+?)\s+in\s+{_ZN}\[x\]", it)
    if m and re.fullmatch(r"compute\s+each\s+of\s+the\s+following\s*\.?", stem, re.I):
        import sympy

        n = int(m.group(2))
        body = m.group(1).replace("−", "-")
        if not re.fullmatch(r"[\dx^+\-()\s]+", body) or re.search(r"\^\{?\s*\(", body):
            return None
        e, g = _expr(body), _value(answer, letters="x")
        if e is None or g is None:
            return None
        x = sympy.Symbol("x")
        pe = sympy.Poly(sympy.expand(e.subs({s: x for s in e.free_symbols})), x)
        pg = sympy.Poly(sympy.expand(g.subs({s: x for s in g.free_symbols})), x)
        want = [c % n for c in pe.all_coeffs()]
        gc = [c % n for c in pg.all_coeffs()]
        while want and want[0] == 0:
            want = want[1:]
        while gc and gc[0] == 0:
            gc = gc[1:]
        canonical = all(0 <= c < n for c in pg.all_coeffs())
        return Computed("polynomial_mod", str(sympy.Poly(want, x).as_expr()) if want else "0", want == gc, sure=canonical,
                        detail=f"in Z_{n}[x] the value is {sympy.Poly(want, x).as_expr() if want else 0}")
    m = re.fullmatch(r"(?:find\s+)?([A-Z])\s*(∩|∪|\\\\|\\setminus)\s*([A-Z])", it, re.I)
    if m:
        sets = {k: _int_set("{" + v + "}") for k, v in re.findall(r"(?<![A-Za-z])([A-Z])\s*=\s*\{([^{}]*)\}", stem)}
        a, b, got = sets.get(m.group(1)), sets.get(m.group(3)), _int_set(answer)
        if a is None or b is None or got is None:
            return None
        want = a & b if m.group(2) == "∩" else a | b if m.group(2) == "∪" else a - b
        return Computed("set_operation", str(sorted(want)), got == want, detail=f"the set is {sorted(want)}")
    return None


_SIZE = re.compile(r"(\d+)\s*×\s*(\d+)")


@bounded
def matrix_facts(question: str, answer: str) -> Computed | None:
    """Hefferon's small asks: an entry a_{i,j} of a printed matrix, a matrix's size, the size of a product,
    the vector from one point to another, singular or not by the determinant."""
    stem, item = _split(question)
    if stem == question.strip():
        return None
    it = item.strip().rstrip(".").strip()
    g = answer.strip().rstrip(".").strip()
    m = re.fullmatch(r"a_\{(\d+),\s*(\d+)\}", it)
    named = re.search(r"\bA\s*=\s*\\begin\{pmatrix\}(.*?)\\end\{pmatrix\}", stem, re.S)
    if m and named and re.match(r"^\s*find\s+the\s+indicated\s+entry\s+of\s+the\s+matrix", stem, re.I):
        a = _matrix(named.group(1))
        if a is None:
            return None
        i, j = int(m.group(1)), int(m.group(2))
        if not (1 <= i <= a.rows and 1 <= j <= a.cols):
            return Computed("matrix_entry", "not defined", bool(re.fullmatch(r"not\s+defined", g, re.I)), sure=False,
                            detail="the entry is not defined")
        got = _value(g)
        if got is None:
            return None
        return Computed("matrix_entry", str(a[i - 1, j - 1]), bool(_same(a[i - 1, j - 1], got)), detail=f"the entry is {a[i - 1, j - 1]}")
    single = _PMATRIX.fullmatch(it)
    if single and re.fullmatch(r"give\s+the\s+size\s+of\s+each\s+matrix\s*\.?", stem, re.I):
        a, s = _matrix(single.group(1)), _SIZE.fullmatch(g)
        if a is None or s is None:
            return None
        return Computed("matrix_size", f"{a.rows}×{a.cols}", (int(s.group(1)), int(s.group(2))) == a.shape, detail=f"the size is {a.rows}×{a.cols}")
    m = re.fullmatch(r"an?\s+(\d+)\s*×\s*(\d+)\s+matrix\s+times\s+an?\s+(\d+)\s*×\s*(\d+)\s+matrix", it, re.I)
    if m and re.match(r"^\s*give\s+the\s+size\s+of\s+the\s+product", stem, re.I):
        r1, c1, r2, c2 = map(int, m.groups())
        s = _SIZE.fullmatch(g)
        if c1 != r2:
            return Computed("matrix_size", "not defined", bool(re.fullmatch(r"not\s+defined", g, re.I)), sure=False, detail="the product is not defined")
        if s is None:
            return None
        return Computed("matrix_size", f"{r1}×{c2}", (int(s.group(1)), int(s.group(2))) == (r1, c2), detail=f"the size is {r1}×{c2}")
    m = re.fullmatch(r"the\s+vector\s+from\s+\(([^()]+)\)\s+to\s+\(([^()]+)\)\s+in\s+R\^\{?\d\}?", it, re.I)
    if m and re.match(r"^\s*find\s+the\s+canonical\s+name\s+for\s+each\s+vector", stem, re.I):
        p, q = ([_value(x) for x in grp.split(",")] for grp in m.groups())
        got = _gold_matrix(answer)
        if None in p or None in q or len(p) != len(q) or got is None:
            return None
        import sympy

        want = sympy.Matrix([b - a for a, b in zip(p, q)])
        return Computed("vector", str(list(want)), want == got, detail=f"the vector is {list(want)}")
    if single and re.search(r"\buse\s+the\s+determinant\s+to\s+decide\b", stem, re.I) and re.search(r"\bsingular\b", stem, re.I):
        a = _matrix(single.group(1))
        v = re.fullmatch(r"(nonsingular|singular)\s*,\s*the\s+determinant\s+is\s+([−\-\d/]+)", g, re.I)
        if a is None or v is None or a.rows != a.cols:
            return None
        d, got = a.det(), _value(v.group(2))
        if got is None:
            return None
        ok = bool(_same(d, got)) and (v.group(1).lower() == "singular") == (d == 0)
        return Computed("determinant", str(d), ok, detail=f"the determinant is {d}")
    if re.match(r"^\s*find\s+the\s+volume\s+of\s+the\s+region\s+defined\s+by\s+the\s+vectors", stem, re.I):
        cols = [_matrix(b) for b in _PMATRIX.findall(it)]
        got = _value(g)
        if not cols or None in cols or got is None or any(c.cols != 1 for c in cols) or len({c.rows for c in cols}) != 1 or cols[0].rows != len(cols):
            return None
        import sympy

        d = abs(sympy.Matrix.hstack(*cols).det())
        return Computed("determinant", str(d), bool(_same(d, got)), detail=f"the volume is {d}")
    return None


KINDS = (derivative, chained_derivative, logic, antiderivative, generating_function, recurrence, closed_formula, progression_sum, evaluate, remainder, congruence,
         element_order, ode_solution, matrix, finite, matrix_facts)


_OTHER_PART = re.compile(r"(?:^|[\s.;])\((?:\d+|[a-h])\)\s|^\s*(?:\([a-h]\)|[a-h]\))\s")


@functools.lru_cache(maxsize=4096)
@bounded  # one bound for all the kinds together (each kind's own bound then defers to it)
def compute(question: str, answer: str) -> Computed | None:
    """The first kind that can compute the answer to `question`, compared with `answer`; None: cannot tell."""
    if not question or not answer or _OTHER_PART.search(answer):
        return None  # "ab(ε^{ax} + ε^{−ax}). (2) 2at + ...": the gold carries another part's answer
    for kind in KINDS:
        out = kind(question, answer)
        if out is not None:
            return out
    return None
