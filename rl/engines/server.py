"""The server engine: any OpenAI-compatible server that returns per-token log-probs.

Generation: one `POST {base_url}/completions` per prompt with the prompt as token ids (so a
multi-turn context stays a strict token prefix, never re-tokenized), `n`, `logprobs: 0` (the
sampled token's log-prob) and `return_tokens_as_token_ids` (vLLM; tokens come back as
"token_id:N"; a server without it returns token strings, mapped back by the tokenizer). Requests
for several prompts run concurrently (`concurrency`).

What servers return: the sampled token's log-prob, and at most `top_logprobs` alternatives;
never the size of the top-p nucleus, so samples from this engine carry no nucleus and the
trainer does not replay one (see rl/engines/__init__.py). vLLM returns log-probs of the raw
model unless started with `--logprobs-mode processed_logprobs` (after temperature and top-p):
the learner only uses them as an importance weight and the mismatch KL, so raw ones show up as
mismatch, not as a wrong gradient.

Weights: `update_weights` saves the learner's model (safetensors + config) under `weights_dir`
(a path the server can read), then `POST {server}{reload_endpoint}` with
`{"model_path": DIR, "version": N}` (SGLang: `/update_weights_from_disk`; for vLLM, a server
with a reload route, e.g. a `--worker-extension-cls` that loads the path). The call has
`reload_timeout_s`; a timeout or an error status raises EngineError naming the server and the
directory instead of hanging. Only the newest `keep_weights` directories are kept. Requests in
flight during a reload go on (the server swaps weights between its forward passes); their
samples keep the version at their start, so staleness is never under-counted."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from ..rollout import Sample
from .base import Engine, EngineError


class ServerEngine(Engine):
    name = "server"
    replays_nucleus = False
    drain_on_update = False  # the server swaps weights between its own forward passes

    def __init__(
        self,
        *,
        tokenizer,
        temperature: float,
        top_p: float,
        eos_ids: list[int],
        base_url: str,
        model: str = "default",
        timeout_s: float = 600.0,
        concurrency: int = 16,
        weights_dir: str | None = None,
        reload_endpoint: str = "/update_weights_from_disk",
        reload_timeout_s: float = 300.0,
        keep_weights: int = 2,
        api_key: str | None = None,
    ):
        super().__init__()
        self.tokenizer = tokenizer
        self.temperature, self.top_p, self.eos_ids = temperature, top_p, list(eos_ids)
        self.base_url = base_url.rstrip("/")
        self.model_name = model
        self.weights_dir = Path(weights_dir) if weights_dir else None
        self.reload_endpoint = reload_endpoint
        self.reload_timeout_s, self.keep_weights = reload_timeout_s, keep_weights
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(timeout=timeout_s, headers=headers)
        self.pool = ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="rl-server")

    # ---- generation ------------------------------------------------------------------------
    def generate(self, prompts, *, n, max_new_tokens, greedy=False, generator=None, seed=0):
        with self.sampling() as version:
            jobs = [
                self.pool.submit(self._one, p, n, max_new_tokens, greedy, seed + i, version)
                for i, p in enumerate(prompts)
            ]
            return [j.result() for j in jobs]

    def _one(self, prompt, n, max_new_tokens, greedy, seed, version) -> list[Sample]:
        body = {
            "model": self.model_name,
            "prompt": list(prompt),
            "n": n,
            "max_tokens": max_new_tokens,
            "temperature": 0.0 if greedy else self.temperature,
            "top_p": 1.0 if greedy else self.top_p,
            "logprobs": 0,
            "seed": seed,
            "stop_token_ids": self.eos_ids,
            "skip_special_tokens": False,
            "include_stop_str_in_output": True,
            "return_tokens_as_token_ids": True,
        }
        url = f"{self.base_url}/completions"
        try:
            response = self.http.post(url, json=body)
        except httpx.HTTPError as e:
            raise EngineError(f"rollout server {url}: {type(e).__name__}: {e}") from e
        if response.status_code >= 400:
            raise EngineError(f"rollout server {url}: HTTP {response.status_code}: {response.text[:300]}")
        choices = sorted(response.json().get("choices", []), key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise EngineError(f"rollout server {url}: asked for n={n}, got {len(choices)} choices")
        return [self._sample(prompt, c, version) for c in choices]

    def _sample(self, prompt, choice, version) -> Sample:
        lp = choice.get("logprobs") or {}
        tokens, logps = lp.get("tokens"), lp.get("token_logprobs")
        if tokens is None or logps is None or len(tokens) != len(logps):
            raise EngineError(
                f"rollout server {self.base_url}: a choice without per-token logprobs "
                "(tokens, token_logprobs); the trainer needs them (start the server with logprobs enabled)"
            )
        ids = [self._token_id(t) for t in tokens]
        size = len(self.tokenizer)  # no nucleus from a server: the whole vocabulary
        finished = choice.get("finish_reason") == "stop" or (ids and ids[-1] in self.eos_ids)
        return Sample(
            prompt_ids=list(prompt),
            completion_ids=ids,
            logprobs=[float(x) for x in logps],
            nucleus_sizes=[size] * len(ids),
            loss_mask=[1] * len(ids),
            truncated=not finished,
            policy_version=version,
        )

    def _token_id(self, token: str) -> int:
        if token.startswith("token_id:"):
            return int(token[len("token_id:") :])
        found = self.tokenizer.convert_tokens_to_ids(token)
        if found is None or found == self.tokenizer.unk_token_id:
            raise EngineError(
                f"rollout server {self.base_url}: token {token!r} is not in the tokenizer; "
                "serve with return_tokens_as_token_ids (vLLM) or the same tokenizer"
            )
        return found

    # ---- weights -----------------------------------------------------------------------------
    def _load(self, model, version) -> None:
        if self.weights_dir is None:
            raise EngineError(
                "server engine: no weights_dir (engine_options.weights_dir, a path the server reads); "
                "without it the server would keep sampling from the first weights"
            )
        target = self.weights_dir / f"step-{version:06d}"
        tmp = target.with_name("." + target.name)
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(tmp)
        self.tokenizer.save_pretrained(tmp)
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        server = self.base_url.removesuffix("/v1")
        url = f"{server}{self.reload_endpoint}"
        try:
            r = self.http.post(
                url, json={"model_path": str(target), "version": version},
                timeout=self.reload_timeout_s,
            )
        except httpx.TimeoutException as e:
            raise EngineError(
                f"weight reload {url} did not answer within {self.reload_timeout_s:g} s "
                f"(weights in {target}); raise engine_options.reload_timeout_s or check the server"
            ) from e
        except httpx.HTTPError as e:
            raise EngineError(f"weight reload {url}: {type(e).__name__}: {e}") from e
        if r.status_code >= 400:
            raise EngineError(f"weight reload {url}: HTTP {r.status_code}: {r.text[:300]}")
        for old in sorted(self.weights_dir.glob("step-*"))[: -self.keep_weights or None]:
            shutil.rmtree(old, ignore_errors=True)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.http.close()
