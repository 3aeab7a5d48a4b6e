"""verifiable: "value (why)" keeps the value and drops the explanation, but a factor in brackets
after a number ("16(i − \\sqrt{3} )", a key's (√3 + i)^5) is part of the value: a LaTeX command in it
is no word of an explanation."""

from __future__ import annotations

import json

from rlclimb.pipelines.stage import StageContext
from rlclimb.stages.curate.verifiable import VerifiableStage, explained_value


def test_a_factor_after_a_value_is_no_explanation():
    assert explained_value("16(i − \\sqrt{3} )") is None
    assert explained_value("42 (the number of subgroups of order 2)") == "42"
    record = {"question": "Calculate each of the following expressions.\n(c) (\\sqrt{3} + i)^5",
              "answer": "16(i − \\sqrt{3} )", "tags": [], "meta": json.dumps({}), "question_type": "open"}
    out = VerifiableStage().embedded(record, StageContext())
    assert out["answer"] == "16(i − \\sqrt{3} )"
