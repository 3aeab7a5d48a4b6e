"""Answer checking: is a predicted answer equivalent to the ground truth?

One library for curation (consensus of rewrites, leakage), scoring (pass rates) and RL rewards.
Math goes to math-verify (LaTeX -> sympy, then symbolic / numeric / set / interval comparison);
this module adds what it lacks: answer typing, multiple-choice letters, booleans, text answers,
unit conversion (pint), decimals stated to limited precision, inequalities vs intervals, and an
optional LLM judge for what rules cannot decide.

    check("\\frac{1}{2}", "0.5")                       -> Verdict(True, "symbolic")
    check("B", "(b)", "choice", choices=["1", "2"])    -> Verdict(True, "choice")
    check("5 km", "5000 m")                            -> Verdict(True, "units")
    check("Paris", "the capital of France")            -> Verdict(None, "text"): ask a judge

Known limits (tests/test_answer_check_cases.py pins the ones marked "limit"):
- "i" is a variable, not the imaginary unit ("e^{i\\pi}" != "-1").
- "(a, b)" is read as an open interval or an ordered pair as needed, and also matches the list
  "a, b" (math-verify's choice): a point, an interval and a two-element set can be confused.
- "1,2" with no space is the list {1, 2}, never a European decimal.
- Units: converted only when both sides carry a unit pint knows ("5 km" == "5000 m"); a bare
  number matches any unit ("5" == "5 cm"); non-units after a number are dropped ("12 apples"
  == "12"); math-verify also drops some unit-like letters ("3 t" == "3"). Degrees vs radians are converted only when one side has a degree sign and the
  other a pi.
- Decimals: a decimal with >= `min_significant` (3) significant digits matches a value that
  rounds to it ("0.866" == sqrt(3)/2); "9.8" vs "9.81" needs `rel_tol`.
- Number words: whole answers up to "twenty", the tens, "hundred", "thousand", "half" only.
- Text answers match after normalization (case, articles, punctuation, LaTeX text wrappers,
  subscripts); synonyms and partial names ("CO2" vs "carbon dioxide", "Curie" vs "Marie Curie")
  are undecided (`equivalent=None`): `check_with_judge` asks an LLM.
- Proofs are never decided by rules (`None`).
- Timeouts: math-verify bounds parsing and comparison with SIGALRM, which works in the main
  thread only; in other threads checks run without a time bound (keep answers short there).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from .vector_sets import same_set, vector_set

AnswerType = Literal["numeric", "expression", "interval", "set", "choice", "boolean", "text", "proof"]
Method = Literal["exact", "choice", "boolean", "text", "symbolic", "numeric", "units", "vector_set", "unparsed", "judge",
                 "error"]

logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns per unparsable string


@dataclass(frozen=True)
class CheckOptions:
    float_rounding: int = 6  # math-verify: decimals compared after rounding to this many places
    # A decimal stated with >= this many significant digits matches a value that rounds to it
    # ("0.866" == sqrt(3)/2; "0.33" != 1/3). 0 turns the rule off.
    min_significant: int = 3
    rel_tol: float = 0.0  # extra relative tolerance for numbers (e.g. 0.01 for measured physics data)
    units: bool = True  # convert "5 km" vs "5000 m" with pint when both sides carry a unit
    timeout_s: int = 5  # per parse / comparison (main thread only, see the module doc)


DEFAULT_OPTIONS = CheckOptions()


@dataclass(frozen=True)
class Verdict:
    """`equivalent` is None when the rules cannot decide (text that differs, proofs): a judge can."""

    equivalent: bool | None
    method: Method
    detail: str = ""

    def __bool__(self) -> bool:
        return bool(self.equivalent)


# ---- text normalization ------------------------------------------------------------------------

_UNICODE_MATH = str.maketrans({"×": "\\times ", "·": "\\cdot ", "−": "-", "–": "-", "÷": "/", "π": "\\pi ",
                               "√": "\\sqrt ", "°": "^\\circ", "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ",
                               "∞": "\\infty ", "∅": "\\emptyset ", "∪": "\\cup ", "±": "\\pm "})
_SCI = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])")
_WORD_JOIN = re.compile(r"\\text\s*\{\s*(?:or|and|,)\s*\}|\\q?quad|\s+(?:or|and)\s+", re.I)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TEXT_CMD = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_LATEX_CMD = re.compile(r"\\[a-zA-Z]+")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_EMPTY_WORDS = {"no solution", "no solutions", "no real solution", "no real solutions", "none", "empty set",
                "there is no solution", "no such number", "\\emptyset", "\\varnothing", "\\{\\}", "{}"}
_EMPTY_LATEX = "$\\emptyset$"


def strip_math_delimiters(text: str) -> str:
    t = text.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if t.startswith(left) and t.endswith(right) and len(t) > len(left) + len(right):
            inner = t[len(left) : -len(right)]
            if left != "$" or "$" not in inner:
                return inner.strip()
    return t


def unbox(text: str) -> str:
    """The content of the last \\boxed{...} (balanced braces), else the text."""
    matches = list(_BOXED.finditer(text))
    if not matches:
        return text
    start = depth = matches[-1].end()
    depth = 1
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def normalize_text_answer(text: str) -> str:
    """Case, articles, punctuation, LaTeX text wrappers and subscripts go: "The H_2O." == "h2o"."""
    t = unicodedata.normalize("NFKC", strip_math_delimiters(unbox(text)))
    t = _TEXT_CMD.sub(r"\1", t)
    t = t.replace("'", "").replace("’", "").replace("_", "").replace("{", "").replace("}", "").replace("^", "")
    t = _LATEX_CMD.sub(" ", t).casefold()
    t = re.sub(r"[^\w\s.+-]", " ", t)
    t = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", t)  # sentence dots go, decimal points stay
    t = _ARTICLES.sub(" ", t)
    return " ".join(t.split())


_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
                      "eighty": "80", "ninety": "90", "hundred": "100", "one hundred": "100", "thousand": "1000",
                      "one thousand": "1000", "half": "1/2", "one half": "1/2", "a half": "1/2"})
_REPEATING = re.compile(r"(\d*)\.(\d*)\\overline\{(\d+)\}")


def _repeating_to_fraction(m: re.Match) -> str:
    """0.1\\overline{6} -> \\frac{1}{6}: x = I.N(R) = I + (NR - N) / (10^|N| (10^|R| - 1))."""
    whole, fixed, rep = m.group(1) or "0", m.group(2), m.group(3)
    from fractions import Fraction

    value = int(whole) + Fraction(int(fixed + rep) - int(fixed or "0"), 10 ** len(fixed) * (10 ** len(rep) - 1))
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _math_form(text: str) -> str:
    """What math-verify gets: one LaTeX expression (bare answers are wrapped in $...$)."""
    t = unbox(text.strip()).strip().rstrip(".").strip()
    t = t.translate(_UNICODE_MATH)
    t = strip_math_delimiters(t)
    words = normalize_text_answer(t)
    if words in _EMPTY_WORDS or t.replace(" ", "") in _EMPTY_WORDS:
        return _EMPTY_LATEX
    if words in _NUMBER_WORDS:
        return f"${_NUMBER_WORDS[words]}$"
    if "overline" in t:
        t = _REPEATING.sub(_repeating_to_fraction, t)
    t = _SCI.sub(r"\1\\times 10^{\2}", t)
    t = _WORD_JOIN.sub(", ", t)  # "x = 2 or x = 3", "2 and 3": a list of answers
    t = t.replace("$", "")
    return f"${t}$"


# ---- multiple choice and booleans --------------------------------------------------------------

_LONE_LETTER = re.compile(r"[\(\[]?([A-Za-z])[\)\]]?\.?")  # "B", "(b)", "B."
_NAMED_LETTER = re.compile(r"(?:the\s+)?(?:correct\s+)?(?:answer|option|choice)\s*(?:is|:)?\s*[\(\[]?([A-Za-z])(?:[\)\].:,\s]|$)", re.I)
_LABELLED = re.compile(r"[\(\[]?([A-Za-z])[\)\]:.]\s+\S")  # "B) 4", "(B) 4", "B. 4"
_TRUE = {"true", "t", "yes", "y", "correct", "right", "valid", "holds"}
# hedge words that may open a verdict ("Clearly, yes"); verifiable reads verdicts with the same hedge
HEDGE = r"(?:(?:technically|clearly|certainly|of\s+course|obviously|strictly\s+speaking)\s*,?\s*)?"
# "Yes, because ...", "No - sound needs a medium.", "True by Lemma 4.8.", "False for instance ...": a
# verdict, then its reason
_BOOLEAN_LEAD = re.compile(r"^\W*" + HEDGE + r"(yes|true|no|false)\b(?:\s*[,;:.!\u2014-]|\s+(?:because|since|as|it|the|this|that"
                           r"|by\s+(?:lemma|theorem|corollary|proposition|definition)|for\s+(?:instance|example))\b)", re.I)
_FALSE = {"false", "f", "no", "n", "incorrect", "wrong", "invalid", "does not hold"}


def choice_index(answer: str, choices: Sequence[str] = ()) -> int | None:
    """0-based option an answer names: a letter ("B", "(b)", "B) 4", "Option B") or an option's
    content ("4" when the options are 3, 4, 5). None when it names none."""
    text = _TEXT_CMD.sub(r"\1", strip_math_delimiters(unbox(answer))).strip()
    m = _LONE_LETTER.fullmatch(text) or _NAMED_LETTER.match(text) or _LABELLED.match(text)
    if m:
        idx = ord(m.group(1).upper()) - ord("A")
        if 0 <= idx < (len(choices) or 26):
            return idx
    if choices:
        want = normalize_text_answer(text)
        hits = [i for i, c in enumerate(choices) if normalize_text_answer(c) == want]
        if len(hits) == 1:
            return hits[0]
        if _looks_mathy(text):  # an option given in another notation ("0.5" for "1/2")
            hits = [i for i, c in enumerate(choices) if _looks_mathy(c) and _math_equal(c, text, DEFAULT_OPTIONS)]
            if len(hits) == 1:
                return hits[0]
    return None


_LETTER_LIST = re.compile(r"[{(\[]?\s*[A-Za-z](?:\s*(?:,|;|&|\band\b)\s*[A-Za-z])+\s*[})\]]?")


def choice_indices(answer: str, choices: Sequence[str] = ()) -> frozenset[int] | None:
    """0-based options a multiple-select answer names, two or more: letters ("A, C and D", "{A, C}")
    or one option per "; "-separated piece (a key's "Gravity.; Normal Force."). None otherwise."""
    text = _TEXT_CMD.sub(r"\1", strip_math_delimiters(unbox(answer))).replace("\\{", "{").replace("\\}", "}").strip()
    if _LETTER_LIST.fullmatch(text):
        picked = [ord(c.upper()) - ord("A") for c in re.findall(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])", text)]
        if all(0 <= i < (len(choices) or 26) for i in picked) and len(set(picked)) == len(picked):
            return frozenset(picked)
        return None
    pieces = [x for x in (p.strip() for p in text.split(";")) if x]
    if len(pieces) < 2 or not choices:
        return None
    picked = [choice_index(p, choices) for p in pieces]
    return frozenset(picked) if None not in picked and len(set(picked)) == len(picked) else None


def boolean_value(answer: str) -> bool | None:
    t = normalize_text_answer(answer).strip(" .!")
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    m = _BOOLEAN_LEAD.match(answer)  # "Yes, because ...", "No - sound needs a medium."
    return None if m is None else m.group(1).lower() in ("yes", "true")


# ---- answer types --------------------------------------------------------------------------------

_MATH_WORDS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "log",
    "ln", "exp", "sqrt", "frac", "dfrac", "tfrac", "pi", "infty", "inf", "and", "or", "lim", "max", "min",
    "det", "mod", "pmod", "gcd", "lcm", "circ", "cdot", "times", "left", "right", "text", "mathrm", "boxed",
    "pm", "mp", "le", "ge", "leq", "geq", "neq", "ne", "in", "cup", "cap", "emptyset", "varnothing",
    "mathbb", "begin", "end", "pmatrix", "bmatrix", "matrix", "vmatrix", "alpha", "beta", "gamma", "delta",
    "theta", "lambda", "mu", "sigma", "omega", "phi", "rho", "tau", "epsilon", "binom", "choose", "quad",
    "overline", "vec", "hat", "prime", "ldots", "cdots", "dots", "mathbf", "operatorname", "displaystyle",
    "approx", "degrees", "degree", "radians", "percent", "units", "unit", "square", "cubic", "sq",
}
_WORDS = re.compile(r"[A-Za-z]{3,}")
_PROOF_TEXT = re.compile(r"\b(?:proof|q\.?e\.?d|we (?:show|prove|conclude)|hence|therefore)\b|∎|\\blacksquare|\\square", re.I)
_NUMBER_WITH_WORDS = re.compile(r"^\s*[-+]?\$?\s*\d[\d,]*(?:\.\d+)?\s*\$?\s+([A-Za-z]{2,}[A-Za-z .'/-]*)$")  # not "3 t": 3t


