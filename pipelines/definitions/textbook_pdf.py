"""textbook-pdf: textbooks, lecture notes, papers (PDF) -> candidate QA items with their source.

    parse -> [ocr_vlm] -> structure -> extract -> pair

- parse: text layer with layout, per-page quality check, Tesseract OCR for empty or garbled pages
  (`parse.ocr: vlm` adds the `ocr_vlm` stage: a vision-language model through the LLM client);
- structure: headers/footers stripped, hierarchy, exercise / answer-key zones, shared instructions;
- extract: question and answer spans (`extract.method: structure | llm | both | fallback`; fallback:
  the LLM only for exercise / answer-zone pages where the rules recognized no item);
- pair: answers matched to questions by numbering, embeddings, optionally an LLM.
With `--set curate=true` the items then go through normalize -> validate (unanswered questions
are ledgered there as `empty_answer`) -> exact and MinHash dedup -> the stem-curate stages.
"""

from __future__ import annotations

from typing import Any

from rlclimb.stages.documents.extract_llm import ExtractLLM
from rlclimb.stages.documents.extract_qa import ExtractQA
from rlclimb.stages.documents.pair_qa import PairQA
from rlclimb.stages.documents.parse_pdf import ParsePdf
from rlclimb.stages.documents.parse_vlm import OcrVlm
from rlclimb.stages.documents.structure import StructureDocument

from ..engine import Pipeline
from ..readers_pdf import PdfPageReader
from . import ConfigError, configure, name_documents


def document_stages(sections: dict[str, Any]) -> list[type]:
    """structure -> extract -> pair, with the extract implementation the config asks for."""
    method = (sections.get("extract") or {}).get("method", "structure")
    return [StructureDocument, ExtractLLM if method in ("llm", "both", "fallback") else ExtractQA, PairQA]


def with_text_units(sections: dict[str, Any]) -> dict[str, Any]:
    """LLM extraction also reads running text: let the structure stage emit it (unless set)."""
    method = (sections.get("extract") or {}).get("method", "structure")
    if method in ("llm", "both", "fallback"):
        structure = dict(sections.get("structure") or {})
        if method == "fallback":  # only the zone pages the rules could not read
            structure.setdefault("emit_zone_text", True)
        else:
            structure.setdefault("emit_text", True)
        sections = {**sections, "structure": structure}
    return sections


def curated(sections: dict[str, Any]) -> tuple[dict[str, Any], list]:
    """The `curate` option of the document pipelines: cleaning, dedup, then the curation stages."""
    from rlclimb.stages.dedup.exact import ExactDedup
    from rlclimb.stages.dedup.minhash import MinHashDedup
    from rlclimb.stages.text import NormalizeText, ValidateQA

    from .stem_curate import curate_option

    return curate_option(sections, [NormalizeText, ValidateQA, ExactDedup, MinHashDedup])


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    sections, extra = curated(with_text_units(dict(sections)))
    vlm = (sections.get("parse") or {}).get("ocr") == "vlm"
    if "ocr_vlm" in sections and not vlm:
        raise ConfigError("config ocr_vlm: set parse.ocr=vlm to use the vision-model OCR stage")
    classes = [ParsePdf, *([OcrVlm] if vlm else []), *document_stages(sections)]
    stages = configure(classes, sections)
    parse = stages[0]
    stages += extra
    reader = PdfPageReader(inputs, pages_per_shard=parse.config.pages_per_shard)
    name_documents(stages, reader.paths, inputs)
    return Pipeline(
        name="textbook-pdf",
        reader=reader,
        stages=stages,
        shard_size=shard_size,
    )
