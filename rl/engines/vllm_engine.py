"""vLLM in-process (GPU; optional extra `vllm`). NOT RUN in this project's CI or on the CPU
machine it was written on: the code follows vLLM's offline `LLM` API (TokensPrompt in,
`logprobs=0` out) and pushes weights directly with `load_weights` on the worker's model.

vLLM returns the sampled token's log-prob but not the top-p nucleus, so (as for servers) the
trainer does not replay the nucleus for this engine. Ask for processed log-probs
(`logprobs_mode="processed_logprobs"`, vLLM >= 0.10) so they are the behavior distribution's."""

from __future__ import annotations

from ..rollout import Sample
from .base import Engine, EngineError


class VLLMEngine(Engine):
    name = "vllm"
    replays_nucleus = False

    def __init__(self, model, tokenizer, *, temperature, top_p, eos_ids, **options):
        super().__init__()
        try:
            import vllm
        except ImportError as e:
            raise EngineError(
                "engine vllm needs vLLM on a GPU machine: pip install 'rlclimb[vllm]' "
                f"(import failed: {e}); use engine local or server here"
            ) from None
        self.vllm = vllm
        path = options.pop("model_path", None) or getattr(model, "name_or_path", None)
        if not path:
            raise EngineError("engine vllm: engine_options.model_path (a model directory) is needed")
        options.setdefault("logprobs_mode", "processed_logprobs")
        self.llm = vllm.LLM(model=str(path), enable_prefix_caching=True, **options)
        self.temperature, self.top_p, self.eos_ids = temperature, top_p, list(eos_ids)
        self.vocab = len(tokenizer)

    def generate(self, prompts, *, n, max_new_tokens, greedy=False, generator=None, seed=0):
        from vllm.inputs import TokensPrompt

        params = self.vllm.SamplingParams(
            n=n,
            max_tokens=max_new_tokens,
            temperature=0.0 if greedy else self.temperature,
            top_p=1.0 if greedy else self.top_p,
            logprobs=0,
            seed=seed,
            stop_token_ids=self.eos_ids,
            skip_special_tokens=False,
        )
        with self.sampling() as version:
            outs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params)
        groups = []
        for prompt, out in zip(prompts, outs, strict=True):
            group = []
            for c in out.outputs:
                ids = list(c.token_ids)
                logps = [float(step[t].logprob) for step, t in zip(c.logprobs, ids, strict=True)]
                group.append(
                    Sample(list(prompt), ids, logps, [self.vocab] * len(ids), [1] * len(ids),
                           c.finish_reason != "stop", version)
                )
            groups.append(group)
        return groups

    def _load(self, model, version) -> None:
        weights = [(k, v.detach()) for k, v in model.state_dict().items()]

        def load(worker):  # runs in the worker process/thread holding the model
            worker.model_runner.model.load_weights(weights=weights)

        self.llm.collective_rpc(load)
        self.llm.reset_prefix_cache()  # cached KV came from the old weights