def _prose_words(text: str) -> list[str]:
    t = _TEXT_CMD.sub(lambda m: " " + m.group(1) + " ", strip_math_delimiters(unbox(text)))
    t = _LATEX_CMD.sub(" ", t)
    return [w for w in _WORDS.findall(t) if w.lower() not in _MATH_WORDS and w.lower() not in _NUMBER_WORDS and not _is_unit(w)]


def _looks_mathy(text: str) -> bool:
    return not _prose_words(text) and bool(re.search(r"[\d\\^=+\-*/a-zA-Z]", text))


def infer_answer_type(answer: str, *, choices: Sequence[str] = (), question_type: str | None = None) -> AnswerType:
    """The kind of an answer, from its form (and the question's type when known)."""
    a = (answer or "").strip()
    if question_type == "proof":
        return "proof"
    if (choices or question_type == "multiple_choice") and (choice_index(a, choices) is not None
                                                           or choice_indices(a, choices) is not None):
        return "choice"
    if question_type == "true_false" or boolean_value(a) is not None and len(a) <= 24:
        return "boolean" if boolean_value(a) is not None else "text"
    if len(a) > 200 and _PROOF_TEXT.search(a):
        return "proof"
    if normalize_text_answer(a) in _EMPTY_WORDS:
        return "set"
    if _NUMBER_WITH_WORDS.match(a) and len(a) <= 40 or _quantity(a) is not None:  # "12 apples", "9.8 m/s^2"
        return "numeric"
    if _prose_words(a):
        return "text"
    parsed = _parse(_math_form(a))
    if parsed is None:
        return "text"
    return _kind_of(parsed)


