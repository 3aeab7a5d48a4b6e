"""Does the gold answer check against the question as printed? Two asks a computer algebra system
can settle: "Differentiate y = f(x)" answered g (is f' = g?), and an initial condition "x(0) = π/2"
with an explicit solution "x = f(t)" (is f(0) = π/2?). A gold that fails is wrong for the question
as it now reads: the text layer changed the question (a radical's index, a lost bracket) or the
key is wrong; either way the pair does not grade. Anything that does not parse cleanly is left
alone (None): these checks only ever find a mismatch they can show. Also checked: an antiderivative
against its integrand, a stated maximum or minimum against the function's derivatives.

Every check is bounded (`bounded`): an error of sympy's (OverflowError, MemoryError and the like on
a power tower) or a run past `BOUND_S` seconds of the checking thread's CPU time is "cannot tell".
CPU time, not wall time, so that a loaded machine gives the same verdicts as an idle one (a cold
process's first check pays ~0.9 s of sympy's warm-up, which two busy cores used to stretch past the
bound), and the thread's own, so that other threads of the process do not shorten it; a wall-clock
backstop of `BACKSTOP_S` still stops a check that waits instead of computing. The timer is a
signal, so it holds in a process's main thread (the stage workers); in other threads only the size
guard holds (formulas over `MAX_CHARS` characters or with powers three deep are not parsed).
"""

from __future__ import annotations

import functools
import re
import signal
import threading
import time

from rlclimb.environments import answer_check as ac

_FUNCTIONS = r"sin|cos|tan|cot|sec|csc|log|ln|exp|arcsin|arccos|arctan"
BOUND_S = 2.0  # CPU seconds (the checking thread's) of parsing and computer algebra per check, per item
BACKSTOP_S = 30.0  # wall seconds: only for a check that blocks rather than computes
MAX_CHARS = 400
_TOWER = re.compile(r"\^\{[^{}]*\^\{?[^{}]*\^")  # x^{x^{x^...}}: sympy's numbers blow up
_UNBOUNDED = ac.CheckOptions(timeout_s=None)  # inside `bounded`: math-verify's own alarm would cancel ours
_state = threading.local()


class _OutOfTime(BaseException):  # not an Exception: sympy's and the parser's own `except Exception` let it through
    pass


def _out_of_time_if_spent(signum, frame):
    # the main thread's own CPU time: other threads of the process (an embedding model's) do not count
    if time.thread_time() - _state.cpu0 >= BOUND_S or time.monotonic() - _state.wall0 >= BACKSTOP_S:
        raise _OutOfTime


def bounded(check):
    """A check that answers None instead of raising, and stops after BOUND_S seconds of its thread's
    CPU time or BACKSTOP_S wall seconds, whichever comes first (main thread). A wall-clock timer
    fires after BOUND_S and every 50 ms on; its handler stops the check once either is spent."""
    @functools.wraps(check)
    def run(*args, **kwargs):
        if getattr(_state, "active", False):  # a check calling another: the outer bound holds
            return check(*args, **kwargs)
        main = threading.current_thread() is threading.main_thread()
        if main:
            _state.cpu0, _state.wall0 = time.thread_time(), time.monotonic()
            previous = signal.signal(signal.SIGALRM, _out_of_time_if_spent)
            signal.setitimer(signal.ITIMER_REAL, BOUND_S, 0.05)
        _state.active = True
        try:
            return check(*args, **kwargs)
        except (Exception, _OutOfTime):  # noqa: BLE001  # sympy's overflows and memory errors: cannot tell
            return None
        finally:
            _state.active = False
            if main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
    return run


