"""Reward components shared by every environment: task, format, language consistency, length penalty.

R = R_task + w_format * R_format + w_lang * R_lang - w_len * R_len
- R_task: the environment's verdict in [0, 1] (answer equivalence, all tests passed, ...).
- R_format: 1 when the response states its result the way the prompt asked (a boxed answer, a
  code block), else 0. Weight 0 by default: logged, not rewarded.
- R_lang = max(1 - alpha * n_non_english_words_in_cot, 0): language consistency of the reasoning.
- R_len = rho_q * |y| / l_max: length penalty scaled by the prompt's pass rate rho_q (hard
  prompts are penalized less); w_len is set to 0 at the longest curriculum stage.
Each component is returned separately so trainers and `rlclimb env check` can log them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel


class RewardConfig(BaseModel):
    w_format: float = 0.0
    w_lang: float = 0.5
    alpha: float = 0.005
    w_len: float = 0.25


@dataclass
class Reward:
    total: float
    components: dict[str, float] = field(default_factory=dict)
    detail: str = ""  # why the task component is what it is (checker verdict, test status)


_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.S)
_INLINE_MATH = re.compile(r"\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]", re.S)
_WORD = re.compile(r"\w+")
# Scripts written without spaces (Han, kana, Thai, ...): every character counts as one word.
_UNSPACED = re.compile(
    r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)


def reasoning_text(completion: str) -> str:
    """The chain of thought: the response without code blocks and math (they are not language)."""
    return _INLINE_MATH.sub(" ", _CODE_BLOCK.sub(" ", completion))


def _greek(c: str) -> bool:
    return "\u0370" <= c <= "\u03ff"


def non_english_words(text: str) -> int:
    """Words that contain a letter outside ASCII (Cyrillic, Greek words, accented words...), plus
    one per character of unspaced scripts (Chinese, Japanese, Korean, Thai). A lone Greek letter,
    alone or in a symbol like x_θ or Δx, is math (θ, π/2), not language."""
    unspaced = len(_UNSPACED.findall(text))
    rest = _UNSPACED.sub(" ", text)
    count = unspaced
    for word in _WORD.findall(rest):
        foreign = [c for c in word if c.isalpha() and not c.isascii()]
        if foreign and not (len(foreign) == 1 and _greek(foreign[0])):
            count += 1
    return count


def language_reward(completion: str, alpha: float) -> float:
    return max(1.0 - alpha * non_english_words(reasoning_text(completion)), 0.0)


def length_penalty(num_tokens: int, max_tokens: int, pass_rate: float | None) -> float:
    """rho_q * |y| / l_max; an unknown pass rate counts as 0.5."""
    rho = 0.5 if pass_rate is None else min(max(pass_rate, 0.0), 1.0)
    return rho * min(num_tokens, max_tokens) / max(max_tokens, 1)


def compose(
    task: float,
    completion: str,
    *,
    formatted: bool,
    num_tokens: int = 0,
    max_tokens: int = 0,
    pass_rate: float | None = None,
    config: RewardConfig | None = None,
    detail: str = "",
) -> Reward:
    cfg = config or RewardConfig()
    parts = {
        "task": float(task),
        "format": 1.0 if formatted else 0.0,
        "lang": language_reward(completion, cfg.alpha),
        "length": length_penalty(num_tokens, max_tokens, pass_rate) if max_tokens else 0.0,
    }
    total = (
        parts["task"]
        + cfg.w_format * parts["format"]
        + cfg.w_lang * parts["lang"]
        - cfg.w_len * parts["length"]
    )
    return Reward(total=total, components=parts, detail=detail)
