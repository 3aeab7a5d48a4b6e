"""The embedded LLM backend: a local causal LM (the packaged SmolLM2, a GGUF file or a Hugging Face
directory) run in-process with transformers on CPU, behind the same `LLMClient` as any endpoint.

Profile: `{backend: local, model: smollm2}` (or a path). Requests are chat completions like any
other; what differs is how they run:
- one model instance per process, loaded lazily on first use (rlclimb.rl.models.load_causal_lm);
- generation runs in a worker thread so the event loop keeps serving other stages and tiers;
- requests waiting at the same moment with the same sampling settings are batched into one
  `generate` call (left padding; the k samples of one prompt become k rows), up to the profile's
  `concurrency` rows: per-sample requests stay separately cached while the model runs them at once;
- one `generate` at a time per process (a lock): two would only fight over the same cores.
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_TOKENS = 256
_PARAM_KEYS = ("temperature", "top_p", "max_tokens")

_models: dict[str, tuple[Any, Any]] = {}
_load_lock = threading.Lock()
_generate_lock = threading.Lock()


@dataclass
class LocalOutput:
    text: str
    finish_reason: str  # "stop" (end of turn) or "length" (max tokens reached)
    prompt_tokens: int
    completion_tokens: int


def load(model: str) -> tuple[Any, Any]:
    """(model, tokenizer) for `model`, loaded once per process."""
    with _load_lock:
        if model not in _models:
            from rlclimb.rl.models import load_causal_lm, resolve

            resolve(model)  # a missing model fails here, before torch is imported (seconds)
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # "Loading weights" bars would cut into ours
            lm, tokenizer = load_causal_lm(model)
            lm.eval()
            _set_threads()
            _models[model] = (lm, tokenizer)
        return _models[model]


def _set_threads() -> None:
    """Torch's intra-op threads, RLCLIMB_TORCH_THREADS (default 1). Measured on a busy 2-core
    machine: SmolLM2, 4 rows, 213 ms per step with 1 thread, 4.2 s with 2 (threads spin-waiting
    for a core that another process holds). Set it to the free cores on a dedicated machine."""
    import torch

    torch.set_num_threads(int(os.environ.get("RLCLIMB_TORCH_THREADS", "1")))


def sampling(params: dict[str, Any]) -> tuple[float, float, int]:
    """(temperature, top_p, max new tokens) from OpenAI-style request params."""
    max_tokens = params.get("max_tokens") or params.get("max_completion_tokens")
    return (
        float(params.get("temperature", 1.0)),
        float(params.get("top_p", 1.0)),
        int(max_tokens or DEFAULT_MAX_TOKENS),
    )


def generate(
    model: str, conversations: list[list[dict[str, Any]]], params: dict[str, Any], seed: int
) -> list[LocalOutput]:
    """One batched `generate` (blocking; call it from a worker thread)."""
    lm, tok = load(model)
    import torch

    temperature, top_p, max_new = sampling(params)
    texts = [
        tok.apply_chat_template(_plain(m), add_generation_prompt=True, tokenize=False)
        for m in conversations
    ]
    enc = tok(texts, return_tensors="pt", padding=True)
    eos = tok.eos_token_id
    kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.pad_token_id}
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature, top_p=top_p)
    else:
        kwargs.update(do_sample=False)
    with _generate_lock, torch.inference_mode():
        torch.manual_seed(seed)
        out = lm.generate(**enc, **kwargs)
    width = enc["input_ids"].shape[1]
    results = []
    for row, mask in zip(out, enc["attention_mask"], strict=True):
        gen = row[width:].tolist()
        stop = gen.index(eos) if eos in gen else None
        used = gen if stop is None else gen[:stop]
        results.append(
            LocalOutput(
                text=tok.decode(used, skip_special_tokens=True),
                finish_reason="length" if stop is None else "stop",
                prompt_tokens=int(mask.sum()),
                completion_tokens=len(used) + (stop is not None),
            )
        )
    return results


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Chat templates want text content; OpenAI messages may carry content parts."""
    out = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append({"role": m.get("role", "user"), "content": content})
    return out


@dataclass
class _Request:
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    seed: int
    future: asyncio.Future[LocalOutput]

    @property
    def group(self) -> tuple:
        return sampling(self.params)


class LocalBatcher:
    """Per event loop and profile: collects requests and runs them in batched `generate` calls."""

    def __init__(self, model: str, max_batch: int):
        self.model, self.max_batch = model, max(1, max_batch)
        self._pending: list[_Request] = []
        self._worker: asyncio.Task[None] | None = None

    async def submit(
        self, messages: list[dict[str, Any]], params: dict[str, Any], seed: int | None
    ) -> LocalOutput:
        loop = asyncio.get_running_loop()
        request = _Request(messages, params, seed or 0, loop.create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await request.future

    async def _drain(self) -> None:
        while True:
            await asyncio.sleep(0)  # let the rest of a gather (the other samples) enqueue first
            self._pending = [r for r in self._pending if not r.future.done()]  # cancelled callers
            if not self._pending:
                return
            group = self._pending[0].group
            batch = [r for r in self._pending if r.group == group][: self.max_batch]
            taken = {id(r) for r in batch}
            self._pending = [r for r in self._pending if id(r) not in taken]
            seed = sum(r.seed for r in batch) % (2**31)  # one RNG draw per batch: reproducible
            try:
                outputs = await asyncio.to_thread(
                    generate, self.model, [r.messages for r in batch], batch[0].params, seed
                )
            except Exception as e:  # noqa: BLE001  # every caller of the batch gets the error
                for r in batch:
                    if not r.future.done():
                        r.future.set_exception(e)
                continue
            for r, output in zip(batch, outputs, strict=True):
                if not r.future.done():
                    r.future.set_result(output)
