"""A matrix's eigenvalues and polynomials, claim by claim: "For each, find the characteristic polynomial and the
eigenvalues.\\n(a) \\begin{pmatrix} 10 & −9 \\\\ 4 & −2 \\end{pmatrix}" answered "... simplifies to the characteristic
equation x^2 −8x + 16 = 0. Because the equation factors into (x −4)^2 there is only one eigenvalue λ_1 = 4";
"Each matrix is in Jordan form. State its characteristic polynomial and its minimal polynomial." answered "The
characteristic polynomial is c(x) = (x −2)^2(x −3)(x −5) and the minimal polynomial is m(x) = (x −2)(x −3)(x −5)".

The one square matrix of the part (else of the stem) is the matrix asked about. Each claim of the gold is checked
against it: every "λ = value" is an eigenvalue, every characteristic polynomial or equation it states is the
characteristic polynomial up to a constant factor (books write det(A − xI) and det(xI − A)), every minimal
polynomial (or "the minimal polynomial is the same") is the minimal one, and every eigenspace it writes as a set
("{ (b_2/2, b_2) | b_2 ∈ C }") is one: A v = λ v in the parameters, as many parameters as the eigenspace's
dimension. The gold agrees when every claim holds and it states what the question asks (all the eigenvalues, a
polynomial, one eigenspace per eigenvalue, when asked); a claim that fails is a sure mismatch; a gold that leaves
out what is asked is "cannot tell". `possible_minimal` checks the list of possible minimal polynomials of a given
characteristic polynomial.
"""

from __future__ import annotations

import re

from ..answer_consistency import bounded
from ._common import Computed, _same, _split, _value
from .matrices import _PMATRIX, _matrix

_ASK = re.compile(r"\b(?:characteristic\s+(?:polynomial|equation)|minimal\s+polynomial|eigenvalues?)\b", re.I)
_LAMBDA = re.compile(r"λ(?:_\{?\d+\}?)?\s*=\s*(?!λ)(.+?)(?=\s*(?:,|;|\(|\.\s|\.?$)|\s+(?:[A-Za-z’']{2,}|\{))")
# "the characteristic polynomial is c(x) = P", "the characteristic equation x^2 −8x + 16 = 0"; the polynomial ends
# the clause
_END = r"(?=\s*(?:\band\b|,|;|\.\s|\.?$|\b(?:The|the|so|has|which|Because|Its|and|simplifies)\b))"
_CHAR = re.compile(r"characteristic\s+(?:polynomial|equation)\s+(?:is\s+)?(?:[cpχ]\w*\s*\(\s*[xtλ]\s*\)\s*=\s*)?"
                   r"([^.;,]*?[xtλ][^.;,]*?)" + _END, re.I)
_MIN = re.compile(r"minimal\s+polynomial\s+is\s+(?:m\w*\s*\(\s*[xtλ]\s*\)\s*=\s*)?(the\s+same|[^.;,]*?[xtλ][^.;,]*?)" + _END, re.I)


def _asked(question: str) -> set[str]:
    q = question.lower()
    out = set()
    if re.search(r"characteristic\s+(?:polynomial|equation)", q):
        out.add("char")
    if "minimal polynomial" in q:
        out.add("min")
    if re.search(r"eigenvalues?\b", q):
        out.add("eig")
    if re.search(r"eigenvectors?|eigenspaces?", q):
        out.add("vectors")
    return out


def _the_matrix(question: str):
    """The one square matrix (numbers only) of the part, else of the stem; None when there are several or none."""
    stem, item = _split(question)
    for text in (item, stem) if item != stem else (stem,):
        found = list(_PMATRIX.finditer(text))
        if len(found) > 1:
            return None
        if found:
            a = _matrix(found[0].group(1))
            return a if a is not None and a.rows == a.cols and a.rows <= 5 and not a.free_symbols else None
    return None


def _polynomial(text: str, x):
    """The polynomial in one variable (x, t or λ, renamed x) that `text` writes, else None; "0" is no polynomial."""
    import sympy

    t = text.strip().replace("λ", "t")
    var = next((v for v in "xt" if re.search(rf"(?<![a-z\\]){v}(?![a-z])", t)), None)
    if var is None:
        return None
    v = _value(t, letters=var)
    if v is None or [s.name for s in v.free_symbols] != [var]:
        return None
    p = v.subs(next(iter(v.free_symbols)), x)
    return p if sympy.Poly(p, x).degree() >= 1 else None


def _minimal(a, x):
    """The minimal polynomial of `a` (monic): the least product of (x − λ)^k over its eigenvalues that sends it to 0."""
    import itertools

    import sympy

    roots = a.eigenvals()
    lams = list(roots)
    best = None
    for ks in itertools.product(*[range(1, roots[lam] + 1) for lam in lams]):
        m = sympy.eye(a.rows)
        for lam, k in zip(lams, ks, strict=True):
            m = m * (a - lam * sympy.eye(a.rows)) ** k
        if sympy.simplify(m) == sympy.zeros(a.rows) and (best is None or sum(ks) < sum(best)):
            best = ks
    return sympy.Mul(*[(x - lam) ** k for lam, k in zip(lams, best, strict=True)])


