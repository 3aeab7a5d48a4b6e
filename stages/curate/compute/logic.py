"""Propositional logic: "Simplify the following" and truth-table asks, compared by truth tables
(moved from compute.py, unchanged)."""

from __future__ import annotations

import re

from ..answer_consistency import bounded
from ._common import Computed, _split

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
