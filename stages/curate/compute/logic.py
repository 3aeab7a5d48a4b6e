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


def _formulas(text: str):
    """The formulas written one after another ("P ∨Q ¬P": P ∨ Q, then ¬P), each as _logic gives it; None when a
    piece is not a formula."""
    t = text.strip().rstrip(".").strip()
    pieces, start, pos, last = [], 0, 0, None
    while pos < len(t):
        m = _LOGIC_TOKEN.match(t, pos)
        if m is None:
            return None
        tok = next(g for g in m.groups() if g)
        # a new formula starts where an atom, ¬ or ( follows a finished one (an atom, T, F or a closing bracket)
        if last is not None and re.fullmatch(r"[P-ZTF)]", last) and re.fullmatch(r"[P-ZTF¬(]", tok) and _logic(t[start:m.start()]):
            pieces.append(t[start:m.start()])
            start = m.start()
        last, pos = tok, m.end()
    pieces.append(t[start:])
    out = [_logic(p) for p in pieces]
    return None if None in out else out


_EQUIVALENT_ASK = re.compile(r"^\s*(?:are\s+the\s+statements?\s+|determine\s+whether\s+the\s+following\s+two\s+statements\s+are\s+"
                             r"logically\s+equivalent\s*:\s*)(.+?)\s+and\s+(.+?)(?:\s+logically\s+equivalent\s*\?|\.)", re.I | re.S)
_RULE_ASK = re.compile(r"^\s*(?:determine\s+if\s+the\s+following\s+(?:is\s+a\s+valid\s+deduction\s+rule|deduction\s+rule\s+is\s+valid)"
                       r"|is\s+the\s+following\s+a\s+valid\s+deduction\s+rule\s*\?(?:\s*explain\.)?)\s*:?\s*(.+?)∴\s*(.+?)\s*$", re.I | re.S)
_NO = re.compile(r"\bnot\s+(?:valid|logically\s+equivalent)\b|\binvalid\b|^\s*no\b", re.I)
_YES = re.compile(r"\bis\s+valid\b|\bare\s+logically\s+equivalent\b|^\s*yes\b", re.I)


@bounded
def logic_verdict(question: str, answer: str) -> Computed | None:
    """"Are the statements P →(Q ∨R) and (P →Q) ∨(P →R) logically equivalent?" answered "... The statements are
    logically equivalent."; "Determine if the following is a valid deduction rule: P →(Q ∨R) ¬(P →Q) ∴ R" answered
    "The deduction rule is valid. ...": the gold's verdict (its first sentence that gives one) against truth tables."""
    import itertools

    q = question.strip()
    if (m := _EQUIVALENT_ASK.match(q)) is not None:
        a, b = _logic(m.group(1)), _logic(m.group(2))
        if a is None or b is None:
            return None
        premises, conclusion = [a], b
        equivalence = True
    elif (m := _RULE_ASK.match(q)) is not None:
        premises, conclusion = _formulas(m.group(1)), _logic(m.group(2))
        if not premises or conclusion is None:
            return None
        equivalence = False
    else:
        return None
    verdict = None
    for sentence in re.split(r"(?<=[.!?])\s+", answer.strip()):
        no, yes = bool(_NO.search(sentence)), bool(_YES.search(sentence))
        if no or yes:
            verdict = None if no and yes else yes
            break
    if verdict is None:
        return None
    letters = sorted(set().union(*(f[1] for f in premises), conclusion[1]))
    holds = True
    for values in itertools.product((False, True), repeat=len(letters)):
        env = dict(zip(letters, values, strict=True))
        if equivalence:
            holds &= premises[0][0](env) == conclusion[0](env)
        elif all(f[0](env) for f in premises):
            holds &= conclusion[0](env)
    want = ("equivalent" if holds else "not equivalent") if equivalence else ("valid" if holds else "not valid")
    return Computed("logic_verdict", want, verdict == holds, sure=True, detail=f"by truth table the answer is: {want}")
