"""Linear systems (stages/curate/compute/systems.py): the system printed in the question is solved exactly and
every claim of the gold is checked against it; `verifiable` takes the checked claim as the final answer.
Items are as Hefferon's answer key prints them (the text layer runs a displayed system onto one line)."""

from __future__ import annotations

import pytest

from rlclimb.environments.answer_check import check
from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.curate.compute import compute
from rlclimb.stages.curate.compute.systems import linear_system, system_final
from rlclimb.stages.curate.usability import UsabilityStage
from rlclimb.stages.curate.verifiable import VerifiableStage

GAUSS = "Use Gauss’ method to solve each system or conclude ‘many solutions’ or ‘no solutions’.\n"
VECTORS = "Solve each system using matrix notation. Express the solution using vectors.\n"
SET_A = ("This reduction \\begin{pmatrix} 3 & 6 & 18 \\\\ 1 & 2 & 6 \\end{pmatrix} −→ \\begin{pmatrix} 3 & 6 & 18 \\\\ 0 & 0 "
         "& 0 \\end{pmatrix}(−1/3)ρ_1+ρ_2 leaves x leading and y free. Making y the parameter, we have x = 6 −2y so the "
         "solution set is { \\begin{pmatrix} 6 \\\\ 0 \\end{pmatrix} + \\begin{pmatrix} −2 \\\\ 1 \\end{pmatrix} y | y ∈R }.")


def outcome(question: str, answer: str):
    c = linear_system(question, answer)
    if c is None:
        return None
    return "agree" if c.agrees else "wrong" if c.sure else "doubt"


@pytest.mark.parametrize("question,answer,want,final", [
    # a worked answer: intermediate equations first, the values last
    ("Use Gauss’ method to find the unique solution for each system.\n(a) 2x + 3y = 13 x −y = −1",
     "Gauss’ method −(1/2)ρ1+ρ2 2x + 3y = 13 −→ −(5/2)y = −15/2 gives that the solution is y = 3 and x = 2",
     "agree", "x = 2, y = 3"),
    (GAUSS + "(a) 2x + 2y = 5 x −4y = 0",
     "Gaussian reduction −(1/2)ρ1+ρ2 2x + 2y = 5 −→ −5y = −5/2 shows that y = 1/2 and x = 2 is the unique solution",
     "agree", "x = 2, y = 1/2"),
    (GAUSS + "(c) x −3y + z = 1 x + y + 2z = 14",
     "Row reduction −ρ1+ρ2 x −3y + z = 1 −→ 4y + z = 13 shows, because the variable z is not a leading variable in any "
     "row, that there are many solutions", "agree", "many solutions"),
    (GAUSS + "(d) −x −y = 1 −3x −3y = 2", "Row reduction −3ρ1+ρ2 −x −y = 1 −→ 0 = −1 shows that there is no solution",
     "agree", "no solution"),
    (VECTORS + "(a) 3x + 6y = 18 x + 2y = 6", SET_A, "agree",
     "{ \\begin{pmatrix} 6 \\\\ 0 \\end{pmatrix} + \\begin{pmatrix} −2 \\\\ 1 \\end{pmatrix} y | y ∈R }"),
    ("Use Gauss’ method to find the unique solution for each system.\n(b) x −z = 0 3x + y = 1 −x + y + z = 4",
     "Gauss’ method gives (x, y, z) = (−1, 4, −1)", "agree", "x = −1, y = 4, z = −1"),
    # wrong golds: a point that fails an equation, "no solution" for a consistent system, a direction that is not
    # a solution of the homogeneous system
    ("Use Cramer’s Rule to solve each for each of the variables.\n(a) x −y = 4 −x + 2y = −7", "x = 2, y = 2", "wrong", None),
    (GAUSS + "(a) 2x + 2y = 5 x −4y = 0", "Gauss’ method shows that there is no solution", "wrong", None),
    (VECTORS + "(a) 3x + 6y = 18 x + 2y = 6",
     "The solution set is { \\begin{pmatrix} 6 \\\\ 0 \\end{pmatrix} + \\begin{pmatrix} 2 \\\\ 1 \\end{pmatrix} y | y ∈R }",
     "wrong", None),
    # one solution of many: a doubt, not a sure mismatch
    (GAUSS + "(c) x −3y + z = 1 x + y + 2z = 14", "One solution is x = 9, y = 3, z = 1, and there are others", None, None),
    # no ask to solve, two systems in the part, or no claim in the gold: cannot tell
    ("Is this a linear system?\n(a) 2x + 3y = 13 x −y = −1", "Yes: x = 2 and y = 3", None, None),
    (GAUSS + "(a) 2x + 2y = 5 x −4y = 0 and then x + y = 1, x −y = 3", "x = 2, y = 1/2", None, None),
    (GAUSS + "(a) 2x + 2y = 5 x −4y = 0", "Gauss’ method reduces it to an echelon form.", None, None),
    # a coefficient printed in digit groups ("0.000 3x" is 0.0003x): the gold's point fails the second equation
    ("Solve this system by hand. 0.000 3x + 1.556y = 1.569 0.345 4x −2.346y = 1.018\n(a) Solve it accurately, by hand.",
     "The fully accurate solution is that x = 10 and y = 0", "wrong", None),
    # a procedure that rounds gives another answer by design: cannot tell
    ("Solve this system by hand. 0.000 3x + 1.556y = 1.569 0.345 4x −2.346y = 1.018\n(b) Solve it by rounding at each step "
     "to four significant digits.", "The four-digit conclusion is quite different. =⇒x = 10460, y = −1.009", None, None),
])
def test_linear_system(question, answer, want, final):
    got = outcome(question, answer)
    assert (got if got != "doubt" else None) == want
    assert system_final(question, answer) == final


