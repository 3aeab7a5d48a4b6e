"""Extract with an LLM: the model marks question and answer spans in each structured unit.

The unit's cleaned text goes to the `extractor` role with a request for structured output (a
list of items: number, question, answer), and every span the model returns must occur in the
unit's text (compared with whitespace collapsed): a span that does not is a hallucination and
is discarded, so the model can cut and label but never invent. Methods:
- "llm": the model's spans replace the structural ones for exercise, example, answer and
  running-text units;
- "both": the structural spans are kept; where the model agrees on the question, the span is
  marked `structure+llm`; running-text units (which have no structural item) add the model's
  spans.
An async stage with a row cache: a resumed run repeats no call.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from rlclimb.pipelines.stage import Drop, Keep, Record, Stage, StageContext

from .extract_qa import ExtractConfig, spans_of_unit
from .extract_records import QASpan, span_id
from .parse_vlm import require_llm

_WS = re.compile(r"\s+")


class MarkedItem(BaseModel):
    number: str | None = Field(None, description="the item's number as printed, if any")
    question: str | None = Field(None, description="the question, copied verbatim from the text")
    answer: str | None = Field(None, description="its answer or solution, copied verbatim, if the text has one")


class MarkedSpans(BaseModel):
    items: list[MarkedItem] = Field(default_factory=list)


PROMPT = """You mark questions and answers in a block of text from a STEM textbook.
Context: {context}. The block is {what}.
Copy every span verbatim from the block (same words, same order); do not rewrite or invent.
- "question": the full statement of an exercise, problem or worked example (include any
  shared instruction it needs only if it appears in the block);
- "answer": its answer or solution when the block contains one, else null;
For an answer-key entry, give only "answer" (and "number"). Return {{"items": []}} when the block
holds no question and no answer.

BLOCK:
{text}"""

_WHAT = {
    "exercise": "one exercise (possibly followed by its solution)",
    "example": "one worked example (possibly followed by its solution)",
    "answer": "one entry of an answer key",
    "text": "running text that may contain problems and solutions",
}


def normalized(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def verbatim(span: str | None, source: str) -> bool:
    return bool(span) and normalized(span) in normalized(source)


class ExtractLLM(Stage):
    name = "extract"
    version = "1"
    kind = "expand"
    Config = ExtractConfig
    output_model = QASpan
    cache = True
    concurrency = 16

    def check(self, llm_config: Any) -> None:
        require_llm(llm_config, self.config.llm_role, f"extract.method={self.config.method}")

    async def process(self, record: Record, ctx: StageContext) -> list[Record] | Drop | Keep:
        c = self.config
        structural = spans_of_unit(record, c)
        kind = record["kind"]
        if kind not in _WHAT or (c.method == "both" and kind == "answer"):
            return structural
        if c.method == "fallback" and not (kind == "text" and record.get("zone") in ("exercises", "answers")):
            return structural  # the rules read this unit: no call
        context = f"section {record.get('section') or '?'} ({record.get('section_title') or 'untitled'})"
        if record.get("instruction"):
            context += f"; instruction for these items: {record['instruction']}"
        messages = [{"role": "user", "content": PROMPT.format(context=context, what=_WHAT[kind], text=record["text"])}]
        marked, completion = await ctx.llm.structured(c.llm_role, messages, MarkedSpans, tag=self.name,
                                                      seed=ctx.sample_seed)
        items = [m for m in marked.items if verbatim(m.question, record["text"]) or (
            kind == "answer" and verbatim(m.answer, record["text"]))]
        for m in items:
            if m.answer and not verbatim(m.answer, record["text"]):
                m.answer = None
        invented = len(marked.items) - len(items)
        if c.method in ("both", "fallback"):
            spans = _agree(structural, items) if isinstance(structural, list) else structural
            if kind == "text":
                spans = [*(spans if isinstance(spans, list) else []), *self._spans(record, items, "llm")]
        else:
            spans = self._spans(record, items, "llm")
            if not spans and invented:
                return Drop("llm_span_not_in_source", f"{_where(record)}: {invented} span(s) not found in the text")
        if isinstance(spans, Drop):
            return spans
        note = f"{invented} invented span(s) discarded" if invented else None
        return [_with_model(s, completion.model, note) for s in spans]

    def _spans(self, unit: Record, items: list[MarkedItem], method: str) -> list[Record]:
        src, out = unit["source"], []
        for k, m in enumerate(items):
            base = {
                "path": _item_path(unit, m), "section": unit.get("section"), "section_title": unit.get("section_title"),
                "number": m.number or unit.get("number"), "source": src, "backends": list(unit.get("backends") or []),
                "order": unit.get("order", 0) * 100 + k, "method": method, "confidence": 0.8,
            }
            if unit["kind"] == "answer" or (m.answer and not m.question):
                text = (m.answer or "").strip()
                out.append(QASpan(id=span_id("answer", src.get("document"), base["order"], text), role="answer",
                                  kind="answer", text=text, **base).model_dump())
                continue
            question = m.question.strip()
            instruction = unit.get("instruction")
            if instruction and self.config.prepend_instruction and normalized(instruction) not in normalized(question):
                question = f"{instruction}\n{question}"
            out.append(QASpan(
                id=span_id("question", src.get("document"), base["order"], question), role="question",
                kind=unit["kind"] if unit["kind"] != "text" else "exercise", text=question,
                answer=(m.answer or "").strip() or None, instruction=instruction,
                answer_source=src if m.answer else None, **base,
            ).model_dump())
        return out


def _agree(structural: list[Record], items: list[MarkedItem]) -> list[Record]:
    """Mark structural question spans the model also found (same question text)."""
    found = {normalized(m.question) for m in items if m.question}
    for s in structural:
        body = s["text"].split("\n", 1)[-1] if s.get("instruction") else s["text"]
        if s["role"] == "question" and (normalized(s["text"]) in found or normalized(body) in found):
            s["method"], s["confidence"] = "structure+llm", 1.0
    return structural


def _item_path(unit: Record, m: MarkedItem) -> list[str]:
    from .structure_patterns import merge_path, number_tokens

    path = list(unit.get("path") or [])
    if m.number and unit["kind"] == "text":
        return merge_path(path, number_tokens(m.number))
    return path


def _with_model(span: Record, model: str, note: str | None) -> Record:
    span.setdefault("provenance", [])
    span["provenance"].append({"stage": "extract", "version": "1", "decision": "create", "reason": note,
                               "model": model, "votes": [], "cost": 0.0})
    return span


def _where(unit: Record) -> str:
    src = unit["source"]
    return f"{src.get('document')} page {src.get('page')}"