def _kind_of(value: Any) -> AnswerType:
    import sympy

    if isinstance(value, sympy.Set) and not isinstance(value, sympy.FiniteSet) or isinstance(value, sympy.logic.boolalg.And) \
            or isinstance(value, sympy.core.relational.Relational) and not isinstance(value, sympy.Eq):
        return "interval"
    if isinstance(value, sympy.FiniteSet | sympy.sets.sets.EmptySet):
        return "set"
    if isinstance(value, sympy.Eq):
        return _kind_of(value.rhs)
    if isinstance(value, sympy.Expr) and not value.free_symbols:
        return "numeric"
    return "expression"


# ---- math comparison ---------------------------------------------------------------------------


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@lru_cache(maxsize=4096)
def _parse_cached(latex: str, timeout_s: int | None) -> tuple:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    configs = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
    return tuple(parse(latex, configs, parsing_timeout=timeout_s))


def _parse(latex: str, options: CheckOptions = DEFAULT_OPTIONS) -> Any:
    """The first sympy value math-verify reads from a LaTeX answer, or None."""
    found = _parse_full(latex, options)
    return found[0] if found else None


def _parse_full(latex: str, options: CheckOptions = DEFAULT_OPTIONS) -> tuple:
    try:
        return _parse_cached(latex, options.timeout_s if _in_main_thread() else None)
    except Exception:  # math-verify reports failures as empty parses; be safe anyway
        return ()


