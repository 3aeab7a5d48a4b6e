"""`pair` on Ray: each document group paired by a task, the parts committed by workers, with the
local executor's parts, ids, order, ledger and funnel. The pieces that need no cluster first
(grouping from the key columns alone, slices read by index, the groups each part spans), then
textbook-pdf on generated books on a local Ray."""

from __future__ import annotations

import json
import random
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_ray_cluster import outputs

from rlclimb.pipelines.engine import ray_pair
from rlclimb.pipelines.engine.ray_global import input_slices
from rlclimb.pipelines.engine.ray_pair import group_indices, part_groups, read_indices
from rlclimb.stages.documents.pair_qa import PairQA, SpanSpool

TESTS = Path(__file__).resolve().parent


def span(role: str, doc: str, path: list[str], text: str, k: int) -> dict:
    return {"id": f"{role}-{doc}-{k}", "role": role, "path": path, "text": text, "number": path[-1] if path else None,
            "source": {"document": doc, "page": 1 + k // 4}}


def spans() -> list[dict]:
    """Two books interleaved with an answer book and a stray key (documents out of order)."""
    out = []
    for k in range(30):
        doc = ["algebra.pdf", "calculus.pdf", "algebra-answers.pdf", "stray.pdf"][k % 4]
        role = "question" if doc in ("algebra.pdf", "calculus.pdf") else "answer"
        chapter = {"calculus.pdf": "2", "stray.pdf": "9"}.get(doc, "1")
        out.append(span(role, doc, [chapter, str(k // 4 + 1)], f"text {k}", k))
    return out


def write_parts(tmp_path: Path, rows: list[dict], sizes: list[int]) -> list[Path]:
    parts, i = [], 0
    for j, n in enumerate(sizes):
        p = tmp_path / f"part-{j:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[i:i + n]), p)
        parts.append(p)
        i += n
    return parts


def test_groups_from_the_key_columns_are_the_stages_own(tmp_path):
    """Grouping reads three columns of the parts; the groups and targets are those the stage
    decides from its spool, and each group's indices read back its spans in input order."""
    rows = spans()
    parts = write_parts(tmp_path, rows, [7, 1, 13, 9])
    stage = PairQA(embeddings=False, companion_min_matches=2)
    targets, groups = group_indices(stage, parts)
    spool = SpanSpool(tmp_path)
    for r in rows:
        spool.append(r)
    spool.close()
    want_targets, want_groups = stage.groups(spool.keys)
    assert targets == want_targets and [docs for docs, _ in groups] == want_groups
    assert len(groups) == 3 and targets["algebra-answers.pdf"] == ["algebra.pdf"]  # the stray key: alone
    slices = input_slices(parts, 4)
    for docs, idx in groups:
        assert list(read_indices(slices, idx)) == list(spool.read(docs))


@pytest.mark.parametrize("seed", range(30))
def test_part_groups_are_the_groups_each_part_spans(seed):
    rng = random.Random(seed)
    lengths = [rng.choice([0, 1, 2, 5, 9]) for _ in range(rng.randint(0, 8))]
    total = sum(lengths)
    cuts = sorted(rng.sample(range(1, total), min(rng.randint(0, 4), max(total - 1, 0)))) if total > 1 else []
    bounds = [0, *cuts, total]
    ranges = list(zip(bounds[:-1], bounds[1:], strict=True))
    owner = [g for g, n in enumerate(lengths) for _ in range(n)]  # output index -> its group
    begins = np.cumsum([0, *lengths])[:-1]
    for (start, end), (lo, hi, first) in zip(ranges, part_groups(lengths, ranges), strict=True):
        spanned = sorted({owner[i] for i in range(start, end)})
        assert [g for g in range(lo, hi) if lengths[g]] == spanned
        if spanned:
            assert first == begins[lo] and first <= start


def test_no_map_batches_call_passes_rays_deprecated_remote_args():
    """Ray 2.64 drops `ray_remote_args_fn` and the `**ray_remote_args` of map_batches (max_retries,
    max_restarts, ...): every keyword the engine passes is one of map_batches' named parameters."""
    import ast
    import inspect

    ray_data = pytest.importorskip("ray.data")
    params = inspect.signature(ray_data.Dataset.map_batches).parameters
    named = {n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD} - {"ray_remote_args_fn"}
    engine = Path(ray_pair.__file__).parent
    bad = []
    for path in sorted(engine.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "map_batches":
                bad += [f"{path.name}:{node.lineno} {k.arg}" for k in node.keywords if k.arg is not None and k.arg not in named]
    assert bad == []


# ---- textbook-pdf on a local Ray ----------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray(s3):  # noqa: ARG001 (the S3 server's AWS_* environment first: Ray's workers inherit it at start)
    import ray

    sys.path.insert(0, str(TESTS))
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=True, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def books(tmp_path: Path) -> list[str]:
    """Book A split from its appendix key (a separate answer book), book B with inline and key
    answers: two document groups, A + its answer book, and B."""
    import pymupdf
    from helpers.textbook_gen import ChapterSpec, make_textbook

    a = make_textbook(tmp_path / "a-full.pdf", chapters=[
        ChapterSpec("Functions", "key", exercises=6, instruction=(2, 4)),
        ChapterSpec("Geometry", "key", exercises=7),
    ])
    full = pymupdf.open(a.path)
    key = next(i for i, p in enumerate(full) if "Answers to" in p.get_text())
    for name, pages in (("a.pdf", (0, key - 1)), ("a-answers.pdf", (key, len(full) - 1))):
        part = pymupdf.open()
        part.insert_pdf(full, from_page=pages[0], to_page=pages[1])
        part.save(tmp_path / name)
    b = make_textbook(tmp_path / "b.pdf", seed=1, chapters=[
        ChapterSpec("Arithmetic", "inline", exercises=5, example=True),
        ChapterSpec("Algebra", "key", exercises=5),
    ])
    return [str(tmp_path / "a.pdf"), str(b.path), str(tmp_path / "a-answers.pdf")]


def pair_parts(run_dir: Path) -> list[tuple[str, list, list]]:
    """The pair segment's committed parts: (name, its rows' ids, its ledger entries' record ids)."""
    seg = next(d for d in (run_dir / "stages").iterdir() if "-pair-" in d.name)

    def ids(path: Path, column: str) -> list:
        return pq.read_table(path).column(column).to_pylist() if path.exists() else []

    return [(m.name, ids(m.with_name(m.name.replace(".done.json", ".parquet")), "id"),
             ids(m.with_name(m.name.replace(".done.json", ".ledger.parquet")), "record_id"))
            for m in sorted(seg.glob("part-*.done.json"))]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("unanswered", ["keep", "ledger"])
def test_textbook_pdf_pairs_per_group_on_ray_like_local(local_ray, tmp_path, monkeypatch, unanswered):
    """Book + separate answer book + another book, shard_size 2 (parts cut across groups; with
    unanswered=ledger, drops between rows): the same dataset, ledger, funnel and parts as local,
    paired on the cluster (no Ray API that goes away in 2.64 on the way)."""
    from ray.util.annotations import RayDeprecationWarning

    from rlclimb.pipelines.definitions import PIPELINES
    from rlclimb.pipelines.engine import RunOptions, run_pipeline

    inputs = books(tmp_path)
    make = lambda: PIPELINES["textbook-pdf"](inputs, {"pair": {"unanswered": unanswered}}, 2)  # noqa: E731
    local = run_pipeline(make(), tmp_path / "local", RunOptions(progress=False))
    calls = []
    real = ray_pair.run_pair
    monkeypatch.setattr("rlclimb.pipelines.engine.ray_data.run_pair", lambda *a, **k: calls.append(1) or real(*a, **k))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", RayDeprecationWarning)
        ray_ = run_pipeline(make(), tmp_path / "ray", RunOptions(engine="ray", progress=False))
    assert calls == [1]  # pair ran as a cluster job
    assert [str(w.message) for w in seen if issubclass(w.category, RayDeprecationWarning)] == []
    assert outputs(ray_.run_dir) == outputs(local.run_dir)
    assert pair_parts(ray_.run_dir) == pair_parts(local.run_dir)
    data, ledger, _ = outputs(local.run_dir)
    methods = {json.loads(r["meta"])["pair_method"] for r in data}
    answer_docs = {(json.loads(r["meta"]).get("answer_source") or {}).get("document") for r in data}
    assert {"numbering", "inline"} <= methods and "a-answers.pdf" in answer_docs
    assert len(pair_parts(local.run_dir)) > 5
    if unanswered == "ledger":
        assert any(r["reason"] == "unanswered" for r in ledger)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pair_with_an_llm_on_ray_at_a_url_asks_each_request_once(local_ray, s3, tmp_path, monkeypatch):
    """pair with an LLM role (verify every numbering pair) on the cluster, the run dir on S3:
    the local executor's result, each verification asked once, and a rerun of the stage from a
    fresh mirror answered by the store's LLM cache (no request repeated)."""
    from conftest import BUCKET
    from test_storage_s3 import download

    from rlclimb.pipelines.definitions import PIPELINES
    from rlclimb.pipelines.engine import RunOptions, run_pipeline
    from rlclimb.pipelines.llm import LLMConfig
    from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

    monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m1"))
    inputs = books(tmp_path)

    def judge(body, n):  # rejects the pairs whose answer holds a "3"
        text = body["messages"][-1]["content"]
        answer = text.split("ANSWER:", 1)[1]
        return Reply(json.dumps({"matches": "3" not in answer, "reason": "scripted"}), delay_s=0.02)

    with ScriptedServer(judge) as server:
        llm = LLMConfig.from_dict({
            "profiles": {"local": {"base_url": server.base_url, "model": "m", "api_key": "k", "concurrency": 4,
                                   "timeout_s": 30, "backoff_s": 0.01}},
            "roles": {"judge": "local"}})
        sections = {"pair": {"embeddings": False, "llm_role": "judge", "llm_verify": True}}
        make = lambda: PIPELINES["textbook-pdf"](inputs, sections, 2)  # noqa: E731
        local = run_pipeline(make(), tmp_path / "local", RunOptions(progress=False, llm=llm))
        asked = server.chat_count
        out = f"s3://{BUCKET}/runs/pair-llm"
        calls = []
        real = ray_pair.run_pair
        monkeypatch.setattr("rlclimb.pipelines.engine.ray_data.run_pair", lambda *a, **k: calls.append(1) or real(*a, **k))
        run_pipeline(make(), out, RunOptions(engine="ray", progress=False, llm=llm))
        assert calls == [1]  # on the cluster: the run is at a URL, so its LLM cache is the store's
        assert server.chat_count - asked == asked > 0  # the same requests, each once
        s3.invalidate_cache()
        for p in s3.find(f"{BUCKET}/runs/pair-llm"):
            if "-pair-" in p and (p.endswith(".done.json") or p.endswith("_SUCCESS.json")) or p.endswith("/stats.json"):
                s3.rm_file(p)
        monkeypatch.setenv("RLCLIMB_MIRRORS", str(tmp_path / "m2"))
        before = server.chat_count
        run_pipeline(make(), out, RunOptions(engine="ray", progress=False, llm=llm))
        assert server.chat_count == before and calls == [1, 1]  # paired again, every answer from the store
    got = download(s3, out, tmp_path / "got")
    assert outputs(got) == outputs(local.run_dir)
    reasons = {r["reason"] for r in outputs(local.run_dir)[1]}
    assert "llm_rejected_pair" in reasons
    assert {json.loads(r["meta"])["pair_method"] for r in outputs(local.run_dir)[0]} >= {"numbering+llm", "inline"}