def _latex(text: str) -> str:
    """The book's plain notation as LaTeX the parser reads: "log_ε cos x" -> "\\ln(\\cos(x))",
    "sin^{−1} t" -> "\\arcsin(t)", "cotan x" -> "\\cot(x)"."""
    t = text.strip().rstrip(".")
    t = re.sub(r"\blog_\{?[εe]\}?", "ln", t)
    t = re.sub(r"\bcotan\b", "cot", t)
    t = re.sub(r"\barc\s+(sin|cos|tan)\b", r"arc\1", t)  # Thompson's "arc tan x"
    t = re.sub(rf"\b({_FUNCTIONS})\s+\(", r"\1(", t)  # "cos (\\sqrt{7}/4)x": the bracket is its argument's
    t = re.sub(r"\b(sin|cos|tan)\^\{[−-]1\}", r"arc\1", t)
    t = re.sub(r"\\(?=(?:%s)\b)" % _FUNCTIONS, "", t)
    # a function applied without brackets to one factor: "cos x", "ln cos x" (innermost first)
    for _ in range(3):
        t = re.sub(r"\b(%s)\s+([A-Za-zθ]|\d+[A-Za-zθ]?)(?![\w(^])" % _FUNCTIONS, r"\1(\2)", t)
        t = re.sub(r"\b(%s)\s+((?:%s)\([^()]*\))" % (_FUNCTIONS, _FUNCTIONS), r"\1(\2)", t)
        t = re.sub(rf"\b({_FUNCTIONS})\s+(\\frac\{{[^{{}}]*\}}\{{[^{{}}]*\}})", r"\1(\2)", t)  # "ln \\frac{1 + x}{1 − x}"
    t = re.sub(r"(?<![A-Za-z\\])(%s)\(" % _FUNCTIONS, r"\\\1(", t)
    return t.replace("−", "-")


def _expr(text: str):
    import sympy

    if len(text) > MAX_CHARS or _TOWER.search(text):
        return None
    latex = _latex(text)
    if re.search(rf"(?<![\\A-Za-z])(?:{_FUNCTIONS})(?![(A-Za-z])", latex) or re.search(r"(?<![\\A-Za-z])(?:sin|cos|tan|ln|log)[a-z]", latex):
        return None  # a function name left as letters ("sin^2 θ", "lnx"): the parser would read a product
    if re.search(rf"\\(?:{_FUNCTIONS})\([^()]*\)\^", latex):
        return None  # "sin(2θ + 3)^{2.3}": the power of the sine or of its argument, books differ
    if re.search(r"[A-Za-z]{4,}|\b(?:et|ou|and|or|for|pour|où|is|est)\b", re.sub(r"\\[A-Za-z]+", " ", latex)):
        return None  # prose, or letters run together: not one formula
    try:
        value = ac._parse(ac._math_form(latex), _UNBOUNDED if getattr(_state, "active", False) else ac.DEFAULT_OPTIONS)
    except _OutOfTime:
        raise
    except Exception:  # noqa: BLE001  # the parser's errors are many; unparsed is "cannot tell"
        return None
    if not isinstance(value, sympy.Expr) or isinstance(value, sympy.Symbol) and not value.free_symbols:
        return None
    return value


def _differ(f, g, var) -> bool | None:
    """Whether f and g differ at sample points of `var` (None: cannot tell, e.g. nothing is finite)."""
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


@bounded
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
_EXPLICIT = re.compile(r"^\s*([a-zA-Zα-ω])(?:\([a-z]\))?\s*=\s*(.+?)\s*\.?\s*$")


@bounded
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


# ---- an explicit solution substituted into its differential equation ----------------------------------

_PLACEHOLDER = {3: "χ", 2: "ζ", 1: "η", 0: "ξ"}  # the function and its derivatives, as letters the parser keeps
_SOLVE_ASK = re.compile(r"\b(?:solve|résolvez|r[ée]soudre|(?:find|trouvez|donnez)\s+(?:une|la|the|a|an)\s+(?:solution|solution\s+(?:générale|particulière|explicite))"
                        r"|(?:find|trouvez)\s+(?:the\s+|la\s+)?(?:general|particular)\s+solution|devinez\s+une\s+solution|guess\s+a\s+solution)\b", re.I)


