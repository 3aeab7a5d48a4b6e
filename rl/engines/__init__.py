"""Rollout engines behind one interface (`Engine`): the trainer asks an engine for n samples per
prompt (token ids in, token ids + behavior log-probs out) and pushes new weights to it after
each learner step.

- `local`: the transformers KV-cache loop in rl/rollout.py. Records the top-p nucleus per token
  (kept ids, else its size), so the learner replays the sampler's nucleus exactly.
- `server`: any OpenAI-compatible server returning per-token log-probs (vLLM, SGLang, llama.cpp
  server): `POST /v1/completions` with the prompt as token ids. No server returns the nucleus,
  so with top_p < 1 the trainer turns nucleus replay off for it (learner log-probs over the full
  tempered distribution; `engine/replay` 0 in metrics.jsonl, a warning once).
  Weights: saved to a shared directory, then `POST reload_endpoint {"model_path": DIR}`
  (SGLang's `/update_weights_from_disk` by default), with a timeout and a clear error.
- `vllm`: vLLM in-process on a GPU (optional extra `vllm`); weights pushed directly. Not run here
  (no GPU): the code path is behind an import guard.

`make_engine(cfg, model, tokenizer, ...)` picks one from `GRPOConfig.engine`."""

from __future__ import annotations

from .base import Engine, EngineError, make_engine

__all__ = ["Engine", "EngineError", "make_engine"]
