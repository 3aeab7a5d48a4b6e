"""Linear systems: "Solve each system.\\n(a) 2x + 3y = 13 x −y = −1" answered "... gives that the solution
is y = 3 and x = 2"; "... shows that there is no solution"; "The solution set is { \\begin{pmatrix} 6 \\\\ 0
\\end{pmatrix} + \\begin{pmatrix} −2 \\\\ 1 \\end{pmatrix} y | y ∈R }".

The text layer runs a displayed system's equations together on one line; each is still "terms = number",
so the run splits at each right-hand side. The system is solved exactly (ranks of the coefficient and
augmented matrices) and every claim the gold makes is checked against it: the values it states for all
the unknowns (the last value stated for each: a worked answer states intermediate ones first), "no
solution", "many solutions", and a solution set written as a particular vector plus parameters times
direction vectors (each direction must solve the homogeneous system, as many independent ones as the
system has free unknowns). A disagreement is sure only when the gold makes one kind of claim and states a
point that fails an equation, or says "no solution" / "many solutions" against the ranks; a point that
solves an underdetermined system is a doubt (one of many).
"""

from __future__ import annotations

import functools
import re

from rlclimb.environments import vector_sets

from ..answer_consistency import bounded
from ._common import Computed, _split

# a decimal may be printed in digit groups ("0.000 3" for 0.0003, as SI style sets them)
_NUM = r"\d+(?:\.\d{3}(?:[ \u2009]\d{1,3})+|\.\d+)?(?:/\d+)?"
_VAR = r"[a-zA-Z](?:_\{\d{1,2}\}|_\d{1,2})?"
_TERM = rf"(?:{_NUM})?{_VAR}"
# one equation: signed terms = a signed number, the number not run into a letter or a power ("= 5 x −4y" is
# "= 5" and then the next equation; "= 5x" or "= a^2" is not this kind)
_EQUATION = re.compile(rf"(?<![\w^_{{}}/.)])(?<!\.\d{3}\s)([+-]?\s*{_TERM}(?:\s*[+-]\s*{_TERM})*)\s*=\s*([+-]?\s*{_NUM})(?![\w.^/(])")
_TERM_PARTS = re.compile(rf"([+-]?)\s*({_NUM})?({_VAR})")
_GAP = re.compile(r"^(?:\s*(?:,|;|and)?\s*)$")

_SOLVE_ASK = re.compile(r"\bsolve\b|\bsolution\s+sets?\b|\bfind\s+(?:all\s+|the\s+|each\s+)?(?:unique\s+)?solutions?\b"
                        r"|\bgauss(?:’|')?s?\s+method\b|\bgauss-jordan\b|\bcramer", re.I)
_EMPTY = re.compile(r"\bno\s+solutions?\b|\bsolution\s+set\s+is\s+empty\b|\bis\s+inconsistent\b|\bhas\s+no\s+solution|"
                    r"\bsolution\s+set\s+is\s+(?:the\s+)?empty\s+set\b|\bsolution\s+set\s+is\s+∅", re.I)
_MANY = re.compile(r"\b(?:many|infinitely\s+many|an\s+infinite\s+number\s+of)\s+solutions\b|\bsolution\s+set\s+is\s+infinite\b", re.I)
# a solution by a procedure that rounds ("Solve it by rounding at each step to four significant digits"): its
# answer is not the exact solution by design
_INEXACT = re.compile(r"\bround|\bsignificant\s+(?:digits|figures)|\bdecimal\s+places\b|\bapproximat|\bfloating", re.I)
# the question asks for more than the solutions ("Identify the particular solution and ..."): the whole answer is the gold
_MORE_ASKED = re.compile(r"\b(?:identify|also|describe|explain|verify|check|show|compare|interpret|why)\b", re.I)
_TUPLE = re.compile(r"\(\s*((?:[a-zA-Z](?:_\{?\d{1,2}\}?)?\s*,\s*)+[a-zA-Z](?:_\{?\d{1,2}\}?)?)\s*\)\s*=\s*\(([^()]*)\)")