def _ode_form(equation: str, name: str) -> str | None:
    """`equation` with the unknown function `name` and its derivatives as placeholder letters:
    "y^{′′} + y′ + y= 5" -> "ζ + η + ξ= 5"; None when a derivative of higher order is in it."""
    t = re.sub(rf"\\frac\{{d{re.escape(name)}\}}\{{d[a-z]\}}", _PLACEHOLDER[1], equation)
    for order in (3, 2, 1):
        primes = "′" * order
        t = re.sub(rf"(?<![A-Za-z\\]){re.escape(name)}(?:\^\{{{primes}\}}|{primes}|{'’' * order}|{chr(39) * order})(?!′)", _PLACEHOLDER[order], t)
    if re.search(rf"(?<![A-Za-z\\]){re.escape(name)}\s*(?:\^\{{?\(|′|')", t):
        return None
    # "2xy", "3xt^2": products, so the letter counts wherever it is not inside a command ("\\exp")
    return re.sub(rf"\\[A-Za-z]+|{re.escape(name)}(?![_(])", lambda m: m.group(0) if m.group(0).startswith("\\") else _PLACEHOLDER[0],
                  _latex(t))


_CLAUSES = re.compile(r",\s*|;\s*|\s+(?:et|and|pour|for|où|where)\s+|(?<=[.?])\s+")
_MARK_ORDER = {"xi": 0, "eta": 1, "zeta": 2, "chi": 3}  # _PLACEHOLDER's letters as the parser spells them out


def ode_clauses(text: str) -> list[str]:
    """The clauses of an ODE problem that state something: "x′ = −4x, x(0) = 9 and t ≥ 0" -> the
    equation and the condition."""
    return [c for c in _CLAUSES.split(text) if "=" in c]


def mentions_derivative(clause: str, name: str) -> bool:
    """Does the clause use a derivative of `name` ("y′", "y^{′′}", "y'", "\\frac{dy}")?"""
    n = re.escape(name)
    return re.search(rf"(?<![A-Za-z\\]){n}(?:\^\{{′|′|')|\\frac\{{d{n}\}}", clause) is not None


def placeholder_marks(*exprs) -> set:
    """The placeholder symbols (the function and its derivatives, `_ode_form`'s) in the expressions."""
    return {s for e in exprs for s in e.free_symbols if s.name in _MARK_ORDER}


def derivative_values(f, var, marks) -> dict:
    """Each placeholder mapped to the matching derivative of the candidate solution f."""
    import sympy

    return {m: sympy.diff(f, var, _MARK_ORDER[m.name]) for m in marks}


def ode_sides(equation: str, name: str):
    """(the equation, lhs, rhs as sympy expressions) of an ODE in `name` as printed ("Solve y′ = 2y.": the
    instruction's words cut off, derivatives as `_ode_form` spells them), or None."""
    eq = re.sub(r"^.*(?:résolvez|solve|de|of|pour|for|to|à)\s+", "", equation.strip().rstrip(".?"), flags=re.I)
    form = _ode_form(eq, name)
    if form is None or form.count("=") != 1:
        return None
    lhs, rhs = (_expr(side) for side in form.split("="))
    return None if lhs is None or rhs is None else (eq, lhs, rhs)


@bounded
def ode_mismatch(question: str, answer: str) -> str | None:
    """"Résolvez x′ = 3xt^2 − 3t^2, x(0) = 2." answered "x= e^{t3} + 1" (e^{t^3} with its power
    flattened): the gold does not satisfy the equation as printed (at sample points, with its
    constants at sample values)."""
    import sympy

    gold = _EXPLICIT.match(answer)
    if gold is None or "=" in gold.group(2) or not _SOLVE_ASK.search(question):
        return None
    name = gold.group(1)
    equations = [e for e in ode_clauses(question) if mentions_derivative(e, name)
                 and not re.match(rf"\s*{name}(?:\^\{{′+\}}|′+|'+)?\([^()]*\)\s*=", e)]  # "y′(0) = b": a condition
    if len(equations) != 1:
        return None
    sides = ode_sides(equations[0], name)
    f = _expr(gold.group(2))
    if sides is None or f is None:
        return None
    eq, lhs, rhs = sides
    marks = placeholder_marks(lhs, rhs)
    symbols = (f.free_symbols | lhs.free_symbols | rhs.free_symbols) - marks
    var = next((s for s in sorted(symbols, key=lambda s: s.name) if s.name in ("x", "t", "s") and s.name != name), sympy.Symbol("x"))
    if not marks or any(m.name == "xi" for m in f.free_symbols):
        return None
    try:
        residual = (lhs - rhs).subs(derivative_values(f, var, marks))
        params = {s: sympy.Float(0.7 + 0.37 * i) for i, s in enumerate(sorted(symbols - {var}, key=lambda s: s.name))}
        if _differ(residual.subs(params), sympy.Integer(0), var):
            return f"{name} = {gold.group(2).strip()[:40]} does not satisfy {eq[:60]}"
    except Exception:  # noqa: BLE001  # sympy's errors on odd input: cannot tell
        return None
    return None