def _verify(gold: tuple, pred: tuple, options: CheckOptions) -> bool:
    from math_verify import verify

    try:
        return bool(verify(list(gold), list(pred), float_rounding=options.float_rounding,
                           allow_set_relation_comp=True,
                           timeout_seconds=options.timeout_s if _in_main_thread() else None))
    except Exception:
        return False


def _as_set(value: Any) -> Any:
    """An inequality (or a list of them, "x < -1 or x > 2") in one variable, as a set of reals."""
    import sympy

    rels = list(value) if isinstance(value, sympy.FiniteSet) else [value]
    if not rels or not all(isinstance(r, sympy.core.relational.Relational | sympy.And) for r in rels):
        return None
    symbols = set().union(*(r.free_symbols for r in rels))
    if len(symbols) != 1:
        return None
    try:
        return sympy.Or(*rels).as_set()
    except Exception:
        return None


def _number(value: Any) -> float | None:
    import sympy

    if isinstance(value, sympy.Eq):
        value = value.rhs
    if isinstance(value, sympy.Expr) and not value.free_symbols:
        try:
            number = complex(value.evalf())
        except (TypeError, ValueError):
            return None
        if abs(number.imag) < 1e-12 and math.isfinite(number.real):
            return number.real
    return None


_DECIMAL = re.compile(r"^[-+]?\d*\.(\d+)$")


