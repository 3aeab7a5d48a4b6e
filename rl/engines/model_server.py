"""A real model behind the project's scripted OpenAI-compatible server: `/v1/completions` with
token-id prompts answered by rl/rollout.py's sampler (vLLM's response shape: tokens as
"token_id:N", `token_logprobs`, `top_logprobs` with the sampled token), and a weight-reload
route (`/update_weights_from_disk`, SGLang's name) that loads a saved Hugging Face directory.
For tests and benchmarks of the server engine on 127.0.0.1; it is not a production server
(requests are served one at a time by one model)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

from ..rollout import generate


class ModelServer:
    def __init__(self, model, tokenizer, *, latency_s: float = 0.0, reload_delay_s: float = 0.0):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.lock = threading.Lock()
        self.loaded: list[str] = []  # weight directories loaded, in order
        self.reload_delay_s = reload_delay_s
        self.server = ScriptedServer(self._complete, latency_s=latency_s)
        self.server.route("/update_weights_from_disk", self._reload)

    def __enter__(self) -> ModelServer:
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def _complete(self, body: dict[str, Any], n: int) -> Reply:
        prompt = body["prompt"]
        if isinstance(prompt, str):
            prompt = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        temperature = float(body.get("temperature", 1.0))
        greedy = temperature == 0.0
        stops = body.get("stop_token_ids") or [self.tokenizer.eos_token_id]
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        with self.lock, torch.no_grad():
            (group,) = generate(
                self.model,
                [prompt],
                n=int(body.get("n", 1)),
                max_new_tokens=int(body.get("max_tokens", 16)),
                eos_ids=stops,
                pad_id=stops[0],
                temperature=temperature if not greedy else 1.0,
                top_p=float(body.get("top_p", 1.0)),
                greedy=greedy,
                generator=torch.Generator().manual_seed(int(body.get("seed", 0))),
            )
        choices = []
        for i, s in enumerate(group):
            tokens = [
                f"token_id:{t}" if as_ids else self.tokenizer.convert_ids_to_tokens(t)
                for t in s.completion_ids
            ]
            choices.append(
                {
                    "index": i,
                    "text": self.tokenizer.decode(s.completion_ids),
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": s.logprobs,
                        "top_logprobs": [{t: lp} for t, lp in zip(tokens, s.logprobs, strict=True)],
                    },
                    "finish_reason": "length" if s.truncated else "stop",
                }
            )
        return Reply(choices=choices)

    def _reload(self, body: dict[str, Any]) -> tuple[int, Any]:
        from safetensors.torch import load_file

        path = Path(body["model_path"])
        files = sorted(path.glob("*.safetensors"))
        if not files:
            return 400, {"error": {"message": f"no safetensors in {path}"}}
        if self.reload_delay_s:
            self.server._stopping.wait(self.reload_delay_s)
        weights: dict[str, torch.Tensor] = {}
        for f in files:
            weights.update(load_file(f))
        with self.lock:  # between generation calls, as a real server swaps between passes
            self.model.load_state_dict(weights, strict=False)
            self.loaded.append(str(path))
        return 200, {"success": True, "version": body.get("version")}
