"""Vector dedup memory and recall per index and storage option, against the code before tiling
(one in-memory faiss index over every vector), in the same run.

    python benchmarks/dedup_vector_memory.py                    # 200k x 384 synthetic, 50k flat, 10.5k real texts
    python benchmarks/dedup_vector_memory.py --n 200000 --n-flat 50000 --real 10500 --baseline 27f755e^

Every configuration runs the whole `dedup_vector` stage (spool, spill file, search, clusters,
output) in its own process; its memory is the peak RSS of that run above the process's RSS
before it (peak reset through /proc/self/clear_refs), so imports and the input do not count.
- synthetic: 384-dim random unit vectors; every 10th row is a perturbed copy of the row 9
  before it (cosine 0.84-0.995, so many pairs sit near the 0.9 threshold); random rows never
  come near 0.9 in 384 dims, so the truth is exactly the planted pairs at or above it (their
  cosine computed in float32). The vectors are generated a batch at a time by a stand-in
  embedder, so no copy exists outside the stage. ivf at `--n` (the stage's choice from 100k),
  flat at `--n-flat`.
- real: text blocks from the PDFs in ../shared/data/textbooks (PyMuPDF's raw blocks), embedded
  once with the MiniLM model; each configuration dedups the same vectors, scored against exact
  float32 flat search (the baseline's result, which the new code must equal).
The baseline is `stages/dedup/vector.py` at `--baseline` (a git revision), loaded beside the
current one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DIM = 384
THRESHOLD = 0.9


def synthetic_block(b: int, rows: int = 1000) -> np.ndarray:
    """Rows [b*rows, (b+1)*rows): random unit vectors, row i%10==9 a perturbed copy of row i-9."""
    rng = np.random.default_rng(b)
    x = rng.normal(size=(rows, DIM)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    dup = np.arange(9, rows, 10)
    noise = rng.normal(size=(len(dup), DIM)).astype(np.float32)
    noise *= (rng.uniform(0.1, 0.65, size=(len(dup), 1)) / np.linalg.norm(noise, axis=1, keepdims=True)).astype(np.float32)
    x[dup] = x[dup - 9] + noise
    x[dup] /= np.linalg.norm(x[dup], axis=1, keepdims=True)
    return x


def synthetic_truth(n: int) -> set[int]:
    """The planted duplicates (row ids) at or above the threshold."""
    out = set()
    for b in range(0, (n + 999) // 1000):
        x = synthetic_block(b)
        dup = np.arange(9, 1000, 10)
        ok = np.einsum("ij,ij->i", x[dup], x[dup - 9]) >= np.float32(THRESHOLD)
        out |= {int(b * 1000 + i) for i in dup[ok] if b * 1000 + i < n}
    return out


class SyntheticEmbedder:
    name, dim = "synthetic", DIM

    def __init__(self):
        self._block = (-1, None)

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), np.float32)
        for k, t in enumerate(texts):
            i = int(t[1:])
            if self._block[0] != i // 1000:
                self._block = (i // 1000, synthetic_block(i // 1000))
            out[k] = self._block[1][i % 1000]
        return out


class FileEmbedder:
    """Precomputed vectors (an .npy file), row i for the text "v<i>"; each batch read and unmapped."""

    name, dim = "minilm-cached", DIM

    def __init__(self, path: str):
        self.path = path

    def encode(self, texts: list[str]) -> np.ndarray:
        x = np.load(self.path, mmap_mode="r")
        rows = x[[int(t[1:]) for t in texts]].astype(np.float32)
        del x
        return rows


def rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(field)


def load_vector_module(rev: str | None):
    if rev is None:
        from rlclimb.stages.dedup import vector
        return vector
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:stages/dedup/vector.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("rlclimb.stages.dedup._vector_baseline", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "rlclimb.stages.dedup"
    sys.modules[spec.name] = module  # pydantic resolves the config's annotations through it
    exec(compile(source, f"{rev}:stages/dedup/vector.py", "exec"), module.__dict__)
    return module


def child(job: dict) -> dict:
    """One configuration: the stage over n records, in this process."""
    from rlclimb.pipelines.stage import StageContext

    vector = load_vector_module(job["rev"])
    config = {"threshold": THRESHOLD, "numbers": "ignore", "spill_dir": job["spill"], **job["config"]}
    stage = vector.VectorDedup(config)
    stage.embedder = FileEmbedder(job["vectors"]) if job.get("vectors") else SyntheticEmbedder()
    records = ({"id": f"r{i}", "question": f"v{i}", "answer": ""} for i in range(job["n"]))
    import faiss  # noqa: F401  (imported before the measurement, as in a run)

    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
    before = rss_mb("VmRSS")
    t0 = time.perf_counter()
    dropped = [int(r["id"][1:]) for r in (o[0] for o in stage.run(records, StageContext()) if isinstance(o, tuple))]
    return {"seconds": round(time.perf_counter() - t0, 1), "peak_mb": round(rss_mb("VmHWM") - before, 1),
            "dropped": dropped}


def run_job(job: dict) -> dict:
    with tempfile.TemporaryDirectory() as spill:
        job = {**job, "spill": spill}
        out = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)], check=True,
                             capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def real_vectors(count: int, path: Path) -> int:
    """Text blocks of the shared textbooks (at least 40 characters), embedded with MiniLM."""
    import pymupdf

    from rlclimb.stages.dedup.vector import embedding_text
    from rlclimb.stages.embedding import load_embedder

    books = sorted((ROOT.parent / "shared" / "data" / "textbooks").glob("*.pdf"))
    texts = []
    for book in books:
        with pymupdf.open(book) as doc:
            texts += [b[4].strip() for page in doc for b in page.get_text("blocks") if len(b[4].strip()) >= 40]
    texts = texts[:: max(1, len(texts) // count)][:count]  # spread over every book
    t0 = time.perf_counter()
    x = load_embedder("minilm").encode([embedding_text(t) for t in texts])
    np.save(path, x)
    print(f"real: {len(texts):,} text blocks from {len(books)} textbooks, MiniLM embedding {time.perf_counter() - t0:.0f} s")
    return len(texts)


def report(name: str, res: dict, n: int, truth: set[int], per_vector: bool) -> None:
    got = set(res["dropped"])
    recall = len(got & truth) / max(len(truth), 1)
    per_m = f"{res['peak_mb'] / n * 1e6:8,.0f} MB/1M" if per_vector else " " * 16
    print(f"  {name:<34} peak {res['peak_mb']:8,.1f} MB {per_m}  recall {recall:.4f} of {len(truth):,}  "
          f"extra {len(got - truth):4d}  {res['seconds']:7.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000, help="synthetic vectors for the ivf configurations")
    ap.add_argument("--n-flat", type=int, default=50_000, help="synthetic vectors for the flat configurations")
    ap.add_argument("--real", type=int, default=10_500, help="real text blocks (ivf from 10k) (0: skip)")
    ap.add_argument("--baseline", default="27f755e^", help="git revision of the code before tiling")
    ap.add_argument("--only", help="comma-separated configuration names to run (default: all)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    base, new = args.baseline, None
    ivf = [("baseline ivf float32", base, {"index": "ivf"}),
           ("baseline ivf float16", base, {"index": "ivf", "storage": "float16"}),
           ("ivf float32", new, {"index": "ivf"}),
           ("ivf float16", new, {"index": "ivf", "storage": "float16"}),
           ("ivf int8", new, {"index": "ivf", "storage": "int8"}),
           ("ivf int8 memory_mb=16", new, {"index": "ivf", "storage": "int8", "memory_mb": 16})]
    flat = [("baseline flat float32", base, {"index": "flat"}),
            ("flat float32", new, {"index": "flat"}),
            ("flat float32 memory_mb=16", new, {"index": "flat", "memory_mb": 16}),
            ("flat float16 memory_mb=16", new, {"index": "flat", "storage": "float16", "memory_mb": 16}),
            ("flat int8 memory_mb=16", new, {"index": "flat", "storage": "int8", "memory_mb": 16})]
    if args.only:
        chosen = set(args.only.split(","))
        ivf, flat = [j for j in ivf if j[0] in chosen], [j for j in flat if j[0] in chosen]
    print(f"synthetic, {DIM} dims, threshold {THRESHOLD}: peak RSS of the stage above its start, recall of "
          "the planted pairs, extra = dropped rows that are no planted pair")
    for n, jobs, per_vector in ((args.n, ivf, True), (args.n_flat, flat, False)):
        if not jobs:
            continue
        truth = synthetic_truth(n)
        print(f" {n:,} vectors ({len(truth):,} planted pairs >= {THRESHOLD}):")
        for name, rev, config in jobs:
            report(name, run_job({"rev": rev, "config": config, "n": n}), n, truth, per_vector)
    if args.real and not args.only:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "real.npy"
            n = real_vectors(args.real, path)
            ref = None
            print(f" real, {n:,} vectors: recall/extra against exact float32 flat (the baseline's)")
            for name, rev, config in flat + ivf[2:]:
                res = run_job({"rev": rev, "config": config, "n": n, "vectors": str(path)})
                ref = ref if ref is not None else set(res["dropped"])
                report(name, res, n, ref, False)
    print("\nstored bytes per vector (spill file; an ivf index adds 8 of id): "
          + ", ".join(f"{s} {b} ({b * 1e6 / 2**20:,.0f} MB/1M)" for s, b in
                      (("float32", 4 * DIM), ("float16", 2 * DIM), ("int8", DIM + 4))))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