# ---- boundary conditions of a function of two variables -------------------------------------------------

_SIGNATURE = re.compile(r"^\s*([a-zA-Z])\(\s*([a-z])\s*,\s*([a-z])\s*\)\s*=\s*(.+?)\s*\.?\s*$")
_CONDITION = re.compile(r"(?<![A-Za-z_])([a-zA-Z])\(\s*([^(),]+?)\s*,\s*([^(),]+?)\s*\)\s*=")


@bounded
def boundary_mismatch(question: str, answer: str) -> str | None:
    """"y_{tt} = y_{xx}, y(0, t) = y(π, t) = 0, ..." answered "y(x, t) = sin(x) sin(t) + cos(t)": at
    x = 0 the gold is cos(t), not 0 (the book's sin(x)(sin(t) + cos(t)) lost its brackets)."""
    import sympy

    gold = _SIGNATURE.match(answer)
    if gold is None or "=" in gold.group(4):
        return None
    name, v1, v2 = gold.group(1), gold.group(2), gold.group(3)
    f = _expr(gold.group(4))
    if f is None:
        return None
    symbols = {s.name: s for s in f.free_symbols}
    for chain in re.split(r",\s*(?=[a-zA-Z]\()|;|\s+(?:pour|for|et|and)\b[^,;]*", question):
        conditions = list(_CONDITION.finditer(chain))
        if not conditions or any(c.group(1) != name for c in conditions):
            continue
        value = _expr(chain[conditions[-1].end():].strip(" .,"))
        if value is None:
            continue
        for c in conditions:
            subs, free = {}, []
            for var, arg in ((v1, c.group(2)), (v2, c.group(3))):
                if arg == var:
                    free.append(var)
                elif (point := _expr(arg)) is not None and not point.free_symbols:
                    subs[symbols.get(var, sympy.Symbol(var))] = point
                else:
                    subs = None
                    break
            if not subs or len(free) != 1 or not {s.name for s in value.free_symbols} <= {free[0]}:
                continue
            at = symbols.get(free[0]) or next((s for s in value.free_symbols), sympy.Symbol(free[0]))
            if _differ(f.subs(subs), value, at):
                return f"{c.group(0).rstrip('= ')} = {chain[conditions[-1].end():].strip(' .,')[:30]} but the gold gives {f.subs(subs)}"
    return None


# ---- an implicit general solution of a first-order equation ---------------------------------------------

_FIRST_ORDER = re.compile(r"(?<![A-Za-z\\])([a-zA-Z])(?:′|')\s*=\s*([^,;]+?)\s*(?:[.,;]|$)")