def _stated_precision(text: str) -> tuple[int, int] | None:
    """(decimal places, significant digits) of an answer written as a plain decimal ("0.866",
    "12.50 %", "3.2 m"); None for anything else (integers, fractions, expressions)."""
    t = strip_math_delimiters(unbox(text)).strip().rstrip(".").replace(",", "")
    t = re.split(r"\s*(?:\\%|%|\s(?=[A-Za-z\\]))", t)[0]
    m = _DECIMAL.match(t)
    if not m:
        return None
    return len(m.group(1)), len(t.lstrip("+-").replace(".", "").lstrip("0"))


def _numbers_close(g: float, p: float, gold: str, pred: str, options: CheckOptions) -> bool:
    """Numbers that math-verify found different: equal within `rel_tol`, or one side is a decimal
    with enough significant digits and the other rounds to it."""
    if options.rel_tol and math.isclose(g, p, rel_tol=options.rel_tol, abs_tol=1e-12):
        return True
    if math.isclose(g, p, rel_tol=1e-6, abs_tol=1e-12):  # float noise: 10 vs 10.0000001
        return True
    if options.min_significant:
        for text, stated, other in ((pred, p, g), (gold, g, p)):
            precision = _stated_precision(text) if text else None
            if precision and precision[1] >= options.min_significant and round(other, precision[0]) == round(stated, precision[0]):
                return True
    return False


def _math_equal(gold: str, pred: str, options: CheckOptions) -> bool | None:
    """True / False, or None when either side does not parse."""
    g, p = _parse_full(_math_form(gold), options), _parse_full(_math_form(pred), options)
    if not g or not p:
        return None
    if _verify(g, p, options):
        gn, pn = _number(g[0]), _number(p[0])
        if gn is not None and pn is not None and 0 < max(abs(gn), abs(pn)) < 1e-3 and not math.isclose(gn, pn, rel_tol=1e-6):
            # math-verify rounds to `float_rounding` decimal places: 1e-7 == 2e-7 there, not here
            return _numbers_close(gn, pn, gold, pred, options)
        return True
    gs, ps = _as_set(g[0]), _as_set(p[0])  # "x < -1 or x > 2" vs a union of intervals
    if gs is not None or ps is not None:
        import sympy

        try:
            if (gs if gs is not None else g[0]) == (ps if ps is not None else p[0]):
                return True
            if isinstance(gs if gs is not None else g[0], sympy.Set) and isinstance(ps if ps is not None else p[0], sympy.Set):
                return bool(sympy.simplify((gs or g[0]).symmetric_difference(ps or p[0])) == sympy.EmptySet)
        except Exception:
            return False
    gn, pn = _number(g[0]), _number(p[0])
    if gn is not None and pn is not None:
        return _numbers_close(gn, pn, gold, pred, options)
    return False


