"""Vector dedup: faiss range search (no n x n matrix), the real MiniLM model on the labeled eval
set, the fast backends (slow tests), and configuration errors naming the missing extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from rlclimb.pipelines.definitions import ConfigError
from rlclimb.pipelines.definitions.qa_jsonl import build
from rlclimb.pipelines.stage import StageContext
from rlclimb.stages import embedding
from rlclimb.stages.dedup import vector
from rlclimb.stages.dedup.vector import VectorDedup, VectorDedupConfig, VectorFile, range_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import dedup_evalset as E  # noqa: E402


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("index", ["flat", "ivf"])
def test_range_pairs_equal_brute_force(index):
    rng = np.random.default_rng(0)
    x = unit(rng.normal(size=(10_500 if index == "ivf" else 3000, 16)))  # ivf from 10k vectors
    x[100] = x[7]
    x[200] = unit(x[7:8] + 0.05 * rng.normal(size=(1, 16)))[0]
    left, right, sims, n = range_pairs(x, 0.8, index=index, nprobe=64)
    want = set()
    for lo in range(0, len(x), 2000):  # brute force, blockwise
        s = x[lo : lo + 2000] @ x.T
        i, j = np.nonzero(s >= 0.8)
        want |= {(a + lo, b) for a, b in zip(i.tolist(), j.tolist(), strict=True) if a + lo < b}
    got = set(zip(left.tolist(), right.tolist(), strict=True))
    assert (7, 100) in got and (7, 200) in got
    assert got == want if index == "flat" else got <= want and len(got) >= 0.9 * len(want)
    assert np.all(sims >= 0.8 - 1e-6) and n == len(left)


@pytest.fixture(scope="module")
def minilm():
    if embedding.missing_extra("minilm"):
        pytest.fail(embedding.missing_extra("minilm"))
    return embedding.load_embedder("minilm")


def test_minilm_vectors_are_normalized_and_semantic(minilm):
    v = minilm.encode(["What is the area of a 3 by 4 rectangle?", "Find the area of a rectangle with sides 3 and 4.",
                       "Which organelle is the powerhouse of the cell?"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > 0.8 > 0.3 > v[0] @ v[2]


def test_minilm_stage_on_the_labeled_eval_set(minilm, tmp_path):
    ev = E.build(seed=5, per_template=2, templates=E.TEMPLATES[:12])
    stage = VectorDedup(backend="minilm")
    rep = E.stage_clusters(stage, ev.items, StageContext(run_dir=tmp_path))
    r = E.score_pairs(ev, rep)
    share = r["matched_share"]
    # measured at the default 0.9 (benchmarks/dedup_quality.py): exact/light 1.0, paraphrase ~0.47
    assert share["exact"] == 1.0 and share["light_edit"] >= 0.9 and share["paraphrase"] >= 0.2
    assert share["variant"] == 0.0 and share["unrelated"] == 0.0
    report = json.loads((tmp_path / "reports" / "dedup_vector.json").read_text())
    assert report["embedder"] == "minilm" and report["threshold"] == 0.9 and report["dropped"] > 0
    assert report["examples"] and report["examples"][0]["members"][0]["kept"]


def test_vector_dedup_is_opt_in_in_qa_jsonl(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"question": "What is 2+2 here?", "answer": "4"}\n')
    assert "dedup_vector" not in [s.name for s in build([str(src)], {}).stages]
    on = build([str(src)], {"dedup_vector": {"enabled": True, "backend": "static"}}).stages
    assert [s.name for s in on][-2:] == ["dedup_minhash", "dedup_vector"]


def test_missing_extra_is_a_config_error_naming_it(monkeypatch, tmp_path):
    real = embedding.importlib.util.find_spec
    monkeypatch.setattr(embedding.importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    with pytest.raises(ValueError, match=r"'embed' extra .*pip install 'rlclimb\[embed\]'"):
        VectorDedupConfig(backend="minilm")
    src = tmp_path / "in.jsonl"
    src.write_text('{"question": "What is 2+2 here?", "answer": "4"}\n')
    with pytest.raises(ConfigError, match=r"dedup_vector.*rlclimb\[embed\]"):
        build([str(src)], {"dedup_vector": {"enabled": True}})
    build([str(src)], {})  # off by default: nothing to install


@pytest.mark.slow
@pytest.mark.parametrize("backend, min_agreement", [("minilm-int8", 0.6), ("static", 0.3)])
def test_fast_backends_agree_with_minilm(minilm, backend, min_agreement):
    """Pairs each backend finds at its default threshold vs MiniLM's (the static model is distilled
    on first use: about a minute)."""
    ev = E.build(seed=5, per_template=2, templates=E.TEMPLATES[:12])
    ref = E.stage_clusters(VectorDedup(backend="minilm"), ev.items)
    fast = E.stage_clusters(VectorDedup(backend=backend), ev.items)
    same = lambda rep: {(a, b) for a, b, _, _ in ev.pairs if rep[a] == rep[b]}  # noqa: E731
    agreement = len(same(ref) & same(fast)) / max(len(same(ref) | same(fast)), 1)
    assert agreement >= min_agreement
    share = E.score_pairs(ev, fast)["matched_share"]
    assert share["exact"] == 1.0 and share["variant"] == 0.0 and share["unrelated"] == 0.0


def test_float16_storage_finds_the_float32_pairs():
    rng = np.random.default_rng(1)
    x = unit(rng.normal(size=(3000, 16)))
    spread = rng.uniform(0.05, 0.15, size=(300, 1))  # pairs spread around the threshold
    x[1000:1300] = unit(x[:300] + spread * rng.normal(size=(300, 16)))
    full = set(zip(*(a.tolist() for a in range_pairs(x, 0.9)[:2]), strict=True))
    half = set(zip(*(a.tolist() for a in range_pairs(x.astype(np.float16), 0.9, storage="float16")[:2]), strict=True))
    assert len(full) > 20 and len(full & half) >= 0.95 * len(full) and len(half - full) <= 0.05 * len(full)


class HashEmbedder:
    """A deterministic stand-in for a model: each text's vector from its hash (texts that share
    a prefix word embed close), so the stage's memory can be measured without loading one."""

    name, dim = "hash", 256

    def encode(self, texts):
        out = np.empty((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            base = np.random.default_rng(abs(hash(t.split()[0])) % 2**32).normal(size=self.dim)
            out[i] = base + 0.05 * np.random.default_rng(abs(hash(t)) % 2**32).normal(size=self.dim)
        return unit(out)


@pytest.mark.slow
def test_the_stage_holds_no_full_copy_of_the_vectors(tmp_path):
    """Traced memory grows by far less than one copy of the vectors per record (it held ~3.6
    copies: the batch list, its concatenation, x[rep]); the faiss index is the one copy (its
    memory is not traced)."""
    import tracemalloc

    def peak(n: int) -> int:
        recs = [{"id": f"r{i}", "question": f"w{i % (n // 4)} item {i}", "answer": ""} for i in range(n)]
        stage = VectorDedup({"numbers": "ignore", "threshold": 0.95, "spill_dir": str(tmp_path)})
        stage.embedder = HashEmbedder()
        tracemalloc.start()
        kept = sum(isinstance(o, dict) for o in stage.run(iter(recs), StageContext()))  # outputs not held
        used = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert kept == n // 4  # each first word is one cluster
        return used

    peak(500)  # imports (faiss) and first-use allocations out of the way
    small, large = peak(6000), peak(24000)  # both above the chunk size (4096 rows read at once)
    per_record = (large - small) / 18000
    assert per_record < 0.5 * HashEmbedder.dim * 4, per_record  # one float32 copy: 1 KB per record


def near_pairs(n: int, dim: int, seed: int) -> np.ndarray:
    """Random unit vectors, a tenth of them perturbed copies of others (cosines ~0.84-0.995,
    many near the 0.9 threshold)."""
    rng = np.random.default_rng(seed)
    x = unit(rng.normal(size=(n, dim)))
    k = n // 10
    src, dst = rng.choice(n // 2, k, replace=False), n // 2 + rng.choice(n - n // 2, k, replace=False)
    x[dst] = unit(x[src] + rng.uniform(0.1, 0.65, size=(k, 1)) / np.sqrt(dim) * rng.normal(size=(k, dim)))
    return x


def pair_set(result) -> set:
    return set(zip(result[0].tolist(), result[1].tolist(), strict=True))


def test_flat_search_in_tiles_finds_the_single_index_pairs_within_its_memory_bound(tmp_path, monkeypatch):
    """memory_mb=1 at 64 dims holds 4,096 rows: a 10,000-row file is searched in 3 tiles, no
    index ever holding more, and the pairs (and cosines) equal one index over everything."""
    x = near_pairs(10_000, 64, seed=2)
    vf = VectorFile(tmp_path, 64)
    for lo in range(0, len(x), 999):
        vf.append(x[lo : lo + 999])
    vf.finish()
    sizes = []
    real = vector.build_index
    monkeypatch.setattr(vector, "build_index", lambda *a, **k: sizes.append((idx := real(*a, **k)).ntotal) or idx)
    tiled = range_pairs(vf, 0.9, index="flat", memory_mb=1)
    assert sizes == [4096, 4096, 1808]
    whole = range_pairs(x, 0.9, index="flat")
    assert sizes[-1] == 10_000 and len(pair_set(whole)) > 500
    assert pair_set(tiled) == pair_set(whole) and tiled[3] == whole[3]
    by_pair = dict(zip(zip(tiled[0].tolist(), tiled[1].tolist(), strict=True), tiled[2].tolist(), strict=True))
    assert all(abs(by_pair[p] - s) < 1e-5 for p, s in zip(zip(whole[0].tolist(), whole[1].tolist(), strict=True), whole[2].tolist(), strict=True))


@pytest.mark.parametrize("storage, tolerance", [("float16", 0.01), ("int8", 0.02)])
def test_compact_storage_finds_the_float32_pairs(tmp_path, storage, tolerance):
    """The spill file as float16 / int8 (1/2, 1/4 of the bytes): nearly the same pairs, cosines
    within ~1e-4 / ~2e-3 (measured 7e-5 / 1.5e-3); an ivf index over it holds the same codes."""
    x = near_pairs(12_000, 384, seed=3)
    vf = VectorFile(tmp_path, 384, storage)
    vf.append(x)
    vf.finish()
    assert (tmp_path / "vectors.bin").stat().st_size == x.size * (2 if storage == "float16" else 1)
    err = np.abs(np.einsum("ij,ij->i", vf.read(slice(0, 2000)), x[:2000]) - 1)
    assert err.max() < (5e-4 if storage == "float16" else 5e-3)
    full = pair_set(range_pairs(x, 0.9, index="flat"))
    got = pair_set(range_pairs(vf, 0.9, index="flat", storage=storage))
    assert len(full) > 500 and len(full ^ got) <= tolerance * len(full)
    ivf = pair_set(range_pairs(vf, 0.9, index="ivf", nprobe=64, storage=storage))
    assert len(full & ivf) >= 0.9 * len(full) and len(ivf - full) <= tolerance * len(full)


def test_ivf_lists_beyond_memory_mb_go_to_disk_with_the_same_pairs(tmp_path):
    """An int8 ivf index of 12,000 vectors is 4.7 MB of lists: with memory_mb=1 they are built
    in 3 shards of 4,096 rows and merged into a file on disk; the pairs are the in-memory index's."""
    x = near_pairs(12_000, 384, seed=4)
    vf = VectorFile(tmp_path, 384, "int8")
    vf.append(x)
    vf.finish()
    disk = vector.build_index(vf, "ivf", 32, "int8", memory_mb=1)
    assert (tmp_path / "ivf.lists").stat().st_size > 12_000 * 384 and not list(tmp_path.glob("ivf-shard-*"))
    assert disk.ntotal == 12_000
    del disk  # the pair searches below write their own lists file
    in_memory = range_pairs(vf, 0.9, index="ivf", nprobe=32, storage="int8")
    on_disk = range_pairs(vf, 0.9, index="ivf", nprobe=32, storage="int8", memory_mb=1)
    assert len(pair_set(in_memory)) > 500 and pair_set(on_disk) == pair_set(in_memory)