def test_underdetermined_point_is_a_doubt():
    c = linear_system(GAUSS + "(c) x −3y + z = 1 x + y + 2z = 14", "x = 9, y = 3, z = 1")
    assert c is not None and not c.agrees and not c.sure  # it solves the system, but so do many others


def test_a_question_asking_for_more_keeps_the_whole_answer():
    q = ("Solve each system. Express the solution set using vectors. Identify the particular solution and the solution "
         "set of the homogeneous system.\n(a) 3x + 6y = 18 x + 2y = 6")
    assert outcome(q, SET_A) == "agree"
    assert system_final(q, SET_A) is None
    whole = SET_A + (" Here the particular solution and the solution set for the associated homogeneous system are "
                     "\\begin{pmatrix} 6 \\\\ 0 \\end{pmatrix} and { \\begin{pmatrix} −2 \\\\ 1 \\end{pmatrix} y | y ∈R }.")
    out = VerifiableStage().embedded({"question": q, "answer": whole, "question_type": "open", "tags": []}, StageContext())
    assert out["answer"] == whole and {"needs_judge", "long_form_answer"} <= set(out["tags"])  # kept whole, for a judge


def test_verifiable_takes_the_checked_claim_and_usability_keeps_it():
    ctx = StageContext()
    q = GAUSS + "(d) −x −y = 1 −3x −3y = 2"
    a = "Row reduction −3ρ1+ρ2 −x −y = 1 −→ 0 = −1 shows that there is no solution"
    out = VerifiableStage().embedded({"question": q, "answer": a, "question_type": "open", "tags": []}, ctx)
    assert out["answer"] == "no solution" and out["solution"] == a
    vs = VerifiableStage().embedded({"question": VECTORS + "(a) 3x + 6y = 18 x + 2y = 6", "answer": SET_A,
                                     "question_type": "open", "tags": []}, ctx)
    assert vs["answer"].startswith("{ \\begin{pmatrix} 6") and "needs_judge" not in vs["tags"]
    # the answer checker compares solution sets: the same line, parametrized another way, from another point
    same = "{ \\begin{pmatrix} 4 \\\\ 1 \\end{pmatrix} + \\begin{pmatrix} 4 \\\\ −2 \\end{pmatrix} t | t ∈R }"
    assert check(vs["answer"], same).equivalent and check(vs["answer"], same).method == "vector_set"
    assert not check(vs["answer"], same.replace("4 \\\\ 1", "4 \\\\ 2")).equivalent
    kept_set = UsabilityStage().embedded(dict(vs, meta="{}", source={"page": 28, "number": "2.18"}), ctx)
    assert "cas_verified" in kept_set["tags"] and "needs_judge" not in kept_set["tags"]  # trainable: the checker compares
    point = VerifiableStage().embedded({"question": GAUSS + "(a) 2x + 2y = 5 x −4y = 0", "question_type": "open", "tags": [],
                                        "answer": "Gaussian reduction −(1/2)ρ1+ρ2 2x + 2y = 5 −→ −5y = −5/2 shows that y = "
                                                  "1/2 and x = 2 is the unique solution"}, ctx)
    assert point["answer"] == "x = 2, y = 1/2"
    kept = UsabilityStage().embedded(dict(point, meta="{}", source={"page": 19, "number": "1.18"}), ctx)
    assert not hasattr(kept, "reason") and "cas_verified" in kept["tags"]


def test_a_wrong_point_is_dropped_by_usability():
    c = compute("Use Cramer’s Rule to solve each for each of the variables.\n(a) x −y = 4 −x + 2y = −7", "x = 2, y = 2")
    assert c is not None and c.kind == "linear_system" and not c.agrees and c.sure
    out = UsabilityStage().embedded({"question": "Use Cramer’s Rule to solve each for each of the variables.\n(a) x −y = 4 "
                                     "−x + 2y = −7", "answer": "x = 2, y = 2", "answer_type": "expression", "tags": [],
                                     "meta": "{}", "source": {"page": 337, "number": "1"}}, StageContext())
    assert getattr(out, "reason", None) == "answer_mismatch"

