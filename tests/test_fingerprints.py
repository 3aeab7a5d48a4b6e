"""Stage fingerprints see everything results depend on: each change recomputes exactly the stages
it affects (a cached stage whose input did not change is served from its row cache), and the
reports in <run>/reports/ always describe the data next to them."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
from helpers import stages as hs

from rlclimb.pipelines.consensus import Consensus
from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.engine.fingerprint import code_closure
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.pipelines.scripted_server import Reply
from rlclimb.stages.dedup.decontam import Decontam
from rlclimb.stages.dedup.minhash import MinHashDedup
from rlclimb.stages.score.grade import BlindGradeStage
from rlclimb.stages.score.guess import GuessStage
from rlclimb.stages.score.solve import SolveStage


def write_items(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": f"r{i:02d}", "text": t, "n": i}) + "\n" for i, t in enumerate(texts)))
    return path


def stats_of(result) -> dict:
    return {s["name"]: s for s in result.stats["stages"]}


def ids(run_dir: Path) -> list[str]:
    return pq.read_table(run_dir / "data").column("id").to_pylist()


def quiet(**kw) -> RunOptions:
    return RunOptions(progress=False, **kw)


def llm_config(server, judge_model: str) -> LLMConfig:
    common = {"base_url": server.base_url, "api_key": "k", "backoff_s": 0.01, "timeout_s": 5}
    return LLMConfig.from_dict({"profiles": {"a": {**common, "model": judge_model}, "o": {**common, "model": "other"}},
                                "roles": {"judge": "a", "second": "o"}})


def yes(body, n):
    return Reply("yes")


def test_changing_the_model_behind_a_role_recomputes_only_the_stages_using_it(tmp_path, llm_server):
    llm_server.script(yes)
    src = write_items(tmp_path / "in.jsonl", [f"item {i}" for i in range(5)])

    def pipeline():
        return Pipeline("r", JsonlReader([src]), [hs.ImportItem(), hs.AskRole(), hs.AskOther({"role": "second"})])

    first = run_pipeline(pipeline(), tmp_path / "run", quiet(llm=llm_config(llm_server, "model-a")))
    assert llm_server.chat_count == 10 and first.records == 5
    again = run_pipeline(pipeline(), tmp_path / "run", quiet(llm=llm_config(llm_server, "model-a")))
    assert llm_server.chat_count == 10 and again.records == 5  # nothing changed: nothing asked
    second = run_pipeline(pipeline(), tmp_path / "run", quiet(llm=llm_config(llm_server, "model-b")))
    asked = [r["model"] for r in llm_server.requests[10:]]
    assert asked == ["model-b"] * 5  # the judge stage asked the new model; the other stage was not re-asked
    st = stats_of(second)
    assert st["ask_role"]["cached"] == 0 and st["ask_other"]["cached"] == 5


def test_declared_models_of_the_scoring_stages(llm_server):
    def cfg(tier1: str, guess_params: dict) -> LLMConfig:
        p = {"base_url": llm_server.base_url, "api_key": "k"}
        return LLMConfig.from_dict({"profiles": {"tier-0": {**p, "model": "small"}, "tier-1": {**p, "model": tier1},
                                                 "g": {**p, "model": "g", "params": guess_params}, "judge": {**p, "model": "j"}}})

    from rlclimb.pipelines.engine.fingerprint import check_and_bind

    def fps(config: LLMConfig) -> tuple[str, str, str]:
        stages = [SolveStage(), GuessStage({"role": "g"}), BlindGradeStage()]
        for s in stages:
            check_and_bind(s, config, 0)
        return tuple(s.fingerprint for s in stages)

    base = fps(cfg("big", {}))
    assert fps(cfg("big", {})) == base
    solve, guess, grade = fps(cfg("bigger", {}))
    assert solve != base[0] and (guess, grade) == base[1:]  # a tier's model: only solve
    solve, guess, grade = fps(cfg("big", {"temperature": 0.2}))
    assert guess != base[1] and (solve, grade) == (base[0], base[2])  # sampling params are identity


def test_editing_a_benchmark_file_reruns_decontam_and_nothing_before_it(tmp_path):
    texts = [f"Compute the sum of the first {n} odd numbers and explain why it is a square." for n in (3, 5)]
    texts += ["A train leaves the station at noon travelling at 60 km/h; when does it arrive 180 km away?"]
    src = write_items(tmp_path / "in.jsonl", texts)
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"id": "b1", "question": texts[0]}) + "\n")
    counter = tmp_path / "calls.txt"

    def pipeline():
        return Pipeline("d", JsonlReader([src]), [
            hs.ImportItem(), hs.Counting({"counter": str(counter)}),
            Decontam({"benchmarks": [str(bench)], "field": "text", "matchers": ["exact", "minhash"]})])

    first = run_pipeline(pipeline(), tmp_path / "run", quiet())
    assert ids(first.run_dir) == ["r01", "r02"] and len(hs.read_calls(counter)) == 3
    with bench.open("a") as f:  # a leaked item added to the benchmark
        f.write(json.dumps({"id": "b2", "question": texts[2]}) + "\n")
    second = run_pipeline(pipeline(), tmp_path / "run", quiet())
    assert ids(second.run_dir) == ["r01"]
    assert len(hs.read_calls(counter)) == 3  # the stages before decontam were not re-run
    report = json.loads((second.run_dir / "reports" / "decontam.json").read_text())
    assert report["flagged"] == 2


MODULE_A = '''
from rlclimb.pipelines.stage import Stage
from {pkg}.shared import tag
from helpers.stages import CountConfig, _count

class A(Stage):
    name = "mod_a"
    cache = True
    Config = CountConfig
    config_outputs = ("counter",)

    def process(self, record, ctx):
        return _count(self, tag(record))
'''
MODULE_B = '''
from rlclimb.pipelines.stage import Stage
from helpers.stages import CountConfig, _count

class B(Stage):
    name = "mod_b"
    cache = True
    Config = CountConfig
    config_outputs = ("counter",)

    def process(self, record, ctx):
        return _count(self, record)  # {comment}
'''
SHARED = '''
def tag(record):
    record["tags"] = [*record["tags"], "{word}"]
    return record
'''


def test_a_code_change_recomputes_the_stages_whose_code_changed(tmp_path, monkeypatch):
    pkg = "fp_pkg_code"
    root = tmp_path / "code"
    (root / pkg).mkdir(parents=True)
    (root / pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))

    def write(a_word: str, b_comment: str):
        (root / pkg / "shared.py").write_text(SHARED.format(word=a_word))
        (root / pkg / "a.py").write_text(MODULE_A.format(pkg=pkg))
        (root / pkg / "b.py").write_text(MODULE_B.format(comment=b_comment))
        importlib.invalidate_caches()
        for m in [k for k in sys.modules if k.startswith(pkg)]:
            del sys.modules[m]
        return importlib.import_module(f"{pkg}.a").A, importlib.import_module(f"{pkg}.b").B

    src = write_items(tmp_path / "in.jsonl", [f"t{i}" for i in range(4)])
    ca, cb = tmp_path / "a.txt", tmp_path / "b.txt"

    def run(a_word: str, b_comment: str):
        A, B = write(a_word, b_comment)
        stages = [hs.ImportItem(), B({"counter": str(cb)}), A({"counter": str(ca)})]
        return run_pipeline(Pipeline("c", JsonlReader([src]), stages), tmp_path / "run", quiet())

    run("x", "one")
    assert (len(hs.read_calls(ca)), len(hs.read_calls(cb))) == (4, 4)
    run("x", "two")  # B's module changed: B recomputes; A's input is the same: served from its cache
    assert (len(hs.read_calls(ca)), len(hs.read_calls(cb))) == (4, 8)
    result = run("y", "two")  # a module A imports changed: A recomputes, B does not
    assert (len(hs.read_calls(ca)), len(hs.read_calls(cb))) == (8, 8)
    assert pq.read_table(result.run_dir / "data").column("tags").to_pylist()[0] == ["mod_b-v1", "y", "mod_a-v1"]
    sys.modules.pop(f"{pkg}.a"), sys.modules.pop(f"{pkg}.b")


def test_code_closure_follows_project_imports():
    mods = code_closure(("rlclimb.stages.dedup.exact",))
    assert {"rlclimb.stages.dedup.exact", "rlclimb.stages.text_keys", "rlclimb.stages.dedup.common",
            "rlclimb.pipelines.stage"} <= set(mods)
    assert "rlclimb.stages.dedup.vector" not in mods
    # the engine is not a stage's code: changing an executor must not rerun every stage
    assert {m for m in mods if m.startswith("rlclimb.pipelines.engine.")} == {"rlclimb.pipelines.engine.fingerprint"}


def test_the_seed_reruns_only_the_stages_that_use_it(tmp_path, llm_server):
    llm_server.script(yes)
    src = write_items(tmp_path / "in.jsonl", [f"item {i}" for i in range(4)])
    counter = tmp_path / "calls.txt"

    def run(seed: int):
        stages = [hs.ImportItem(), hs.Counting({"counter": str(counter)}), hs.AskRole()]
        return run_pipeline(Pipeline("s", JsonlReader([src]), stages), tmp_path / "run",
                            quiet(llm=llm_config(llm_server, "m"), seed=seed))

    run(0)
    assert (llm_server.chat_count, len(hs.read_calls(counter))) == (4, 4)
    result = run(1)
    assert (llm_server.chat_count, len(hs.read_calls(counter))) == (8, 4)  # the model stage only
    assert {r.get("seed") for r in llm_server.requests[4:]} == {1}
    assert stats_of(result)["ask_role"]["cached"] == 0


def test_consensus_fingerprint_covers_the_inner_stage_and_its_roles(llm_server):
    from rlclimb.pipelines.engine.fingerprint import check_and_bind

    class AskMap(hs.AskRole):
        kind = "map"

    def fp(model: str, role: str = "judge") -> str:
        st = Consensus(AskMap({"role": role}), n=3)
        check_and_bind(st, llm_config(llm_server, model), 0)
        return st.fingerprint

    assert fp("m1") == fp("m1") != fp("m2")
    assert fp("m1") != fp("m1", role="second")


def test_reports_describe_the_data_next_to_them_after_a_threshold_round_trip(tmp_path):
    base = "Find all real solutions of the equation x^2 - 5x + 6 = 0 and check each one in the original equation"
    texts = [base, base + " carefully.", base.replace("Find all real", "Determine the real") + " please", "Unrelated: how many primes are below 30?"]
    src = write_items(tmp_path / "in.jsonl", texts)

    def run(threshold: float):
        stages = [hs.ImportItem(), MinHashDedup({"field": "text", "threshold": threshold})]
        result = run_pipeline(Pipeline("t", JsonlReader([src]), stages), tmp_path / "run", quiet())
        report = json.loads((result.run_dir / "reports" / "dedup_minhash.json").read_text())
        ledger = pq.read_table(result.run_dir / "ledger").to_pylist()
        return ids(result.run_dir), report, ledger

    low, low_report, low_ledger = run(0.7)
    high, high_report, _ = run(0.9)
    assert len(low) < len(high)  # the thresholds differ on this data
    again, report, ledger = run(0.7)  # the 0.7 segment is reused...
    assert again == low and report == low_report  # ...and so is its report
    assert report["config"]["threshold"] == 0.7 and high_report["config"]["threshold"] == 0.9
    assert report["dropped"] == sum(r["reason"] == "duplicate_minhash" for r in ledger) == len(texts) - len(again)
