"""Solution sets written with vectors (environments/vector_sets.py) and the answer checker's use of them: the
same affine subspace, however it is parametrized, is the same answer."""

from __future__ import annotations

import pytest

from rlclimb.environments.answer_check import check
from rlclimb.environments.vector_sets import same_set, vector_set


def V(*entries: str) -> str:
    return "\\begin{pmatrix} " + " \\\\ ".join(entries) + " \\end{pmatrix}"


PLANE = "{ " + V("5/3", "2/3", "0", "0") + " + " + V("−1/3", "2/3", "1", "0") + " z + " + V("−2/3", "1/3", "0", "1") + " w | z, w ∈R }"


@pytest.mark.parametrize("gold,pred,same", [
    ("{ " + V("0", "1") + " }", "{ " + V("0", "1") + " }", True),
    ("{ " + V("0", "1") + " }", "The solution set is { " + V("0", "\\frac{2}{2}") + " }", True),
    ("{ " + V("6", "0") + " + " + V("−2", "1") + " y | y ∈R }", "{ " + V("0", "3") + " + " + V("1", "−1/2") + " t | t ∈R }", True),
    ("{ " + V("6", "0") + " + " + V("−2", "1") + " y | y ∈R }", "{ " + V("0", "3") + " + " + V("1", "1/2") + " t | t ∈R }", False),
    ("{ " + V("6", "0") + " + " + V("−2", "1") + " y | y ∈R }", "{ " + V("6", "0") + " }", False),  # a point of the line
    # the plane from another particular point (z = 1, w = 1), with directions mixed
    (PLANE, "{ " + V("2/3", "5/3", "1", "1") + " + " + V("−1", "1", "1", "1") + " a + " + V("−1/3", "2/3", "1", "0") + " b | a, b ∈R }",
     True),
    (PLANE, "{ " + V("5/3", "2/3", "0") + " + " + V("−1/3", "2/3", "1") + " z | z ∈R }", False),  # another size
])
def test_same_set(gold, pred, same):
    g, p = vector_set(gold), vector_set(pred)
    assert g is not None and p is not None and same_set(g, p) is same
    verdict = check(gold, pred)
    assert verdict.equivalent is same and verdict.method in ("vector_set", "exact" if gold == pred else "")


@pytest.mark.parametrize("text", [
    "{ " + V("6", "0") + " + " + V("−2", "1") + " y | t ∈R }",  # the parameter scales nothing
    "{ " + V("6", "0") + " + " + V("−2", "1") + " }",  # two particular vectors
    "{ " + V("a", "0") + " }",  # not a number
    "{ \\begin{pmatrix} 1 & 2 \\end{pmatrix} }",  # a row
    "x = 6 − 2y",
])
def test_not_a_vector_set(text):
    assert vector_set(text) is None
