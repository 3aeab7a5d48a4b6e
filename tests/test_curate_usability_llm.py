"""The usability stage's LLM path through the real engine and client against the scripted
OpenAI-compatible server on 127.0.0.1: sure rule findings need no call, clean items need none,
unsure ones are asked (with the concerns and the versioned prompt file) and the reply decides."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.pipelines.scripted_server import Reply
from rlclimb.schemas.io import read_rows
from rlclimb.stages.curate.qtype import QuestionTypeStage
from rlclimb.stages.curate.usability import UsabilityStage, load_prompt
from rlclimb.stages.curate.verifiable import VerifiableStage
from rlclimb.stages.qa.importer import ImportQA

ITEMS = {  # real Judson / Levin items as the text layer gives them
    "hint": ("Find a unit p(x) in Z4[x] such that deg p(x) > 1.", "Look at (2x + 1)."),
    "clean": ("Find the order of 72 in Z240.", "10"),
    "lost_eq_ok": ("Find the cardinalities: Find |A| when A {4, 5, 6, . . . , 37}", "34"),
    "two_asks": ("What are the possible orders of elements of Z6? Which elements generate Z6?", "1, 2, 3 and 6"),
}


def script(body, n):
    prompt = body["messages"][0]["content"]
    if "A {4, 5, 6" in prompt:
        return Reply(json.dumps({"usable": True, "reason": "ok", "evidence": "A = {4, ..., 37} reads clearly"}))
    if "Which elements generate" in prompt:
        return Reply(json.dumps({"usable": False, "reason": "partial_answer", "evidence": "the generators are not given"}))
    return Reply("unexpected prompt", status=500)


@pytest.mark.slow
def test_llm_path_asks_only_about_unsure_items(llm_server, tmp_path):
    llm_server.script(script)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": k, "question": q, "answer": a}) + "\n" for k, (q, a) in ITEMS.items()))
    config = LLMConfig.from_dict({"profiles": {"local": {"base_url": llm_server.base_url, "model": "m", "api_key": "k",
                                                        "timeout_s": 5.0, "max_retries": 0}},
                                  "roles": {"judge": "local"}})
    stages = [ImportQA(), QuestionTypeStage(), VerifiableStage(), UsabilityStage(method="llm")]
    run_pipeline(Pipeline("usability-llm", JsonlReader([src]), stages), tmp_path / "run", RunOptions(progress=False, llm=config))

    kept = {json.loads(r["meta"])["id"]: r for f in sorted((tmp_path / "run" / "data").glob("*.parquet")) for r in read_rows(f)}
    ledger = {json.loads(json.loads(r["record"])["meta"])["id"]: r for r in pq.read_table(tmp_path / "run" / "ledger").to_pylist()}
    assert sorted(kept) == ["clean", "lost_eq_ok"]
    assert (ledger["hint"]["stage"], ledger["hint"]["reason"], ledger["hint"]["model"]) == ("usability", "hint_answer", None)
    assert (ledger["two_asks"]["reason"], ledger["two_asks"]["model"]) == ("partial_answer", "local")
    assert "the generators are not given" in ledger["two_asks"]["detail"]
    prompts = [r["messages"][0]["content"] for r in llm_server.requests]
    assert len(prompts) == 2  # the sure hint and the clean item cost no call
    assert all(p.startswith(load_prompt("usability.v1.txt").split("\n")[0]) for p in prompts)
    assert any("layout_damaged: question: a relation sign lost" in p for p in prompts)
