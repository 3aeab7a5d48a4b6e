"""Synthetic-task statements: from the failing tests' output, never the fix; an LLM's text is
used only when it neither quotes the changed code nor names the file (real HTTP server)."""

from __future__ import annotations

import asyncio
import json

from rlclimb.pipelines.llm import LLMClient, LLMConfig
from rlclimb.pipelines.scripted_server import Reply, ScriptedServer
from rlclimb.pipelines.stage import Keep, StageContext
from rlclimb.stages.swe.statement import failure_lines, leaks, template_statement
from rlclimb.stages.swe.synthesize import SynthStatement

LOG = """\
tests/test_ops.py:6: in test_area
    assert area(2, 3) == 6
E   assert 0 == 6
E    +  where 0 = area(2, 3)
E   assert 0 == 6
"""
RECORD = {"id": "t-1", "FAIL_TO_PASS": ["tests/test_ops.py::test_area"], "failure": failure_lines(LOG),
          "recipe": json.dumps({"kind": "operator", "path": "geom/ops.py", "before": "w * h", "after": "w // h"})}


def test_template_quotes_the_assertion_once_and_drops_lines_with_the_changed_code():
    assert failure_lines(LOG) == ["assert 0 == 6", "+  where 0 = area(2, 3)"]
    text = template_statement(["tests/test_ops.py::test_area"], failure_lines(LOG), leak=["area(2, 3)"])
    assert "assert 0 == 6" in text and "area(2, 3)" not in text and "`tests/test_ops.py::test_area`" in text
    assert leaks("return w * h is wrong", ["w * h"]) is None  # under 6 characters: too common to judge
    assert leaks("change `return w * h` back", ["return w * h"]) == "quotes the fix's code 'return w * h'"
    assert leaks("see geom/ops.py", [], ["geom/ops.py"]) == "names the changed file geom/ops.py"


def _run(server, role="writer"):
    config = LLMConfig.from_dict({"profiles": {"p": {"base_url": server.base_url, "model": "m", "api_key": "k",
                                                     "timeout_s": 30, "backoff_s": 0.01}}, "roles": {role: "p"}})
    stage = SynthStatement({"llm_role": role})
    stage.check(config)
    return asyncio.run(stage.process(dict(RECORD), StageContext(llm=LLMClient(config))))


def test_an_llm_statement_is_used_when_clean():
    with ScriptedServer() as server:
        server.queue(Reply("area() returns 0 for area(2, 3)\n\nI expected 6."))
        out = _run(server)
        asked = server.requests[0]["messages"][0]["content"]
    assert isinstance(out, Keep) and out.record["statement_source"] == "llm"
    assert out.record["problem_statement"].startswith("area() returns 0")
    assert "tests/test_ops.py::test_area" in asked and "assert 0 == 6" in asked and "w // h" not in asked


def test_an_llm_statement_that_names_the_file_falls_back_to_the_template():
    with ScriptedServer() as server:
        server.queue(Reply("The bug is in geom/ops.py: restore the multiplication."))
        out = _run(server)
    record = out.record if isinstance(out, Keep) else out
    assert record["statement_source"].startswith("template (the LLM's text names the changed file")
    assert "assert 0 == 6" in record["problem_statement"] and "geom/ops.py" not in record["problem_statement"]
