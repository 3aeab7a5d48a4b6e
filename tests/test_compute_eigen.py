"""A matrix's eigenvalues and polynomials (stages/curate/compute/eigen.py), claim by claim, as Hefferon's key prints
them, and how a gold the CAS checked in full is kept for a judge."""

from __future__ import annotations

import pytest

from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.curate.compute import checked_in_full, compute
from rlclimb.stages.curate.usability import UsabilityStage
from rlclimb.stages.curate.verifiable import VerifiableStage

JORDAN = "Each matrix is in Jordan form. State its characteristic polynomial and its minimal polynomial.\n"
CHAR = "For each, find the characteristic polynomial and the eigenvalues.\n"


@pytest.mark.parametrize("question,answer,want", [
    (JORDAN + "(a) \\begin{pmatrix} 3 & 0 \\\\ 1 & 3 \\end{pmatrix}",
     "The characteristic polynomial is c(x) = (x−3)^2 and the minimal polynomial is the same", "agree"),
    (JORDAN + "(e) \\begin{pmatrix} 3 & 0 & 0 & 0 \\\\ 1 & 3 & 0 & 0 \\\\ 0 & 0 & 3 & 0 \\\\ 0 & 0 & 1 & 3 \\end{pmatrix}",
     "The characteristic polynomial is c(x) = (x −3)^4. The minimal polynomial is m(x) = (x −3)^2", "agree"),
    (CHAR + "(a) \\begin{pmatrix} 10 & −9 \\\\ 4 & −2 \\end{pmatrix}",
     "This 0 = \\begin{vmatrix} 10 −x & −9 \\\\ 4 & −2 −x \\end{vmatrix} = (10 −x)(−2 −x) −(−36) simplifies to the "
     "characteristic equation x^2 −8x + 16 = 0. Because the equation factors into (x −4)^2 there is only one eigenvalue λ_1 = 4",
     "agree"),
    (CHAR + "(b) \\begin{pmatrix} 1 & 2 \\\\ 4 & 3 \\end{pmatrix}", "0 = (1 −x)(3 −x) −8 = x^2 −4x −5; λ_1 = 5, λ_2 = −1", "agree"),
    (CHAR + "(c) \\begin{pmatrix} 0 & 3 \\\\ 7 & 0 \\end{pmatrix}", "x^2 −21 = 0; λ_1 = \\sqrt{21}, λ_2 = −\\sqrt{21}", "agree"),
    # the book's own slips: (g)'s polynomial is (h)'s, and (h)'s minimal polynomial is not its characteristic one
    (JORDAN + "(g) \\begin{pmatrix} 5 & 0 & 0 \\\\ 0 & 2 & 0 \\\\ 0 & 0 & 3 \\end{pmatrix}",
     "The characteristic polynomial is c(x) = (x −2)^2(x −3)(x −5) and the minimal polynomial is m(x) = (x −2)(x −3)(x −5)",
     "wrong"),
    (JORDAN + "(h) \\begin{pmatrix} 5 & 0 & 0 & 0 \\\\ 0 & 2 & 0 & 0 \\\\ 0 & 0 & 2 & 0 \\\\ 0 & 0 & 0 & 3 \\end{pmatrix}",
     "The characteristic polynomial is c(x) = (x −2)^2(x −3)(x −5) and the minimal polynomial is the same", "wrong"),
    # an eigenvalue left out: a doubt; a value it cannot read, or two matrices: cannot tell
    (CHAR + "(b) \\begin{pmatrix} 1 & 2 \\\\ 4 & 3 \\end{pmatrix}", "x^2 −4x −5; λ_1 = 5", "doubt"),
    (CHAR + "(b) \\begin{pmatrix} 1 & 2 \\\\ 4 & 3 \\end{pmatrix}", "x^2 −4x −5; λ_1 = five or so", None),
    (CHAR + "(b) \\begin{pmatrix} 1 & 2 \\\\ 4 & 3 \\end{pmatrix} and \\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}",
     "λ_1 = 5, λ_2 = −1", None),
])
def test_eigen_facts(question, answer, want):
    c = compute(question, answer)
    got = None if c is None else "agree" if c.agrees else "wrong" if c.sure else "doubt"
    assert got == want
    if got is not None:
        assert c.kind == "eigen"


def test_a_checked_prose_gold_is_kept_for_a_judge():
    q = JORDAN + "(a) \\begin{pmatrix} 3 & 0 \\\\ 1 & 3 \\end{pmatrix}"
    a = "The characteristic polynomial is c(x) = (x−3)^2 and the minimal polynomial is the same"
    assert checked_in_full(q, a)
    ctx = StageContext()
    rec = VerifiableStage().embedded({"question": q, "answer": a, "question_type": "open", "tags": []}, ctx)
    out = UsabilityStage().embedded(dict(rec, meta="{}", source={"page": 402, "number": "2.17"}), ctx)
    assert not hasattr(out, "reason") and {"cas_verified", "needs_judge"} <= set(out["tags"])
    # eigenvectors are not checked: a question asking for them is not checked in full
    assert not checked_in_full("For each matrix, find the characteristic equation, and the eigenvalues and associated "
                               "eigenvectors.\n(a) \\begin{pmatrix} 3 & 0 \\\\ 8 & −1 \\end{pmatrix}",
                               "The characteristic equation is (3 −x)(−1 −x) = 0. Its roots, the eigenvalues, are λ_1 = 3 "
                               "and λ_2 = −1.")