# ---- units -----------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:\s*(?:\\times|\*|x)\s*10\^\{?[-+]?\d+\}?)?)\s*(.+?)\s*$")
_LETTER_UNITS = set("msgKNJWVACLTFHΩ")
_unit_registry = None
_unit_lock = threading.Lock()


def _units():
    global _unit_registry
    with _unit_lock:
        if _unit_registry is None:
            import pint

            _unit_registry = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
    return _unit_registry


@lru_cache(maxsize=2048)
def _is_unit(word: str) -> bool:
    if len(word) < 1 or word.lower() in _MATH_WORDS:
        return False
    try:
        return not _units().parse_units(word).dimensionless or word in ("rad", "radian", "radians", "deg")
    except Exception:
        return False


def _clean_unit(unit: str) -> str:
    u = _TEXT_CMD.sub(r"\1", strip_math_delimiters(unit))
    u = u.replace("\\,", " ").replace("\\ ", " ").replace("^\\circ", "degree ").replace("\\cdot", "*")
    u = u.replace("{", "").replace("}", "").replace("\\", "").replace("$", "").strip()
    return u


def _quantity(text: str) -> Any:
    t = strip_math_delimiters(unbox(text.strip().rstrip(".")))
    m = _QUANTITY.match(t.translate(_UNICODE_MATH))
    if not m or not re.search(r"[A-Za-z]", m.group(2)):
        return None
    unit = _clean_unit(m.group(2))
    if not unit or not re.match(r"^[A-Za-zµμΩ°][\w/*^ .°µμΩ-]*$", unit):
        return None
    if len(unit) == 1 and unit not in _LETTER_UNITS:  # "2a", "3 x": a variable (pint reads "a" as a year)
        return None
    try:
        ureg = _units()
        magnitude = m.group(1).replace(",", "")
        magnitude = re.sub(r"\s*(?:\\times|\*|x)\s*10\^\{?([-+]?\d+)\}?", r"e\1", magnitude)
        q = ureg.Quantity(float(magnitude), ureg.parse_units(unit.replace("^", "**")))
    except Exception:
        return None
    return q if not q.dimensionless else None


def _units_equal(gold: str, pred: str, options: CheckOptions) -> bool | None:
    """None unless a side is a quantity with a unit pint knows. One unit only: the numbers
    are compared ("1.6e-19 C" == "1.6 \\times 10^{-19}"); two: converted, then compared."""
    g, p = _quantity(gold), _quantity(pred)
    if g is None and p is None:
        return None
    if g is None or p is None:
        bare, quantity, q_text = (gold, p, pred) if g is None else (pred, g, gold)
        parsed = _parse(_math_form(bare), options)
        value = _number(parsed) if parsed is not None else None
        if value is None:
            return None
        magnitude = float(quantity.magnitude)
        if math.isclose(value, magnitude, rel_tol=1e-6, abs_tol=1e-12):
            return True
        q_number = _QUANTITY.match(strip_math_delimiters(unbox(q_text)).translate(_UNICODE_MATH)).group(1)  # type: ignore[union-attr]
        return _numbers_close(magnitude, value, q_number, bare, options)
    try:
        if g.dimensionality != p.dimensionality:
            return False
        p_in_g = p.to(g.units).magnitude
    except Exception:
        return None
    gm = float(g.magnitude)
    if math.isclose(gm, p_in_g, rel_tol=max(options.rel_tol, 1e-9), abs_tol=1e-12):
        return True
    # a side stated as a decimal sets the precision, in its own unit ("16.67 m/s" vs "60 km/h")
    g_text = _QUANTITY.match(strip_math_delimiters(gold)).group(1)  # type: ignore[union-attr]
    p_text = _QUANTITY.match(strip_math_delimiters(pred)).group(1)  # type: ignore[union-attr]
    return (_numbers_close(gm, p_in_g, g_text, "", options)
            or _numbers_close(float(g.to(p.units).magnitude), float(p.magnitude), "", p_text, options))