@bounded
def implicit_mismatch(question: str, answer: str) -> str | None:
    """"Trouvez une solution implicite pour y′ = sin(x) cos(y)." answered "sin(y) = −cos(x) + C": along
    F(x, y) = C, y′ = −F_x/F_y = sin(x)/cos(y), not sin(x) cos(y) (a fraction flattened). Checked
    only for "G(x, y) = C + ...", where every point lies on one of the solutions."""
    import sympy

    ode = _FIRST_ORDER.search(question)
    if ode is None or answer.count("=") != 1 or not re.search(r"implicit|implicite|general|générale|solve|résolvez", question, re.I):
        return None
    name = ode.group(1)
    lhs, rhs = (_expr(side) for side in answer.split("="))
    slope = _expr(ode.group(2))
    if lhs is None or rhs is None or slope is None:
        return None
    F = lhs - rhs
    symbols = {s.name: s for s in F.free_symbols | slope.free_symbols}
    y, const = symbols.get(name), symbols.get("c")
    x = next((symbols[v] for v in ("x", "t", "s") if v in symbols and v != name), None)
    if y is None or const is None or x is None or not set(symbols) <= {name, x.name, "c"}:
        return None
    try:
        if not sympy.diff(F, const).is_number or const in (sympy.diff(F, x) + sympy.diff(F, y)).free_symbols:
            return None  # "G(x, y) = C" only: then every point lies on the curve of C = G(x, y)
        residual = sympy.diff(F, x) + sympy.diff(F, y) * slope
        points = [{x: 0.3 + 0.41 * i, y: 0.2 + 0.29 * i, const: 0.5} for i in range(4)]
        values = [complex(residual.subs(p).evalf()) for p in points]
    except Exception:  # noqa: BLE001
        return None
    finite = [v for v in values if abs(v) < 1e12 and v == v]
    if len(finite) >= 2 and any(abs(v) > 1e-6 for v in finite):
        return f"along {answer.strip()[:40]}, {name}′ is not {ode.group(2).strip()[:30]}"
    return None


_CHAIN_SPLIT = re.compile(r"\s*(?<![<>!\\])(=|≈)(?!=)\s*")


def _number(side: str):
    """The value of a side that is arithmetic on numbers alone ("1000e^{2×5−0,05×52}"), else None."""
    import sympy

    text = re.sub(r"(?<=\d),(?=\d)", ".", side.strip().rstrip(".,;"))  # a decimal comma ("0,05")
    text = text.replace("×", "\\cdot ").replace("·", "\\cdot ")
    if not text or re.search(r"[A-Za-zα-ωΑ-Ω]", re.sub(r"\\(?:cdot|frac|sqrt|pi)\b|(?<![A-Za-z])e\^|π", " ", text)) or "..." in text or "…" in text:
        return None
    value = _expr(text)
    if value is None:
        return None
    value = value.subs(sympy.Symbol("e"), sympy.E)
    if value.free_symbols:
        return None
    try:
        return complex(value.evalf())
    except (TypeError, ValueError):
        return None


@bounded
def chain_mismatch(answer: str) -> str | None:
    """"P(5) = 1000e^{2×5−0,05×52} = 1000e^{8,75} ≈ 6,31 × 10^6": two neighbouring sides of a chain
    that are numbers alone and differ (by over 1% for "=", 5% for "≈"): a power flattened on the line
    ("52" for 5^2) or a digit misread; the printed working contradicts itself."""
    first = re.split(r"(?<=[^\d\s])\.\s|;|\n|,\s+(?=[A-Za-z])", answer, maxsplit=1)[0]
    parts = _CHAIN_SPLIT.split(first)
    if len(parts) < 5:  # at least three sides: "a = b" alone is the claim itself, not working
        return None
    sides, signs = parts[0::2], parts[1::2]
    values = [_number(s) for s in sides]
    for (a, b), sign, (sa, sb) in zip(zip(values, values[1:]), signs, zip(sides, sides[1:])):
        if a is None or b is None or abs(a) < 1e-12 and abs(b) < 1e-12:
            continue
        if abs(a - b) > (0.01 if sign == "=" else 0.05) * max(abs(a), abs(b)):
            return f"{sa.strip()[:30]} {sign} {sb.strip()[:30]} does not hold"
    return None


# ---- an antiderivative against its integrand -------------------------------------------------------------

_INTEGRAL = re.compile(r"(?:^|\bfind\s+|\bevaluate\s+|\bcompute\s+|\bintegrate\s+)∫\s*(?P<f>[^∫=]+?)\s*\\?,?\s*d(?P<v>[a-zθ])\s*[.?]?\s*$", re.I)
_CONSTANT = re.compile(r"\s*\+\s*(?:C|c|K|const\.?)\s*\.?\s*$")


