"""Records of the structure step: `DocUnit`, one numbered item (or instruction) of a document.

An exercise, a worked example, an answer-key entry or a shared instruction, with its place in the
document's hierarchy (`path`: normalized numbering of chapter, section, ..., item), its cleaned
text (running headers, page numbers and page breaks removed), and where it starts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlclimb.schemas.ids import content_id
from rlclimb.schemas.records import Model, Source, StageEvent

UnitKind = Literal["exercise", "example", "answer", "instruction", "text"]


class DocUnit(Model):
    id: str
    kind: UnitKind
    zone: str  # "exercises" | "answers" | "body"
    path: list[str] = Field(default_factory=list)  # ["1", "4", "17"]; see structure_patterns
    section: str | None = None  # printed context path: "1.4", "1.I.1", "t:crystals"
    section_title: str | None = None
    label: str | None = None  # as printed: "17.", "✓1.17", "Exercise 3.", "One.I.1.17"
    number: str | None = None  # the item's number as printed: "17", "1.17", "One.I.1.17"
    text: str = ""
    instruction: str | None = None  # a shared instruction governing the item
    source: Source = Field(default_factory=Source)  # document, page, span (bbox), line
    last_page: int | None = None
    backends: list[str] = Field(default_factory=list)  # how its pages' text was obtained
    quality: float = 1.0  # lowest text quality among its pages
    order: int = 0  # position in the document
    provenance: list[StageEvent] = Field(default_factory=list)


def unit_id(document: str, order: int, text: str) -> str:
    return content_id("unit", document, str(order), text)
