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
VECTORS = "For each matrix, find the characteristic equation, and the eigenvalues and associated eigenvectors.\n"
EIGEN_A = ("The characteristic equation is (3 −x)(−1 −x) = 0. Its roots, the eigenvalues, are λ_1 = 3 and λ_2 = −1. For the "
           "eigenvector associated with λ_1 = 3, we consider the resulting linear system. The eigenspace is the set of vectors "
           "whose second component is twice the first component. { \\begin{pmatrix} b_2/2 \\\\ b_2 \\end{pmatrix} | b_2 ∈C } "
           "Finding an eigenvector associated with λ_2 = −1 is similar. { \\begin{pmatrix} 0 \\\\ b_2 \\end{pmatrix} | b_2 ∈C }")


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
    # eigenspaces written as sets, checked as A v = λ v in their parameters (complex ones too)
    (VECTORS + "(a) \\begin{pmatrix} 3 & 0 \\\\ 8 & −1 \\end{pmatrix}", EIGEN_A, "agree"),
    (VECTORS + "(a) \\begin{pmatrix} 3 & 0 \\\\ 8 & −1 \\end{pmatrix}", EIGEN_A.replace("b_2/2", "2b_2"), "wrong"),
    (VECTORS + "(a) \\begin{pmatrix} 3 & 0 \\\\ 8 & −1 \\end{pmatrix}", EIGEN_A.split(" Finding")[0], None),  # one eigenspace
    ("Find the characteristic equation, and the eigenvalues and associated eigenvectors for this matrix. \\begin{pmatrix} "
     "−2 & −1 \\\\ 5 & 2 \\end{pmatrix}",
     "The characteristic equation 0 = \\begin{vmatrix} −2 −x & −1 \\\\ 5 & 2 −x \\end{vmatrix} = x^2 + 1 has the complex "
     "roots λ_1 = i and λ_2 = −i. For λ_1 = i Gauss’ method gives this. { \\begin{pmatrix} (1/(−2−i))b_2 \\\\ b_2 "
     "\\end{pmatrix} | b_2 ∈C } For λ_2 = −i it leads to this. { \\begin{pmatrix} (1/(−2+i))b_2 \\\\ b_2 \\end{pmatrix} "
     "| b_2 ∈C }", "agree"),
    ("For each matrix, find the characteristic equation, and the eigenvalues and associated eigenvectors.\n(a) "
     "\\begin{pmatrix} 3 & −2 & 0 \\\\ −2 & 3 & 0 \\\\ 0 & 0 & 5 \\end{pmatrix}",
     "The characteristic equation is (x −1)(x −5)^2 = 0 and so the eigenvalues are λ_1 = 1 and also the repeated "
     "eigenvalue λ_2 = 5. For λ_1 = 1 we get { \\begin{pmatrix} b_2 "
     "\\\\ b_2 \\\\ 0 \\end{pmatrix} | b_2 ∈C } and for λ_2 = 5 { \\begin{pmatrix} −b_2 \\\\ b_2 \\\\ 0 \\end{pmatrix} + "
     "\\begin{pmatrix} 0 \\\\ 0 \\\\ b_3 \\end{pmatrix} | b_2, b_3 ∈C }", "agree"),
    # an eigenvalue left out, a value it cannot read, or two matrices: cannot tell
    ("Show that the matrix A = \\begin{pmatrix} 1 & 1 & 0 \\\\ −1 & 2 & 1 \\\\ −1 & 0 & 3 \\end{pmatrix} cannot be "
     "diagonalised.\nHint: the eigenvalues are small integers.",
     "The characteristic polynomial is χ_A(t) = (1 −t)(2 −t)(3 −t) −(t −2), so the only eigenvalues are 1 and 2.", None),
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
    assert checked_in_full(VECTORS + "(a) \\begin{pmatrix} 3 & 0 \\\\ 8 & −1 \\end{pmatrix}", EIGEN_A)
    # eigenvectors asked and none stated as a set: not checked in full
    assert not checked_in_full("For each matrix, find the characteristic equation, and the eigenvalues and associated "
                               "eigenvectors.\n(a) \\begin{pmatrix} 3 & 0 \\\\ 8 & −1 \\end{pmatrix}",
                               "The characteristic equation is (3 −x)(−1 −x) = 0. Its roots, the eigenvalues, are λ_1 = 3 "
                               "and λ_2 = −1.")


POSSIBLE = "What are the possible minimal polynomials if a matrix has the given characteristic polynomial?\n"


@pytest.mark.parametrize("part,answer,agrees", [
    ("(b) (1/3) · (x + 1)^3(x −4)", "The possibilities are m_1(x) = (x+1)(x−4), m_2(x) = (x+1)^2(x−4), and m_3(x) = "
     "(x+1)^3(x−4). The first is a quadratic polynomial, that is, it has degree two.", True),
    ("(c) −1 · (x −2)^2(x −5)^2", "We have m_1(x) = (x −2)(x −5), m_2(x) = (x −2)^2(x −5), m_3(x) = (x −2)(x −5)^2, and "
     "m_4(x) = (x −2)^2(x −5)^2. They are polynomials of degree two, three, three, and four", True),
    ("(c) −1 · (x −2)^2(x −5)^2", "We have m_1(x) = (x −2)(x −5) and m_2(x) = (x −2)^2(x −5)^2.", False),  # two left out
    ("(a) 8 · (x −3)^4", "The possibilities are m_1(x) = x −3, m_2(x) = (x −3)^2, m_3(x) = (x −3)^3, and m_4(x) = (x −3)^5.",
     False),
])
def test_possible_minimal_polynomials(part, answer, agrees):
    c = compute(POSSIBLE + part, answer)
    assert c is not None and c.kind == "possible_minimal" and c.agrees is agrees and c.sure
    assert checked_in_full(POSSIBLE + part, answer) is agrees
