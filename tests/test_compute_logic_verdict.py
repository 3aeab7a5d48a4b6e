"""Truth-table verdicts (stages/curate/compute/logic.py, `logic_verdict`): "are these logically equivalent", "is
this a valid deduction rule" (premises run together on one line, as Levin's text layer prints them), the gold's
verdict in words against the truth tables; a checked verdict in prose is kept for a judge."""

from __future__ import annotations

import pytest

from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.curate.compute import checked_in_full, compute
from rlclimb.stages.curate.usability import UsabilityStage

RULE = "Determine if the following is a valid deduction rule: "


@pytest.mark.parametrize("question,answer,want", [
    ("Determine if the following deduction rule is valid: P ∨Q ¬P ∴ Q",
     "The rule is valid. To see this, make a truth table which contains P ∨Q and ¬P (and P and Q of course).", True),
    (RULE + "P →(Q ∨R) ¬(P →Q) ∴ R", "The deduction rule is valid. Again, make a truth table containing the premises.", True),
    (RULE + "(P ∧Q) →R ¬P ∨¬Q ∴ ¬R", "The rule is NOT valid. If you make a truth table, there will be a row with both "
     "premises true but the conclusion false.", True),
    (RULE + "(P ∧Q) →R ¬P ∨¬Q ∴ ¬R", "The rule is valid: make a truth table.", False),
    ("Determine whether the following two statements are logically equivalent: ¬(P →Q) and P ∧¬Q. Explain how you know "
     "you are correct.", "Make a truth table for each and compare. The statements are logically equivalent.", True),
    ("Are the statements P →(Q ∨R) and (P →Q) ∨(P →R) logically equivalent?", "No. Make two truth tables.", False),
    ("Are the statement P →(Q ∨R) and (P →Q)∨(P →R) logically equivalent? Explain your answer.",
     "Yes. To see this, make a truth table for each statement and compare.", True),
])
def test_logic_verdict(question, answer, want):
    c = compute(question, answer)
    assert c is not None and c.kind == "logic_verdict" and c.agrees is want and c.sure


@pytest.mark.parametrize("question,answer", [
    (RULE + "P →(Q ∨R) ¬(P →Q) ∴ R", "Make a truth table containing the premises and the conclusion."),  # no verdict
    ("Are the statements P →Q and the converse logically equivalent?", "No."),  # not two formulas
])
def test_no_verdict_or_no_formula_is_cannot_tell(question, answer):
    c = compute(question, answer)
    assert c is None or c.kind != "logic_verdict"


def test_a_checked_verdict_in_prose_is_kept_for_a_judge():
    q, a = (RULE + "P →(Q ∨R) ¬(P →Q) ∴ R",
            "The deduction rule is valid. Again, make a truth table containing the premises and conclusion. Look at the "
            "rows for which the premises are true.")
    assert checked_in_full(q, a)
    out = UsabilityStage().embedded({"question": q, "answer": a, "answer_type": "text", "tags": [], "meta": "{}",
                                     "source": {"page": 148, "number": "8"}}, StageContext())
    assert not hasattr(out, "reason") and {"cas_verified", "needs_judge"} <= set(out["tags"])
