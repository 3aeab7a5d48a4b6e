"""Text hygiene for QA items: normalization and validity checks."""

from __future__ import annotations

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.ids import normalize_text


class NormalizeConfig(StageConfig):
    fields: list[str] = ["question", "answer", "solution"]


class NormalizeText(Stage):
    """NFKC, unified newlines, collapsed whitespace (see rlclimb.schemas.ids.normalize_text)."""

    name = "normalize"
    version = "1"
    kind = "map"
    Config = NormalizeConfig

    def process(self, record: Record, ctx: StageContext) -> Record:
        for f in self.config.fields:
            value = record.get(f)
            if value:
                record[f] = normalize_text(value)
        return record


class ValidateConfig(StageConfig):
    min_question_chars: int = 8
    max_question_chars: int = 20_000
    max_answer_chars: int = 5_000


class ValidateQA(Stage):
    """Drop items that cannot be training data: empty, truncated-looking, oversized, mis-decoded."""

    name = "validate"
    version = "1"
    kind = "filter"
    Config = ValidateConfig

    def process(self, record: Record, ctx: StageContext) -> bool | Drop:
        q, a, c = record["question"], record["answer"], self.config
        if not q:
            return Drop("empty_question")
        if not a:
            return Drop("empty_answer")
        if len(q) < c.min_question_chars:
            return Drop("question_too_short", f"{len(q)} chars < {c.min_question_chars}")
        if len(q) > c.max_question_chars:
            return Drop("question_too_long", f"{len(q)} chars > {c.max_question_chars}")
        if len(a) > c.max_answer_chars:
            return Drop("answer_too_long", f"{len(a)} chars > {c.max_answer_chars}")
        if "\ufffd" in q or "\ufffd" in a:
            return Drop("encoding_damage", "U+FFFD replacement character: the source was mis-decoded")
        return True
