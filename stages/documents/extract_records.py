"""Records of the extract step: `QASpan`, a question (maybe with its inline answer) or an answer.

Questions and answers that live apart (an answer key, a separate answer book) stay separate
spans until the pair stage joins them by numbering path and meaning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlclimb.schemas.ids import content_id
from rlclimb.schemas.records import Model, Source, StageEvent


class QASpan(Model):
    id: str
    role: Literal["question", "answer"]
    kind: str = "exercise"  # exercise | example | answer
    text: str  # the question (with its shared instruction) or the answer
    answer: str | None = None  # an answer printed with the question (inline solution)
    path: list[str] = Field(default_factory=list)
    section: str | None = None
    section_title: str | None = None
    number: str | None = None
    instruction: str | None = None
    source: Source = Field(default_factory=Source)
    answer_source: Source | None = None  # where the inline answer starts
    method: str = "structure"  # "structure" | "llm" | "structure+llm"
    confidence: float = 1.0
    backends: list[str] = Field(default_factory=list)
    order: int = 0
    provenance: list[StageEvent] = Field(default_factory=list)


def span_id(role: str, document: str | None, order: int, text: str) -> str:
    return content_id("span", role, document or "", str(order), text)
