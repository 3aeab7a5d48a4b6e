"""Compute the gold where a computer algebra system can: for asks whose answer follows from the
question as printed (a derivative, an antiderivative, the sequence a generating function makes, a
recurrence's closed form, the sum of a progression, the terms of an expanded sum or product, a power modulo n, the solutions of a
congruence, an element's order in Z_n, a complex number's value, a linear system's solutions, a
matrix's eigenvalues, polynomials and eigenspaces, a truth-table verdict), compute the answer and
compare it with the gold.

`compute(question, answer)` gives a `Computed` (the kind, the computed value, whether the gold
agrees, and whether a disagreement is sure) or None: cannot tell. A question parses for a kind only
when several cues agree (the ask's verb, one formula of the kind's shape, a gold of the asked
type); anything else is "cannot tell". A disagreement is `sure` only when the formula and the gold
both parsed cleanly (no prose, no ellipsis in a value, no unknown letters); otherwise it is a
doubt (`maybe_answer_mismatch`). The gold is never rewritten.

Every kind is bounded like answer_consistency's checks (`bounded`: BOUND_S CPU seconds in the main
thread, errors are "cannot tell").
"""

from __future__ import annotations

import functools
import re

from ..answer_consistency import bounded
from ._common import Computed
from .calculus import antiderivative, chained_derivative, derivative, ode_solution
from .eigen import checks_all, eigen_facts, possible_minimal
from .logic import logic, logic_verdict
from .matrices import matrix, matrix_facts
from .numbers import congruence, element_order, evaluate, finite, remainder
from .sequences import (
    closed_formula,
    coefficient,
    generating_function,
    progression_sum,
    recurrence,
    sum_expansion,
)
from .systems import linear_system

KINDS = (derivative, chained_derivative, linear_system, logic, logic_verdict, antiderivative, generating_function, recurrence, closed_formula, progression_sum, sum_expansion, coefficient, evaluate, remainder, congruence,
         element_order, ode_solution, eigen_facts, possible_minimal, matrix, finite, matrix_facts)


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


def checked_in_full(question: str, answer: str) -> bool:
    """The gold's every claim was checked and it states all the question asks: a linear system's solutions, a
    matrix's eigenvalues, polynomials and eigenspaces, a truth-table verdict (equivalent, a valid rule), the
    possible minimal polynomials, a polynomial's coefficient. Such a gold is checkable however long its prose (a judge grades what the
    answer checker cannot compare): it is not dropped as unreadable or long-form."""
    c = compute(question, answer)
    if c is None or not c.agrees:
        return False
    if c.kind == "possible_minimal":  # (the degrees a question may also ask for are not checked)
        return "degree" not in question.lower()
    return c.kind in ("linear_system", "logic_verdict", "coefficient") or c.kind == "eigen" and checks_all(question)