def _proportional(p, q, x) -> bool:
    import sympy

    r = sympy.simplify(p / q)
    return bool(r.is_number and r != 0)


@bounded
def eigen_facts(question: str, answer: str) -> Computed | None:
    import sympy

    asked = _asked(question)
    if not asked - {"vectors"} or not _ASK.search(question):
        return None
    a = _the_matrix(question)
    if a is None:
        return None
    x = sympy.Symbol("x")
    text = answer.replace("−", "-").replace("–", "-")
    claims: list[tuple[str, object]] = []
    for m in _LAMBDA.finditer(text):
        v = _number(m.group(1))
        if v is None:
            return None  # a value it cannot read: not every claim can be checked
        claims.append(("eig", v))
    for pattern, kind in ((_CHAR, "char"), (_MIN, "min")):
        for m in pattern.finditer(text):
            if kind == "min" and m.group(1).lower().startswith("the same"):
                claims.append(("min", "same"))
                continue
            # (a determinant written out, "0 = |A − xI| = ...", is working, not a claim)
            segments = [s for s in m.group(1).split("=") if s.strip() not in ("0", "") and "\\begin" not in s]
            polys = [_polynomial(s, x) for s in segments]
            if not polys or None in polys:
                return None
            claims += [(kind, p) for p in polys]
    # a clause that is only an equation chain ("0 = (1 −x)(3 −x) −8 = x^2 −4x −5; λ_1 = 5"): its polynomials of
    # the matrix's degree state the characteristic polynomial
    for clause in re.split(r";|\.\s", text):
        if "=" in clause and not re.search(r"[A-Za-z]{2,}|λ", clause):
            for s in clause.split("="):
                p = _polynomial(s, x) if s.strip() not in ("0", "") else None
                if p is not None and sympy.Poly(p, x).degree() == a.rows:
                    claims.append(("char", p))
    spaces = _eigenspaces(text, a.rows)
    if spaces is None:
        return None
    claims += [("space", v) for v in spaces]
    if not claims:
        return None
    cp = a.charpoly(x).as_expr()
    eigenvalues = list(a.eigenvals())
    failed = []
    for kind, v in claims:
        if kind == "eig" and not any(_same(v, lam) for lam in eigenvalues):
            failed.append(f"λ = {v} is not an eigenvalue")
        elif kind == "char" and not _proportional(v, cp, x):
            failed.append(f"{v} is not the characteristic polynomial")
        elif kind == "space" and _eigenvalue_of(a, v, eigenvalues) is None:
            failed.append(f"{v.T.tolist()} is not an eigenspace")
        elif kind == "min":
            want = _minimal(a, x)
            got = cp if v == "same" else v
            if not _proportional(got, want, x):
                failed.append(f"{got} is not the minimal polynomial {want}")
    want = f"eigenvalues {eigenvalues}, characteristic polynomial {sympy.factor(cp)}"
    if failed:
        return Computed("eigen", want, False, True, "; ".join(failed))
    stated = {k for k, _ in claims}
    got_eig = [v for k, v in claims if k == "eig"]
    spaces_of = {_eigenvalue_of(a, v, eigenvalues) for k, v in claims if k == "space"}
    complete = (("eig" not in asked or all(any(_same(g, lam) for g in got_eig) for lam in eigenvalues))
                and ("vectors" not in asked or all(lam in spaces_of for lam in eigenvalues))
                and ("char" not in asked or "char" in stated) and ("min" not in asked or "min" in stated))
    if not complete:  # a partial gold, or a word of a hint ("the eigenvalues are small integers"): cannot tell
        return None
    return Computed("eigen", want, True)


def _number(text: str):
    """An eigenvalue as written: a number, a root, or a complex number with i."""
    import sympy

    v = _value(text, letters="i")
    if v is None or any(s.name != "i" for s in v.free_symbols):
        return None
    return v.subs({s: sympy.I for s in v.free_symbols})


# "{ \begin{pmatrix} b_2/2 \\ b_2 \end{pmatrix} | b_2 ∈C }", "{ \begin{pmatrix} −b_2 \\ b_2 \\ 0 \end{pmatrix} +
# \begin{pmatrix} 0 \\ 0 \\ b_3 \end{pmatrix} | b_2, b_3 ∈C }": an eigenspace, vectors in its parameters
_PARAM = r"[a-z](?:_\{?\d\}?)?"
_SPACE = re.compile(rf"\{{\s*((?:[+-]?\s*\\begin\{{pmatrix\}}.*?\\end\{{pmatrix\}}\s*(?:{_PARAM})?\s*)+)\|\s*({_PARAM}(?:\s*,\s*{_PARAM})*)"
                    r"\s*∈\s*(?:C|R|ℂ|ℝ|\\mathbb\{[CR]\})\s*\}", re.S)