def _plain(text: str) -> str:
    return text.replace("−", "-").replace("–", "-").replace("\u2009", " ")


def _var_name(v: str) -> str:
    return re.sub(r"_\{?(\d+)\}?", r"_\1", v)


def _equations(text: str) -> list[list[tuple[str, str]]]:
    """The runs of two or more equations next to each other in `text` (only spaces, commas or "and" between
    them), each equation (lhs, rhs)."""
    runs, run, end = [], [], None
    for m in _EQUATION.finditer(text):
        if run and not _GAP.match(text[end:m.start()]):
            runs.append(run)
            run = []
        run.append((m.group(1), m.group(2)))
        end = m.end()
    runs.append(run)
    return [r for r in runs if 2 <= len(r) <= 10]


def _order(names: list[str]) -> list[str]:
    """The unknowns in the order a solution vector lists them: x, y, z, w; x_1, x_2, ...; else alphabetical."""
    rank = {"x": 0, "y": 1, "z": 2, "w": 3}
    if all(n in rank for n in names):
        return sorted(names, key=rank.get)
    return sorted(names, key=lambda n: (n.split("_")[0], int(n.split("_")[1]) if "_" in n else -1))


def _system(run: list[tuple[str, str]]):
    """(unknowns in order, A, b) as sympy matrices; None when a term repeats an unknown oddly or a number is malformed."""
    import sympy

    rows, names = [], []
    for lhs, rhs in run:
        row = {}
        for sign, coef, var in _TERM_PARTS.findall(lhs):
            name = _var_name(var)
            value = sympy.Rational(re.sub(r"[ \u2009]", "", coef)) if coef else sympy.Integer(1)
            row[name] = row.get(name, 0) + (-value if sign == "-" else value)
            if name not in names:
                names.append(name)
        rows.append((row, sympy.Rational(rhs.replace(" ", ""))))
    names = _order(names)
    A = sympy.Matrix([[row.get(n, 0) for n in names] for row, _ in rows])
    b = sympy.Matrix([r for _, r in rows])
    return names, A, b


def _number(text: str):
    import sympy

    t = text.strip().replace(" ", "")
    if not re.fullmatch(rf"[+-]?{_NUM}", t):
        return None
    return sympy.Rational(t)


def _point(answer: str, names: list[str]) -> dict | None:
    """The values the gold states for every unknown ("x = 2 and y = 3", "(x, y, z) = (5, 5, 0)"): the last one
    stated for each; None when one is missing."""
    found: dict[str, tuple[int, object]] = {}
    for name in names:
        base, _, index = name.partition("_")
        var = re.escape(base) + (rf"_\{{?{index}\}}?" if index else "")
        # "y = 3", not "x = 1 -3y" (a value in terms of the others) nor "x = 2y"
        for m in re.finditer(rf"(?<![\w_{{^\\]){var}(?![\w_])\s*=\s*([+-]?\s*{_NUM})(?![\w.^/(])(?!\s*[-+*/·]\s*[\w(\\])", answer):
            if (v := _number(m.group(1))) is not None:
                found[name] = (m.start(), v)
    for m in _TUPLE.finditer(answer):
        keys = [_var_name(k.strip()) for k in m.group(1).split(",")]
        values = [_number(v) for v in m.group(2).split(",")]
        if len(keys) == len(values) and None not in values:
            for k, v in zip(keys, values, strict=True):
                if k in names and (k not in found or found[k][0] < m.start()):
                    found[k] = (m.start(), v)
    if set(found) != set(names):
        return None
    return {n: found[n][1] for n in names}


def _solution_set(answer: str, n: int):
    """(particular vector, [direction vectors], span) of the gold's first solution set written with vectors
    (environments.vector_sets), or None."""
    # the solution set, not "the solution set of the associated homogeneous system is {...}"
    m = next((m for m in vector_sets.SET.finditer(answer)
              if "homogeneous" not in re.split(r"\.\s", answer[max(0, m.start() - 160):m.start()])[-1]), None)
    parsed = vector_sets.parse(m, n) if m is not None else None
    if parsed is None:
        return None
    return *parsed, m.span()  # (_plain swaps characters one for one: the span is the gold's too)


