"""qa-markdown: sources that are already text (markdown, LaTeX, plain-text exports) -> QA items.

    (reader: text -> pages of lines) -> structure -> extract -> pair

The same structure, extract and pair stages as textbook-pdf; the reader turns markup into the
cues a PDF gives by typography (headings, bold labels, LaTeX exercise environments).
`--set curate=true` appends cleaning, dedup and curation as in textbook-pdf.
"""

from __future__ import annotations

from typing import Any

from rlclimb.stages.documents.parse_markdown import TextDocumentReader

from ..engine import Pipeline
from . import configure, name_documents
from .textbook_pdf import curated, document_stages, with_text_units


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    sections, extra = curated(with_text_units(dict(sections)))
    stages = configure(document_stages(sections), sections) + extra
    reader = TextDocumentReader(inputs)
    name_documents(stages, reader.paths, inputs)
    return Pipeline(
        name="qa-markdown",
        reader=reader,
        stages=stages,
        shard_size=shard_size,
    )