_TERM = re.compile(r"([+-]?)\s*\\begin\{pmatrix\}(.*?)\\end\{pmatrix\}\s*([a-z])?", re.S)


def _eigenspaces(text: str, n: int):
    """The eigenspaces the gold writes as sets, each a column vector of entries linear in its parameters (renamed
    p, q, ...); None when one cannot be read."""
    import sympy

    out = []
    for m in _SPACE.finditer(text):
        params = [p.strip() for p in m.group(2).split(",")]
        body = m.group(1)
        names = "pqrsuvw"[: len(params)]
        if len(params) > len(names):
            return None
        for p, name in zip(params, names, strict=True):
            base, _, index = p.partition("_")
            pattern = rf"(?<![a-z\\]){base}_\{{?{index.strip('{}')}\}}?" if index else rf"(?<![a-z\\]){base}(?![a-z])"
            body = re.sub(pattern, name, body)
        v = sympy.zeros(n, 1)
        for sign, cells_text, factor in _TERM.findall(body):
            cells = [c.strip() for c in re.split(r"\\\\", cells_text) if c.strip()]
            entries = [_value(c, letters=names + "i") for c in cells] if len(cells) == n else [None]
            if None in entries:
                return None
            # (one symbol per name: the parser may make two symbols of one name)
            entries = [e.subs({s: sympy.I if s.name == "i" else sympy.Symbol(s.name) for s in e.free_symbols}) for e in entries]
            term = sympy.Matrix(entries) * (sympy.Symbol(factor) if factor else 1)
            v += -term if sign == "-" else term
        if {s.name for s in v.free_symbols} != set(names):
            return None
        out.append(v)
    return out


def _eigenvalue_of(a, v, eigenvalues):
    """The eigenvalue whose whole eigenspace `v` (a vector in free parameters) is, or None."""
    import sympy

    symbols = sorted(v.free_symbols, key=str)
    basis = [v.diff(s) for s in symbols]
    if v.subs({s: 0 for s in symbols}) != sympy.zeros(v.rows, 1) or sympy.Matrix.hstack(*basis).rank() != len(symbols):
        return None
    for lam in eigenvalues:
        null = a - lam * sympy.eye(a.rows)
        if all(sympy.simplify(null * b) == sympy.zeros(a.rows, 1) for b in basis) and a.rows - null.rank(simplify=True) == len(symbols):
            return lam
    return None


def checks_all(question: str) -> bool:
    """Whether eigen_facts checks everything the question asks: its values, polynomials and eigenspaces (the
    eigenspaces when they are asked; `eigen_facts` requires one per eigenvalue then)."""
    return bool(_asked(question))


_POSSIBLE_ASK = re.compile(r"\bpossible\s+minimal\s+polynomials?\b.*\bcharacteristic\s+polynomial\b", re.I | re.S)
_M = re.compile(r"\bm(?:_\{?\d+\}?)?\s*\(\s*x\s*\)\s*=\s*(.+?)(?=\s*(?:,|;|\.\s|\.?$|\band\b))")


@bounded
def possible_minimal(question: str, answer: str) -> Computed | None:
    """"What are the possible minimal polynomials if a matrix has the given characteristic polynomial?\\n(b) (1/3) ·
    (x + 1)^3(x −4)" answered "The possibilities are m_1(x) = (x+1)(x−4), m_2(x) = ...": the monic divisors with
    every root of the characteristic polynomial, against the gold's list (as sets)."""
    import itertools

    import sympy

    stem, item = _split(question)
    if item == stem or not _POSSIBLE_ASK.search(stem):
        return None
    x = sympy.Symbol("x")
    head = re.split(r"\s+(?=[A-Z][a-z])", item.strip(), maxsplit=1)[0]  # "(d) 5 · (x + 3)^2 ... What is the degree ..."
    cp = _polynomial(head.replace("−", "-").rstrip("."), x)
    got = [_polynomial(m.group(1), x) for m in _M.finditer(answer.replace("−", "-"))]
    if cp is None or not got or None in got:
        return None
    roots = sympy.roots(sympy.Poly(cp, x))
    if sum(roots.values()) != sympy.Poly(cp, x).degree():
        return None
    want = {sympy.expand(sympy.Mul(*[(x - r) ** k for r, k in zip(roots, ks, strict=True)]))
            for ks in itertools.product(*[range(1, m + 1) for m in roots.values()])}
    stated = {sympy.expand(sympy.Poly(p, x).monic().as_expr()) for p in got}
    shown = ", ".join(str(sympy.factor(w)) for w in want)
    return Computed("possible_minimal", shown, stated == want, sure=True, detail=f"the possible minimal polynomials are {shown}")