def _constants(expr, var) -> dict:
    """Sample values for the letters other than `var` (the book's constants a, b, n ...)."""
    import sympy

    return {s: sympy.Float(0.7 + 0.37 * i) for i, s in enumerate(sorted(expr.free_symbols - {var}, key=lambda s: s.name))}


def _e_constant(expr):
    """Thompson's ε (and a bare e the parser kept as a letter) is Euler's number."""
    import sympy

    return expr.subs({s: sympy.E for s in expr.free_symbols if s.name in ("epsilon", "varepsilon", "e", "ε")})


@bounded
def integral_mismatch(question: str, answer: str) -> str | None:
    """"Find ∫ x^a log_ε x dx." answered "\\frac{x^{a+1}}{a + 1} log_ε x − \\frac{1}{a + 1} + C": the
    gold's derivative is not the integrand (the book's x^{a+1}/(a+1) (log x − 1/(a+1)) lost its
    brackets). Indefinite integrals with their constant only: "+ C" marks the gold as an antiderivative."""
    line = question.strip().split("\n")[-1]
    # "∫ \\frac{dx}{1 −x^4}": the differential in the numerator
    line = re.sub(r"∫\s*\\frac\{\s*d([a-zθ])\s*\}\{([^{}]+)\}", r"∫ \\frac{1}{\2} d\1", line)
    m = _INTEGRAL.search(line)
    if m is None or not _CONSTANT.search(answer) or answer.count("=") > 0 or "(2)" in m.group("f"):
        return None
    f, g = _expr(m.group("f")), _expr(_CONSTANT.sub("", answer))
    if f is None or g is None:
        return None
    f, g = _e_constant(f), _e_constant(g)
    names = ("θ", "theta") if m.group("v") == "θ" else (m.group("v"),)
    var = next((s for s in f.free_symbols if s.name in names), None)  # the parser's symbol (it may carry assumptions)
    if var is None or var not in f.free_symbols or not g.free_symbols <= f.free_symbols | {var}:
        return None
    import sympy

    params = _constants(f + g, var)
    derivative = sympy.diff(g, var).subs(params)
    if _differ(derivative, f.subs(params), var):
        return f"the gold's derivative is not the integrand {m.group('f').strip()[:40]}"
    return None


# ---- a stated maximum or minimum against the function's derivatives ---------------------------------------

_EXTREMUM_ASK = re.compile(r"\b(?:maximum|minimum|maxima|minima)\b", re.I)
_FUNCTION_DEF = re.compile(r"(?<![A-Za-z\\])(?P<name>[uyz])\s*=\s*(?P<f>[^=?;]+?)\s*(?:[?.;]|,\s*find\b|$)")
_CLAUSE = re.compile(r"(?P<kind>max|min)(?:imum|\.)?\s*[.:]?\s*(?:for|when|at)?\s*(?P<point>[^;]+)", re.I)
_ASSIGN = re.compile(r"(?<![A-Za-z\\])([a-zθ])\s*=")


_DECIMAL_CLAUSE = re.compile(r"(?P<kind>max|min)\w*\.?\s*[.:]?(?P<point>.*?)(?=\b(?:max|min)|$)", re.I | re.S)
_DECIMAL_ASSIGN = re.compile(r"(?<![A-Za-z\\_])([a-zθ])\s*=\s*([−-]?\d+(?:\.\d+)?)(?![\d.]*\s*[A-Za-z(\\^/])")


