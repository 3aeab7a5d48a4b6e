"""Solution sets written with vectors: "{ \\begin{pmatrix} 6 \\\\ 0 \\end{pmatrix} + \\begin{pmatrix} −2 \\\\ 1
\\end{pmatrix} y | y ∈R }" (a particular vector plus parameters times direction vectors) or a singleton
"{ \\begin{pmatrix} 0 \\\\ 1 \\end{pmatrix} }".

Two such sets are equal when they are the same affine subspace, whatever the parameters' names and the
particular vector chosen: their directions span the same space, and the particulars differ by a vector of it.
Used by the answer checker (a rollout's solution set against the gold's) and by curation's linear-system check.
"""

from __future__ import annotations

import re

_PARAM = r"[a-zA-Z](?:_\{?\d{1,2}\}?)?"
SET = re.compile(rf"\{{\s*((?:[+-−]?\s*\\begin\{{pmatrix\}}.*?\\end\{{pmatrix\}}\s*(?:{_PARAM})?\s*)+)"
                 r"(?:\|\s*([a-zA-Z_{}\d,\s]+)\s*∈\s*(?:R|ℝ|\\mathbb\{R\}|C|ℂ|\\mathbb\{C\})\s*)?\}", re.S)
_TERM = re.compile(rf"([+-−]?)\s*\\begin\{{pmatrix\}}(.*?)\\end\{{pmatrix\}}\s*((?:{_PARAM})?)", re.S)


def _param(name: str) -> str:
    return re.sub(r"_\{?(\d+)\}?", r"_\1", name.strip())


def _entry(text: str):
    """A vector entry as an exact sympy number ("−1/3", "\\frac{5}{3}", "2.5"), or None."""
    import sympy

    t = text.strip().replace("−", "-").replace("–", "-")
    t = re.sub(r"\\(?:d|t)?frac\{([^{}]+)\}\{([^{}]+)\}", r"(\1)/(\2)", t)
    if not t or not re.fullmatch(r"[\d\s+\-*/().]+", t):
        return None
    try:
        v = sympy.nsimplify(sympy.sympify(t, rational=True))
    except (sympy.SympifyError, TypeError, ValueError, SyntaxError, ZeroDivisionError):
        return None
    return v if v.is_number and v.is_finite else None


def _vector(body: str):
    import sympy

    if "&" in body:  # a row or a matrix, not a column vector
        return None
    entries = [_entry(c) for c in re.split(r"\\\\", body) if c.strip()]
    return None if not entries or None in entries else sympy.Matrix(entries)


def parse(match: re.Match, n: int | None = None):
    """(particular, [directions]) of a SET match, or None: the vectors must all parse and have one size (n when
    given), each parameter must scale exactly one direction, and there is at most one particular vector."""
    import sympy

    params = {_param(p) for p in (match.group(2) or "").split(",") if p.strip()}
    particular, directions, seen = None, [], set()
    for sign, body, param in _TERM.findall(match.group(1)):
        v = _vector(body)
        if v is None or (n is not None and v.rows != n):
            return None
        v = -v if sign in ("-", "−") else v
        if param:
            if _param(param) not in params or _param(param) in seen:
                return None
            seen.add(_param(param))
            directions.append(v)
        elif particular is None:
            particular = v
        else:
            return None
    size = particular.rows if particular is not None else directions[0].rows if directions else None
    if size is None or any(d.rows != size for d in directions) or seen != params:
        return None
    return (particular if particular is not None else sympy.zeros(size, 1)), directions


def vector_set(text: str):
    """The one solution set `text` is ("{ ... }" and nothing else but "The solution set is"), or None."""
    t = text.strip().rstrip(".").strip()
    t = re.sub(r"^(?:the\s+)?solution\s+set\s+is\s+", "", t, flags=re.I)
    m = SET.fullmatch(t)
    return parse(m) if m else None


def same_set(a, b) -> bool:
    """Whether two parsed sets (particular, directions) are the same affine subspace."""
    import sympy

    (pa, da), (pb, db) = a, b
    if pa.rows != pb.rows:
        return False
    A = sympy.Matrix.hstack(*da) if da else sympy.zeros(pa.rows, 0)
    B = sympy.Matrix.hstack(*db) if db else sympy.zeros(pb.rows, 0)
    rank = A.rank()
    if rank != B.rank() or sympy.Matrix.hstack(A, B).rank() != rank:
        return False
    return sympy.Matrix.hstack(A, pa - pb).rank() == rank