# ---- the checker ---------------------------------------------------------------------------------


def check(
    gold: str,
    pred: str,
    answer_type: AnswerType | None = None,
    *,
    choices: Sequence[str] = (),
    options: CheckOptions = DEFAULT_OPTIONS,
) -> Verdict:
    """Compare a predicted answer (already extracted: see `extract_final_answer`) with the gold
    answer. `answer_type` defaults to the gold answer's inferred type. Never raises."""
    try:
        return _check(str(gold or ""), str(pred or ""), answer_type, tuple(choices), options)
    except Exception as e:  # a checker must not crash a stage or a reward loop
        return Verdict(False, "error", f"{type(e).__name__}: {e}"[:300])


def _check(gold: str, pred: str, answer_type: AnswerType | None, choices: tuple[str, ...], options: CheckOptions) -> Verdict:
    if not pred.strip():
        return Verdict(False, "exact", "empty prediction")
    if gold.strip() == pred.strip():
        return Verdict(True, "exact")
    if "pmatrix" in gold and (g := vector_set(gold)) is not None and (p := vector_set(pred)) is not None:
        return Verdict(same_set(g, p), "vector_set")  # the same affine subspace, however parametrized
    kind = answer_type or infer_answer_type(gold, choices=choices)
    if kind == "proof":
        return Verdict(None, "judge", "proofs need a judge")
    if kind == "choice" and (gs := choice_indices(gold, choices)) is not None:  # multiple select: the same options, all
        ps = choice_indices(pred, choices) or ({pi} if (pi := choice_index(pred, choices)) is not None else None)
        names = ("".join(chr(65 + i) for i in sorted(x)) if x else None for x in (gs, ps))
        return Verdict(ps == gs, "choice", "gold {}, pred {}".format(*names))
    if kind == "choice":
        gi, pi = choice_index(gold, choices), choice_index(pred, choices)
        if gi is None or pi is None:
            return Verdict(False, "choice", f"no option named: gold {gi}, pred {pi}")
        return Verdict(gi == pi, "choice", f"gold {chr(65 + gi)}, pred {chr(65 + pi)}")
    if kind == "boolean":
        gb, pb = boolean_value(gold), boolean_value(pred)
        if gb is None or pb is None:
            return Verdict(False, "boolean", "not a yes/no answer")
        return Verdict(gb == pb, "boolean")
    if kind == "text":
        if normalize_text_answer(gold) == normalize_text_answer(pred) and normalize_text_answer(gold):
            return Verdict(True, "text")
        if _looks_mathy(pred) and _looks_mathy(gold):  # a mistyped gold: still try the math
            eq = _math_equal(gold, pred, options)
            if eq:
                return Verdict(True, "symbolic")
        return Verdict(None, "text", "texts differ after normalization: a judge can decide")
    if options.units:
        eq = _units_equal(gold, pred, options)
        if eq is not None:
            return Verdict(eq, "units")
    if bool(_DEGREES.search(gold)) != bool(_DEGREES.search(pred)) and "\\pi" in (gold + pred).translate(_UNICODE_MATH):
        gold, pred = _degrees_to_radians(gold), _degrees_to_radians(pred)  # "45^\\circ" vs "\\pi/4"
    if _NUMBER_WITH_WORDS.match(gold) or _NUMBER_WITH_WORDS.match(pred):  # "12 apples": the number counts
        gold, pred = _leading_number(gold), _leading_number(pred)
    eq = _math_equal(gold, pred, options)
    if eq is None:
        return Verdict(False, "unparsed", "an answer did not parse as math")
    return Verdict(eq, "symbolic")


