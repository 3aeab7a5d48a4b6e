"""Matrices and vectors: products, sums, transposes, determinants, inverses, lengths, eigenvalues,
sizes and volumes (Hefferon, Strickland) (moved from compute.py, unchanged)."""

from __future__ import annotations

import re

from ..answer_consistency import bounded
from ._common import Computed, _same, _split, _value

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
    # (a part that is a determinant, `vmatrix`, asks for its value whatever the stem's words)
    if parted and single and (re.match(r"^\s*(?:evaluate|find|compute)\s+the\s+determinant\s+of\s+each\b", stem, re.I)
                              or single.group(0).startswith("\\begin{vmatrix}")):
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
