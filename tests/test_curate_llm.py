"""The LLM paths of the curation stages through the real engine, the real client and a real
OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies: decisions, faults (invalid JSON,
refusal, timeout, disagreeing conversion runs) as ledgered drops, and re-runs answered by the cache."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.pipelines.scripted_server import Reply
from rlclimb.schemas.io import read_rows
from rlclimb.stages.curate.cleanup import CleanupStage
from rlclimb.stages.curate.convert import ConvertStage, with_consensus
from rlclimb.stages.curate.evergreen import EvergreenStage
from rlclimb.stages.curate.leakage import LeakageStage
from rlclimb.stages.curate.pii import PIIStage
from rlclimb.stages.curate.qtype import QuestionTypeStage
from rlclimb.stages.curate.taxonomy import TaxonomyStage
from rlclimb.stages.curate.verifiable import VerifiableStage
from rlclimb.stages.qa.importer import ImportQA

ITEMS = [
    ("plain", "Tom has 3 apples and buys 4 more. How many apples does he have?", "7"),
    ("badjson", "A box holds 12 eggs. How many eggs are in 5 boxes?", "60"),
    ("refuse", "What is the boiling point of water at sea level in Celsius?", "100"),
    ("slow", "A triangle has angles 50 and 60 degrees. What is the third angle?", "70"),
    ("mcq_disagree", "Which of the following is a prime number?\nA. 21\nB. 29\nC. 33", "B"),
    ("mcq_agree", "What is the probability of heads with a fair coin?\nA. 1/3\nB. 1/2\nC. 1", "B"),
    ("proof_no", "Prove that there are infinitely many primes.", "Euclid's argument."),
    ("pii", "Email bob at bob.smith@corp.io: what is 9 times 9?", "81"),
    ("leak", "The answer is 12. What is 3 times 4?", "12"),
    ("changed", "Exercise 2. What is 15 divided by 3?", "5"),
    ("offlist", "What is the speed of a car covering 100 km in 2 hours?", "50 km/h"),
]


def marker(prompt: str) -> str:
    for key, *_ in ITEMS:
        question = dict((k, q) for k, q, _ in ITEMS)[key]
        if question.split("\n")[0][:40] in prompt:
            return key
    return "?"


class Script:
    """Scripted replies by stage (recognized by its prompt) and item (by its question)."""

    def __init__(self):
        self.calls: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict, n: int) -> Reply:
        prompt = body["messages"][0]["content"]
        key = marker(prompt)
        seed = body.get("seed", 0)
        with self.lock:
            self.calls[(prompt.split("\n")[0][:30], key)] += 1
            first_slow = key == "slow" and "change over time" in prompt and self.calls[("slow-evergreen", key)] == 0
            if first_slow:
                self.calls[("slow-evergreen", key)] += 1
        if prompt.startswith("Clean this exam question"):
            question = dict((k, q) for k, q, _ in ITEMS)[key]
            if key == "changed":
                question = "What is 16 divided by 3?"  # a changed number: must be rejected
            return Reply(json.dumps({"question": question.replace("Exercise 2. ", ""), "depends_on_figure": False,
                                     "depends_on_other_problem": False}))
        if prompt.startswith("Classify this exam question"):
            if key.startswith("mcq"):
                choices = ["21", "29", "33"] if key == "mcq_disagree" else ["1/3", "1/2", "1"]
                return Reply(json.dumps({"question_type": "multiple_choice", "choices": choices, "correct_choice": "B"}))
            qtype = "proof" if key == "proof_no" else "open"
            return Reply(json.dumps({"question_type": qtype, "choices": [], "correct_choice": None}))
        if prompt.startswith("Decide whether this question-answer pair"):
            if key == "badjson":
                return Reply("Sure! The pair looks gradable to me.")  # not JSON, twice: repair fails
            return Reply(json.dumps({"verifiable": True, "reason": "ok", "final_answer": None}))
        if prompt.startswith("Does this exam item contain personal data"):
            if key == "refuse":
                return Reply(None, refusal="I can't help with that.")
            return Reply(json.dumps({"contains_pii": key == "pii", "kinds": ["email"] if key == "pii" else [],
                                     "evidence": "bob.smith@corp.io" if key == "pii" else ""}))
        if prompt.startswith("Would the correct answer to this question change"):
            if first_slow:
                return Reply(json.dumps({"time_sensitive": False}), delay_s=3.0)  # beyond the 1 s timeout
            return Reply(json.dumps({"time_sensitive": False, "reason": ""}))
        if prompt.startswith("Rewrite this multiple-choice question"):
            if key == "mcq_disagree":  # three runs, three different answers
                return Reply(json.dumps({"convertible": True, "question": f"Name a prime below {30 + seed % 1000}.",
                                         "answer": str([29, 23, 19][seed % 1000])}))
            answer = ["1/2", "0.5", "\\frac{1}{2}"][seed % 1000]  # three spellings of one answer
            return Reply(json.dumps({"convertible": True, "question": "What is the probability of heads with a fair coin?",
                                     "answer": answer}))
        if prompt.startswith("Rewrite this proof question"):
            return Reply(json.dumps({"convertible": False}))
        if prompt.startswith("Does this question give away its own answer"):
            return Reply(json.dumps({"leaks": key == "leak", "evidence": "The answer is 12" if key == "leak" else ""}))
        if prompt.startswith("Classify this question into exactly one topic path"):
            if key == "offlist":
                return Reply(json.dumps({"path": "physics/rocketry"}))  # not in the taxonomy, twice
            return Reply(json.dumps({"path": "math/arithmetic"}))
        return Reply("unexpected prompt", status=500)


def stages():
    llm = {"method": "llm", "role": "curator"}
    return [ImportQA(), CleanupStage(llm), QuestionTypeStage(llm), VerifiableStage(llm), PIIStage(llm), EvergreenStage(llm),
            with_consensus(ConvertStage({**llm, "keep_mcq_share": 0.0})), LeakageStage(llm), TaxonomyStage(llm)]


def llm_config(server) -> LLMConfig:
    return LLMConfig.from_dict({
        "profiles": {"local": {"base_url": server.base_url, "model": "curator-model", "api_key": "k",
                               "timeout_s": 1.0, "max_retries": 0, "backoff_s": 0.01, "concurrency": 8}},
        "roles": {"curator": "local"},
    })


def write_input(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": k, "question": q, "answer": a}) + "\n" for k, q, a in ITEMS))
    return path


def ledger(run_dir: Path) -> dict[str, tuple[str, str]]:
    rows = pq.read_table(run_dir / "ledger").to_pylist()
    out = {}
    for r in rows:
        key = json.loads(json.loads(r["record"])["meta"])["id"]
        out[key] = (r["stage"], r["reason"], r)
    return out


def data(run_dir: Path) -> dict[str, dict]:
    rows = [r for f in sorted((run_dir / "data").glob("*.parquet")) for r in read_rows(f)]
    return {json.loads(r["meta"])["id"]: r for r in rows}


def test_llm_paths_faults_and_cached_rerun(llm_server, tmp_path):
    script = Script()
    llm_server.script(script)
    src = write_input(tmp_path)
    run_dir = tmp_path / "run"
    options = RunOptions(progress=False, llm=llm_config(llm_server))
    run_pipeline(Pipeline("curate-llm", JsonlReader([src]), stages()), run_dir, options)

    kept, dropped = data(run_dir), ledger(run_dir)
    assert sorted(kept) == ["mcq_agree", "plain"]
    assert {k: v[:2] for k, v in dropped.items()} == {
        "badjson": ("verifiable", "llm_invalid_output"),
        "refuse": ("pii", "llm_refusal"),
        "slow": ("evergreen", "llm_timeout"),
        "mcq_disagree": ("convert.consensus", "no_consensus"),
        "proof_no": ("convert.consensus", "proof_not_convertible"),
        "pii": ("pii", "pii_email"),
        "leak": ("leakage", "answer_leak"),
        "changed": ("cleanup", "cleanup_changed_problem"),
        "offlist": ("taxonomy", "llm_invalid_output"),
    }
    votes = dropped["mcq_disagree"][2]["votes"]
    assert len(votes) == 3 and len({json.loads(v)["answer"] for v in votes}) == 3  # every vote is in the ledger
    assert dropped["pii"][2]["model"] == "local" and "bob.smith@corp.io" not in dropped["pii"][2]["detail"]

    agreed = kept["mcq_agree"]  # three spellings of 1/2 agree by the answer checker
    assert (agreed["question_type"], agreed["choices"], agreed["topic"]) == ("open", [], ["math", "arithmetic"])
    assert agreed["answer"] in ("1/2", "0.5", "\\frac{1}{2}") and "converted_from_mcq" in agreed["tags"]
    event = next(e for e in agreed["provenance"] if e["stage"] == "convert.consensus")
    assert event["reason"] == "3/3 agree" and len(event["votes"]) == 3 and event["model"] == "local"
    assert kept["plain"]["answer_type"] == "numeric"

    stats = {s["name"]: s for s in json.loads((run_dir / "stats.json").read_text())["stages"]}
    assert stats["pii"]["llm"]["requests"] >= 1 and stats["convert.consensus"]["llm"]["requests"] == 9  # (2 MCQ + 1 proof) x 3 runs
    first_requests = llm_server.chat_count

    # Re-run after losing every shard marker: decided records come from the row cache, no paid call
    # is repeated; only the timed-out record (a transient failure, never cached) is asked again.
    for done in [*(run_dir / "stages").glob("*/part-*.done.json"), *(run_dir / "stages").glob("*/_SUCCESS.json")]:
        done.unlink()
    run_pipeline(Pipeline("curate-llm", JsonlReader([src]), stages()), run_dir, options)
    new_prompts = [r["messages"][0]["content"] for r in llm_server.requests[first_requests:]]
    assert new_prompts and all(marker(p) == "slow" for p in new_prompts)
    assert "slow" in data(run_dir) and "slow" not in ledger(run_dir)
    stats = {s["name"]: s for s in json.loads((run_dir / "stats.json").read_text())["stages"]}
    assert stats["question_type"]["cached"] >= 9


def test_llm_method_without_llm_config_fails_before_any_record(tmp_path):
    src = write_input(tmp_path)
    with pytest.raises(ValueError, match=r"stage verifiable: method 'llm' needs an `llm:` section"):
        run_pipeline(Pipeline("x", JsonlReader([src]), [ImportQA(), VerifiableStage(method="llm")]), tmp_path / "run",
                     RunOptions(progress=False))


def test_unknown_role_fails_once_with_the_known_roles(llm_server, tmp_path):
    src = write_input(tmp_path)
    with pytest.raises(Exception, match=r"unknown LLM role or profile 'grader'"):
        run_pipeline(Pipeline("x", JsonlReader([src]), [ImportQA(), PIIStage(method="llm", role="grader")]), tmp_path / "run",
                     RunOptions(progress=False, llm=llm_config(llm_server)))
    assert llm_server.chat_count == 0


def test_llm_reply_model_for_taxonomy_lists_only_known_paths():
    from rlclimb.pipelines.stage import StageContext

    class FakeLLM:  # setup only reads the config for the role
        class config:  # noqa: N801
            @staticmethod
            def resolve(role):
                return role

    stage = TaxonomyStage(method="llm")
    stage.setup(StageContext(llm=FakeLLM()))
    schema = stage.reply_model.model_json_schema()
    assert "math/algebra" in schema["properties"]["path"]["enum"] and len(schema["properties"]["path"]["enum"]) == len(stage.paths)
    assert all(re.fullmatch(r"[a-z_]+/[a-z_]+", p) for p in stage.paths)