def _decimal_value_mismatch(f, name: str, variables: list, answer: str) -> str | None:
    """"Max.: x = 1.414, y = 1.7675. Min.: x = −1.414, y = 1.7675." for y = 5x/(2 + x^2): at the stated
    point the function is −1.768, not 1.7675 (the book's minimum lost its sign). Rounded values get a
    1% margin; a clause that does not give every variable and the function's value as plain numbers
    is not checked."""
    for c in _DECIMAL_CLAUSE.finditer(answer):
        stated = {}
        for letter, number in _DECIMAL_ASSIGN.findall(c.group("point")):
            stated.setdefault(letter, float(number.replace("−", "-")))
        if set(stated) != {v.name for v in variables} | {name}:
            continue
        try:
            got = complex(f.subs({v: stated[v.name] for v in variables}).evalf())
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        want = stated[name]
        if abs(got.imag) < 1e-9 and abs(got.real - want) > 0.01 * max(1.0, abs(want)):
            where = ", ".join(f"{v.name} = {stated[v.name]:g}" for v in variables)
            return f"{c.group(0).strip()[:40]!r}: at {where} the function is {got.real:.4g}, not {want:g}"
    return None


def _classify(f, point: dict, variables: list) -> str | None:
    """"min", "max" or "saddle" at a critical point; "not critical"; None when the test cannot tell."""
    import sympy

    grad = [complex(sympy.diff(f, v).subs(point).evalf()) for v in variables]
    scale = max(1.0, abs(complex(f.subs(point).evalf())))
    if any(z != z or abs(z) > 1e12 for z in grad):
        return None
    if any(abs(z) > 1e-6 * scale for z in grad):
        return "not critical"
    hess = [[complex(sympy.diff(f, a, b).subs(point).evalf()) for b in variables] for a in variables]
    if any(abs(z.imag) > 1e-9 for row in hess for z in row):
        return None
    h = [[z.real for z in row] for row in hess]
    if len(variables) == 1:
        return None if abs(h[0][0]) < 1e-9 else "min" if h[0][0] > 0 else "max"
    det = h[0][0] * h[1][1] - h[0][1] * h[1][0]
    if abs(det) < 1e-9:
        return None
    return "saddle" if det < 0 else "min" if h[0][0] > 0 else "max"


@bounded
def extremum_mismatch(question: str, answer: str) -> str | None:
    """"Find the maximum or minimum of the function u = x + 2xy + y." answered "Minimum for x = y =
    −\\frac{1}{2}": the point is critical, but the Hessian (0 2; 2 0) is indefinite: a saddle, no
    minimum (the book's key is wrong). Each "Max./Min. for x = ..." clause is checked: its point
    must be critical and of its kind by the second-derivative test. Points given as decimals
    (rounded) are not classified: their stated function value is checked instead
    (`_decimal_value_mismatch`)."""
    if not _EXTREMUM_ASK.search(question):
        return None
    defs = _FUNCTION_DEF.findall(question)
    if len(defs) != 1:
        return None
    name, body = defs[0]
    f = _expr(body)
    if f is None:
        return None
    f = _e_constant(f)
    variables = sorted(f.free_symbols, key=lambda s: s.name)
    if not 1 <= len(variables) <= 2:
        return None
    if re.search(r"\d\.\d", answer):
        return _decimal_value_mismatch(f, name, variables, answer)
    clauses = list(_CLAUSE.finditer(answer))
    if not clauses or re.sub(r"[\s.;:]", "", _CLAUSE.sub("", answer)):
        return None  # text the clauses do not account for ("θ = cot θ; ...", "no max."): unsure
    for c in clauses:
        point = {}
        for chunk in re.split(r",|\band\b", c.group("point")):
            letters = _ASSIGN.findall(chunk)
            value = _expr(re.split(r"=", chunk)[-1]) if letters else None
            if value is None or value.free_symbols:
                return None
            for letter in letters:
                point[letter] = _e_constant(value)
        if {v.name for v in variables} - set(point) or set(point) - {v.name for v in variables} - {name}:
            return None
        at = {v: point[v.name] for v in variables}
        kind = _classify(f, at, variables)
        want = c.group("kind").lower()
        if kind in ("not critical", "saddle") or kind in ("min", "max") and kind != want:
            where = ", ".join(f"{k} = {v}" for k, v in point.items() if k != name)
            return f"{c.group(0).strip()[:40]!r}: at {where} {body.strip()[:30]} has " + (
                "no critical point" if kind == "not critical" else "a saddle" if kind == "saddle" else f"a {kind}imum")
    return None