_DEGREES = re.compile(r"\^\s*\{?\\circ\}?|°|\s*\\text\{\s*degrees?\s*\}|\s+deg(?:rees?)?\b")


def _degrees_to_radians(text: str) -> str:
    if not _DEGREES.search(text):
        return text
    return f"({_DEGREES.sub('', strip_math_delimiters(text))})\\cdot\\frac{{\\pi}}{{180}}"


def _leading_number(text: str) -> str:
    m = _NUMBER_WITH_WORDS.match(text)
    if not m:
        return text
    return text[: m.start(1)].strip()


def is_equivalent(gold: str, pred: str, answer_type: AnswerType | None = None, **kwargs: Any) -> bool:
    return bool(check(gold, pred, answer_type, **kwargs))


# ---- final answers in model output ---------------------------------------------------------------

_FINAL = [
    re.compile(r"final answer(?: is)?\s*[:=]?\s*(.+?)\s*(?:\n|$)", re.I),
    re.compile(r"(?:^|\n)\s*#{4}\s*(.+?)\s*$"),  # GSM8K
    re.compile(r"(?:^|\n)\s*\**answer\**\s*[:=]\s*(.+?)\s*(?:\n|$)", re.I),
    re.compile(r"\bthe answer is\s*[:=]?\s*(.+?)\s*(?:\.\s|\.?\s*$|\n)", re.I),
]


def extract_final_answer(text: str) -> str | None:
    """The final answer a response states: the last \\boxed{}, "Final answer: X", "#### X",
    "Answer: X", "the answer is X". None when it states none."""
    if not text:
        return None
    if _BOXED.search(text):
        return unbox(text).strip()
    for pattern in _FINAL:
        found = pattern.findall(text)
        if found:
            return found[-1].strip().rstrip(".").strip("*").strip()
    return None


def check_response(gold: str, response: str, answer_type: AnswerType | None = None, **kwargs: Any) -> Verdict:
    """Check a full model response: its stated final answer, else its last line."""
    final = extract_final_answer(response)
    if final is None:
        lines = [ln for ln in response.strip().splitlines() if ln.strip()]
        final = lines[-1] if lines else ""
    return check(gold, final, answer_type, **kwargs)


# ---- LLM judge -------------------------------------------------------------------------------------


class JudgeReply(BaseModel):
    equivalent: bool
    reason: str = Field("", max_length=2000)


JUDGE_PROMPT = """You compare two answers to the same question. Decide whether the candidate answer \
means the same as the reference answer (same value, same entity, same set of items). Ignore \
wording, formatting, units notation and order of list items; do not solve the question yourself.

Question: {question}
Reference answer: {gold}
Candidate answer: {pred}

Reply with JSON: {{"equivalent": true or false, "reason": "one sentence"}}"""


async def judge(llm: Any, gold: str, pred: str, *, question: str = "", role: str = "judge",
                tag: str | None = "answer_judge", seed: int | None = None) -> Verdict:
    """Ask an LLM (rlclimb.pipelines.llm.LLMClient) whether two answers agree. Raises the client's
    LLMError (with `drop_reason`) on failure, so a stage ledgers it."""
    prompt = JUDGE_PROMPT.format(question=question or "(not given)", gold=gold, pred=pred)
    reply, _ = await llm.structured(role, [{"role": "user", "content": prompt}], JudgeReply, tag=tag, seed=seed)
    return Verdict(reply.equivalent, "judge", reply.reason[:300])


async def check_with_judge(gold: str, pred: str, answer_type: AnswerType | None = None, *, llm: Any = None,
                           question: str = "", role: str = "judge", tag: str | None = "answer_judge",
                           seed: int | None = None, **kwargs: Any) -> Verdict:
    """`check`, then the judge for what rules cannot decide (when an LLM is given)."""
    verdict = check(gold, pred, answer_type, **kwargs)
    if verdict.equivalent is not None or llm is None:
        return verdict
    return await judge(llm, gold, pred, question=question, role=role, tag=tag, seed=seed)
