"""Records of the parse step: one `DocPage` per document page, its text as positioned lines.

PDF pages get their lines from the text layer (or OCR); text sources (markdown, LaTeX, plain
text) get the same shape with synthesized font sizes, so the structure stage reads both alike.
"""

from __future__ import annotations

from pydantic import Field

from rlclimb.schemas.ids import content_id
from rlclimb.schemas.records import Model, Source, StageEvent

# Page text backends: the PDF text layer, Tesseract OCR, a vision-language model, a text file.
BACKENDS = ("text", "tesseract", "vlm", "source")


class PageLine(Model):
    """One visual line of a page in reading order (same-baseline fragments already joined)."""

    text: str
    x0: float = 0.0
    y0: float = 0.0
    x1: float = 0.0
    y1: float = 0.0
    size: float = 10.0  # font size in points (synthesized for text sources: headings are larger)
    bold: bool = False  # the line starts in a bold font (labels and headings often do)
    block: int = 0  # layout block on the page
    line: int | None = None  # 1-based line in a text source


class DocPage(Model):
    id: str
    source: Source  # document and 1-based page
    pages: int  # pages in the document
    width: float = 0.0
    height: float = 0.0
    backend: str = "text"  # which backend produced `lines` (one of BACKENDS)
    quality: float = 1.0  # text quality score of `lines`, 0..1
    text_layer_quality: float | None = None  # score of the original text layer, when OCR replaced it
    ocr_reason: str | None = None  # why the page went to OCR ("empty", "garbled: ...")
    needs_ocr: bool = False  # waiting for the VLM OCR stage
    text_path: str = "text"  # "text" (layer as is), "repaired" (font substitutions applied), "ocr"
    path_reason: str | None = None  # why that path: suspect glyphs found / mapped / unrepaired, garbled...
    glyphs_dropped: int = 0  # control / private-use / unmapped glyphs removed by cleaning (delimiter pieces)
    lines: list[PageLine] = Field(default_factory=list)
    provenance: list[StageEvent] = Field(default_factory=list)


def page_id(document: str, page: int) -> str:
    return content_id("page", document, str(page))


def page_text(lines: list[dict]) -> str:
    return "\n".join(line["text"] for line in lines)
