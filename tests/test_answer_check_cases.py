"""The answer checker against hand-labeled gold/prediction/expected triples (tests/data/answer_equivalence.jsonl).

Every triple says what a careful human grader decides. Rows noted "limit: ..." are the documented
limits of the checker (module doc of rlclimb.environments.answer_check): the checker is expected to
get those wrong, so the documentation stays true; a library upgrade that fixes one fails here and
asks for the doc to be updated.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from rlclimb.environments.answer_check import check

CASES = [json.loads(line) for line in (Path(__file__).parent / "data" / "answer_equivalence.jsonl").read_text().splitlines()]


def _id(case: dict) -> str:
    return f"{case['form']}:{case['gold']}|{case['pred']}"[:60]


def test_the_set_is_broad():
    forms = Counter(c["form"] for c in CASES)
    assert len(CASES) >= 150
    for form in ("integer", "fraction", "decimal", "percent", "units", "interval", "set", "tuple", "matrix",
                 "boxed", "expression", "choice", "boolean", "text"):
        assert forms[form] >= 5, form
    assert 0.25 < sum(not c["expected"] for c in CASES) / len(CASES) < 0.6  # real negatives, not only matches


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_case(case):
    verdict = check(case["gold"], case["pred"], case.get("answer_type"), choices=case.get("choices", ()))
    if case.get("note", "").startswith("limit"):
        assert bool(verdict.equivalent) != case["expected"], f"limit no longer holds: {case['note']}"
    else:
        assert bool(verdict.equivalent) == case["expected"], verdict


def test_agreement_is_reported_and_high():
    agree = sum(bool(check(c["gold"], c["pred"], c.get("answer_type"), choices=c.get("choices", ())).equivalent) == c["expected"]
                for c in CASES)
    assert agree / len(CASES) >= 0.97
