"""Algebra and number theory: complex values, powers mod n, remainders, congruences, orders in Z_n,
and finite structures (Z_n, bit strings, permutations, polynomials over Z_n, finite sets) (moved
from compute.py, unchanged)."""

from __future__ import annotations

import math
import re

from ..answer_consistency import _expr, bounded
from ._common import Computed, _clean, _integer, _same, _split, _value
from .matrices import _PMATRIX, _matrix

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