def _claims(answer: str, names: list[str]) -> list[tuple[str, object]]:
    out = []
    if _EMPTY.search(answer):
        out.append(("empty", None))
    if (s := _solution_set(answer, len(names))) is not None:
        out.append(("set", s))
    elif _MANY.search(answer):
        out.append(("many", None))
    if (p := _point(answer, names)) is not None:
        out.append(("point", p))
    return out


def _describe(names, A, b) -> tuple[str, int]:
    """The solution, as text, and how many free unknowns it has (-1: none, the system is inconsistent)."""
    import sympy

    if A.rank() < A.row_join(b).rank():
        return "no solution", -1
    free = len(names) - A.rank()
    x = next(iter(sympy.linsolve((A, b), *sympy.symbols(names))))
    if free == 0:
        return ", ".join(f"{n} = {v}" for n, v in zip(names, x, strict=True)), 0
    return f"{free} free unknowns: ({', '.join(map(str, x))})", free


def _holds(claim: str, value, names, A, b, free: int) -> bool:
    import sympy

    if claim == "empty":
        return free < 0
    if claim == "many":
        return free > 0
    if claim == "point":
        x = sympy.Matrix([value[n] for n in names])
        return free == 0 and A * x == b
    particular, directions, _ = value
    if free < 0 or A * particular != b or any(A * d != sympy.zeros(A.rows, 1) for d in directions):
        return False
    return len(directions) == free and (not directions or sympy.Matrix.hstack(*directions).rank() == free)


def _ask(question: str) -> str | None:
    """The one run of equations the ask is about: the part's own, else the stem's (the only run there)."""
    stem, item = _split(question)
    if not _SOLVE_ASK.search(question) or _INEXACT.search(question):
        return None
    for text in (item, stem if item != stem else ""):
        runs = _equations(_plain(text))
        if len(runs) == 1:
            return runs[0]
        if len(runs) > 1:
            return None
    return None


@functools.lru_cache(maxsize=1024)
@bounded
def _checked(question: str, answer: str):
    """(unknowns, the gold's claims, the Computed) of a system the question asks to solve, or None."""
    import sympy

    run = _ask(question)
    if run is None:
        return None
    names, A, b = _system(run)
    if len(names) > 8:
        return None
    claims = _claims(_plain(answer), names)
    if not claims:
        return None
    want, free = _describe(names, A, b)
    failed = [(c, v) for c, v in claims if not _holds(c, v, names, A, b, free)]
    if not failed:
        return names, claims, Computed("linear_system", want, True)
    claim, value = failed[0]
    stated = claim if claim != "point" else ", ".join(f"{n} = {value[n]}" for n in names)
    # a point that solves the equations but not uniquely is one solution of many: a doubt
    one_of_many = claim == "point" and free > 0 and A * sympy.Matrix([value[n] for n in names]) == b
    sure = len(claims) == 1 and not one_of_many
    return names, claims, Computed("linear_system", want, False, sure, f"the gold says {stated}; the system has {want}")


def linear_system(question: str, answer: str) -> Computed | None:
    out = _checked(question, answer)
    return out[2] if out else None


def system_final(question: str, answer: str) -> str | None:
    """The gold's own claim about a system, as a short final answer, when it checks: "x = 2, y = 1/2" (its
    values, in the unknowns' order), "no solution", "many solutions" (only when the ask offers that
    conclusion), or the solution set as the gold writes it. None otherwise, and when the question asks for
    more than the solutions (then the whole answer is the gold)."""
    out = _checked(question, answer) if not _MORE_ASKED.search(question) else None
    if out is None or not out[2].agrees:
        return None
    claims = dict(out[1])
    if "point" in claims:
        return ", ".join(f"{n} = {v}" for n, v in claims["point"].items()).replace("-", "−")
    if "set" in claims:
        start, end = claims["set"][2]
        return answer[start:end]
    if "empty" in claims:
        return "no solution"
    if "many" in claims and re.search(r"many\s+solutions", question, re.I):
        return "many solutions"
    return None
